//! Parts chosen apart that a person fixes as one: every half of a port failing the same way is
//! the port (an MTU set on the port's netdevs, a cage whose both halves are throttled).

use std::collections::BTreeMap;

use super::cover::Chosen;
use crate::gate::judge::{Reached, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::Plan;

/// A chosen part after merging, with the verdicts it explains (indices into the failing list).
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub part: Part,
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
    _lists: &[Vec<Part>],
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
                    explains: c.explains,
                    name: None,
                    label: None,
                });
            }
            None => out.push(Merged {
                part: c.part,
                explains: c.explains,
                name: None,
                label: None,
            }),
        }
    }
    swapped(out, &verdict)
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
