//! NCCL: bus bandwidth against message size per test, against the baseline's curve, with the
//! test's gates.

use std::fmt::Write as _;

use super::ctx::Ctx;
use super::format::{class, esc, fmt_val};
use crate::compare::{self, baseline as base};
use crate::gate::threshold::Metric;
use crate::results::JobResult;

pub(super) fn nccl(h: &mut String, ctx: &Ctx<'_>) {
    let jobs: Vec<&JobResult> = ctx.r.jobs.iter().filter(|j| compare::is_nccl(j)).collect();
    if jobs.is_empty() {
        return;
    }
    h.push_str("<section id=\"nccl\"><h2>NCCL: bus bandwidth against message size</h2>\n<div class=\"grid\">\n");
    for j in jobs {
        let rows = compare::nccl_rows_of(j);
        let subject = compare::nccl_subject(j);
        let old_rows: Vec<compare::NcclRow> = ctx
            .baseline
            .and_then(|b| {
                b.jobs
                    .iter()
                    .find(|bj| compare::is_nccl(bj) && compare::nccl_subject(bj) == subject)
            })
            .map(compare::nccl_rows_of)
            .unwrap_or_default();
        let _ = write!(
            h,
            "<figure class=\"nccl-chart\"><figcaption>{}</figcaption>",
            esc(&format!("{} {}", j.round_name, j.label))
        );
        if rows.is_empty() {
            let _ = write!(
                h,
                "<p class=\"note\">no rows: {}</p>",
                esc(j.reason.as_deref().unwrap_or("nothing was measured"))
            );
        } else {
            nccl_chart(h, ctx, j, &rows, &old_rows);
        }
        h.push_str("<table>");
        for v in j.verdicts.iter() {
            let _ = write!(
                h,
                "<tr><td><span class=\"badge {}\">{}</span></td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                class(v.outcome),
                v.outcome.as_str(),
                esc(short_gate(j, &v.gate)),
                v.measured
                    .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                    .unwrap_or_default(),
                esc(if v.threshold.is_empty() {
                    &v.detail
                } else {
                    &v.threshold
                })
            );
        }
        h.push_str("</table></figure>\n");
    }
    h.push_str("</div></section>\n");
}

/// An NCCL job's gate without the test's name (`transport`, `16 KiB time`).
fn short_gate<'g>(j: &JobResult, gate: &'g str) -> &'g str {
    let kind = j.round_name.split_whitespace().next().unwrap_or("nccl");
    [
        format!("{kind} {} ", j.label),
        format!("{} ", compare::nccl_subject(j)),
    ]
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
    fn around(
        pts: &[(f64, f64, &compare::NcclRow)],
        opts: &[(f64, f64)],
        gate: Option<f64>,
    ) -> Frame {
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

/// One chart: the run's bus bandwidth per size (and the baseline's, dashed), the average and
/// its gate as lines.
fn nccl_chart(
    h: &mut String,
    ctx: &Ctx<'_>,
    j: &JobResult,
    rows: &[compare::NcclRow],
    old: &[compare::NcclRow],
) {
    let pts: Vec<(f64, f64, &compare::NcclRow)> = rows
        .iter()
        .filter(|x| x.size_bytes > 0)
        .filter_map(|x| Some(((x.size_bytes as f64).log2(), x.busbw_gbs?, x)))
        .collect();
    let opts: Vec<(f64, f64)> = old
        .iter()
        .filter(|x| x.size_bytes > 0)
        .filter_map(|x| Some(((x.size_bytes as f64).log2(), x.busbw_gbs?)))
        .collect();
    if pts.is_empty() {
        return;
    }
    let avg = j
        .verdicts
        .iter()
        .find(|v| v.metric == Some(Metric::NcclBusbw) && !base::is_baseline_verdict(v));
    let gate = avg.and_then(|v| ctx.pass_bound(Metric::NcclBusbw, v.expected));
    let f = Frame::around(&pts, &opts, gate);
    let (w, hh) = (f.w, f.hh);
    let _ = write!(
        h,
        "<svg width=\"{w}\" height=\"{hh}\" viewBox=\"0 0 {w} {hh}\" role=\"img\" aria-label=\"bus bandwidth against message size\">"
    );
    grid(h, &f);
    axes(h, &f);
    if let Some(g) = gate {
        let yy = f.py(g);
        let _ = write!(
            h,
            "<line x1=\"{}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#cf222e\" stroke-dasharray=\"6 4\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" text-anchor=\"end\" fill=\"#cf222e\">avg busbw gate &#8805; {} GB/s</text>",
            f.l,
            f.w - f.r,
            f.w - f.r - 2.0,
            yy - 4.0,
            fmt_val(g)
        );
    }
    if let Some(v) = avg
        && let Some(m) = v.measured
    {
        let yy = f.py(m);
        let _ = write!(
            h,
            "<line x1=\"{}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#0969da\" stroke-dasharray=\"2 3\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" text-anchor=\"end\" fill=\"#0969da\">avg busbw {} GB/s{}</text>",
            f.l,
            f.w - f.r,
            f.w - f.r - 2.0,
            yy + 13.0,
            fmt_val(m),
            if gate.is_none() { " (not gated)" } else { "" }
        );
    }
    curves(h, &f, &pts, &opts);
    h.push_str("</svg>");
}

/// Horizontal lines at round bandwidths, vertical lines at powers of two, with their labels.
fn grid(h: &mut String, f: &Frame) {
    let (l, t) = (f.l, f.t);
    let ystep = nice_step(f.ymax / 5.0);
    let mut y = 0.0;
    while y <= f.ymax + 1e-9 {
        let yy = f.py(y);
        let _ = write!(
            h,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#eaeef2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#59636e\">{}</text>",
            f.w - f.r,
            l - 5.0,
            yy + 3.5,
            trim_num(y)
        );
        y += ystep;
    }
    let mut e = f.x0.ceil();
    let every = ((f.x1 - f.x0) / 8.0).ceil().max(1.0);
    while e <= f.x1 + 1e-9 {
        let xx = f.px(e);
        let _ = write!(
            h,
            "<line x1=\"{xx:.1}\" y1=\"{t}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#eaeef2\"/><text x=\"{xx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#59636e\">{}</text>",
            f.hh - f.b,
            f.hh - f.b + 14.0,
            crate::text::size::format(2f64.powf(e).round() as u64)
        );
        e += every;
    }
}

/// The two axes and their titles.
fn axes(h: &mut String, f: &Frame) {
    let (l, t, hh, b) = (f.l, f.t, f.hh, f.b);
    let _ = write!(
        h,
        "<line x1=\"{l}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#8c959f\"/><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{:.1}\" stroke=\"#8c959f\"/>",
        hh - b,
        f.w - f.r,
        hh - b,
        hh - b
    );
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#59636e\">message size (log scale)</text><text x=\"12\" y=\"{:.1}\" font-size=\"11\" fill=\"#59636e\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\">busbw GB/s</text>",
        (l + f.w - f.r) / 2.0,
        hh - 8.0,
        (t + hh - b) / 2.0,
        (t + hh - b) / 2.0
    );
}

/// The baseline's curve (dashed), then the run's with a dot per size.
fn curves(h: &mut String, f: &Frame, pts: &[(f64, f64, &compare::NcclRow)], opts: &[(f64, f64)]) {
    if !opts.is_empty() {
        let d: Vec<String> = opts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", f.px(*x), f.py(*y)))
            .collect();
        let _ = write!(
            h,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#8250df\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"><title>baseline</title></polyline><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" fill=\"#8250df\">baseline</text>",
            d.join(" "),
            f.l + 4.0,
            f.t + 10.0
        );
    }
    let d: Vec<String> = pts
        .iter()
        .map(|(x, y, _)| format!("{:.1},{:.1}", f.px(*x), f.py(*y)))
        .collect();
    let _ = write!(
        h,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"/>",
        d.join(" ")
    );
    for (x, y, row) in pts {
        let _ = write!(
            h,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.2\" fill=\"#0969da\"><title>{}: busbw {} GB/s{}</title></circle>",
            f.px(*x),
            f.py(*y),
            crate::text::size::format(row.size_bytes),
            fmt_val(*y),
            row.time_us
                .map(|t| format!(", in-place time {} us", fmt_val(t)))
                .unwrap_or_default()
        );
    }
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
