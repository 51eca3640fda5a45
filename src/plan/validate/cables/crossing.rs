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
    recabled: &HashSet<usize>,
) {
    // node-to-node links of switchless cables, one per cable and node pair
    let mut links: HashMap<(usize, NodeId, NodeId), usize> = HashMap::new();
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for s in segments {
        // a cable that cables a port half again is an error already: it closes no ring
        if recabled.contains(&s.cable) {
            continue;
        }
        if s.members.len() == 2 && s.members.iter().all(|m| m.switch.is_none()) {
            let (a, b) = (s.members[0].endpoint.node, s.members[1].endpoint.node);
            links.entry((s.cable, a, b)).or_insert_with(|| {
                edges.push((a.0, b.0));
                edges.len() - 1
            });
        }
    }
    // a cable closes a ring when there is another way round without it: its link is no bridge
    let bridge = bridges(nodes.len(), &edges);
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
        let ring = links
            .get(&(ci, a.node, b.node))
            .is_some_and(|&e| !bridge[e]);
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

/// Which edges of an undirected multigraph are bridges (Tarjan, iterative: a long chain of
/// cables must not overflow the stack). O(nodes + edges); parallel edges are never bridges.
fn bridges(n: usize, edges: &[(usize, usize)]) -> Vec<bool> {
    let mut adjacent: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (e, &(a, b)) in edges.iter().enumerate() {
        adjacent[a].push((b, e));
        adjacent[b].push((a, e));
    }
    let mut is_bridge = vec![false; edges.len()];
    let (mut disc, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let mut time = 0;
    for root in 0..n {
        if disc[root] != usize::MAX {
            continue;
        }
        disc[root] = time;
        low[root] = time;
        time += 1;
        // (node, the edge it was reached by, next neighbour to look at)
        let mut stack: Vec<(usize, Option<usize>, usize)> = vec![(root, None, 0)];
        while let Some(top) = stack.last_mut() {
            let (v, via, i) = *top;
            if let Some(&(w, e)) = adjacent[v].get(i) {
                top.2 += 1;
                if Some(e) == via {
                    continue;
                }
                if disc[w] == usize::MAX {
                    disc[w] = time;
                    low[w] = time;
                    time += 1;
                    stack.push((w, Some(e), 0));
                } else {
                    low[v] = low[v].min(disc[w]);
                }
                continue;
            }
            stack.pop();
            if let (Some(e), Some(&(u, _, _))) = (via, stack.last()) {
                low[u] = low[u].min(low[v]);
                if low[v] > disc[u] {
                    is_bridge[e] = true;
                }
            }
        }
    }
    is_bridge
}

#[cfg(test)]
mod tests {
    use super::bridges;

    #[test]
    fn bridges_of_chains_rings_and_parallel_cables() {
        // 0-1-2-0 ring, 2-3 bridge, 3-4 twice (parallel)
        let b = bridges(5, &[(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (3, 4)]);
        assert_eq!(b, [false, false, false, true, false, false]);
        // a long chain: every edge a bridge, and no recursion to overflow
        let chain: Vec<(usize, usize)> = (0..100_000).map(|i| (i, i + 1)).collect();
        assert!(bridges(100_001, &chain).iter().all(|x| *x));
    }
}
