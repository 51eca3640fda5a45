//! Rings among the direct cables: a cycle of three to [`MAX_RING_NODES`] boxes, each box on
//! exactly two of its cables, every cable carrying the same halves, and one orientation in
//! which every box leaves by the same port and arrives by another (`ports = [OUT, IN]`).

use std::collections::BTreeMap;

use super::cabling::{Claim, End};
use crate::plan::validate::MAX_RING_NODES;

/// A ring found: its boxes in order, the index of each link's direct cable (link i joins
/// node i and node i+1), and its ports.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundRing {
    pub nodes: Vec<usize>,
    pub edges: Vec<usize>,
    pub out: String,
    pub inn: String,
}

/// Every ring among `directs` (each cable in at most one).
pub fn find(directs: &[(End, End, Claim)]) -> Vec<FoundRing> {
    let mut at: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, (a, b, _)) in directs.iter().enumerate() {
        at.entry(a.r#box).or_default().push(k);
        at.entry(b.r#box).or_default().push(k);
    }
    let mut seen: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for (&start, _) in at.iter() {
        if seen.contains(&start) {
            continue;
        }
        let Some(cycle) = walk(directs, &at, start) else {
            continue;
        };
        seen.extend(cycle.0.iter().copied());
        if let Some(r) = orient(directs, cycle) {
            out.push(r);
        }
    }
    out
}

/// The cycle through `start`, when every box on it has exactly two cables: its boxes in order
/// and the cable of each step.
fn walk(
    directs: &[(End, End, Claim)],
    at: &BTreeMap<usize, Vec<usize>>,
    start: usize,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let two = |n: usize| at.get(&n).filter(|v| v.len() == 2);
    let first = *two(start)?.first()?;
    let (mut nodes, mut edges) = (vec![start], vec![first]);
    let mut here = start;
    let mut edge = first;
    loop {
        let (a, b, _) = &directs[edge];
        let next = if a.r#box == here { b.r#box } else { a.r#box };
        if next == start {
            break;
        }
        if nodes.contains(&next) || nodes.len() > MAX_RING_NODES {
            return None;
        }
        let cables = two(next)?;
        edge = *cables.iter().find(|e| **e != edge)?;
        nodes.push(next);
        edges.push(edge);
        here = next;
    }
    (nodes.len() >= 3).then_some((nodes, edges))
}

/// The port `node` uses on cable `edge`.
fn port_on(directs: &[(End, End, Claim)], edge: usize, node: usize) -> &str {
    let (a, b, _) = &directs[edge];
    if a.r#box == node { &a.port } else { &b.port }
}

/// The orientation in which every box leaves by one port and arrives by another; the one
/// leaving by the lower-named port when both work. `None` when neither does, or the cables
/// carry different halves.
fn orient(
    directs: &[(End, End, Claim)],
    (nodes, edges): (Vec<usize>, Vec<usize>),
) -> Option<FoundRing> {
    let halves = &directs[edges[0]].2.halves;
    if edges.iter().any(|e| &directs[*e].2.halves != halves) {
        return None;
    }
    let n = nodes.len();
    let try_dir = |nodes: &[usize], edges: &[usize]| -> Option<FoundRing> {
        let out = port_on(directs, edges[0], nodes[0]).to_string();
        let inn = port_on(directs, edges[0], nodes[1]).to_string();
        let ok = (0..n).all(|i| {
            port_on(directs, edges[i], nodes[i]) == out
                && port_on(directs, edges[i], nodes[(i + 1) % n]) == inn
        });
        (ok && out != inn).then(|| FoundRing {
            nodes: nodes.to_vec(),
            edges: edges.to_vec(),
            out,
            inn,
        })
    };
    let forward = try_dir(&nodes, &edges);
    // the other way round: the same start, the cycle reversed
    let mut rn = vec![nodes[0]];
    rn.extend(nodes[1..].iter().rev());
    let re: Vec<usize> = edges.iter().rev().copied().collect();
    let backward = try_dir(&rn, &re);
    match (forward, backward) {
        (Some(f), Some(b)) => Some(if f.out <= b.out { f } else { b }),
        (f, b) => f.or(b),
    }
}
