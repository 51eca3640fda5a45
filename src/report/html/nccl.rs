//! NCCL: bus bandwidth against message size per test, against the baseline's curve, with the
//! test's gates.

use serde::Serialize;

use super::ctx::Ctx;
use crate::compare::baseline as base;
use crate::kinds::{self, Sweep, SweepRow};
use crate::results::JobResult;

/// One NCCL test: its caption, its chart (or why it has none), its gates.
#[derive(Serialize)]
pub(super) struct Figure {
    caption: String,
    /// Why there is no chart: the job measured no row.
    no_rows: Option<String>,
    chart: Option<Chart>,
    gates: Vec<GateRow>,
}

/// A gate of the test, its name without the test's.
#[derive(Serialize)]
struct GateRow {
    outcome: crate::gate::judge::Outcome,
    /// Its outcome, or `follow` (as it is counted).
    word: &'static str,
    gate: String,
    measured: Option<f64>,
    unit: String,
    /// The threshold, or the evidence of a check.
    text: String,
}

/// Every NCCL test of the run (none: no section).
pub(super) fn nccl(ctx: &Ctx<'_>) -> Vec<Figure> {
    let jobs = ctx
        .r
        .jobs
        .iter()
        .filter_map(|j| Some((j, kinds::sweep(j)?)));
    jobs.map(|(j, sweep)| {
        let old_rows: Vec<SweepRow> = ctx
            .baseline
            .and_then(|b| {
                b.jobs
                    .iter()
                    .filter_map(kinds::sweep)
                    .find(|old| old.subject == sweep.subject)
            })
            .map(|old| old.rows)
            .unwrap_or_default();
        let rows = &sweep.rows;
        let gates = j
            .verdicts
            .iter()
            .map(|v| GateRow {
                outcome: v.outcome,
                word: crate::results::tally::word(v),
                gate: short_gate(j, &sweep.subject, &v.gate).to_string(),
                measured: v.measured,
                unit: v.unit.clone(),
                text: if v.threshold.is_empty() {
                    v.detail.clone()
                } else {
                    v.threshold.clone()
                },
            })
            .collect();
        Figure {
            caption: format!("{} {}", j.round_name, j.label),
            no_rows: rows.is_empty().then(|| {
                j.reason
                    .clone()
                    .unwrap_or_else(|| "nothing was measured".into())
            }),
            chart: chart(ctx, j, &sweep, &old_rows),
            gates,
        }
    })
    .collect()
}

/// An NCCL job's gate without the test's name (`transport`, `16 KiB time`).
fn short_gate<'g>(j: &JobResult, subject: &str, gate: &'g str) -> &'g str {
    [format!("{} {} ", j.kind, j.label), format!("{subject} ")]
        .iter()
        .find_map(|p| gate.strip_prefix(p.as_str()))
        .unwrap_or(gate)
}

/// A chart's frame: its size, margins, and the ranges drawn (log2 of the size, GB/s).
struct Frame {
    w: f64,
    hh: f64,
    l: f64,
    r: f64,
    t: f64,
    b: f64,
    x0: f64,
    x1: f64,
    ymax: f64,
}

impl Frame {
    /// The frame holding every point of both curves and the gate.
    fn around(pts: &[(f64, f64, &SweepRow)], opts: &[(f64, f64)], gate: Option<f64>) -> Frame {
        let x0 = pts
            .iter()
            .map(|p| p.0)
            .chain(opts.iter().map(|p| p.0))
            .fold(f64::INFINITY, f64::min);
        let x1 = pts
            .iter()
            .map(|p| p.0)
            .chain(opts.iter().map(|p| p.0))
            .fold(f64::NEG_INFINITY, f64::max)
            .max(x0 + 1.0);
        let ymax = pts
            .iter()
            .map(|p| p.1)
            .chain(opts.iter().map(|p| p.1))
            .chain(gate)
            .fold(0.0, f64::max)
            .max(0.1)
            * 1.12;
        let (w, hh) = (560.0, 290.0);
        let (l, r, t, b) = (52.0, 30.0, 14.0, 44.0);
        Frame {
            w,
            hh,
            l,
            r,
            t,
            b,
            x0,
            x1,
            ymax,
        }
    }

    fn px(&self, x: f64) -> f64 {
        self.l + (x - self.x0) / (self.x1 - self.x0) * (self.w - self.l - self.r)
    }

    fn py(&self, y: f64) -> f64 {
        self.t + (1.0 - y / self.ymax) * (self.hh - self.t - self.b)
    }
}

/// A chart as the template draws it: its frame, the grid's ticks, the gate and the average
/// as lines, the baseline's curve and the run's (points in pixels), a dot per size.
#[derive(Serialize)]
struct Chart {
    w: f64,
    hh: f64,
    l: f64,
    r: f64,
    t: f64,
    b: f64,
    /// Horizontal grid lines (y, bandwidth) and vertical ones (x, message size).
    ys: Vec<(f64, String)>,
    xs: Vec<(f64, String)>,
    /// The bus bandwidth gate's pass bound: its y and value.
    gate: Option<(f64, f64)>,
    /// What the gate judges, as its name says (`busbw at 32 MiB-128 MiB`): the mean bus
    /// bandwidth over those sizes.
    what: String,
    /// The sizes it judges: the band's left and right x (shaded).
    band: Option<(f64, f64)>,
    /// The measured mean over the band: its y and value.
    avg: Option<(f64, f64)>,
    baseline: Option<String>,
    points: String,
    dots: Vec<Dot>,
}

/// A size's point: where, the size, its bus bandwidth and in-place time.
#[derive(Serialize)]
struct Dot {
    x: f64,
    y: f64,
    size: u64,
    busbw: f64,
    time_us: Option<f64>,
}

/// One chart: the run's bus bandwidth per size (and the baseline's, dashed), the average and
/// its gate as lines; `None` without a row that has a bandwidth.
fn chart(ctx: &Ctx<'_>, j: &JobResult, sweep: &Sweep, old: &[SweepRow]) -> Option<Chart> {
    let pts: Vec<(f64, f64, &SweepRow)> = sweep
        .rows
        .iter()
        .filter(|x| x.size_bytes > 0)
        .filter_map(|x| Some(((x.size_bytes as f64).log2(), x.bandwidth?, x)))
        .collect();
    let opts: Vec<(f64, f64)> = old
        .iter()
        .filter(|x| x.size_bytes > 0)
        .filter_map(|x| Some(((x.size_bytes as f64).log2(), x.bandwidth?)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let avg = j
        .verdicts
        .iter()
        .find(|v| v.metric == Some(sweep.bandwidth) && !base::is_baseline_verdict(v));
    let gate = avg.and_then(|v| ctx.pass_bound(sweep.bandwidth, v.expected));
    let f = Frame::around(&pts, &opts, gate);
    // the gate judges the largest sizes (a quarter of the largest and up), as its name says
    let largest = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let judged: Vec<f64> = pts
        .iter()
        .map(|p| p.0)
        .filter(|x| *x >= largest - 2.0)
        .collect();
    let band = avg.map(|_| {
        let lo = judged.iter().copied().fold(f64::INFINITY, f64::min);
        (f.px(lo) - 6.0, f.px(largest) + 6.0)
    });
    let line = |p: &mut dyn Iterator<Item = (f64, f64)>| -> String {
        let d: Vec<String> = p
            .map(|(x, y)| format!("{:.1},{:.1}", f.px(x), f.py(y)))
            .collect();
        d.join(" ")
    };
    Some(Chart {
        ys: y_ticks(&f),
        xs: x_ticks(&f),
        gate: gate.map(|g| (f.py(g), g)),
        what: avg
            .map(|v| short_gate(j, &sweep.subject, &v.gate).to_string())
            .unwrap_or_else(|| "busbw".into()),
        band,
        avg: avg.and_then(|v| v.measured).map(|m| (f.py(m), m)),
        baseline: (!opts.is_empty()).then(|| line(&mut opts.iter().copied())),
        points: line(&mut pts.iter().map(|(x, y, _)| (*x, *y))),
        dots: pts
            .iter()
            .map(|(x, y, row)| Dot {
                x: f.px(*x),
                y: f.py(*y),
                size: row.size_bytes,
                busbw: *y,
                time_us: row.time,
            })
            .collect(),
        w: f.w,
        hh: f.hh,
        l: f.l,
        r: f.r,
        t: f.t,
        b: f.b,
    })
}

/// Horizontal lines at round bandwidths, with their labels.
fn y_ticks(f: &Frame) -> Vec<(f64, String)> {
    let ystep = nice_step(f.ymax / 5.0);
    let mut out = Vec::new();
    let mut y = 0.0;
    while y <= f.ymax + 1e-9 {
        out.push((f.py(y), trim_num(y)));
        y += ystep;
    }
    out
}

/// Vertical lines at powers of two (at most about eight), with their sizes.
fn x_ticks(f: &Frame) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    let mut e = f.x0.ceil();
    let every = ((f.x1 - f.x0) / 8.0).ceil().max(1.0);
    while e <= f.x1 + 1e-9 {
        out.push((
            f.px(e),
            crate::text::size::format(2f64.powf(e).round() as u64),
        ));
        e += every;
    }
    out
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let f = raw / p;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * p
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        assert_eq!(nice_step(4.7), 5.0);
        assert_eq!(nice_step(0.23), 0.5);
    }
}
