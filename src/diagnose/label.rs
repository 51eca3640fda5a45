//! Parts as a person reads them, with what discovery found behind them: `spark-b.f0.b
//! (enP2p1s0f0np0 on spark-b)`, `cable stack (spark-a.f0 -- spark-b.f0)`.

use std::collections::HashMap;

use crate::discover::HalfResolution;
use crate::gate::part::Part;
use crate::plan::Plan;
use crate::results::RunResults;

/// What discovery found on each planned half, by its name (`spark-b.f0.b`).
pub struct Found<'r> {
    halves: HashMap<&'r str, &'r HalfResolution>,
}

impl<'r> Found<'r> {
    pub fn of(r: &'r RunResults) -> Found<'r> {
        Found {
            halves: r
                .discovery
                .iter()
                .flat_map(|d| d.halves.iter())
                .map(|h| (h.name.as_str(), h))
                .collect(),
        }
    }

    /// The half named `node.port.half`, as discovered.
    pub fn half(&self, node: &str, port: &str, half: &str) -> Option<&'r HalfResolution> {
        self.halves
            .get(format!("{node}.{port}.{half}").as_str())
            .copied()
    }

    /// The netdev of a half, as discovered (or as the profile says, before discovery).
    pub fn netdev(&self, plan: &Plan, node: &str, port: &str, half: &str) -> Option<String> {
        self.half(node, port, half)
            .and_then(|h| h.netdev.clone())
            .or_else(|| {
                let n = plan.node_by_name(node)?;
                Some(plan.profile_of(n.id).half(port, half)?.netdev.clone())
            })
    }

    /// The RDMA device of a half, as discovered (or as the profile says).
    pub fn device(&self, plan: &Plan, node: &str, port: &str, half: &str) -> Option<String> {
        self.half(node, port, half)
            .and_then(|h| h.device.clone())
            .or_else(|| {
                let n = plan.node_by_name(node)?;
                Some(plan.profile_of(n.id).half(port, half)?.device.clone())
            })
    }

    /// The netdevs of every half of a port, in the profile's order.
    pub fn port_netdevs(&self, plan: &Plan, node: &str, port: &str) -> Vec<String> {
        let Some(n) = plan.node_by_name(node) else {
            return Vec::new();
        };
        let Some(p) = plan.profile_of(n.id).port(port) else {
            return Vec::new();
        };
        p.halves
            .iter()
            .filter_map(|h| self.netdev(plan, node, port, &h.name))
            .collect()
    }
}

/// The part's label: its name, and what sits behind it.
pub fn label(plan: &Plan, found: &Found<'_>, part: &Part) -> String {
    match part {
        Part::Half { node, port, half } => match found.netdev(plan, node, port, half) {
            Some(nd) => format!("{} ({nd} on {node})", part.name()),
            None => part.name(),
        },
        Part::Port { node, port } => {
            let nds = found.port_netdevs(plan, node, port);
            if nds.is_empty() {
                part.name()
            } else {
                format!("{} ({} on {node})", part.name(), nds.join(", "))
            }
        }
        Part::Cable { a, b } => match plan.cable_name(part) {
            Some(name) => format!("cable {name} ({a} -- {b})"),
            None => part.name(),
        },
        Part::Isl { name } => match plan.isls.iter().find(|i| &i.name == name) {
            Some(i) => format!(
                "ISL {name} ({} <-> {})",
                plan.switches[i.a.0].name, plan.switches[i.b.0].name
            ),
            None => part.name(),
        },
        _ => part.name(),
    }
}
