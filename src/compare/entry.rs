//! What of a run can be compared with another run: every gate's measured value (a link's
//! bandwidth per half and direction, a latency, an NCCL test's 16 KiB time and average bus
//! bandwidth) and every NCCL row (in-place bus bandwidth and time per message size), each under a
//! key that names the same measurement in any run of the plan: kind + round name + gate, or for
//! an NCCL row, test + collective + size.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::{Metric, Unit};
use crate::kinds;
use crate::results::{Flow, JobResult, RunResults, flow_of, node_names};
use crate::text::size;

/// The end of every baseline verdict's gate.
pub const SUFFIX: &str = " vs baseline";

/// Was `v` made by [`super::baseline_verdicts`] (a comparison against the baseline run)?
pub fn is_baseline_verdict(v: &Verdict) -> bool {
    v.metric.is_none() && v.gate.ends_with(SUFFIX)
}

/// What a compared value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Quantity {
    /// The value a gate judged: bandwidth, latency, NCCL 16 KiB time or average bus bandwidth.
    Gate,
    /// NCCL in-place bus bandwidth at one message size, GB/s.
    Busbw,
    /// NCCL in-place time at one message size, us.
    Time,
}

/// The stable name of one measurement across runs of a plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Key {
    /// The job's kind: `rdma-bw`, `rdma-bw-both`, `rdma-lat`, `nccl`...
    pub kind: String,
    /// The round's name (`rdma-bw stack.a`, `R2b`, `nccl all_reduce`).
    pub round: String,
    /// The gate (`rdma-bw spark-b.f0.a -> spark-a.f0.a`), or for an NCCL row the test and its
    /// binary (`nccl all_reduce (all_reduce_perf)`).
    pub subject: String,
    pub quantity: Quantity,
    /// The message size of an NCCL row.
    pub size_bytes: Option<u64>,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.quantity, self.size_bytes) {
            (Quantity::Busbw, Some(s)) => {
                write!(f, "{} busbw at {}", self.subject, size::format(s))
            }
            (Quantity::Time, Some(s)) => write!(f, "{} time at {}", self.subject, size::format(s)),
            _ => write!(f, "{}", self.subject),
        }
    }
}

/// One comparable value of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Key,
    /// The metric whose direction (higher or lower is better) and regression threshold apply.
    pub metric: Metric,
    pub value: f64,
    pub unit: String,
    /// Bandwidths are better higher, latencies and times lower.
    pub higher_is_better: bool,
    /// The job it comes from, in this run.
    pub job: String,
    /// The capacity model's expected value (gates), if any.
    pub expected: Option<f64>,
    /// The gate's outcome (gates only).
    pub outcome: Option<Outcome>,
    pub flow: Option<Flow>,
}

/// Every comparable value of `r`, in job order; a key met twice in one run gets ` #2`, ` #3`.
/// Verdicts added against a baseline are not measurements and are left out.
pub fn entries(r: &RunResults) -> Vec<Entry> {
    let nodes = node_names(r);
    let mut out = Vec::new();
    for j in &r.jobs {
        for v in &j.verdicts {
            if let Some(e) = gate_entry(j, v, &nodes) {
                out.push(e);
            }
        }
        out.extend(sweep_entries(j));
    }
    let mut seen: HashMap<Key, usize> = HashMap::new();
    for e in &mut out {
        let n = seen.entry(e.key.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            e.key.subject = format!("{} #{n}", e.key.subject);
        }
    }
    out
}

fn gate_entry(j: &JobResult, v: &Verdict, nodes: &[String]) -> Option<Entry> {
    if is_baseline_verdict(v) {
        return None;
    }
    let metric = v.metric?;
    let value = v.measured.filter(|x| x.is_finite())?;
    let (unit, higher_is_better) = facts(metric, &v.unit);
    Some(Entry {
        key: Key {
            kind: j.kind.clone(),
            round: j.round_name.clone(),
            subject: v.gate.clone(),
            quantity: Quantity::Gate,
            size_bytes: None,
        },
        metric,
        value,
        unit,
        higher_is_better,
        job: j.job.clone(),
        expected: v.expected,
        outcome: Some(v.outcome),
        flow: flow_of(&v.gate, nodes),
    })
}

/// The entries of a job's sweep over message sizes (NCCL's bus bandwidth and time per size),
/// when its kind sweeps: keyed by the sweep's subject and the size.
fn sweep_entries(j: &JobResult) -> Vec<Entry> {
    let Some(sw) = kinds::sweep(j) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in &sw.rows {
        let key = |quantity| Key {
            kind: j.kind.clone(),
            round: j.round_name.clone(),
            subject: sw.subject.clone(),
            quantity,
            size_bytes: Some(r.size_bytes),
        };
        for (quantity, metric, value) in [
            (Quantity::Busbw, sw.bandwidth, r.bandwidth),
            (Quantity::Time, sw.time, r.time),
        ] {
            let Some(value) = value else { continue };
            let (unit, higher_is_better) = facts(metric, "");
            out.push(Entry {
                key: key(quantity),
                metric,
                value,
                unit,
                higher_is_better,
                job: j.job.clone(),
                expected: None,
                outcome: None,
                flow: None,
            });
        }
    }
    out
}

/// A metric's unit and whether higher is better: its kind's, or (a metric this build does not
/// measure) the unit a verdict gave.
fn facts(metric: Metric, unit: &str) -> (String, bool) {
    match kinds::metric(metric) {
        Some(spec) if unit.is_empty() => (spec.unit.symbol().to_string(), spec.higher_is_better()),
        Some(spec) => (unit.to_string(), spec.higher_is_better()),
        None => (
            unit.to_string(),
            Unit::parse(unit).is_none_or(Unit::higher_is_better),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flows_from_gates() {
        let n = nodes(&["spark-a", "spark-b"]);
        let f = flow_of("rdma-bw spark-b.f0.a -> spark-a.f0.a", &n).unwrap();
        assert_eq!(
            (
                f.src.as_str(),
                f.src_port.as_str(),
                f.dst.as_str(),
                f.half.as_str()
            ),
            ("spark-b", "f0", "spark-a", "a")
        );
        assert_eq!(f.src_endpoint(), "spark-b.f0.a");
        let sum = flow_of("rdma-bw-both spark-b.f0 -> spark-a.f0", &n).unwrap();
        assert_eq!(sum.half, "both");
        assert_eq!(sum.dst_endpoint(), "spark-a.f0");
        // a declared round's name sits between the kind and the flow
        let n6 = nodes(&["gb10-01", "gb10-05"]);
        let r = flow_of("rdma-bw R2b gb10-05.f0.a -> gb10-01.f0.a", &n6).unwrap();
        assert_eq!((r.src.as_str(), r.dst.as_str()), ("gb10-05", "gb10-01"));
        // an end measured alone: from it to itself
        let l = flow_of("R6 rdma-bw spark-b.f0.a loopback", &n).unwrap();
        assert_eq!(
            (l.src_endpoint(), l.dst_endpoint()),
            ("spark-b.f0.a".to_string(), "spark-b.f0.a".to_string())
        );
        assert_eq!(flow_of("rdma-bw spark-b.f0.a looped", &n), None);
        // dotted node names: the longest name wins
        let nd = nodes(&["rack1", "rack1.n1", "rack1.n2"]);
        let d = flow_of("x rack1.n1.f0.b -> rack1.n2.f1.b", &nd).unwrap();
        assert_eq!((d.src.as_str(), d.src_port.as_str()), ("rack1.n1", "f0"));
        assert!(flow_of("mtu spark-a.f0.a", &n).is_none());
        assert!(flow_of("ping x.f0.a -> y.f0.a", &n).is_none());
    }
}
