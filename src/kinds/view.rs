//! What the reports show of a kind, as data: the reports (summary.md, report.html, the metrics
//! file) and `compare` ask a kind's descriptor for these and render them; nothing here is
//! markup, and no report names a kind.

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::Metric;
use crate::results::{Flow, JobResult, RunResults, flow_of, flow_of_verdict, node_names};

/// A kind whose pairs go in the node x node bandwidth matrix (summary.md's table, report.html's
/// heatmap): how its cells are told apart from other kinds' in one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matrix {
    /// After a cell's half: `""` (`a`, one half alone), `"+"` (`a+`, both halves at once).
    pub tag: &'static str,
    /// The legend's words for the cells of this kind (after their tags).
    pub legend: &'static str,
}

/// One measured pair of the node x node matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixCell<'r> {
    pub job: &'r JobResult,
    /// The verdict of the pair's main measurement.
    pub verdict: &'r Verdict,
    /// The sending end (the matrix's row) and the receiving one (its column).
    pub client: &'r str,
    pub server: &'r str,
    /// The client's half with the kind's tag: `a`, `b+`.
    pub tag: String,
    pub value: f64,
    pub outcome: Outcome,
}

/// Every measured pair of every matrix kind, in job order: each job of two hosts whose kind has
/// a [`Matrix`], its first measured verdict.
pub fn matrix(r: &RunResults) -> Vec<MatrixCell<'_>> {
    let mut out = Vec::new();
    let nodes = node_names(r);
    for j in &r.jobs {
        let Some(m) = super::of(j).and_then(|k| k.matrix()) else {
            continue;
        };
        let [server, client] = j.hosts.as_slice() else {
            continue;
        };
        let Some(v) = j
            .verdicts
            .iter()
            .find(|v| v.metric.is_some() && v.measured.is_some())
        else {
            continue;
        };
        // the client's half (of its flow, or of the label of results written before verdicts
        // carried their flow: `NODE.PORT.HALF -> ...`)
        let flow = flow_of_verdict(v, &nodes).or_else(|| flow_of(&j.label, &nodes));
        let half = flow.as_ref().map_or("?", |f| f.half.as_str());
        out.push(MatrixCell {
            job: j,
            verdict: v,
            client,
            server,
            // an end measured alone against its own NIC says so on its diagonal cell
            tag: match &flow {
                Some(f) if f.src_endpoint() == f.dst_endpoint() => {
                    format!("{half}{} loopback", m.tag)
                }
                _ => format!("{half}{}", m.tag),
            },
            value: v.measured.unwrap_or_default(),
            outcome: v.outcome,
        });
    }
    out
}

/// The legend of the matrix kinds, registry order: (tag, words, kind).
pub fn matrix_legend() -> Vec<(&'static str, &'static str, &'static str)> {
    super::ALL
        .iter()
        .filter_map(|k| k.matrix().map(|m| (m.tag, m.legend, k.id().name())))
        .collect()
}

/// A job's figures over the message sizes it swept (NCCL's in-place bus bandwidth and time per
/// size): `compare` matches them by size, report.html draws the curve, the metrics file has a
/// series per size.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// What the curve is of, the same in every run of the plan: the test and its binary
    /// (`nccl all_reduce (all_reduce_perf)`).
    pub subject: String,
    /// The metric a row's bandwidth is judged like (its unit, which way is better), and its
    /// time.
    pub bandwidth: Metric,
    pub time: Metric,
    /// In the job's order; empty when nothing was measured.
    pub rows: Vec<SweepRow>,
}

/// One message size of a [`Sweep`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepRow {
    pub size_bytes: u64,
    /// In the bandwidth metric's unit, when read and finite.
    pub bandwidth: Option<f64>,
    /// In the time metric's unit, when read and finite.
    pub time: Option<f64>,
}

/// The sweep of `j`, when its kind sweeps message sizes.
pub fn sweep(j: &JobResult) -> Option<Sweep> {
    super::of(j)?.sweep(j)
}

/// A family of the metrics file (Prometheus text): its name, type and help.
#[derive(Debug, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    /// `gauge` or `counter`.
    pub kind: &'static str,
    pub help: &'static str,
}

/// One sample of a family: its labels after `plan`, and its value times ten to `exp` (a value
/// in Gb/s is `exp = 9` bits per second).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub family: &'static Family,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
    pub exp: i32,
}

/// How a per-flow metric goes to the metrics file: a sample of `family` per measured flow,
/// labelled by the flow, and one of `expected` with its expected value.
#[derive(Debug)]
pub struct FlowSeries {
    pub metric: Metric,
    pub family: &'static Family,
    pub exp: i32,
    pub expected: Option<&'static Family>,
}

/// Measured RDMA and TCP bandwidth per flow, bits per second.
pub static LINK_BANDWIDTH: Family = Family {
    name: "fabricplan_link_bandwidth_bits_per_second",
    kind: "gauge",
    help: "Measured RDMA bandwidth of one flow (client src to server dst), one half or both halves summed (half=\"both\").",
};

/// The capacity model's expected bandwidth per flow.
pub static LINK_EXPECTED: Family = Family {
    name: "fabricplan_link_expected_bandwidth_bits_per_second",
    kind: "gauge",
    help: "The capacity model's expected bandwidth of the flow in its round.",
};

/// Measured latency per flow, seconds.
pub static LINK_LATENCY: Family = Family {
    name: "fabricplan_link_latency_seconds",
    kind: "gauge",
    help: "Measured RDMA latency of one flow (ib_write_lat typical).",
};

/// The flow labels of a sample: kind, round, the two ends and the half.
pub fn flow_labels(j: &JobResult, f: Flow) -> Vec<(&'static str, String)> {
    vec![
        ("kind", j.kind.clone()),
        ("round", j.round_name.clone()),
        ("src", f.src),
        ("src_port", f.src_port),
        ("dst", f.dst),
        ("dst_port", f.dst_port),
        ("half", f.half),
    ]
}

/// The samples of a job's verdicts under `series`: each measured verdict of a series' metric
/// whose gate names a flow, and its expected value.
pub fn flow_samples(series: &[FlowSeries], r: &RunResults, j: &JobResult) -> Vec<Sample> {
    let mut out = Vec::new();
    let nodes = node_names(r);
    for v in &j.verdicts {
        let (Some(metric), Some(m)) = (v.metric, v.measured) else {
            continue;
        };
        let Some(s) = series.iter().find(|s| s.metric == metric) else {
            continue;
        };
        let Some(flow) = flow_of_verdict(v, &nodes) else {
            continue;
        };
        let labels = flow_labels(j, flow);
        if let (Some(f), Some(e)) = (s.expected, v.expected) {
            out.push(Sample {
                family: f,
                labels: labels.clone(),
                value: e,
                exp: s.exp,
            });
        }
        out.push(Sample {
            family: s.family,
            labels,
            value: m,
            exp: s.exp,
        });
    }
    out
}

/// Every family the kinds feed, in registry order (each once).
pub fn families() -> Vec<&'static Family> {
    let mut out: Vec<&'static Family> = Vec::new();
    for f in super::ALL.iter().flat_map(|k| k.families()) {
        if !out.iter().any(|o| std::ptr::eq(*o, f)) {
            out.push(f);
        }
    }
    out
}

/// The families of `kind`'s flow series: each metric's, then its expected one.
pub(super) fn series_families(series: &'static [FlowSeries]) -> Vec<&'static Family> {
    series
        .iter()
        .flat_map(|s| std::iter::once(s.family).chain(s.expected))
        .collect()
}
