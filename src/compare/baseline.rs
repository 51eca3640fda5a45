//! A run judged against a baseline run too: every measurement both have becomes one more
//! verdict beside its gate, OK when it held, WARN ("regression against baseline") when it
//! dropped (bandwidth) or rose (latency, time) by more than the plan allows, even when it still
//! clears the absolute gate. NCCL rows become one verdict per test and quantity (bus bandwidth
//! by size, time by size) naming the worst size.
//!
//! A baseline verdict's gate ends in [`SUFFIX`], its `expected` is the baseline's value, its
//! `detail` says "was X" and it carries no metric, so nothing reads it as a measurement.

use std::collections::BTreeMap;

use super::diff::{Comparison, Row, compare};
use super::entry::Quantity;
use super::threshold::Thresholds;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::RunResults;
use crate::text::size;

pub use super::entry::{SUFFIX, is_baseline_verdict};

/// A baseline a run is judged against (`run --baseline`), read before the run.
#[derive(Debug)]
pub struct Baseline {
    pub results: std::sync::Arc<RunResults>,
    /// Its results.json as read, copied into the new run's directory.
    pub text: String,
    pub thresholds: Thresholds,
}

/// Add the baseline's verdicts to a finished run and summarize it again.
pub fn judge(results: &mut RunResults, b: &Baseline) {
    let v = baseline_verdicts(results, &b.results, &b.thresholds);
    apply(results, v);
}

/// The trap name of a regression against the baseline.
pub const TRAP_NAME: &str = "regression against baseline";

/// `111.52`, `98.24`, `1.47`, `5681.3`: two decimals (the tools print two), one from 1000 on.
pub fn fmt_val(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `+0.2%`, `-10.3%`.
pub fn fmt_change(c: Option<f64>) -> String {
    match c {
        Some(c) => format!("{c:+.1}%"),
        None => "-".into(),
    }
}

/// The verdicts of `new` against `old` (the baseline), each with the id of the job of `new`
/// it belongs to, in the new run's order.
pub fn baseline_verdicts(
    new: &RunResults,
    old: &RunResults,
    thresholds: &Thresholds,
) -> Vec<(String, Verdict)> {
    verdicts_of(&compare(old, new, thresholds), old)
}

/// The baseline verdicts of a comparison already made (`old` is its baseline run).
pub fn verdicts_of(c: &Comparison, old: &RunResults) -> Vec<(String, Verdict)> {
    let mut out = Vec::new();
    // NCCL rows: grouped per job and quantity, in order of first appearance
    let mut groups: BTreeMap<(usize, String, Quantity), Vec<&Row>> = BTreeMap::new();
    let mut first: BTreeMap<(String, Quantity), usize> = BTreeMap::new();
    for (i, r) in c.rows.iter().enumerate() {
        match r.key.quantity {
            Quantity::Gate => out.push((i, r.job.clone(), gate_verdict(r, old))),
            q => {
                let at = *first.entry((r.job.clone(), q)).or_insert(i);
                groups.entry((at, r.job.clone(), q)).or_default().push(r);
            }
        }
    }
    for ((at, job, q), rows) in groups {
        out.push((at, job, rows_verdict(q, &rows, old)));
    }
    out.sort_by_key(|(i, _, _)| *i);
    out.into_iter().map(|(_, j, v)| (j, v)).collect()
}

fn bound(r: &Row) -> f64 {
    if r.higher_is_better {
        r.old * (1.0 - r.max_drop_pct / 100.0)
    } else {
        r.old * (1.0 + r.max_drop_pct / 100.0)
    }
}

fn threshold(r: &Row) -> String {
    let (cmp, sign) = if r.higher_is_better {
        (">=", "-")
    } else {
        ("<=", "+")
    };
    format!(
        "{cmp} {} {} (baseline {} {sign} {}%)",
        fmt_val(bound(r)),
        r.unit,
        fmt_val(r.old),
        r.max_drop_pct
    )
}

fn was(r: &Row) -> String {
    format!(
        "was {} {u}, now {} {u} ({})",
        fmt_val(r.old),
        fmt_val(r.new),
        fmt_change(r.change_pct),
        u = r.unit
    )
}

fn fix(old: &RunResults) -> String {
    format!(
        "find what changed since baseline run `{}` (firmware, driver, cabling, switch configuration, other traffic) with `fabricplan compare`",
        old.run_id
    )
}

fn verdict(gate: String, outcome: Outcome, r: &Row, detail: String, old: &RunResults) -> Verdict {
    Verdict {
        follows: None,
        implicates: Vec::new(),
        clears: Vec::new(),
        reached: Vec::new(),
        flow: None,
        gate,
        metric: None,
        outcome,
        measured: Some(r.new),
        unit: r.unit.clone(),
        threshold: threshold(r),
        expected: Some(r.old),
        trap: None,
        trap_name: (outcome != Outcome::Ok).then(|| TRAP_NAME.to_string()),
        fix: (outcome != Outcome::Ok).then(|| fix(old)),
        detail,
        attempts: Vec::new(),
    }
}

fn gate_verdict(r: &Row, old: &RunResults) -> Verdict {
    let outcome = if r.regression {
        Outcome::Warn
    } else {
        Outcome::Ok
    };
    verdict(
        format!("{}{SUFFIX}", r.key.subject),
        outcome,
        r,
        was(r),
        old,
    )
}

fn rows_verdict(q: Quantity, rows: &[&Row], old: &RunResults) -> Verdict {
    let what = match q {
        Quantity::Busbw => "busbw by size",
        _ => "time by size",
    };
    let subject = &rows[0].key.subject;
    let gate = format!("{subject} {what}{SUFFIX}");
    // the worst size: the largest worsening
    let worst = rows
        .iter()
        .max_by(|a, b| {
            let w = |r: &Row| r.worsening_pct().unwrap_or(f64::NEG_INFINITY);
            w(a).total_cmp(&w(b))
        })
        .copied()
        .unwrap_or(rows[0]);
    let bad: Vec<&&Row> = rows.iter().filter(|r| r.regression).collect();
    let at = worst.key.size_bytes.map(size::format).unwrap_or_default();
    if bad.is_empty() {
        let detail = format!(
            "{} size(s) within {}% of the baseline; worst {at}: {}",
            rows.len(),
            worst.max_drop_pct,
            was(worst)
        );
        return verdict(gate, Outcome::Ok, worst, detail, old);
    }
    let detail = format!(
        "{} of {} size(s) beyond {}% of the baseline; worst {at}: {}",
        bad.len(),
        rows.len(),
        worst.max_drop_pct,
        was(worst)
    );
    let mut v = verdict(gate, Outcome::Warn, worst, detail, old);
    v.fix = Some(format!(
        "find what changed since baseline run `{}` (NCCL and driver versions, NCCL_* settings, firmware, cabling) with `fabricplan compare`",
        old.run_id
    ));
    v
}

/// Add baseline verdicts to their jobs (after the job's own) and summarize again. Verdicts of a
/// job `r` does not have are dropped.
pub fn apply(r: &mut RunResults, verdicts: Vec<(String, Verdict)>) {
    for (job, mut v) in verdicts {
        if let Some(j) = r.jobs.iter_mut().find(|j| j.job == job) {
            // a regression is about what the job's own gates are about: all of them (a sum of
            // two halves regresses with either)
            let mut parts = Vec::new();
            for g in &j.verdicts {
                for p in g.implicates.iter().chain(&g.clears) {
                    if !parts.contains(p) {
                        parts.push(p.clone());
                    }
                }
            }
            v.set_about(parts);
            // and it measures the flow of the gate it compares
            v.flow = v
                .gate
                .strip_suffix(SUFFIX)
                .and_then(|gate| j.verdicts.iter().find(|g| g.gate == gate))
                .and_then(|g| g.flow.clone());
            j.verdicts.push(v);
        }
    }
    r.summarize();
}

/// Remove every baseline verdict (before judging against another baseline) and summarize.
pub fn strip(r: &mut RunResults) {
    for j in &mut r.jobs {
        j.verdicts.retain(|v| !is_baseline_verdict(v));
    }
    r.summarize();
}

/// The baseline verdicts of `r`, with the job each belongs to.
pub fn of(r: &RunResults) -> Vec<(&crate::results::JobResult, &Verdict)> {
    r.jobs
        .iter()
        .flat_map(|j| j.verdicts.iter().map(move |v| (j, v)))
        .filter(|(_, v)| is_baseline_verdict(v))
        .collect()
}
