//! The fabric graph: nodes' port halves, switches, links and ISLs as a petgraph graph, and the
//! path between any two node halves. Built once from a validated plan; pure.

mod export;
mod text;

use std::collections::HashMap;

use petgraph::graph::{NodeIndex, UnGraph};
use serde::Serialize;

use crate::plan::{Endpoint, IslId, Member, NodeId, Plan, Segment, SegmentId, SwitchId};

pub use export::{to_dot, to_mermaid};
pub use text::to_text;

/// A vertex of the fabric graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Vertex {
    /// One half of one node port.
    Half(Endpoint),
    Switch(SwitchId),
}

/// An edge of the fabric graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Edge {
    /// A direct or ring link half between two node halves.
    Link(SegmentId),
    /// A node half landing on a switch.
    Attach(SegmentId),
    Isl(IslId),
}

/// A hop a flow occupies, for resource accounting and the capacity model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Hop {
    /// Sending out of a node half.
    Tx { endpoint: Endpoint },
    /// Receiving into a node half.
    Rx { endpoint: Endpoint },
    /// One direction of an ISL: from switch `from` to the other end.
    Isl { isl: IslId, from: SwitchId },
}

/// The path of one flow, client to server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    pub hops: Vec<Hop>,
    /// Switches crossed, in order.
    pub switches: Vec<SwitchId>,
}

impl Path {
    pub fn isl_hops(&self) -> impl Iterator<Item = (IslId, SwitchId)> + '_ {
        self.hops.iter().filter_map(|h| match h {
            Hop::Isl { isl, from } => Some((*isl, *from)),
            _ => None,
        })
    }
}

/// ISL hops from one switch to another: (ISL, the switch it is entered from).
pub type IslRoute = Vec<(IslId, SwitchId)>;

/// The fabric of a plan.
#[derive(Debug)]
pub struct Fabric {
    pub graph: UnGraph<Vertex, Edge>,
    halves: HashMap<Endpoint, NodeIndex>,
    /// Node half -> (its segment, its index among the segment's members): the first segment
    /// holding it, as [`Plan::member_of`] finds it, without scanning every member.
    members: HashMap<Endpoint, (SegmentId, usize)>,
    switches: Vec<NodeIndex>,
    /// switch -> switch: the ISL hops of the shortest path (precomputed; switches are few).
    switch_paths: HashMap<(SwitchId, SwitchId), Option<IslRoute>>,
}

impl Fabric {
    pub fn build(plan: &Plan) -> Fabric {
        let mut graph = UnGraph::new_undirected();
        let mut halves = HashMap::new();
        let mut members = HashMap::new();
        let switches: Vec<NodeIndex> = plan
            .switches
            .iter()
            .map(|s| graph.add_node(Vertex::Switch(s.id)))
            .collect();
        for seg in &plan.segments {
            for (mi, m) in seg.members.iter().enumerate() {
                members.entry(m.endpoint.clone()).or_insert((seg.id, mi));
                let ix = *halves
                    .entry(m.endpoint.clone())
                    .or_insert_with(|| graph.add_node(Vertex::Half(m.endpoint.clone())));
                if let Some(sw) = m.switch {
                    graph.add_edge(ix, switches[sw.0], Edge::Attach(seg.id));
                }
            }
            if seg.members.len() == 2 && seg.members.iter().all(|m| m.switch.is_none()) {
                let a = halves[&seg.members[0].endpoint];
                let b = halves[&seg.members[1].endpoint];
                graph.add_edge(a, b, Edge::Link(seg.id));
            }
        }
        for isl in &plan.isls {
            graph.add_edge(switches[isl.a.0], switches[isl.b.0], Edge::Isl(isl.id));
        }
        let mut fabric = Fabric {
            graph,
            halves,
            members,
            switches,
            switch_paths: HashMap::new(),
        };
        for a in &plan.switches {
            for b in &plan.switches {
                let p = fabric.isl_path(plan, a.id, b.id);
                fabric.switch_paths.insert((a.id, b.id), p);
            }
        }
        fabric
    }

    /// Shortest path over ISLs from switch `a` to switch `b` (BFS; ties by declaration order).
    fn isl_path(&self, plan: &Plan, a: SwitchId, b: SwitchId) -> Option<Vec<(IslId, SwitchId)>> {
        if a == b {
            return Some(Vec::new());
        }
        let n = plan.switches.len();
        let mut prev: Vec<Option<(SwitchId, IslId)>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut queue = std::collections::VecDeque::from([a]);
        seen[a.0] = true;
        while let Some(s) = queue.pop_front() {
            if s == b {
                break;
            }
            for isl in &plan.isls {
                let next = if isl.a == s {
                    isl.b
                } else if isl.b == s {
                    isl.a
                } else {
                    continue;
                };
                if !seen[next.0] {
                    seen[next.0] = true;
                    prev[next.0] = Some((s, isl.id));
                    queue.push_back(next);
                }
            }
        }
        if !seen[b.0] {
            return None;
        }
        let mut hops = Vec::new();
        let mut cur = b;
        while let Some((p, isl)) = prev[cur.0] {
            hops.push((isl, p));
            cur = p;
        }
        hops.reverse();
        Some(hops)
    }

    /// The ISL hops from switch `a` to switch `b` (empty when `a == b`), `None` when no ISL
    /// path joins them.
    pub fn switch_route(&self, a: SwitchId, b: SwitchId) -> Option<&[(IslId, SwitchId)]> {
        self.switch_paths.get(&(a, b))?.as_deref()
    }

    /// The segment an endpoint is cabled into, and its member entry: [`Plan::member_of`] in
    /// constant time.
    pub fn member_of<'p>(&self, plan: &'p Plan, e: &Endpoint) -> Option<(&'p Segment, &'p Member)> {
        let &(seg, mi) = self.members.get(e)?;
        let s = plan.segment(seg);
        Some((s, &s.members[mi]))
    }

    /// The path from `client` to `server`, or `None` when they share no segment.
    pub fn path(&self, plan: &Plan, client: &Endpoint, server: &Endpoint) -> Option<Path> {
        let (cs, cm) = self.member_of(plan, client)?;
        let (ss, sm) = self.member_of(plan, server)?;
        if cs.id != ss.id {
            return None;
        }
        let mut hops = vec![Hop::Tx {
            endpoint: client.clone(),
        }];
        let mut switches = Vec::new();
        if let (Some(a), Some(b)) = (cm.switch, sm.switch) {
            let isl = self.switch_paths.get(&(a, b))?.as_ref()?;
            switches.push(a);
            for (id, from) in isl {
                hops.push(Hop::Isl {
                    isl: *id,
                    from: *from,
                });
                let i = &plan.isls[id.0];
                let to = if i.a == *from { i.b } else { i.a };
                switches.push(to);
            }
        }
        hops.push(Hop::Rx {
            endpoint: server.clone(),
        });
        Some(Path { hops, switches })
    }

    /// Do two nodes share any segment (a direct link or a switched fabric half)?
    pub fn adjacent(&self, plan: &Plan, a: NodeId, b: NodeId) -> bool {
        plan.segments.iter().any(|s| {
            s.members.iter().any(|m| m.endpoint.node == a)
                && s.members.iter().any(|m| m.endpoint.node == b)
        })
    }

    pub fn half_count(&self) -> usize {
        self.halves.len()
    }

    pub fn switch_vertex(&self, s: SwitchId) -> NodeIndex {
        self.switches[s.0]
    }
}
