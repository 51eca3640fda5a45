//! What of a run can be compared with another run: every gate's measured value (a link's
//! bandwidth per half and direction, a latency, an NCCL test's 16 KiB time and average bus
//! bandwidth) and every NCCL row (in-place bus bandwidth and time per message size), each under a
//! key that names the same measurement in any run of the plan: kind + round name + gate, or for
//! an NCCL row, test + collective + size.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::Metric;
use crate::parse::nccl_tests::NcclReport;
use crate::results::{JobResult, RunResults};
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

/// A flow's two ends, read from a gate: `spark-b.f0.a -> spark-a.f0.a` is client `spark-b`
/// port `f0` to server `spark-a` port `f0` on half `a`; a both-halves sum (`spark-b.f0 ->
/// spark-a.f0`) has half `both`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Flow {
    /// The client node (it sends).
    pub src: String,
    pub src_port: String,
    /// The server node (it receives).
    pub dst: String,
    pub dst_port: String,
    pub half: String,
}

impl Flow {
    /// `spark-b.f0.a`, or `spark-b.f0` for a sum.
    pub fn src_endpoint(&self) -> String {
        endpoint(&self.src, &self.src_port, &self.half)
    }

    pub fn dst_endpoint(&self) -> String {
        endpoint(&self.dst, &self.dst_port, &self.half)
    }
}

fn endpoint(node: &str, port: &str, half: &str) -> String {
    if half == "both" {
        format!("{node}.{port}")
    } else {
        format!("{node}.{port}.{half}")
    }
}

/// The flow a gate names (`... CLIENT -> SERVER`), with node names taken from `nodes` (a node
/// name may hold dots). `None` when the gate names no flow of those nodes.
pub fn flow_of(gate: &str, nodes: &[String]) -> Option<Flow> {
    let (left, right) = gate.split_once(" -> ")?;
    let src = left.split_whitespace().last()?;
    let dst = right.split_whitespace().next()?;
    let end = |e: &str| -> Option<(String, String, String)> {
        // the longest node name that prefixes the endpoint
        let node = nodes
            .iter()
            .filter(|n| e.len() > n.len() + 1 && e.starts_with(n.as_str()))
            .filter(|n| e.as_bytes()[n.len()] == b'.')
            .max_by_key(|n| n.len())?;
        let rest = &e[node.len() + 1..];
        let (port, half) = match rest.split_once('.') {
            Some((p, h)) => (p.to_string(), h.to_string()),
            None => (rest.to_string(), "both".to_string()),
        };
        Some((node.clone(), port, half))
    };
    let (s, sp, sh) = end(src)?;
    let (d, dp, dh) = end(dst)?;
    if sh != dh {
        return None;
    }
    Some(Flow {
        src: s,
        src_port: sp,
        dst: d,
        dst_port: dp,
        half: sh,
    })
}

/// Every node name a run knows: discovery's, and every job's hosts.
pub fn node_names(r: &RunResults) -> Vec<String> {
    let mut v: Vec<String> = r.discovery.iter().map(|d| d.node.clone()).collect();
    let mut seen: std::collections::HashSet<String> = v.iter().cloned().collect();
    for j in &r.jobs {
        for h in &j.hosts {
            if seen.insert(h.clone()) {
                v.push(h.clone());
            }
        }
    }
    v
}

/// One comparable value of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Key,
    /// The metric whose direction (higher or lower is better) and regression threshold apply.
    pub metric: Metric,
    pub value: f64,
    pub unit: String,
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
        out.extend(nccl_rows(j));
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
        unit: if v.unit.is_empty() {
            metric.unit().symbol().to_string()
        } else {
            v.unit.clone()
        },
        job: j.job.clone(),
        expected: v.expected,
        outcome: Some(v.outcome),
        flow: flow_of(&v.gate, nodes),
    })
}

/// One NCCL row, read defensively from a job's parsed output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclRow {
    pub size_bytes: u64,
    pub busbw_gbs: Option<f64>,
    pub time_us: Option<f64>,
}

/// The nccl-tests report of a job, when its output was one.
fn nccl_report(j: &JobResult) -> Option<&NcclReport> {
    j.parsed.as_ref()?.get::<NcclReport>()
}

/// The in-place rows of an nccl-tests job's parsed output (empty for any other job).
pub fn nccl_rows_of(j: &JobResult) -> Vec<NcclRow> {
    let Some(r) = nccl_report(j) else {
        return Vec::new();
    };
    r.rows
        .iter()
        .map(|row| {
            let inplace = row.in_place.as_ref();
            let num = |v: Option<f64>| v.filter(|x| x.is_finite());
            NcclRow {
                size_bytes: row.size_bytes,
                busbw_gbs: num(inplace.map(|h| h.busbw_gbs)),
                time_us: num(inplace.map(|h| h.time_us)),
            }
        })
        .collect()
}

/// An nccl-tests job: its kind, or what its parsed output says it is.
pub fn is_nccl(j: &JobResult) -> bool {
    j.kind == "nccl" || nccl_report(j).is_some()
}

/// `nccl all_reduce (all_reduce_perf)`: the test (its round) and the binary that ran.
pub fn nccl_subject(j: &JobResult) -> String {
    let collective = nccl_report(j)
        .and_then(|r| r.collective.as_deref())
        .unwrap_or(&j.kind);
    format!("{} ({collective})", j.round_name)
}

fn nccl_rows(j: &JobResult) -> Vec<Entry> {
    let rows = nccl_rows_of(j);
    if rows.is_empty() {
        return Vec::new();
    }
    let subject = nccl_subject(j);
    let mut out = Vec::new();
    for r in rows {
        let key = |quantity| Key {
            kind: j.kind.clone(),
            round: j.round_name.clone(),
            subject: subject.clone(),
            quantity,
            size_bytes: Some(r.size_bytes),
        };
        if let Some(b) = r.busbw_gbs {
            out.push(Entry {
                key: key(Quantity::Busbw),
                metric: Metric::NcclBusbw,
                value: b,
                unit: "GB/s".into(),
                job: j.job.clone(),
                expected: None,
                outcome: None,
                flow: None,
            });
        }
        if let Some(t) = r.time_us {
            out.push(Entry {
                key: key(Quantity::Time),
                metric: Metric::NcclSmallTime,
                value: t,
                unit: "us".into(),
                job: j.job.clone(),
                expected: None,
                outcome: None,
                flow: None,
            });
        }
    }
    out
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
        // dotted node names: the longest name wins
        let nd = nodes(&["rack1", "rack1.n1", "rack1.n2"]);
        let d = flow_of("x rack1.n1.f0.b -> rack1.n2.f1.b", &nd).unwrap();
        assert_eq!((d.src.as_str(), d.src_port.as_str()), ("rack1.n1", "f0"));
        assert!(flow_of("mtu spark-a.f0.a", &n).is_none());
        assert!(flow_of("ping x.f0.a -> y.f0.a", &n).is_none());
    }
}
