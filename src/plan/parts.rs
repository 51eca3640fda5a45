//! The plan's entities as the parts a finding names (see [`crate::gate::part`]).

use super::model::{CableKind, Endpoint, IslId, NodeId, Plan};
use crate::gate::part::Part;

impl Plan {
    /// The half behind a planned endpoint.
    pub fn half_part(&self, e: &Endpoint) -> Part {
        Part::half(&self.node(e.node).name, &e.port, &e.half)
    }

    /// The port a planned endpoint sits in.
    pub fn port_part(&self, e: &Endpoint) -> Part {
        Part::port(&self.node(e.node).name, &e.port)
    }

    /// The node's part.
    pub fn node_part(&self, n: NodeId) -> Part {
        Part::node(&self.node(n).name)
    }

    /// The ISL's part.
    pub fn isl_part(&self, isl: IslId) -> Part {
        Part::isl(&self.isls[isl.0].name)
    }

    /// The cable a planned endpoint is cabled with, by its planned ends: `NODE.PORT` at each end
    /// of a direct or ring cable, `NODE.PORT` and the switch for a switched one.
    pub fn cable_part(&self, e: &Endpoint) -> Option<Part> {
        let (seg, member) = self.member_of(e)?;
        let here = format!("{}.{}", self.node(e.node).name, e.port);
        if self.cables.get(seg.cable)?.kind == CableKind::Switched {
            let sw = member.switch?;
            return Some(Part::cable(&here, &self.switches[sw.0].name));
        }
        let other = seg.members.iter().find(|m| &m.endpoint != e)?;
        let there = format!(
            "{}.{}",
            self.node(other.endpoint.node).name,
            other.endpoint.port
        );
        Some(Part::cable(&here, &there))
    }

    /// The plan's name of the cable a part names, where the plan has one (`stack`).
    pub fn cable_name(&self, part: &Part) -> Option<&str> {
        self.segments.iter().find_map(|s| {
            s.members
                .iter()
                .any(|m| self.cable_part(&m.endpoint).as_ref() == Some(part))
                .then(|| self.cables.get(s.cable).map(|c| c.name.as_str()))
                .flatten()
        })
    }
}
