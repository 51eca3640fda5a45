//! Parts chosen apart that a person fixes as one: every half of a port failing the same way is
//! the port (an MTU set on the port's netdevs, a cage whose both halves are throttled); every
//! port of a node throttled is the node's NIC (one firmware, one action); two crossed cables
//! meeting at a node are one swap. And a part chosen where the evidence names others of its kind
//! just as well (every rank's NCCL showing the same) is said with them: one finding about the
//! many, never the first of them picked.

use std::collections::{BTreeMap, BTreeSet};

use super::cover::Chosen;
use crate::gate::judge::{Reached, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::Plan;

/// A chosen part after merging, with the verdicts it explains (indices into the failing list).
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub part: Part,
    /// Parts of its kind the evidence names just as well: one of them is at fault.
    pub among: Vec<Part>,
    pub explains: Vec<usize>,
    /// A name and a label of its own, where the part's would not say it.
    pub name: Option<String>,
    pub label: Option<String>,
}

/// The trap a chosen part's first verdict names.
fn trap_of<'v>(c: &Chosen, verdict: &impl Fn(usize) -> &'v Verdict) -> Option<Trap> {
    c.explains.first().and_then(|i| verdict(*i).trap)
}

/// Merge `chosen`: halves of one port with one trap, when every half the plan cables in that
/// port is among them, become the port.
pub fn merge<'v>(
    plan: &Plan,
    chosen: Vec<Chosen>,
    lists: &[Vec<Part>],
    cleared: &BTreeSet<Part>,
    verdict: impl Fn(usize) -> &'v Verdict,
) -> Vec<Merged> {
    // (node, port, trap) -> the chosen halves' indices in `chosen`
    let mut by_port: BTreeMap<(String, String, Option<&'static str>), Vec<usize>> = BTreeMap::new();
    for (i, c) in chosen.iter().enumerate() {
        if let Part::Half { node, port, .. } = &c.part {
            by_port
                .entry((
                    node.clone(),
                    port.clone(),
                    trap_of(c, &verdict).map(Trap::name),
                ))
                .or_default()
                .push(i);
        }
    }
    let mut into: BTreeMap<usize, usize> = BTreeMap::new();
    for ((node, port, _), idx) in &by_port {
        let planned = planned_halves(plan, node, port);
        if idx.len() >= 2 && idx.len() == planned {
            for i in &idx[1..] {
                into.insert(*i, idx[0]);
            }
            into.insert(idx[0], idx[0]);
        }
    }
    let mut out: Vec<Merged> = Vec::new();
    let mut slot: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in chosen.into_iter().enumerate() {
        match into.get(&i) {
            Some(&lead) if lead != i => {
                let at = slot[&lead];
                out[at].explains.extend(c.explains);
                out[at].explains.sort_unstable();
            }
            Some(_) => {
                let Part::Half { node, port, .. } = &c.part else {
                    continue;
                };
                slot.insert(i, out.len());
                out.push(Merged {
                    part: Part::port(node, port),
                    among: Vec::new(),
                    explains: c.explains,
                    name: None,
                    label: None,
                });
            }
            None => out.push(Merged {
                part: c.part,
                among: Vec::new(),
                explains: c.explains,
                name: None,
                label: None,
            }),
        }
    }
    let out = nic(plan, swapped(out, &verdict), &verdict);
    peers(out, lists, cleared)
}

/// Traps of a NIC as a whole: every port of the node failing with one is its NIC.
fn nic_wide(t: Option<Trap>) -> bool {
    matches!(t, Some(Trap::FirmwareThrottle))
}

/// Every cabled port of a node chosen with one NIC-wide trap (a throttle on every half) is the
/// node's NIC: one finding, one firmware to update.
fn nic<'v>(plan: &Plan, out: Vec<Merged>, verdict: &impl Fn(usize) -> &'v Verdict) -> Vec<Merged> {
    let trap = |m: &Merged| m.explains.first().and_then(|i| verdict(*i).trap);
    let mut by_node: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, m) in out.iter().enumerate() {
        if let Part::Port { node, .. } = &m.part
            && nic_wide(trap(m))
        {
            by_node.entry(node.clone()).or_default().push(i);
        }
    }
    let mut gone: BTreeSet<usize> = BTreeSet::new();
    let mut lead: BTreeMap<usize, (String, Vec<String>, Vec<usize>)> = BTreeMap::new();
    for (node, idx) in by_node {
        let ports: Vec<String> = idx
            .iter()
            .filter_map(|i| match &out[*i].part {
                Part::Port { port, .. } => Some(port.clone()),
                _ => None,
            })
            .collect();
        if idx.len() >= 2 && idx.len() == planned_ports(plan, &node) {
            lead.insert(idx[0], (node, ports, idx[1..].to_vec()));
            gone.extend(&idx[1..]);
        }
    }
    let mut rest: Vec<Option<Merged>> = out.into_iter().map(Some).collect();
    let mut merged = Vec::new();
    for i in 0..rest.len() {
        if gone.contains(&i) {
            continue;
        }
        let Some(mut m) = rest[i].take() else {
            continue;
        };
        if let Some((node, ports, others)) = lead.remove(&i) {
            for o in others {
                if let Some(x) = rest[o].take() {
                    m.explains.extend(x.explains);
                }
            }
            m.explains.sort_unstable();
            m.part = Part::node(&node);
            m.name = Some(format!("{node}'s NIC"));
            m.label = Some(format!(
                "{node}'s NIC: every port ({}) the same way",
                ports.join(", ")
            ));
        }
        merged.push(m);
    }
    merged
}

/// How many distinct ports of `node` the plan cables.
fn planned_ports(plan: &Plan, node: &str) -> usize {
    let Some(n) = plan.node_by_name(node) else {
        return 0;
    };
    plan.segments
        .iter()
        .flat_map(|s| s.members.iter())
        .filter(|m| m.endpoint.node == n.id)
        .map(|m| m.endpoint.port.as_str())
        .collect::<BTreeSet<_>>()
        .len()
}

/// The parts of the same kind as a chosen one that every verdict it explains names too, that
/// passing verdicts cleared alike and that no other finding is about: the evidence cannot tell
/// them apart from it, so the finding is about them all (`NCCL on spark-[1-3]`). Cleared alike:
/// a part chosen uncleared has the uncleared ones for peers; a part chosen although a passing
/// verdict cleared it (nothing named was left uncleared: a collective slow while every half
/// of its ranks passed elsewhere) has every one named with it, the first rank no more than the
/// last (`n[00001-01024].f0.a`).
fn peers(mut out: Vec<Merged>, lists: &[Vec<Part>], cleared: &BTreeSet<Part>) -> Vec<Merged> {
    let chosen: BTreeSet<Part> = out.iter().map(|m| m.part.clone()).collect();
    let kind = |p: &Part| match p {
        Part::Software { software, .. } => (super::cover::rank(p), Some(*software)),
        _ => (super::cover::rank(p), None),
    };
    for m in &mut out {
        let Some(first) = m.explains.first() else {
            continue;
        };
        let own = cleared.contains(&m.part);
        let shared: Vec<Part> = lists[*first]
            .iter()
            .filter(|q| **q != m.part && kind(q) == kind(&m.part))
            .filter(|q| cleared.contains(q) == own && !chosen.contains(q))
            .filter(|q| m.explains.iter().all(|i| lists[*i].contains(q)))
            .cloned()
            .collect();
        if shared.is_empty() || m.name.is_some() {
            continue;
        }
        m.name = Some(group_name(&m.part, &shared));
        m.label = m.name.clone();
        m.among = shared;
    }
    out
}

/// One name for a part and its peers: the software on a hostlist of their nodes, halves of one
/// port and half as a hostlist of their nodes with it (`n[00001-01024].f0.a`), else each part's
/// name joined by `or`.
fn group_name(part: &Part, peers: &[Part]) -> String {
    if let Part::Half { port, half, .. } = part
        && peers
            .iter()
            .all(|p| matches!(p, Part::Half { port: q, half: h, .. } if q == port && h == half))
    {
        let nodes: Vec<&str> = std::iter::once(part)
            .chain(peers)
            .filter_map(Part::node_name)
            .collect();
        let list = crate::text::hostlist::compress(&nodes);
        // a range reads as one (`n[00001-01024].f0.a`); names that make none are said apart
        // (`spark-a.f0.a, or spark-b.f0.a`), never as a comma list one suffix ends
        if list.contains('[') && !list.contains(',') {
            return format!("{list}.{port}.{half}");
        }
    }
    if let Part::Software { software, .. } = part
        && peers
            .iter()
            .all(|p| matches!(p, Part::Software { software: s, .. } if s == software))
    {
        let nodes: Vec<&str> = std::iter::once(part)
            .chain(peers)
            .filter_map(Part::node_name)
            .collect();
        return format!(
            "{} on {}",
            software.name(),
            crate::text::hostlist::compress(&nodes)
        );
    }
    let mut names: Vec<String> = std::iter::once(part).chain(peers).map(Part::name).collect();
    names.sort();
    names.join(", or ")
}

/// The node end `NODE.PORT` of a cable part that is on `node` (a cable's ends are `NODE.PORT`
/// or a switch).
fn port_on<'p>(c: &'p Part, node: &str) -> Option<&'p str> {
    let Part::Cable { a, b } = c else { return None };
    [a, b].into_iter().find_map(|e| {
        e.strip_prefix(node)
            .and_then(|r| r.strip_prefix('.'))
            .filter(|p| !p.contains('.'))
    })
}

/// Two crossed cables that meet at one node on two of its ports are one fault: the cables are
/// swapped in that node's ports (one finding, named by both ports).
fn swapped<'v>(mut out: Vec<Merged>, verdict: &impl Fn(usize) -> &'v Verdict) -> Vec<Merged> {
    let crossed = |m: &Merged| {
        matches!(m.part, Part::Cable { .. })
            && m.explains
                .iter()
                .any(|i| verdict(*i).trap == Some(Trap::CrossedCable))
    };
    let mut i = 0;
    while i < out.len() {
        let pair = crossed(&out[i])
            .then(|| {
                (i + 1..out.len()).find_map(|j| {
                    if !crossed(&out[j]) {
                        return None;
                    }
                    let nodes = |p: &Part| match p {
                        Part::Cable { a, b } => [a.clone(), b.clone()],
                        _ => [String::new(), String::new()],
                    };
                    nodes(&out[i].part).into_iter().find_map(|end| {
                        let node = end.split('.').next()?.to_string();
                        let p = port_on(&out[i].part, &node)?;
                        let q = port_on(&out[j].part, &node)?;
                        let seen: Vec<&Reached> = out[i]
                            .explains
                            .iter()
                            .chain(&out[j].explains)
                            .flat_map(|k| &verdict(*k).reached)
                            .collect();
                        let exchanged =
                            exchanged(&seen, &node, (p, &out[i].part), (q, &out[j].part));
                        (p != q && exchanged)
                            .then(|| (j, node.clone(), p.to_string(), q.to_string()))
                    })
                })
            })
            .flatten();
        if let Some((j, node, p, q)) = pair {
            let other = out.remove(j);
            let m = &mut out[i];
            m.explains.extend(other.explains);
            m.explains.sort_unstable();
            let (p, q) = if p <= q { (p, q) } else { (q, p) };
            m.name = Some(format!("{node}.{p} and {node}.{q}"));
            m.label = Some(format!(
                "{node}.{p} and {node}.{q}: their cables are swapped ({} and {})",
                m.part.name(),
                other.part.name()
            ));
            m.part = Part::port(&node, &p);
        }
        i += 1;
    }
    out
}

/// Whether the cables in `node`'s ports `p` and `q` are in each other's port: where the
/// evidence says who answered (`spark-1.f0.a` reached `spark-3.f1`), each port reaches the
/// other cable's far end; where it does not say, the two crossed cables meeting there are taken
/// as exchanged.
fn exchanged(
    seen: &[&Reached],
    node: &str,
    (p, cp): (&str, &Part),
    (q, cq): (&str, &Part),
) -> bool {
    let far = |c: &Part, here: &str| match c {
        Part::Cable { a, b } => Some(if a == here { b.clone() } else { a.clone() }),
        _ => None,
    };
    let (mine_p, mine_q) = (format!("{node}.{p}"), format!("{node}.{q}"));
    let (x, y) = (far(cp, &mine_p), far(cq, &mine_q));
    let ok = |from: &str, want: &Option<String>| {
        let port_of = |r: &&&Reached| {
            r.from
                .rsplit_once('.')
                .is_some_and(|(port, _)| port == from)
        };
        match seen.iter().find(port_of) {
            Some(r) => want.as_deref() == Some(r.to.as_str()),
            None => true,
        }
    };
    ok(&mine_p, &y) && ok(&mine_q, &x)
}

/// How many halves of `node`'s `port` the plan cables.
fn planned_halves(plan: &Plan, node: &str, port: &str) -> usize {
    let Some(n) = plan.node_by_name(node) else {
        return 0;
    };
    plan.segments
        .iter()
        .flat_map(|s| s.members.iter())
        .filter(|m| m.endpoint.node == n.id && m.endpoint.port == port)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::part::Software;

    fn nccl(n: &str) -> Part {
        Part::software(n, Software::Nccl)
    }

    fn merged(part: Part, explains: Vec<usize>) -> Merged {
        Merged {
            part,
            among: Vec::new(),
            explains,
            name: None,
            label: None,
        }
    }

    /// Every rank's NCCL named alike by one verdict (GDR off on every rank): one finding about
    /// them all, not the first rank's.
    #[test]
    fn parts_the_evidence_names_alike_are_one_finding_about_them_all() {
        let lists = vec![vec![nccl("spark-1"), nccl("spark-2"), nccl("spark-3")]];
        let out = peers(
            vec![merged(nccl("spark-1"), vec![0])],
            &lists,
            &BTreeSet::new(),
        );
        assert_eq!(out[0].name.as_deref(), Some("NCCL on spark-[1-3]"));
        assert_eq!(out[0].among, vec![nccl("spark-2"), nccl("spark-3")]);
        // a rank that passed elsewhere is not among them
        let cleared: BTreeSet<Part> = [nccl("spark-3")].into();
        let out = peers(vec![merged(nccl("spark-1"), vec![0])], &lists, &cleared);
        assert_eq!(out[0].name.as_deref(), Some("NCCL on spark-[1-2]"));
        // parts of another kind are not peers: a slurmd and the controller are said with `or`
        let ctl = Part::Reach {
            reach: crate::gate::part::Reach::SlurmController,
        };
        let lists = vec![vec![Part::software("spark-2", Software::Slurmd), ctl]];
        let out = peers(
            vec![merged(Part::software("spark-2", Software::Slurmd), vec![0])],
            &lists,
            &BTreeSet::new(),
        );
        assert!(out[0].among.is_empty() && out[0].name.is_none());
        // a part the evidence names alone stays alone
        let lists = vec![
            vec![nccl("spark-2")],
            vec![nccl("spark-2"), nccl("spark-3")],
        ];
        let out = peers(
            vec![merged(nccl("spark-2"), vec![0, 1])],
            &lists,
            &BTreeSet::new(),
        );
        assert!(out[0].among.is_empty());
    }

    /// A slow collective whose every half passed elsewhere: the cover picks the first rank's
    /// half for being first, and nothing tells it from the others: the finding is about them
    /// all, never the first rank's.
    #[test]
    fn a_part_chosen_though_cleared_is_said_with_every_part_cleared_alike() {
        let h = |n: &str| Part::half(n, "f0", "a");
        let lists = vec![vec![h("n01"), h("n02"), h("n03"), nccl("n01"), nccl("n02")]];
        let all: BTreeSet<Part> = lists[0].iter().cloned().collect();
        let out = peers(vec![merged(h("n01"), vec![0])], &lists, &all);
        assert_eq!(out[0].name.as_deref(), Some("n[01-03].f0.a"));
        assert_eq!(out[0].among, vec![h("n02"), h("n03")]);
        // an uncleared half among cleared ones is the one the evidence points at, alone
        let some: BTreeSet<Part> = [h("n02"), h("n03")].into();
        let out = peers(vec![merged(h("n01"), vec![0])], &lists, &some);
        assert!(out[0].among.is_empty() && out[0].name.is_none());
        // halves of other ports or halves are said with `or`
        let lists = vec![vec![h("n01"), Part::half("n02", "f0", "b")]];
        let all: BTreeSet<Part> = lists[0].iter().cloned().collect();
        let out = peers(vec![merged(h("n01"), vec![0])], &lists, &all);
        assert_eq!(out[0].name.as_deref(), Some("n01.f0.a, or n02.f0.b"));
        // names that make no range are said apart, in order, not as a list one suffix ends
        let lists = vec![vec![
            Part::half("spark-b", "f0", "a"),
            Part::half("spark-a", "f0", "a"),
        ]];
        let all: BTreeSet<Part> = lists[0].iter().cloned().collect();
        let out = peers(
            vec![merged(Part::half("spark-b", "f0", "a"), vec![0])],
            &lists,
            &all,
        );
        assert_eq!(
            out[0].name.as_deref(),
            Some("spark-a.f0.a, or spark-b.f0.a")
        );
    }
}
