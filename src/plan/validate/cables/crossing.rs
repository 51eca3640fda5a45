//! Warnings on direct cables that close a switchless ring: one per ring. Wired port to the
//! same port (`f0` to `f0`) on GB10s, it is the wrong way round (NCCL fails on it); wired
//! right, it is a ring written as direct cables, which should be one `kind = "ring"` cable (a
//! ring gets its own NCCL settings).

use std::collections::{HashMap, HashSet};

use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::validate::names::and_list;
use crate::plan::validate::{Ctx, span};

/// A direct cable as a link between two nodes: its raw index, its name, its two ends.
struct Link<'a> {
    ci: usize,
    name: &'a str,
    a: &'a Endpoint,
    b: &'a Endpoint,
}

/// Direct cables that close a switchless ring (a cable with another way round: no bridge), one
/// warning per ring: `plan::ring-crossing` when GB10 ends join a port to the same port,
/// `plan::ring-as-direct` (three nodes or more) when the ring is wired right but written as
/// direct cables. The links themselves work: warnings, not errors.
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
    // raw cable index -> its validated cable (the first with a segment from it)
    let mut by_raw: HashMap<usize, &Cable> = HashMap::new();
    for x in cables {
        if let Some(s) = x.segments.first() {
            by_raw.entry(segments[s.0].cable).or_insert(x);
        }
    }
    let mut closing: Vec<Link<'_>> = Vec::new();
    for ci in 0..raw.len() {
        let Some(cable) = by_raw.get(&ci).copied() else {
            continue;
        };
        if cable.kind != CableKind::Direct {
            continue;
        }
        let seg = &segments[cable.segments[0].0];
        let (a, b) = (&seg.members[0].endpoint, &seg.members[1].endpoint);
        if links
            .get(&(ci, a.node, b.node))
            .is_some_and(|&e| !bridge[e])
        {
            closing.push(Link {
                ci,
                name: &cable.name,
                a,
                b,
            });
        }
    }
    for ring in rings(&closing, nodes.len()) {
        let ring: Vec<&Link<'_>> = ring.iter().map(|i| &closing[*i]).collect();
        if let Some(p) = ring_warning(&ring, raw, nodes, profiles) {
            ctx.push(p);
        }
    }
}

/// The links joined into rings (connected through each other), each as indexes into `links`.
fn rings(links: &[Link<'_>], n: usize) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for l in links {
        let (x, y) = (root(&mut parent, l.a.node.0), root(&mut parent, l.b.node.0));
        parent[x] = y;
    }
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, l) in links.iter().enumerate() {
        let r = root(&mut parent, l.a.node.0);
        match out.iter_mut().find(|(k, _)| *k == r) {
            Some((_, v)) => v.push(i),
            None => out.push((r, vec![i])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// The one warning of a ring of direct cables, if it needs one.
fn ring_warning(
    ring: &[&Link<'_>],
    raw: &[RawCable],
    nodes: &[Node],
    profiles: &[Profile],
) -> Option<Problem> {
    let gb10 = |n: NodeId| profiles[nodes[n.0].profile.0].name == "gb10";
    let at = |l: &Link<'_>| {
        let c = &raw[l.ci];
        c.ends.as_ref().map(span).unwrap_or_else(|| span(&c.kind))
    };
    let crossed: Vec<&&Link<'_>> = ring
        .iter()
        .filter(|l| l.a.port == l.b.port && gb10(l.a.node) && gb10(l.b.node))
        .collect();
    let names = |ls: &mut dyn Iterator<Item = &&Link<'_>>| -> String {
        let v: Vec<String> = ls.map(|l| format!("`{}`", l.name)).collect();
        and_list(&v, 4)
    };
    let mut node_set: Vec<NodeId> = ring.iter().flat_map(|l| [l.a.node, l.b.node]).collect();
    node_set.sort();
    node_set.dedup();
    let rewrite = ring_rewrite(ring, nodes);
    let mut p = if let Some(first) = crossed.first() {
        let one = crossed.len() == 1;
        let mut joins: Vec<String> = crossed
            .iter()
            .map(|l| format!("`{}` to `{}`", l.a.port, l.b.port))
            .collect();
        joins.dedup();
        Problem::warning(
            "plan::ring-crossing",
            format!(
                "{} {} {} a switchless ring joining {}: GB10 rings cross f0 to f1",
                if one { "cable" } else { "cables" },
                names(&mut crossed.iter().copied()),
                if one { "closes" } else { "close" },
                and_list(&joins, 4)
            ),
        )
        .at(at(first), "same port on both ends")
        .help(format!(
            "cable each node's f0 to the next node's f1; a ring wired port 0 to port 0 fails NCCL with ibv_modify_qp error 110 (a `ring` cable wires it for you{})",
            rewrite.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
        ))
    } else if node_set.len() >= 3 {
        Problem::warning(
            "plan::ring-as-direct",
            format!(
                "direct cables {} close a switchless ring of {} nodes: a ring is one `kind = \"ring\"` cable",
                names(&mut ring.iter()),
                node_set.len()
            ),
        )
        .at(at(ring[0]), "closes the ring")
        .help(format!(
            "a ring gets the NCCL settings a switchless ring needs (as direct cables it gets a direct pair's); write it as {}",
            rewrite.unwrap_or_else(|| "one `kind = \"ring\"` cable listing its nodes in ring order".into())
        ))
    } else {
        return None;
    };
    let crossed_too = |l: &&Link<'_>| crossed.iter().skip(1).any(|c| c.ci == l.ci);
    for l in ring
        .iter()
        .skip(1)
        .filter(|l| !crossed.is_empty() && crossed_too(l))
    {
        p = p.also(at(l), "same port on both ends");
    }
    Some(p)
}

/// `[[cable]] kind = "ring", nodes = ["a", "b", "c"], link-subnets = [...]`: the ring the direct
/// cables make, when each node's f0 faces the next node's f1 (the ring cable's own wiring), each
/// link keeping its subnets; `None` when they do not go round that way.
fn ring_rewrite(ring: &[&Link<'_>], nodes: &[Node]) -> Option<String> {
    // each link as f0 end -> f1 end
    let mut next: HashMap<NodeId, (NodeId, usize)> = HashMap::new();
    for l in ring {
        let (from, to) = match (l.a.port.as_str(), l.b.port.as_str()) {
            ("f0", "f1") => (l.a, l.b),
            ("f1", "f0") => (l.b, l.a),
            _ => return None,
        };
        if next.insert(from.node, (to.node, l.ci)).is_some() {
            return None;
        }
    }
    let start = ring[0].a.node.min(ring[0].b.node);
    let mut order = vec![start];
    let mut at = start;
    while let Some(&(to, _)) = next.get(&at) {
        if to == start {
            break;
        }
        if order.contains(&to) {
            return None;
        }
        order.push(to);
        at = to;
    }
    if order.len() != ring.len() || next.get(&at).map(|x| x.0) != Some(start) {
        return None;
    }
    let list: Vec<String> = order
        .iter()
        .map(|n| format!("\"{}\"", nodes[n.0].name))
        .collect();
    Some(format!(
        "`[[cable]] kind = \"ring\"` with `nodes = [{}]` (and its links' subnets as `link-subnets`, link 1 from `{}`)",
        list.join(", "),
        nodes[start.0].name
    ))
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
