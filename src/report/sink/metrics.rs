//! `run --metrics FILE`: the run's results in the Prometheus text exposition format (0.0.4),
//! for node_exporter's textfile collector. The file is replaced atomically (a temporary file in
//! the same directory, then a rename), so the collector never reads half of it; its temporary
//! name does not end in `.prom`, so the collector never reads it at all.
//!
//! Gauges in base units (bits and bytes per second, seconds), no timestamps (the collector's
//! scrape time applies; `fabricplan_run_start_time_seconds` says when the run was), one
//! counter family (`_total`) for the RDMA counters' deltas. Every series carries `plan`, so the
//! files of several plans can sit in one directory. The metric and label names are documented
//! in the README ("Metrics for Prometheus").
//!
//! Series count: one bandwidth and one expected-bandwidth series per measured flow and round,
//! one gate-outcome series per gate. An all-pairs plan measures n(n-1) flows per half: 64 nodes
//! with two halves are 8,064 flows, about 16,000 bandwidth series and as many gate series; the
//! per-size NCCL series add about 25 per test.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::files::output::Existing;
use crate::kinds;
use crate::results::Event;
use crate::results::RunResults;

/// A label value escaped as the exposition format says: `\\`, `\"` and `\n`.
pub fn escape_label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A HELP text escaped: `\\` and `\n`.
fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: Go's float formatting as Prometheus reads it (`+Inf`, `NaN`).
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

/// `value * 10^exp` written exactly (`111.52e9`, not `111519999999.99998`).
fn scaled(v: f64, exp: i32) -> String {
    if v.is_finite() && v != 0.0 {
        format!("{v}e{exp}")
    } else {
        value(v)
    }
}

/// The labels of one sample, in order.
type Labels = Vec<(&'static str, String)>;

/// A metric family: its samples, each label set once.
struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<(Labels, String)>,
    seen: BTreeSet<Labels>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
            seen: BTreeSet::new(),
        }
    }

    /// A gauge with one sample.
    fn single(name: &'static str, help: &'static str, labels: Labels, v: f64) -> Family {
        let mut f = Family::new(name, "gauge", help);
        f.add(labels, v);
        f
    }

    /// Add a sample; a label set already there keeps its first value (a duplicate series makes
    /// the collector reject the whole file).
    fn add(&mut self, labels: Labels, v: f64) {
        self.add_text(labels, value(v));
    }

    fn add_text(&mut self, labels: Labels, v: String) {
        if self.seen.insert(labels.clone()) {
            self.samples.push((labels, v));
        }
    }
}

/// The exposition text, written family after family: its HELP and TYPE lines, then one line
/// per sample. A family without samples is left out.
#[derive(Default)]
struct Writer {
    out: String,
}

impl Writer {
    fn families(&mut self, families: &[Family]) {
        for f in families {
            self.family(f);
        }
    }

    fn family(&mut self, f: &Family) {
        if f.samples.is_empty() {
            return;
        }
        self.help_and_type(f);
        for (labels, v) in &f.samples {
            self.sample(f.name, labels, v);
        }
    }

    fn help_and_type(&mut self, f: &Family) {
        self.out.push_str(&format!(
            "# HELP {} {}\n# TYPE {} {}\n",
            f.name,
            escape_help(f.help),
            f.name,
            f.kind
        ));
    }

    fn sample(&mut self, name: &str, labels: &Labels, v: &str) {
        let l: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
            .collect();
        self.out
            .push_str(&format!("{name}{{{}}} {v}\n", l.join(",")));
    }
}

/// The run as Prometheus text.
pub fn render(r: &RunResults) -> String {
    let mut w = Writer::default();
    w.families(&run_families(r));
    w.family(&gate_family(r));
    w.family(&finding_family(r));
    w.families(&kind_families(r));
    w.family(&counter_family(r));
    w.families(&port_counter_families(r));
    w.out
}

/// Each planned half's port counters once the rounds were done (the family names, labels and
/// help texts `check --metrics` writes, with `source="run"`), and how much each grew during
/// the run.
fn port_counter_families(r: &RunResults) -> Vec<Family> {
    use crate::results::counters::{
        CARRIER_CHANGES, CARRIER_FAMILY, CARRIER_HELP, PORT_COUNTER_FAMILY, PORT_COUNTER_HELP,
    };
    let mut read = Family::new(PORT_COUNTER_FAMILY, "counter", PORT_COUNTER_HELP);
    let mut carrier = Family::new(CARRIER_FAMILY, "counter", CARRIER_HELP);
    let mut grew = Family::new(
        "fabricplan_half_port_counter_run_growth",
        "gauge",
        "How much a half's port counter (or its netdev's carrier_changes) grew during the run, from discovery to the probe once the rounds were done",
    );
    for h in &r.port_counters {
        let half = || {
            vec![
                plan_label(r),
                ("node", h.node.clone()),
                ("half", h.half.clone()),
                ("netdev", h.netdev.clone().unwrap_or_default()),
            ]
        };
        for (k, v) in &h.after {
            let mut l = half();
            if k == CARRIER_CHANGES {
                l.push(("source", "run".into()));
                carrier.add(l, *v as f64);
            } else {
                l.extend([("counter", k.clone()), ("source", "run".into())]);
                read.add(l, *v as f64);
            }
        }
        for (k, d) in h.grew() {
            let mut l = half();
            l.push(("counter", k.to_string()));
            grew.add(l, d as f64);
        }
    }
    vec![read, carrier, grew]
}

/// The `plan` label every series carries.
fn plan_label(r: &RunResults) -> (&'static str, String) {
    ("plan", r.plan.clone())
}

/// The run as a whole: its verdict, failure, warning and not-measured counts, exit code,
/// whether it was simulated, when it started and how long it took.
fn run_families(r: &RunResults) -> Vec<Family> {
    let plan = || vec![plan_label(r)];
    vec![
        Family::single(
            "fabricplan_run_verdict",
            "1, with the run's one-line verdict in the verdict label (ALL GREEN, PASS with N warning(s), N FAIL, NOTHING MEASURED).",
            vec![plan_label(r), ("verdict", r.summary.verdict.clone())],
            1.0,
        ),
        Family::single(
            "fabricplan_run_failures",
            "Broken parts the run found failing (a FAIL that follows from one is not counted again).",
            plan(),
            r.summary.fail as f64,
        ),
        Family::single(
            "fabricplan_run_warnings",
            "Gates that warned in the run.",
            plan(),
            r.summary.warn as f64,
        ),
        Family::single(
            "fabricplan_run_jobs_not_measured",
            "Jobs of the run that could not measure or were skipped.",
            plan(),
            r.summary.jobs_not_measured as f64,
        ),
        Family::single(
            "fabricplan_run_exit_code",
            "The run's exit code (0 green or warnings, 1 a failure, 130 interrupted).",
            plan(),
            f64::from(r.summary.exit_code),
        ),
        Family::single(
            "fabricplan_run_simulated",
            "1 when the run was on the simulated fabric (--sim), else 0.",
            plan(),
            if r.simulated { 1.0 } else { 0.0 },
        ),
        Family::single(
            "fabricplan_run_start_time_seconds",
            "When the run started, seconds since the Unix epoch.",
            plan(),
            r.started_unix_ms as f64 / 1000.0,
        ),
        Family::single(
            "fabricplan_run_duration_seconds",
            "How long the run took.",
            plan(),
            r.finished_unix_ms.saturating_sub(r.started_unix_ms) as f64 / 1000.0,
        ),
    ]
}

/// One series per gate, preflight first: 1, its outcome in a label.
fn gate_family(r: &RunResults) -> Family {
    let mut outcome = Family::new(
        "fabricplan_gate_outcome",
        "gauge",
        "1 for each gate, its outcome (ok, warn, fail) in the outcome label.",
    );
    let verdicts = r
        .preflight
        .iter()
        .chain(r.jobs.iter().flat_map(|j| j.verdicts.iter()));
    for v in verdicts {
        outcome.add(
            vec![
                plan_label(r),
                ("gate", v.gate.clone()),
                ("outcome", v.outcome.as_str().to_ascii_lowercase()),
            ],
            1.0,
        );
    }
    outcome
}

/// One series per broken part the diagnosis named: the number of gates that follow from it
/// (1 + followers), its part, trap, outcome and host in labels.
fn finding_family(r: &RunResults) -> Family {
    let mut f = Family::new(
        "fabricplan_finding",
        "gauge",
        "For each broken part the run found: its evidence and the gates that follow from it, counted; the part, its trap, outcome and the host its fix runs on in labels.",
    );
    for x in &r.findings {
        f.add(
            vec![
                plan_label(r),
                ("part", x.name.clone()),
                ("trap", x.trap_name.clone()),
                ("outcome", x.outcome.as_str().to_ascii_lowercase()),
                ("host", x.host.clone().unwrap_or_default()),
            ],
            (x.evidence.len() + x.follows.len()) as f64,
        );
    }
    f
}

/// The families the test kinds feed (link bandwidth and latency per flow, NCCL's per test),
/// in the kinds' order, each with the samples of every job of the run in job order.
fn kind_families(r: &RunResults) -> Vec<Family> {
    let mut families: Vec<Family> = kinds::view::families()
        .into_iter()
        .map(|f| Family::new(f.name, f.kind, f.help))
        .collect();
    for j in &r.jobs {
        let Some(kind) = kinds::of(j) else {
            continue;
        };
        for s in kind.samples(r, j) {
            if let Some(f) = families.iter_mut().find(|f| f.name == s.family.name) {
                let mut labels = vec![plan_label(r)];
                labels.extend(s.labels);
                f.add_text(labels, scaled(s.value, s.exp));
            }
        }
    }
    families
}

/// The RDMA counters' growth, summed per host, device and counter over the run.
fn counter_family(r: &RunResults) -> Family {
    let mut counters = Family::new(
        "fabricplan_rdma_counter_delta_total",
        "counter",
        "Growth of an RDMA device counter over the run's jobs (port_xmit_data and port_rcv_data count 4-byte words).",
    );
    let mut sums: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    // the run's own totals (taken before digested jobs shed counters); older results: the jobs'
    for c in &r.counter_totals {
        *sums
            .entry((c.host.clone(), c.device.clone(), c.counter.clone()))
            .or_insert(0) += c.delta;
    }
    if r.counter_totals.is_empty() {
        for j in &r.jobs {
            for c in &j.counters {
                *sums
                    .entry((c.host.clone(), c.device.clone(), c.counter.clone()))
                    .or_insert(0) += c.delta;
            }
        }
    }
    for ((host, device, counter), d) in sums {
        counters.add(
            vec![
                plan_label(r),
                ("host", host),
                ("device", device),
                ("counter", counter),
            ],
            d.max(0) as f64,
        );
    }
    counters
}

/// The metrics file of a run, replaced atomically when the run finishes.
pub struct MetricsSink {
    path: PathBuf,
}

impl MetricsSink {
    pub fn new(path: &Path) -> MetricsSink {
        MetricsSink {
            path: path.to_path_buf(),
        }
    }
}

impl Sink for MetricsSink {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn outputs(&self) -> Vec<(PathBuf, Existing)> {
        vec![(self.path.clone(), Existing::Replace)]
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = self
            .path
            .file_name()
            .ok_or_else(|| io::Error::other("the metrics path names no file"))?
            .to_string_lossy()
            .into_owned();
        write_atomic(&dir, &name, render(r).as_bytes()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escaped_per_the_format() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(scaled(111.52, 9), "111.52e9");
        assert_eq!(scaled(0.0, 9), "0");
    }
}
