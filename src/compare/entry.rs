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
use crate::results::{Flow, JobResult, RunResults, flow_of_verdict, node_names};
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
        flow: flow_of_verdict(v, nodes),
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
