//! Per round: the measured against the expected value of every flow, with the ISLs it crossed,
//! its pass gate and its baseline.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::ctx::Ctx;
use super::format::{class, esc, fmt_val};
use crate::compare::{self, baseline as base};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::Metric;
use crate::results::{JobResult, JobStatus};

/// A verdict the round bars draw: bandwidth and latency.
fn gated(v: &Verdict) -> bool {
    matches!(
        v.metric,
        Some(Metric::RdmaBw | Metric::RdmaBwBoth | Metric::RdmaLat | Metric::Iperf3)
    )
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

pub(super) fn rounds(h: &mut String, ctx: &Ctx<'_>) {
    // rounds in order, with their bandwidth and latency verdicts
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
    let any = ctx.r.jobs.iter().any(|j| !compare::is_nccl(j));
    if !any {
        return;
    }
    let scale = scales(ctx);
    h.push_str("<section id=\"rounds\"><h2>Rounds: measured against expected</h2>\n<div class=\"legend\"><span><span class=\"swatch\" style=\"background:var(--ok)\"></span>measured (OK / <span style=\"color:var(--warn)\">WARN</span> / <span style=\"color:var(--fail)\">FAIL</span>)</span><span>&#9646; expected (capacity model)</span><span>&#8942; pass gate</span><span>&#9670; baseline</span></div>\n");
    if ctx.plan.is_none() {
        let _ = writeln!(
            h,
            "<p class=\"note\">ISLs crossed are not shown: {}</p>",
            esc(ctx
                .plan_note
                .as_deref()
                .unwrap_or("the run directory has no plan.toml"))
        );
    }
    let big = super::big(ctx.r);
    if big {
        h.push_str("<p class=\"note\">A big run: only the rounds with a WARN, FAIL or unmeasured flow are drawn, and in them only those flows; every gate is in results.json.</p>\n");
    }
    let records: HashMap<usize, &crate::results::RoundRecord> =
        ctx.r.rounds.iter().rev().map(|x| (x.index, x)).collect();
    let mut quiet = 0;
    for ((idx, name), jobs) in &order {
        let all_rows: Vec<(&JobResult, &Verdict)> = jobs
            .iter()
            .flat_map(|j| j.verdicts.iter().filter(|v| gated(v)).map(move |v| (*j, v)))
            .collect();
        let unmeasured: Vec<&&JobResult> = jobs
            .iter()
            .filter(|j| !compare::is_nccl(j) && !j.verdicts.iter().any(gated))
            .collect();
        if all_rows.is_empty() && unmeasured.is_empty() {
            continue;
        }
        let rows: Vec<(&JobResult, &Verdict)> = all_rows
            .iter()
            .filter(|(_, v)| !big || v.outcome != Outcome::Ok)
            .copied()
            .collect();
        if big && rows.is_empty() && unmeasured.is_empty() {
            quiet += 1;
            continue;
        }
        let _ = write!(
            h,
            "<div class=\"round\"><h3>Round {} &#183; {}</h3>",
            idx + 1,
            esc(name)
        );
        if let Some(rec) = records.get(idx)
            && let Some(sk) = rec.launch_skew_ms
        {
            let _ = write!(
                h,
                "<div class=\"note\">{} job(s) together; client launch skew {sk:.1} ms</div>",
                rec.jobs.len()
            );
        }
        round_bars(h, ctx, &rows, &scale);
        if rows.len() < all_rows.len() {
            let _ = write!(
                h,
                "<div class=\"note\">and {} flow(s) OK, not drawn</div>",
                all_rows.len() - rows.len()
            );
        }
        for j in unmeasured {
            let why = j
                .verdicts
                .iter()
                .find(|v| v.outcome != Outcome::Ok)
                .map(|v| v.detail.as_str())
                .filter(|d| !d.is_empty())
                .or(j.reason.as_deref())
                .unwrap_or("not measured");
            let _ = write!(
                h,
                "<div class=\"note\"><span class=\"badge fail\">{}</span> {} {}: not measured: {}</div>",
                if j.status == JobStatus::Skipped {
                    "SKIP"
                } else {
                    "FAIL"
                },
                esc(&j.kind),
                esc(&j.label),
                esc(why)
            );
        }
        h.push_str("</div>\n");
    }
    if quiet > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{quiet} round(s) with every flow OK, not drawn.</p>"
        );
    }
    h.push_str("</section>\n");
}

/// The bar chart's columns: the flow's label, the bar, the value; one row per verdict.
const LABEL_W: f64 = 320.0;
const BAR_W: f64 = 440.0;
const RIGHT_W: f64 = 420.0;
const ROW_H: f64 = 34.0;

/// A round's bars, one per verdict, on the report's scale for its unit.
fn round_bars(
    h: &mut String,
    ctx: &Ctx<'_>,
    rows: &[(&JobResult, &Verdict)],
    scale: &HashMap<String, f64>,
) {
    if rows.is_empty() {
        return;
    }
    let w = LABEL_W + BAR_W + RIGHT_W;
    let hh = ROW_H * rows.len() as f64 + 4.0;
    let _ = write!(
        h,
        "<svg class=\"bars\" width=\"100%\" viewBox=\"0 0 {w:.0} {hh:.0}\" preserveAspectRatio=\"xMinYMin meet\" role=\"img\">"
    );
    for (i, (_, v)) in rows.iter().enumerate() {
        let y = ROW_H * i as f64 + 2.0;
        let max = scale.get(&v.unit).copied().unwrap_or(1.0).max(1e-9) * 1.04;
        let x_of = |val: f64| LABEL_W + (val / max).clamp(0.0, 1.0) * BAR_W;
        bar_label(h, ctx, v, y);
        let color = match v.outcome {
            Outcome::Ok => "#2da44e",
            Outcome::Warn => "#bf8700",
            Outcome::Fail => "#cf222e",
        };
        bar_marks(h, ctx, v, y, color, x_of);
        bar_value(h, ctx, v, y, color);
    }
    h.push_str("</svg>");
}

/// A bar's group opens with its title; the metric, the flow and the ISLs it crossed.
fn bar_label(h: &mut String, ctx: &Ctx<'_>, v: &Verdict, y: f64) {
    let flow = compare::flow_of(&v.gate, &ctx.nodes);
    let label = match &flow {
        Some(f) => format!(
            "{} &#8594; {}",
            esc(&f.src_endpoint()),
            esc(&f.dst_endpoint())
        ),
        None => esc(&v.gate),
    };
    let via = match flow.as_ref().and_then(|f| ctx.isls(f)) {
        Some(isls) if isls.is_empty() => "no ISL".to_string(),
        Some(isls) => format!("via {}", isls.join(", ")),
        None => String::new(),
    };
    let kind = v.metric.map(|m| m.name()).unwrap_or("");
    let _ = write!(
        h,
        "<g class=\"bar {}\"><title>{}: {}{}; gate {}: {}</title>",
        class(v.outcome),
        esc(&v.gate),
        v.measured
            .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
            .unwrap_or_else(|| "not measured".into()),
        v.expected
            .map(|e| format!(", expected {}", fmt_val(e)))
            .unwrap_or_default(),
        esc(&v.threshold),
        v.outcome.as_str()
    );
    let _ = write!(
        h,
        "<text x=\"0\" y=\"{:.1}\" font-size=\"12\"><tspan fill=\"#59636e\">{}</tspan> {label}</text><text x=\"0\" y=\"{:.1}\" font-size=\"10.5\" fill=\"#59636e\">{}</text>",
        y + 12.0,
        esc(kind),
        y + 26.0,
        via
    );
}

/// The bar: its track, the measured value, the expected value, the pass gate, the baseline.
fn bar_marks(
    h: &mut String,
    ctx: &Ctx<'_>,
    v: &Verdict,
    y: f64,
    color: &str,
    x_of: impl Fn(f64) -> f64,
) {
    let (label_w, bar_w) = (LABEL_W, BAR_W);
    let _ = write!(
        h,
        "<rect x=\"{label_w}\" y=\"{:.1}\" width=\"{bar_w}\" height=\"18\" fill=\"#f6f8fa\"/>",
        y + 4.0
    );
    if let Some(m) = v.measured {
        let _ = write!(
            h,
            "<rect x=\"{label_w}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{color}\" rx=\"2\"/>",
            y + 4.0,
            (x_of(m) - label_w).max(1.0)
        );
    }
    if let Some(e) = v.expected {
        let x = x_of(e);
        let _ = write!(
            h,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"26\" fill=\"#1f2328\"/>",
            x - 1.5,
            y
        );
    }
    if let Some(metric) = v.metric
        && let Some(p) = ctx.pass_bound(metric, v.expected)
    {
        let x = x_of(p);
        let _ = write!(
            h,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#1f2328\" stroke-dasharray=\"3 2\"/>",
            y + 1.0,
            y + 25.0
        );
    }
    if let Some(o) = ctx.was.get(&v.gate) {
        let x = x_of(*o);
        let yc = y + 13.0;
        let _ = write!(
            h,
            "<path d=\"M{x:.1} {:.1} L{:.1} {yc:.1} L{x:.1} {:.1} L{:.1} {yc:.1} Z\" fill=\"#8250df\" stroke=\"#fff\"/>",
            yc - 6.0,
            x + 6.0,
            yc + 6.0,
            x - 6.0
        );
    }
}

/// The outcome and the value against the expected and the baseline's; the bar's group closes.
fn bar_value(h: &mut String, ctx: &Ctx<'_>, v: &Verdict, y: f64, color: &str) {
    let mut right = match v.measured {
        Some(m) => format!(
            "<tspan font-weight=\"600\">{} {}</tspan>",
            fmt_val(m),
            esc(&v.unit)
        ),
        None => "not measured".into(),
    };
    if let (Some(m), Some(e)) = (v.measured, v.expected) {
        let _ = write!(right, " of {} ({:.0}%)", fmt_val(e), m / e * 100.0);
    }
    if let Some(o) = ctx.was.get(&v.gate) {
        let _ = write!(
            right,
            " &#183; was {} ({})",
            fmt_val(*o),
            base::fmt_change(v.measured.and_then(|m| compare::change_pct(*o, m)))
        );
    }
    let _ = write!(
        h,
        "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"12\"><tspan fill=\"{color}\" font-weight=\"700\">{}</tspan> {right}</text></g>",
        LABEL_W + BAR_W + 10.0,
        y + 17.0,
        v.outcome.as_str()
    );
}
