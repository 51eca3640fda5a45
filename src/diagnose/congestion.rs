//! Congestion as evidence: pause frames and CNPs (and ECN marks) rising on halves whose
//! bandwidth fell point at flow control, not at the halves or their cables: on a switched
//! fabric at the switch those halves hang off (its PFC/ECN configuration or its buffers), on a
//! direct link at the PFC/ECN configuration of the host that sends the pauses and CNPs. One
//! FAIL about that part, and each low bandwidth gate through the congested halves names it too,
//! so the diagnosis makes them one finding. Congestion counters rising while bandwidth passes
//! are congestion control doing its work: an OK verdict that says so, never a FAIL on its own.
//! Pure; idempotent (a verdict already there is not added again).

use std::collections::{BTreeMap, HashSet};

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::{Endpoint, Plan};
use crate::results::RunResults;
use crate::results::counters::{CONGESTION_COUNTERS, HalfCounters};

/// The gate of the congestion verdict about `part`.
pub fn gate(part: &Part) -> String {
    format!("congestion {}", part.name())
}

/// The counters a half increments when it holds its sender back (pauses sent, CNPs sent).
const SENDING: &[&str] = &["tx-pause", "np_cnp_sent", "np_ecn_marked_roce_packets"];

/// One congested half: where it sits and what grew.
struct Congested<'r> {
    endpoint: Endpoint,
    counters: &'r HalfCounters,
    grew: Vec<(String, u64)>,
}

/// The halves whose congestion counters grew during the run.
fn congested<'r>(plan: &Plan, r: &'r RunResults) -> Vec<Congested<'r>> {
    let by_name: BTreeMap<String, Endpoint> = plan
        .segments
        .iter()
        .flat_map(|s| &s.members)
        .map(|m| (plan.endpoint_name(&m.endpoint), m.endpoint.clone()))
        .collect();
    r.port_counters
        .iter()
        .filter_map(|h| {
            let grew: Vec<(String, u64)> = h
                .grew()
                .into_iter()
                .filter(|(k, d)| *d > 0 && CONGESTION_COUNTERS.contains(k))
                .filter(|(k, _)| !k.ends_with("discards"))
                .map(|(k, d)| (k.to_string(), d))
                .collect();
            let endpoint = by_name.get(&h.half)?.clone();
            (!grew.is_empty()).then_some(Congested {
                endpoint,
                counters: h,
                grew,
            })
        })
        .collect()
}

/// The part congestion on `halves` points at: the switch most of them hang off, else the node
/// that sends most pauses and CNPs (no switch: its PFC/ECN configuration).
fn part_of(plan: &Plan, halves: &[Congested<'_>]) -> Option<Part> {
    let mut switches: BTreeMap<usize, usize> = BTreeMap::new();
    for c in halves {
        if let Some(sw) = plan.member_of(&c.endpoint).and_then(|(_, m)| m.switch) {
            *switches.entry(sw.0).or_default() += 1;
        }
    }
    if let Some((sw, _)) = switches.iter().max_by_key(|(i, n)| (**n, usize::MAX - **i)) {
        return Some(Part::Switch {
            name: plan.switches.get(*sw)?.name.clone(),
        });
    }
    let mut sends: BTreeMap<&str, u64> = BTreeMap::new();
    for c in halves {
        let s: u64 = c
            .grew
            .iter()
            .filter(|(k, _)| SENDING.contains(&k.as_str()))
            .map(|(_, d)| d)
            .sum();
        *sends.entry(c.counters.node.as_str()).or_default() += s;
    }
    let node = sends
        .iter()
        .max_by_key(|(n, s)| (**s, std::cmp::Reverse(**n)))
        .map(|(n, _)| n.to_string())?;
    Some(Part::node(&node))
}

/// Is `v` a bandwidth gate that fell (FAIL or WARN) on a flow through one of `halves`?
fn slow_through(v: &Verdict, halves: &HashSet<Part>) -> bool {
    v.outcome != Outcome::Ok
        && v.unit.ends_with("b/s")
        && v.implicates.iter().any(|p| halves.contains(p))
}

/// `spark-1.f0.a: rx-pause +1,204, rp_cnp_handled +300`.
fn what_grew(c: &Congested<'_>) -> String {
    let g: Vec<String> = c.grew.iter().map(|(k, d)| format!("{k} +{d}")).collect();
    format!("{}: {}", c.counters.half, g.join(", "))
}

/// Judge congestion on `r`: see the module's doc.
pub fn judge(plan: &Plan, r: &mut RunResults) {
    let halves = congested(plan, r);
    let Some(part) = part_of(plan, &halves) else {
        return;
    };
    let gate = gate(&part);
    if r.preflight.iter().any(|v| v.gate == gate) {
        return;
    }
    let parts: HashSet<Part> = halves.iter().map(|c| plan.half_part(&c.endpoint)).collect();
    const SHOWN: usize = 3;
    let mut said: Vec<String> = halves.iter().take(SHOWN).map(what_grew).collect();
    if halves.len() > SHOWN {
        said.push(format!("{} more", halves.len() - SHOWN));
    }
    let counted = format!(
        "pause frames or CNPs rose during the run on {} half(s) ({})",
        halves.len(),
        said.join("; ")
    );
    let mut slow = 0;
    for j in &mut r.jobs {
        for v in j.verdicts.iter_mut().filter(|v| slow_through(v, &parts)) {
            slow += 1;
            if !v.implicates.contains(&part) {
                v.implicates.push(part.clone());
            }
        }
    }
    let about = match &part {
        Part::Switch { name } => format!("switch {name}'s PFC/ECN configuration or its buffers"),
        p => format!("the PFC/ECN configuration of {} and its peers", p.name()),
    };
    let v = if slow > 0 {
        Verdict::check(
            gate,
            Outcome::Fail,
            format!(
                "{counted} while {slow} bandwidth gate(s) through them fell: flow control holds the traffic back, which points at {about}, not at the halves or their cables"
            ),
            Some(Trap::FlowControl),
        )
    } else {
        Verdict::check(
            gate,
            Outcome::Ok,
            format!("{counted}, and bandwidth passed: congestion control at work"),
            None,
        )
    };
    r.preflight.push(v.about(vec![part]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_gate_is_a_bandwidth_gate_that_fell_through_a_congested_half() {
        let half = Part::half("spark-a", "f0", "a");
        let mut v = Verdict::check("rdma-bw x", Outcome::Fail, "slow", None);
        v.unit = "Gb/s".into();
        v.implicates = vec![half.clone()];
        let set = |p: &Part| HashSet::from([p.clone()]);
        assert!(slow_through(&v, &set(&half)));
        assert!(!slow_through(&v, &set(&Part::half("spark-b", "f0", "a"))));
        v.unit = "us".into();
        assert!(!slow_through(&v, &set(&half)));
    }
}
