//! Per round: the measured against the expected value of every flow, with the ISLs it crossed,
//! its pass gate and its baseline. What each bar shows and where its marks fall on the report's
//! scale are computed here; `templates/rounds.html` draws them.

use std::collections::HashMap;

use serde::Serialize;

use super::ctx::{Ctx, IslHop};
use crate::compare;
use crate::gate::judge::{Outcome, Verdict};
use crate::kinds;
use crate::results::{JobResult, JobStatus, RoundRecord};

/// A verdict the round bars draw: a metric measured per flow (bandwidths, latencies).
fn gated(v: &Verdict) -> bool {
    v.metric.and_then(kinds::metric).is_some_and(|m| m.per_flow)
}

/// The bar chart's columns: the flow's label, the bar, the value; one row per verdict.
const LABEL_W: f64 = 320.0;
const BAR_W: f64 = 440.0;
const RIGHT_W: f64 = 420.0;
const ROW_H: f64 = 34.0;

/// The section: every round with something to draw.
#[derive(Serialize)]
pub(super) struct Rounds {
    /// Why the ISLs each flow crossed are not shown (no plan).
    no_isls: Option<String>,
    /// A big run draws only the rounds with a problem, and in them only the problems.
    big: bool,
    rounds: Vec<Round>,
    /// Rounds with every flow OK, not drawn (a big run).
    quiet: usize,
    /// The columns of every chart: label, bar, value; the height of a bar's row.
    label_w: f64,
    bar_w: f64,
    row_h: f64,
}

#[derive(Serialize)]
struct Round {
    number: usize,
    name: String,
    /// Jobs started together, and how far apart their clients started (ms).
    together: Option<(usize, f64)>,
    /// The chart's size; its bars, one per verdict drawn.
    width: f64,
    height: f64,
    bars: Vec<Bar>,
    /// Flows OK and not drawn (a big run).
    hidden_ok: usize,
    unmeasured: Vec<Unmeasured>,
}

/// One verdict's bar: what it measured against what was expected, and where its marks fall.
#[derive(Serialize)]
struct Bar {
    /// The top of its row.
    y: f64,
    outcome: Outcome,
    /// Its outcome, or `follow` (as it is counted).
    word: &'static str,
    gate: String,
    /// The metric's name (`rdma-bw`).
    metric: String,
    /// The flow's two ends, when the gate names one.
    flow: Option<(String, String)>,
    /// The ISLs it crossed (`None` without a plan).
    via: Option<Vec<IslHop>>,
    measured: Option<f64>,
    expected: Option<f64>,
    /// Measured in percent of expected.
    pct: Option<f64>,
    unit: String,
    threshold: String,
    /// The measured bar's width, the expected mark's and the pass gate's x.
    measured_w: Option<f64>,
    expected_x: Option<f64>,
    pass_x: Option<f64>,
    /// The baseline's value, its mark's x, the change against it (percent).
    was: Option<Was>,
}

#[derive(Serialize)]
struct Was {
    value: f64,
    x: f64,
    change: Option<f64>,
}

/// A job of the round that measured nothing, and why.
#[derive(Serialize)]
struct Unmeasured {
    skipped: bool,
    kind: String,
    label: String,
    why: String,
}

/// One scale per unit across the report, so rounds compare at a glance: the largest value
/// drawn (measured, expected, baseline, pass gate).
fn scales(ctx: &Ctx<'_>) -> HashMap<String, f64> {
    let mut scale: HashMap<String, f64> = HashMap::new();
    for j in &ctx.r.jobs {
        for v in j.verdicts.iter().filter(|v| gated(v)) {
            let pass = v.metric.and_then(|m| ctx.pass_bound(m, v.expected));
            let m = [v.measured, v.expected, ctx.was.get(&v.gate).copied(), pass]
                .into_iter()
                .flatten()
                .fold(0.0, f64::max);
            let e = scale.entry(v.unit.clone()).or_insert(0.0);
            *e = e.max(m);
        }
    }
    scale
}

/// The jobs of each round, rounds in order.
fn by_round<'a>(ctx: &Ctx<'a>) -> Vec<((usize, &'a str), Vec<&'a JobResult>)> {
    let mut order: Vec<((usize, &str), Vec<&JobResult>)> = Vec::new();
    let mut at: HashMap<(usize, &str), usize> = HashMap::new();
    for j in &ctx.r.jobs {
        let k = (j.round, j.round_name.as_str());
        let i = *at.entry(k).or_insert_with(|| {
            order.push((k, Vec::new()));
            order.len() - 1
        });
        order[i].1.push(j);
    }
    order
}

/// The section; `None` when the run has no job but NCCL's.
pub(super) fn rounds(ctx: &Ctx<'_>) -> Option<Rounds> {
    if !ctx.r.jobs.iter().any(|j| kinds::sweep(j).is_none()) {
        return None;
    }
    let scale = scales(ctx);
    let big = super::big(ctx.r);
    let records: HashMap<usize, &RoundRecord> =
        ctx.r.rounds.iter().rev().map(|x| (x.index, x)).collect();
    let mut out = Rounds {
        no_isls: ctx.plan.is_none().then(|| {
            ctx.plan_note
                .clone()
                .unwrap_or_else(|| "the run directory has no plan.toml".into())
        }),
        big,
        rounds: Vec::new(),
        quiet: 0,
        label_w: LABEL_W,
        bar_w: BAR_W,
        row_h: ROW_H,
    };
    for ((idx, name), jobs) in by_round(ctx) {
        let all: Vec<&Verdict> = jobs
            .iter()
            .flat_map(|j| j.verdicts.iter().filter(|v| gated(v)))
            .collect();
        let unmeasured: Vec<Unmeasured> = jobs
            .iter()
            .filter(|j| kinds::sweep(j).is_none() && !j.verdicts.iter().any(gated))
            .map(|j| unmeasured_of(j))
            .collect();
        if all.is_empty() && unmeasured.is_empty() {
            continue;
        }
        let shown: Vec<&Verdict> = all
            .iter()
            .copied()
            .filter(|v| !big || v.outcome != Outcome::Ok)
            .collect();
        if big && shown.is_empty() && unmeasured.is_empty() {
            out.quiet += 1;
            continue;
        }
        out.rounds.push(Round {
            number: idx + 1,
            name: name.to_string(),
            together: records
                .get(&idx)
                .and_then(|rec| Some((rec.jobs.len(), rec.launch_skew_ms?))),
            width: LABEL_W + BAR_W + RIGHT_W,
            height: ROW_H * shown.len() as f64 + 4.0,
            bars: bars(ctx, &shown, &scale),
            hidden_ok: all.len() - shown.len(),
            unmeasured,
        });
    }
    Some(out)
}

/// A job that measured nothing: skipped or failed, and why.
fn unmeasured_of(j: &JobResult) -> Unmeasured {
    let why = j
        .verdicts
        .iter()
        .find(|v| v.outcome != Outcome::Ok)
        .map(|v| v.detail.as_str())
        .filter(|d| !d.is_empty())
        .or(j.reason.as_deref())
        .unwrap_or("not measured");
    Unmeasured {
        skipped: j.status == JobStatus::Skipped,
        kind: j.kind.clone(),
        label: j.label.clone(),
        why: why.to_string(),
    }
}

/// A round's bars, one per verdict, on the report's scale for its unit.
fn bars(ctx: &Ctx<'_>, shown: &[&Verdict], scale: &HashMap<String, f64>) -> Vec<Bar> {
    shown
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let max = scale.get(&v.unit).copied().unwrap_or(1.0).max(1e-9) * 1.04;
            let x_of = |val: f64| LABEL_W + (val / max).clamp(0.0, 1.0) * BAR_W;
            let flow = compare::flow_of_verdict(v, &ctx.nodes);
            Bar {
                y: ROW_H * i as f64 + 2.0,
                outcome: v.outcome,
                word: crate::results::tally::word(v),
                gate: v.gate.clone(),
                metric: v.metric.map(|m| m.name().to_string()).unwrap_or_default(),
                via: flow.as_ref().and_then(|f| ctx.isls(f)),
                flow: flow.map(|f| (f.src_endpoint(), f.dst_endpoint())),
                measured: v.measured,
                expected: v.expected,
                pct: v.measured.zip(v.expected).map(|(m, e)| m / e * 100.0),
                unit: v.unit.clone(),
                threshold: v.threshold.clone(),
                measured_w: v.measured.map(|m| (x_of(m) - LABEL_W).max(1.0)),
                expected_x: v.expected.map(x_of),
                pass_x: v
                    .metric
                    .and_then(|m| ctx.pass_bound(m, v.expected))
                    .map(x_of),
                was: ctx.was.get(&v.gate).map(|o| Was {
                    value: *o,
                    x: x_of(*o),
                    change: v.measured.and_then(|m| compare::change_pct(*o, m)),
                }),
            }
        })
        .collect()
}
