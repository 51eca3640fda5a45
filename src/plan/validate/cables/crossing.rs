//! A warning on direct cables that close a switchless GB10 ring the wrong way round.

use std::collections::{HashMap, HashSet};

use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::validate::{Ctx, span};

/// Direct cables that close a switchless ring of GB10s joining a port to the same port
/// (`f0` to `f0`): GB10 rings cross f0 to f1, and NCCL fails on the other wiring with
/// ibv_modify_qp error 110. A warning: the links themselves work.
pub(in crate::plan::validate) fn ring_crossing(
    ctx: &mut Ctx,
    raw: &[RawCable],
    cables: &[Cable],
    segments: &[Segment],
    nodes: &[Node],
    profiles: &[Profile],
) {
    // node-to-node links of switchless cables, one per cable and node pair
    let mut links: HashSet<(usize, NodeId, NodeId)> = HashSet::new();
    // per node: (cable, node at the other end) of each link, for the searches below
    let mut adjacent: Vec<Vec<(usize, NodeId)>> = vec![Vec::new(); nodes.len()];
    for s in segments {
        if s.members.len() == 2 && s.members.iter().all(|m| m.switch.is_none()) {
            let (a, b) = (s.members[0].endpoint.node, s.members[1].endpoint.node);
            if links.insert((s.cable, a, b)) {
                adjacent[a.0].push((s.cable, b));
                adjacent[b.0].push((s.cable, a));
            }
        }
    }
    let gb10 = |n: NodeId| profiles[nodes[n.0].profile.0].name == "gb10";
    // raw cable index -> its validated cable (the first with a segment from it)
    let mut by_raw: HashMap<usize, &Cable> = HashMap::new();
    for x in cables {
        if let Some(s) = x.segments.first() {
            by_raw.entry(segments[s.0].cable).or_insert(x);
        }
    }
    for (ci, c) in raw.iter().enumerate() {
        let Some(cable) = by_raw.get(&ci).copied() else {
            continue;
        };
        if cable.kind != CableKind::Direct {
            continue;
        }
        let seg = &segments[cable.segments[0].0];
        let (a, b) = (&seg.members[0].endpoint, &seg.members[1].endpoint);
        if a.port != b.port || !gb10(a.node) || !gb10(b.node) {
            continue;
        }
        // is there another way round from a to b without this cable?
        let mut seen = vec![false; nodes.len()];
        seen[a.node.0] = true;
        let mut stack = vec![a.node];
        let mut ring = false;
        while let Some(n) = stack.pop() {
            for &(lc, next) in &adjacent[n.0] {
                if lc == ci {
                    continue;
                }
                if next == b.node {
                    ring = true;
                }
                if !seen[next.0] {
                    seen[next.0] = true;
                    stack.push(next);
                }
            }
        }
        if ring {
            let at = c.ends.as_ref().map(span).unwrap_or_else(|| span(&c.kind));
            ctx.push(
                Problem::warning(
                    "plan::ring-crossing",
                    format!(
                        "cable `{}` closes a switchless ring joining `{}` to `{}`: GB10 rings cross f0 to f1",
                        cable.name, a.port, b.port
                    ),
                )
                .at(at, "same port on both ends")
                .help("cable each node's f0 to the next node's f1; a ring wired port 0 to port 0 fails NCCL with ibv_modify_qp error 110 (a `ring` cable wires it for you)"),
            );
        }
    }
}
