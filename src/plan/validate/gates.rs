//! `[gates.<metric>]`: thresholds with units or percentages, warn bands, attempts; and
//! `[regression]`: how far a value may move against a baseline.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use super::{Ctx, span};
use crate::gate::GateSpec;
use crate::gate::threshold::{
    Ceiling, Metric, MetricSpec, Threshold, ThresholdError, Unit, fmt_num, parse_pct,
    parse_threshold,
};
use crate::gate::trap::Trap;
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::Profile;
use crate::plan::model::{PhyGates, Regression};
use crate::plan::raw::*;

/// The largest percentage of the expected value a threshold may ask for (the schema's maximum
/// of `min-pct-of-expected` and `warn-pct-of-expected`, for `"N%"` strings).
const PCT_MAX: f64 = 200.0;

/// The gate of every metric the test kinds measure: the metric's default, with the plan's
/// `[gates.<metric>]` over it.
pub(super) fn gates(
    ctx: &mut Ctx,
    raw: &BTreeMap<Spanned<String>, RawGate>,
    metrics: &[&'static MetricSpec],
    profiles: &[Profile],
) -> BTreeMap<Metric, GateSpec> {
    let mut out: BTreeMap<Metric, GateSpec> = metrics
        .iter()
        .map(|m| (m.metric, GateSpec::default_for(m)))
        .collect();
    for (key_spanned, g) in raw {
        let key = key_spanned.get_ref();
        if key == PHY {
            continue;
        }
        phy_fields_elsewhere(ctx, key, g);
        let Some(metric) = metrics.iter().find(|m| m.name() == key) else {
            let mut p = Problem::error(
                "plan::unknown-metric",
                format!("`[gates.{key}]` is not a metric fabricplan gates"),
            )
            .at(span(key_spanned), "not a metric");
            let names: Vec<&str> = metrics.iter().map(|m| m.name()).collect();
            p = match did_you_mean(key, names.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!("metrics: {}", names.join(", "))),
            };
            ctx.push(p);
            continue;
        };
        if let Some(spec) = out.get_mut(&metric.metric) {
            let rate = carries(metric, profiles);
            gate(ctx, metric, g, spec, rate.as_ref());
        }
    }
    out
}

/// The most one job of `metric` carries on a healthy fabric of these profiles, in the metric's
/// unit, and in words: a half's rate for a flow, a port's for the halves summed, a port's in
/// bytes for NCCL's bus bandwidth. Latencies and times have no such ceiling.
fn carries(metric: &MetricSpec, profiles: &[Profile]) -> Option<(f64, String)> {
    // a profile that gives no rate is not a ceiling anyone can be held to
    let best = |f: fn(&Profile) -> Option<f64>| {
        profiles
            .iter()
            .filter_map(|p| Some((f(p)?, p.name.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let half = |p: &Profile| p.half_rate_gbps;
    let port = |p: &Profile| p.port_rate_gbps;
    match metric.ceiling? {
        Ceiling::Half => {
            best(half).map(|(r, n)| (r, format!("a healthy half of profile `{n}` carries")))
        }
        Ceiling::Port => {
            best(port).map(|(r, n)| (r, format!("a healthy port of profile `{n}` carries")))
        }
        Ceiling::PortBytes => best(port).map(|(r, n)| {
            (
                r / 8.0,
                format!("a port of profile `{n}` carries ({} Gb/s)", fmt_num(r)),
            )
        }),
    }
}

/// A pass threshold no healthy job can meet: every link would FAIL.
fn above_capacity(
    ctx: &mut Ctx,
    metric: &MetricSpec,
    t: Threshold,
    at: Range<usize>,
    rate: Option<&(f64, String)>,
) {
    let (Threshold::Absolute { value }, Some((r, words))) = (t, rate) else {
        return;
    };
    if metric.higher_is_better() && value > *r {
        let unit = metric.unit.symbol();
        ctx.push(
            Problem::warning(
                "plan::gate-above-capacity",
                format!(
                    "the pass threshold of `{}` ({} {unit}) is above the {} {unit} {words}",
                    metric.name(),
                    fmt_num(value),
                    fmt_num(*r)
                ),
            )
            .at(at, "above what the fabric can carry")
            .help("every healthy job would FAIL it: lower it, or gate on a percentage of the expected value (`\"80%\"`)"),
        );
    }
}

/// The key of the port error counters' gates.
const PHY: &str = "phy";

/// `[gates.phy]`: the port error counters' thresholds, defaults where not given; a metric's
/// field there is an error.
pub(super) fn phy(ctx: &mut Ctx, raw: &BTreeMap<Spanned<String>, RawGate>) -> PhyGates {
    let mut out = PhyGates::default();
    let Some((_, g)) = raw.iter().find(|(k, _)| k.get_ref() == PHY) else {
        return out;
    };
    let metric_field = [
        g.pass.as_ref().map(span),
        g.warn.as_ref().map(span),
        g.min_pct_of_expected.as_ref().map(span),
        g.warn_pct_of_expected.as_ref().map(span),
        g.pass_if.as_ref().map(span),
    ]
    .into_iter()
    .flatten()
    .next();
    if metric_field.is_some() || g.trap.is_some() || g.fix.is_some() || g.attempts.is_some() {
        let mut p = Problem::error(
            "plan::phy-gate-field",
            "`[gates.phy]` takes `max-effective-ber`, `max-link-down-events` and `max-retransmits-per-s`",
        )
        .help("port error counters have no pass or warn threshold, trap, fix or attempts");
        if let Some(at) = metric_field {
            p = p.at(at, "not a field of [gates.phy]");
        }
        ctx.push(p);
    }
    if let Some(b) = &g.max_effective_ber {
        let v = *b.get_ref();
        if v > 0.0 && v < 1.0 {
            out.max_effective_ber = v;
        } else {
            ctx.push(
                Problem::error(
                    "plan::phy-gate-value",
                    format!("`max-effective-ber = {v}` is not a rate between 0 and 1"),
                )
                .at(span(b), "a bit error rate, e.g. 1e-12"),
            );
        }
    }
    if let Some(n) = &g.max_link_down_events {
        let v = *n.get_ref();
        if v <= 1_000_000 {
            out.max_link_down_events = v;
        } else {
            ctx.push(
                Problem::error(
                    "plan::phy-gate-value",
                    format!("`max-link-down-events = {v}` is above 1000000"),
                )
                .at(span(n), "link-down events in one interval, 0 to 1000000"),
            );
        }
    }
    if let Some(r) = &g.max_retransmits_per_s {
        let v = *r.get_ref();
        if v.is_finite() && v >= 0.0 {
            out.max_retransmits_per_s = v;
        } else {
            ctx.push(
                Problem::error(
                    "plan::phy-gate-value",
                    format!("`max-retransmits-per-s = {v}` is not a rate of 0 or more"),
                )
                .at(span(r), "retransmissions per second"),
            );
        }
    }
    out
}

/// A `[gates.phy]` field under a metric's gate.
fn phy_fields_elsewhere(ctx: &mut Ctx, key: &str, g: &RawGate) {
    let at = [
        g.max_effective_ber.as_ref().map(span),
        g.max_link_down_events.as_ref().map(span),
        g.max_retransmits_per_s.as_ref().map(span),
    ]
    .into_iter()
    .flatten()
    .next();
    if let Some(at) = at {
        ctx.push(
            Problem::error(
                "plan::phy-gate-field",
                format!("`[gates.{key}]` takes no port error counter threshold"),
            )
            .at(at, "a field of [gates.phy]")
            .help("move it to `[gates.phy]`"),
        );
    }
}

/// The `[regression]` table: `max-drop` and metric names, each a percentage more than 0.
pub(super) fn regression(
    ctx: &mut Ctx,
    raw: &BTreeMap<Spanned<String>, Spanned<RawPct>>,
    metrics: &[&'static MetricSpec],
) -> Regression {
    let mut out = Regression::default();
    for (key_spanned, value) in raw {
        let key = key_spanned.get_ref();
        let metric = metrics.iter().find(|m| m.name() == key).map(|m| m.metric);
        if metric.is_none() && key != "max-drop" {
            let mut names: Vec<&str> = vec!["max-drop"];
            names.extend(metrics.iter().map(|m| m.name()));
            let mut p = Problem::error(
                "plan::unknown-metric",
                format!("`[regression]` has no key `{key}`"),
            )
            .at(span(key_spanned), "not a metric");
            p = match did_you_mean(key, names.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!("keys: {}", names.join(", "))),
            };
            ctx.push(p);
            continue;
        }
        let pct = match value.get_ref() {
            RawPct::Text(t) => parse_pct(t),
            RawPct::Number(x) if x.is_finite() && *x > 0.0 => Ok(*x),
            RawPct::Number(x) => Err(format!("`{x}` is not a percentage more than 0")),
        };
        match (pct, metric) {
            (Ok(p), Some(m)) => {
                out.per_metric.insert(m, p);
            }
            (Ok(p), None) => out.max_drop_pct = Some(p),
            (Err(e), _) => ctx.push(
                Problem::error("plan::threshold", e)
                    .at(span(value), "not a percentage")
                    .help("write a percentage more than 0: `\"5%\"` or `5`"),
            ),
        }
    }
    out
}

/// One metric's gate, over its defaults.
fn gate(
    ctx: &mut Ctx,
    metric: &MetricSpec,
    g: &RawGate,
    spec: &mut GateSpec,
    rate: Option<&(f64, String)>,
) {
    let mut pass = g
        .pass
        .as_ref()
        .and_then(|s| threshold(ctx, s, metric, rate));
    let mut warn = g
        .warn
        .as_ref()
        .and_then(|s| threshold(ctx, s, metric, rate));
    if let (Some(p), Some(s)) = (pass, &g.pass) {
        above_capacity(ctx, metric, p, span(s), rate);
    }
    let mut pass_span = g.pass.as_ref().map(span);
    let mut warn_span = g.warn.as_ref().map(span);
    if let Some(p) = &g.min_pct_of_expected {
        pass = Some(Threshold::PctOfExpected { pct: *p.get_ref() });
        pass_span = Some(span(p));
    }
    if let Some(w) = &g.warn_pct_of_expected {
        warn = Some(Threshold::PctOfExpected { pct: *w.get_ref() });
        warn_span = Some(span(w));
    }
    if g.pass.is_some() && g.min_pct_of_expected.is_some() {
        ctx.push(
            Problem::error(
                "plan::threshold",
                format!(
                    "`{}` gives both `pass` and `min-pct-of-expected`",
                    metric.name()
                ),
            )
            .at(pass_span.clone().unwrap_or(0..0), "here")
            .help("keep one pass threshold"),
        );
    }
    // a plan that sets a pass threshold but no warn keeps the default warn threshold when it
    // lies on the right side of the new pass (same kind), and otherwise gets no WARN band
    if let Some(p) = pass
        && warn.is_none()
        && g.warn.is_none()
        && g.warn_pct_of_expected.is_none()
    {
        let keep = spec
            .warn
            .is_some_and(|w| same_kind(p, w) && !wrong_side(metric, p, w));
        warn = if keep { spec.warn } else { Some(p) };
    }
    if let (Some(p), Some(w), Some(ps), Some(ws)) = (pass, warn, pass_span, warn_span)
        && wrong_side(metric, p, w)
    {
        let side = if metric.higher_is_better() {
            "below"
        } else {
            "above"
        };
        ctx.push(
            Problem::error("plan::warn-wrong-side", format!("the warn threshold of `{}` is on the wrong side of its pass threshold", metric.name()))
                .at(ws, "warn threshold")
                .also(ps, "pass threshold")
                .help(format!("for `{}` the warn threshold lies {side} the pass threshold: values between them WARN, beyond warn FAIL", metric.name())),
        );
    }
    spec.pass = pass.or(spec.pass);
    spec.warn = warn.or(spec.warn);
    if g.trap.is_some() {
        spec.trap_text = g.trap.clone();
    }
    if g.fix.is_some() {
        spec.fix_text = g.fix.clone();
    }
    attempts(ctx, metric, g, spec);
    if spec.trap == Trap::Site && spec.trap_text.is_none() {
        spec.trap_text = Some("site trap".into());
    }
}

/// Is warn on the wrong side of pass? Only thresholds of one kind compare: an absolute value
/// and a percentage of the expected value never do.
fn wrong_side(metric: &MetricSpec, pass: Threshold, warn: Threshold) -> bool {
    match (pass, warn) {
        (Threshold::Absolute { value: p }, Threshold::Absolute { value: w })
        | (Threshold::PctOfExpected { pct: p }, Threshold::PctOfExpected { pct: w }) => {
            if metric.higher_is_better() {
                w > p
            } else {
                w < p
            }
        }
        _ => false,
    }
}

fn same_kind(a: Threshold, b: Threshold) -> bool {
    matches!(
        (a, b),
        (Threshold::Absolute { .. }, Threshold::Absolute { .. })
            | (
                Threshold::PctOfExpected { .. },
                Threshold::PctOfExpected { .. }
            )
    )
}

/// `attempts` and `pass-if` (k of n).
fn attempts(ctx: &mut Ctx, metric: &MetricSpec, g: &RawGate, spec: &mut GateSpec) {
    let attempts = g.attempts.unwrap_or(1).max(1);
    spec.attempts = attempts;
    spec.pass_if = attempts;
    if let Some(k) = &g.pass_if {
        // 1..=100 is the schema's range; the bound that depends on `attempts` is checked here
        if *k.get_ref() == 0 || *k.get_ref() > attempts {
            ctx.push(
                Problem::error(
                    "plan::pass-if",
                    format!(
                        "`pass-if = {}` of {attempts} attempts of `{}`",
                        k.get_ref(),
                        metric.name()
                    ),
                )
                .at(span(k), "out of range")
                .help(format!("pass-if is between 1 and `attempts` ({attempts})")),
            );
        } else {
            spec.pass_if = *k.get_ref();
        }
    }
}

/// A threshold with its unit, or an error naming the units `metric` takes.
fn threshold(
    ctx: &mut Ctx,
    s: &Spanned<String>,
    metric: &MetricSpec,
    rate: Option<&(f64, String)>,
) -> Option<Threshold> {
    let e = match parse_threshold(s.get_ref(), metric) {
        Ok(Threshold::PctOfExpected { pct }) if !(pct > 0.0 && pct <= PCT_MAX) => {
            ctx.push(
                Problem::error(
                    "plan::range",
                    format!("threshold of `{}`: `{pct}%` is out of range", metric.name()),
                )
                .at(span(s), "out of range")
                .help(format!(
                    "a percentage of the expected value is above 0 and at most {PCT_MAX}, as in `min-pct-of-expected`"
                )),
            );
            return None;
        }
        Ok(t) => return Some(t),
        Err(e) => e,
    };
    let help = match &e {
        ThresholdError::UnknownUnit(u) => {
            let units: Vec<&str> = Unit::SPELLINGS.iter().map(|(n, _)| *n).collect();
            match did_you_mean(u, units.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!(
                    "units: Gb/s, GB/s, us, ms, or `%` of the expected value; `{}` is in {}",
                    metric.name(),
                    metric.unit.symbol()
                ),
            }
        }
        ThresholdError::BitsOrBytes {
            value,
            written,
            expected,
            ..
        } => {
            let as_written = written.convert(*value, *expected);
            let meant = format!("{} {}", fmt_num(*value), expected.symbol());
            match rate {
                Some((r, words)) if as_written > *r => format!(
                    "that is above the {} {} {words}: did you mean `\"{meant}\"`?",
                    fmt_num(*r),
                    expected.symbol()
                ),
                _ => format!(
                    "write it in {}: `\"{meant}\"`, or `\"{} {}\"` if {} {} was meant",
                    expected.symbol(),
                    fmt_num(as_written),
                    expected.symbol(),
                    fmt_num(*value),
                    written.symbol()
                ),
            }
        }
        ThresholdError::WrongDimension { .. } => {
            let example = match metric.unit {
                Unit::Gbps => "90 Gb/s",
                Unit::GBps => "9 GB/s",
                _ => "3 us",
            };
            format!(
                "`{}` is in {}: write e.g. `\"{example}\"`, or a percentage of the expected value such as `\"90%\"`",
                metric.name(),
                metric.unit.symbol()
            )
        }
        _ => format!(
            "write a number and a unit, e.g. `\"90 Gb/s\"`, `\"3 us\"` or `\"85%\"`; `{}` is in {}",
            metric.name(),
            metric.unit.symbol()
        ),
    };
    let at: Range<usize> = span(s);
    ctx.push(
        Problem::error(
            "plan::threshold",
            format!("threshold of `{}`: {e}", metric.name()),
        )
        .at(at, "here")
        .help(help),
    );
    None
}
