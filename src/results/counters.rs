//! Each planned half's port counters over a run, kept in results.json so that runs can be read
//! side by side: a cable whose errors grow run after run (`fabricplan history`), a counter that
//! grew since the last run (`fabricplan compare`), and the same counters in the metrics files of
//! `run --metrics` and `check --metrics` (one family name and help text for both, so that
//! node_exporter's textfile collector takes the two files side by side).
//!
//! A half's counters are its port counters as discovery read them before the first round and as
//! the probe once the rounds were done read them ([`crate::discover::HalfResolution`]'s
//! `port_counters`: the documented `ethtool -S` ones by meaning, the RDMA device's error,
//! retransmission and congestion counters) and its netdev's carrier changes, under
//! [`CARRIER_CHANGES`]. The rounds in which its device's counters showed a flap or errors (the
//! counters read around each round's jobs) are kept beside them. Pure.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::JobResult;
use crate::discover::HalfResolution;
use crate::gate::judge::Verdict;
use crate::gate::trap::Trap;
use crate::plan::{NodeId, Plan};

/// The name a netdev's carrier changes go by among a half's counters.
pub const CARRIER_CHANGES: &str = "carrier_changes";

/// The metric family of a half's port counters as read, in both metrics files.
pub const PORT_COUNTER_FAMILY: &str = "fabricplan_half_port_counter_total";
/// Its help text (the textfile collector wants one help text per family across files).
pub const PORT_COUNTER_HELP: &str = "The half's port error and retransmission counters as read (ethtool -S by meaning, the RDMA counters by name); source says which of fabricplan's commands read them";
/// The metric family of a half's netdev's carrier changes, in both metrics files.
pub const CARRIER_FAMILY: &str = "fabricplan_half_carrier_changes_total";
/// Its help text.
pub const CARRIER_HELP: &str = "The netdev's carrier changes since it was created (a flap adds two); source says which of fabricplan's commands read them";

/// What a counter counts, for what a growth of it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterKind {
    /// Something went wrong on the link or in the transport: errors after FEC, a flap, a
    /// retransmission. Growth is evidence against the cable.
    Error,
    /// Congestion control or flow control acted (CNPs, ECN marks, pause frames, discards):
    /// evidence about the switch or the PFC/ECN configuration, never the cable.
    Congestion,
    /// Normal work of the link (bits FEC corrected on a PAM4 link): shown, never judged.
    Informative,
}

/// The counters of a half that count congestion or flow control.
pub const CONGESTION_COUNTERS: &[&str] = &[
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "rx-pause",
    "tx-pause",
    "rx-discards",
    "tx-discards",
];

/// The counters that only show a link at work.
const INFORMATIVE_COUNTERS: &[&str] = &["corrected-bits"];

/// The counters whose growth during a round is a flap or an error burst that round saw.
pub const FLAP_OR_ERROR: &[&str] = &[
    CARRIER_CHANGES,
    "link_downed",
    "symbol_error",
    "link_error_recovery",
    "port_rcv_errors",
];

impl CounterKind {
    pub fn of(counter: &str) -> CounterKind {
        if CONGESTION_COUNTERS.contains(&counter) {
            CounterKind::Congestion
        } else if INFORMATIVE_COUNTERS.contains(&counter) {
            CounterKind::Informative
        } else {
            CounterKind::Error
        }
    }
}

/// One half's port counters over a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HalfCounters {
    /// `spark-a.f0.a`.
    pub half: String,
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netdev: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Its cable as findings name it (`cable spark-a.f0 -- spark-b.f0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cable: Option<String>,
    /// Seconds between the two readings.
    pub interval_s: f64,
    /// At discovery, before the first round.
    pub before: BTreeMap<String, u64>,
    /// Once the rounds were done.
    pub after: BTreeMap<String, u64>,
    /// The jobs during which its device's counters showed a flap or errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved_in: Vec<Moved>,
}

/// A flap or error counter of a half's device that grew around one job.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Moved {
    pub round: String,
    pub job: String,
    pub counter: String,
    pub delta: u64,
}

impl HalfCounters {
    /// How much each counter read at both ends grew (a counter that went back, reset by a
    /// reboot or a driver reload, says nothing of the run and is left out).
    pub fn grew(&self) -> BTreeMap<&str, u64> {
        self.after
            .iter()
            .filter_map(|(k, a)| Some((k.as_str(), a.checked_sub(*self.before.get(k)?)?)))
            .collect()
    }

    /// Its growth of `counter` per second of the run (`None`: not read at both ends).
    pub fn rate(&self, counter: &str) -> Option<f64> {
        let d = *self.grew().get(counter)?;
        Some(if self.interval_s > 0.0 {
            d as f64 / self.interval_s
        } else {
            0.0
        })
    }

    /// Is a finding about `part` (its short name) about this half or its cable?
    pub fn about(&self, part: &str) -> bool {
        part == self.half || self.cable.as_deref() == Some(part)
    }

    /// `in round `rdma-bw stack.a` (job rdma-bw-r001-j01: carrier_changes +2)`, the rounds
    /// that saw its flap or errors, or nothing.
    pub fn seen_in(&self) -> Option<String> {
        let first = self.moved_in.first()?;
        let mut jobs: Vec<String> = Vec::new();
        for m in self.moved_in.iter().filter(|m| m.job == first.job) {
            jobs.push(format!("{} +{}", m.counter, m.delta));
        }
        let more = {
            let mut others: Vec<&str> = self
                .moved_in
                .iter()
                .filter(|m| m.job != first.job)
                .map(|m| m.job.as_str())
                .collect();
            others.dedup();
            match others.len() {
                0 => String::new(),
                n => format!(" and {n} later job(s)"),
            }
        };
        Some(format!(
            "first seen in round `{}` (job {}: {}){more}",
            first.round,
            first.job,
            jobs.join(", ")
        ))
    }
}

/// A half's counters as one map: its port counters and its carrier changes.
fn counters_of(h: &HalfResolution) -> BTreeMap<String, u64> {
    let mut c = h.port_counters.clone();
    if let Some(v) = h.carrier_changes {
        c.insert(CARRIER_CHANGES.to_string(), v);
    }
    c
}

/// Every planned half read at discovery (`before`) and again once the rounds were done
/// (`after`), `seconds` apart, with the jobs of the run whose counters showed its flap or errors;
/// in the halves' name order.
pub fn over_run(
    plan: &Plan,
    before: &HashMap<NodeId, Vec<HalfResolution>>,
    after: &HashMap<NodeId, Vec<HalfResolution>>,
    seconds: f64,
    jobs: &[JobResult],
) -> Vec<HalfCounters> {
    let now: HashMap<_, &HalfResolution> =
        after.values().flatten().map(|h| (&h.endpoint, h)).collect();
    let moved = moved_by_device(jobs);
    let mut out: Vec<HalfCounters> = before
        .iter()
        .flat_map(|(n, hs)| hs.iter().map(move |h| (n, h)))
        .filter_map(|(n, b)| {
            let a = now.get(&b.endpoint)?;
            let node = plan.node(*n).name.clone();
            Some(HalfCounters {
                half: b.name.clone(),
                netdev: b.netdev.clone(),
                device: b.device.clone(),
                cable: plan.cable_part(&b.endpoint).map(|p| p.name()),
                interval_s: seconds,
                before: counters_of(b),
                after: counters_of(a),
                moved_in: b
                    .device
                    .as_ref()
                    .and_then(|d| moved.get(&(node.as_str(), d.as_str())))
                    .cloned()
                    .unwrap_or_default(),
                node,
            })
        })
        .collect();
    out.sort_by(|a, b| a.half.cmp(&b.half));
    out
}

/// Per (host, device), the jobs around which it showed a flap or errors, in the run's order
/// (one pass over the jobs' counters).
fn moved_by_device(jobs: &[JobResult]) -> HashMap<(&str, &str), Vec<Moved>> {
    let mut out: HashMap<(&str, &str), Vec<Moved>> = HashMap::new();
    for j in jobs {
        for c in &j.counters {
            if c.delta <= 0 || !FLAP_OR_ERROR.contains(&c.counter.as_str()) {
                continue;
            }
            let list = out.entry((c.host.as_str(), c.device.as_str())).or_default();
            if !list
                .iter()
                .any(|m| m.job == j.job && m.counter == c.counter)
            {
                list.push(Moved {
                    round: j.round_name.clone(),
                    job: j.job.clone(),
                    counter: c.counter.clone(),
                    delta: c.delta as u64,
                });
            }
        }
    }
    out
}

/// Tie each flap and link-error verdict of the run's end to the round that saw it: its detail
/// gains where its half's counters first moved (read around each round's jobs).
pub fn place(verdicts: &mut [Verdict], counters: &[HalfCounters]) {
    for v in verdicts {
        if !matches!(v.trap, Some(Trap::LinkFlapped | Trap::LinkErrors)) {
            continue;
        }
        let Some(h) = counters.iter().find(|h| {
            v.gate.ends_with(&format!(" {}", h.half)) || v.gate == format!("changed {}", h.half)
        }) else {
            continue;
        };
        if let Some(seen) = h.seen_in() {
            v.detail = format!("{}; {seen}", v.detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hc(before: &[(&str, u64)], after: &[(&str, u64)]) -> HalfCounters {
        HalfCounters {
            half: "spark-a.f0.a".into(),
            node: "spark-a".into(),
            cable: Some("cable spark-a.f0 -- spark-b.f0".into()),
            interval_s: 10.0,
            before: before.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            after: after.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..HalfCounters::default()
        }
    }

    #[test]
    fn growth_leaves_out_a_reset_and_what_one_end_lacks() {
        let h = hc(
            &[
                ("symbol-errors", 5),
                ("carrier_changes", 10),
                ("crc-errors", 3),
            ],
            &[
                ("symbol-errors", 125),
                ("carrier_changes", 2),
                ("link_downed", 1),
            ],
        );
        let g = h.grew();
        assert_eq!(g.get("symbol-errors"), Some(&120));
        assert_eq!(g.get("carrier_changes"), None, "reset: says nothing");
        assert_eq!(g.get("link_downed"), None);
        assert_eq!(h.rate("symbol-errors"), Some(12.0));
        assert!(h.about("cable spark-a.f0 -- spark-b.f0") && h.about("spark-a.f0.a"));
        assert!(!h.about("spark-a.f0.b"));
    }

    #[test]
    fn kinds() {
        assert_eq!(CounterKind::of("symbol-errors"), CounterKind::Error);
        assert_eq!(CounterKind::of(CARRIER_CHANGES), CounterKind::Error);
        assert_eq!(CounterKind::of("np_cnp_sent"), CounterKind::Congestion);
        assert_eq!(CounterKind::of("rx-pause"), CounterKind::Congestion);
        assert_eq!(CounterKind::of("corrected-bits"), CounterKind::Informative);
    }

    #[test]
    fn a_flap_is_placed_in_the_round_that_saw_it() {
        let mut h = hc(&[], &[]);
        h.moved_in = vec![
            Moved {
                round: "rdma-bw stack.a".into(),
                job: "rdma-bw-r001-j01".into(),
                counter: "carrier_changes".into(),
                delta: 2,
            },
            Moved {
                round: "rdma-bw stack.a".into(),
                job: "rdma-bw-r001-j01".into(),
                counter: "link_downed".into(),
                delta: 1,
            },
            Moved {
                round: "nccl".into(),
                job: "nccl-r009".into(),
                counter: "symbol_error".into(),
                delta: 4,
            },
        ];
        let mut v = vec![Verdict::check(
            "changed spark-a.f0.a",
            crate::gate::judge::Outcome::Fail,
            "it flapped",
            Some(Trap::LinkFlapped),
        )];
        place(&mut v, &[h]);
        assert_eq!(
            v[0].detail,
            "it flapped; first seen in round `rdma-bw stack.a` (job rdma-bw-r001-j01: carrier_changes +2, link_downed +1) and 1 later job(s)"
        );
    }
}
