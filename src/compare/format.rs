//! Comparisons and histories as text (aligned columns), Markdown and JSON. Every string that
//! came from a plan or a host is made inert (control characters shown escaped).

use serde_json::json;

use super::baseline::{fmt_change, fmt_val};
use super::counters::{CounterRow, CounterSeries};
use super::diff::{Comparison, Row};
use super::entry::{Key, Quantity};
use super::explain::{Explained, explain};
use super::history::History;
use super::threshold::Thresholds;
use crate::results::RunResults;
use crate::results::counters::CounterKind;
use crate::text::inert;
use crate::text::thousands;
use crate::text::width::{columns, pad, rpad};

/// Format version of the JSON of `compare` and `history`.
pub const FORMAT_VERSION: u32 = 1;

/// One of the two runs compared: where it was read from, and what it is.
pub struct Side<'a> {
    pub path: String,
    pub run: &'a RunResults,
}

fn side_json(s: &Side<'_>) -> serde_json::Value {
    json!({
        "path": s.path,
        "plan": s.run.plan,
        "run_id": s.run.run_id,
        "started_unix_ms": s.run.started_unix_ms,
        "simulated": s.run.simulated,
        "verdict": s.run.summary.verdict,
    })
}

/// The comparison as JSON: `format_version`, `old`, `new`, `thresholds`, `rows`, `regressions`,
/// `causes` (`findings`: each finding of the new run with the regressions it `explains`;
/// `unexplained`), `only_old`, `only_new`, `notes`.
pub fn comparison_json(
    c: &Comparison,
    old: &Side<'_>,
    new: &Side<'_>,
    t: &Thresholds,
) -> serde_json::Value {
    json!({
        "format_version": FORMAT_VERSION,
        "old": side_json(old),
        "new": side_json(new),
        "thresholds": {
            "default_pct": t.default_pct,
            "per_metric": t.per_metric.iter().map(|(m, p)| (m.name().to_string(), json!(p))).collect::<serde_json::Map<_, _>>(),
        },
        "rows": c.rows,
        "regressions": c.regressions().count(),
        "causes": causes_json(c, new.run),
        "only_old": c.only_old,
        "only_new": c.only_new,
        "notes": c.notes,
        "counters": c.counters,
        "counters_grew": c.counters.iter().filter(|r| r.grew).count(),
    })
}

/// Each finding of the new run with the regressions it explains, and what no finding explains.
fn causes_json(c: &Comparison, new: &RunResults) -> serde_json::Value {
    let e = explain(c, new);
    let keys = |rows: &[usize]| -> Vec<String> {
        rows.iter().map(|i| c.rows[*i].key.to_string()).collect()
    };
    json!({
        "findings": e.causes.iter().map(|x| json!({
            "name": x.name,
            "outcome": x.outcome,
            "trap": x.trap,
            "explains": keys(&x.rows),
        })).collect::<Vec<_>>(),
        "unexplained": keys(&e.unexplained),
    })
}

/// Text from a run as the terminal shows it.
fn shown(s: &str) -> String {
    inert(s).into_owned()
}

/// A measurement's name and its round (when the name does not say it), each part through `esc`.
fn key_line_with(k: &Key, esc: &dyn Fn(&str) -> String) -> String {
    if k.subject.contains(&k.round) {
        esc(&k.to_string())
    } else {
        format!("{} (round {})", esc(&k.to_string()), esc(&k.round))
    }
}

fn key_line(k: &Key) -> String {
    key_line_with(k, &shown)
}

fn verdict_word(regression: bool, hib: bool, max: f64) -> String {
    if regression {
        format!("REGRESSION (max {}{max}%)", if hib { "-" } else { "+" })
    } else {
        String::new()
    }
}

/// How a comparison or a history is shown as text: every row (`--all`: a comparison's NCCL
/// rows per message size, a history's every run) or the answer, and the width it fits.
#[derive(Debug, Clone, Copy)]
pub struct TextView {
    pub all: bool,
    pub width: usize,
}

impl Default for TextView {
    fn default() -> TextView {
        TextView {
            all: false,
            width: 100,
        }
    }
}

/// The rule a regression (compare) and a decline (history) share, in words: worse than
/// `than` (`the old run`, `the oldest`) by more than the maximum change.
pub fn rule_text(t: &Thresholds, than: &str) -> String {
    format!(
        "worse than {than} by more than {} (a drop for bandwidth, a rise for latency and time)",
        t.describe()
    )
}

/// The comparison as text, 100 columns wide: see [`comparison_text_with`].
pub fn comparison_text(c: &Comparison, old: &Side<'_>, new: &Side<'_>, t: &Thresholds) -> String {
    comparison_text_with(c, old, new, t, &TextView::default())
}

/// The comparison as text that fits `v.width`, causes first: each finding of the new run with
/// the regressions it explains (`spark-a.f0.a (firmware throttle): 111.52 -> 12.66 Gb/s
/// explains 17 of 18 regressions`), then one line per regression no finding explains, then the
/// two runs and the rule; every measurement in a table with `v.all`.
pub fn comparison_text_with(
    c: &Comparison,
    old: &Side<'_>,
    new: &Side<'_>,
    t: &Thresholds,
    v: &TextView,
) -> String {
    let e = explain(c, new.run);
    let w = v.width.max(40);
    let mut s = String::new();
    causes_text(&mut s, c, &e, old.run, new.run, w);
    s.push('\n');
    for (which, side) in [("new", new), ("old", old)] {
        wrap_into(
            &mut s,
            &format!("{which}: "),
            &format!(
                "{} ({}): {}",
                inert(&side.run.run_id),
                inert(&side.path),
                inert(&side.run.summary.verdict)
            ),
            5,
            w,
        );
    }
    wrap_into(&mut s, "regression: ", &rule_text(t, "the old run"), 12, w);
    if v.all {
        s.push('\n');
        let rows: Vec<Vec<String>> = c
            .rows
            .iter()
            .map(|r| {
                vec![
                    key_line(&r.key),
                    format!("{} {}", fmt_val(r.old), inert(&r.unit)),
                    format!("{} {}", fmt_val(r.new), inert(&r.unit)),
                    fmt_change(r.change_pct),
                    if r.regression { "REGRESSION" } else { "" }.to_string(),
                ]
            })
            .collect();
        s.push_str(&fit_table(
            &["measurement", "old", "new", "change", ""],
            &rows,
            &[false, true, true, true, false],
            w,
        ));
    } else {
        let per_size = c
            .rows
            .iter()
            .filter(|r| r.key.quantity != Quantity::Gate)
            .count();
        wrap_into(
            &mut s,
            "",
            &format!(
                "{} measurement(s) compared ({per_size} of them NCCL rows per message size); \
                 --all lists every one",
                c.rows.len()
            ),
            0,
            w,
        );
    }
    let notes = tail_notes(c, &shown);
    for l in notes.lines() {
        wrap_into(&mut s, "", l, 6, w);
    }
    s
}

/// `rdma-bw a -> b (round R1): 111.52 -> 12.66 Gb/s (-88.6%)`.
fn regression_line(r: &Row, esc: &dyn Fn(&str) -> String) -> String {
    format!(
        "{}: {} -> {} {} ({})",
        key_line_with(&r.key, esc),
        fmt_val(r.old),
        fmt_val(r.new),
        esc(&r.unit),
        fmt_change(r.change_pct)
    )
}

/// The causes: each finding of the new run with what it explains, what the old run found that
/// the new one does not, then each regression no finding explains.
fn causes_text(
    s: &mut String,
    c: &Comparison,
    e: &Explained,
    old: &RunResults,
    new: &RunResults,
    w: usize,
) {
    for l in cause_lines(c, e, old, new, &shown) {
        wrap_into(s, "", &l, 4, w);
    }
    if !e.unexplained.is_empty() {
        if e.regressions > e.unexplained.len() || !e.causes.is_empty() {
            s.push_str(&format!(
                "not explained by a finding ({}):\n",
                e.unexplained.len()
            ));
        }
        for i in &e.unexplained {
            wrap_into(s, "  ", &regression_line(&c.rows[*i], &shown), 6, w);
        }
    }
    for (i, l) in counter_lines(c, new, &shown).iter().enumerate() {
        wrap_into(s, if i == 0 { "" } else { "  " }, l, 6, w);
    }
}

/// The lead lines of a comparison, unwrapped: one per finding of the new run, then the parts
/// the old run found that the new one does not; then, when the new run found nothing,
/// `N regression(s)...` (the list follows) or `no regression`.
fn cause_lines(
    c: &Comparison,
    e: &Explained,
    old: &RunResults,
    new: &RunResults,
    esc: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let n = e.regressions;
    let mut out = Vec::new();
    for cause in &e.causes {
        let head = format!("{} ({})", esc(&cause.name), esc(&cause.trap));
        let none = match n {
            0 => String::new(),
            n => format!("; explains none of the {n} regression(s)"),
        };
        out.push(match (cause.headline(c), counter_of(c, &cause.name)) {
            (Some(r), _) => format!(
                "{head}: {} -> {} {} explains {} of {n} regression(s)",
                fmt_val(r.old),
                fmt_val(r.new),
                esc(&r.unit),
                cause.rows.len()
            ),
            (None, Some(k)) => format!("{head}: {}{none}", esc(&k.line())),
            (None, None) => format!(
                "{head}: {} in the new run; explains none of the {n} regression(s)",
                cause.outcome.as_str()
            ),
        });
    }
    let gone: Vec<String> = old
        .findings
        .iter()
        .filter(|f| !new.findings.iter().any(|g| g.name == f.name))
        .map(|f| format!("{} ({})", esc(&f.name), esc(&f.trap_name)))
        .collect();
    if !gone.is_empty() {
        out.push(format!(
            "no longer found (the old run's): {}",
            gone.join(", ")
        ));
    }
    if e.causes.is_empty() {
        out.push(match n {
            0 => format!("no regression: {} measurement(s) compared", c.rows.len()),
            n => format!(
                "{n} regression(s) in {} measurement(s), no finding of the new run explains \
                     them:",
                c.rows.len()
            ),
        });
    }
    out
}

/// The error counter of a finding's part (its half or cable) that grew most, if one did.
fn counter_of<'c>(c: &'c Comparison, part: &str) -> Option<&'c CounterRow> {
    c.counters
        .iter()
        .filter(|r| r.grew && r.kind == CounterKind::Error && r.about(part))
        .fold(None, |best: Option<&CounterRow>, r| match best {
            Some(b) if r.new_per_s <= b.new_per_s => Some(b),
            _ => Some(r),
        })
}

/// The port counters that grew (faster than during the old run) about which no finding of the
/// new run leads: a heading line, then one line each; nothing when there are none.
fn counter_lines(c: &Comparison, new: &RunResults, esc: &dyn Fn(&str) -> String) -> Vec<String> {
    let led: Vec<&CounterRow> = new
        .findings
        .iter()
        .filter_map(|f| counter_of(c, &f.name))
        .collect();
    let grew: Vec<&CounterRow> = c
        .counters
        .iter()
        .filter(|r| r.grew && r.kind != CounterKind::Informative)
        .filter(|r| !led.iter().any(|l| std::ptr::eq(*l, *r)))
        .collect();
    if grew.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "port counters that grew faster than during the old run ({}):",
        grew.len()
    )];
    for r in grew {
        let mut l = r.line();
        if let Some(cable) = &r.cable {
            l.push_str(&format!(", {cable}"));
        }
        if r.kind == CounterKind::Congestion {
            l.push_str(" [congestion]");
        }
        out.push(esc(&l));
    }
    out
}

/// `lead` then `text` wrapped at spaces to `w` columns, the next lines indented to `indent`.
fn wrap_into(s: &mut String, lead: &str, text: &str, indent: usize, w: usize) {
    let pad = " ".repeat(indent);
    let opts = textwrap::Options::new(w)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .initial_indent(lead)
        .subsequent_indent(&pad);
    for l in textwrap::wrap(text, opts) {
        s.push_str(l.trim_end());
        s.push('\n');
    }
}

/// A table that fits `w` columns: the first column (a name) gets what the others leave; a name
/// longer than that goes on a line of its own (wrapped at spaces), its values on the next.
fn fit_table(header: &[&str], rows: &[Vec<String>], right: &[bool], w: usize) -> String {
    let cols = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| columns(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(columns(c));
        }
    }
    let values: usize = widths[1..].iter().sum::<usize>() + 2 * (cols - 1);
    let room = w.saturating_sub(values).max(16);
    widths[0] = widths[0].min(room);
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&rpad(c, widths[i]));
            } else {
                s.push_str(&pad(c, widths[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        if columns(&r[0]) > widths[0] {
            wrap_into(&mut out, "", &r[0], 2, w);
            let mut rest = r.clone();
            rest[0] = String::new();
            out.push_str(&line(&rest));
        } else {
            out.push_str(&line(r));
        }
    }
    out
}

/// What only one run has, and the notes: one line each.
fn tail_notes(c: &Comparison, esc: &dyn Fn(&str) -> String) -> String {
    let line = |k: &Key| key_line_with(k, esc);
    let mut s = String::new();
    for (what, keys) in [("old", &c.only_old), ("new", &c.only_new)] {
        if !keys.is_empty() {
            s.push_str(&format!(
                "note: only in the {what} run ({}): {}\n",
                keys.len(),
                keys.iter().map(&line).collect::<Vec<_>>().join("; ")
            ));
        }
    }
    for n in &c.notes {
        s.push_str(&format!("note: {}\n", esc(n)));
    }
    s
}

/// Markdown text from a run, in a table cell or a list: every Markdown and HTML character
/// escaped ([`crate::text::md`]).
fn cell(s: &str) -> String {
    crate::text::md(s)
}

/// The comparison as Markdown (a table, then the regressions and notes).
pub fn comparison_markdown(
    c: &Comparison,
    old: &Side<'_>,
    new: &Side<'_>,
    t: &Thresholds,
) -> String {
    let mut s = format!(
        "## fabricplan compare\n\n- old: {} ({}), {}\n- new: {} ({}), {}\n- max change: {}\n\n",
        cell(&old.run.run_id),
        cell(&old.path),
        cell(&old.run.summary.verdict),
        cell(&new.run.run_id),
        cell(&new.path),
        cell(&new.run.summary.verdict),
        t.describe()
    );
    // causes first, then what no finding explains
    let e = explain(c, new.run);
    for l in cause_lines(c, &e, old.run, new.run, &cell) {
        s.push_str(&format!("- {l}\n"));
    }
    if !e.unexplained.is_empty() {
        s.push_str(&format!(
            "\nNot explained by a finding ({}):\n\n",
            e.unexplained.len()
        ));
        for i in &e.unexplained {
            s.push_str(&format!("- {}\n", regression_line(&c.rows[*i], &cell)));
        }
    }
    let counters = counter_lines(c, new.run, &cell);
    if let Some((head, rest)) = counters.split_first() {
        s.push_str(&format!("\n{head}\n\n"));
        for l in rest {
            s.push_str(&format!("- {l}\n"));
        }
    }
    s.push('\n');
    s.push_str("| round | measurement | old | new | change | |\n|---|---|---:|---:|---:|---|\n");
    for r in &c.rows {
        s.push_str(&format!(
            "| {} | {} | {} {u} | {} {u} | {} | {} |\n",
            cell(&r.key.round),
            cell(&r.key.to_string()),
            fmt_val(r.old),
            fmt_val(r.new),
            fmt_change(r.change_pct),
            if r.regression {
                format!(
                    "**{}**",
                    verdict_word(true, r.higher_is_better, r.max_drop_pct)
                )
            } else {
                String::new()
            },
            u = cell(&r.unit)
        ));
    }
    s.push('\n');
    for l in tail_notes(c, &cell).lines() {
        s.push_str(&format!("{l}\n\n"));
    }
    s.trim_end().to_string() + "\n"
}

/// The history as text, 100 columns wide: see [`history_text_with`].
pub fn history_text(h: &History, dir: &str) -> String {
    history_text_with(
        h,
        dir,
        &Thresholds::new(super::DEFAULT_MAX_DROP_PCT),
        &TextView::default(),
    )
}

/// The history as text that fits `v.width`: the runs, the rule a decline is judged by (the
/// regression rule of `compare`), the declining measurements, then one line per measurement
/// with its values (the newest runs that fit, every run with `v.all`) and its trend.
pub fn history_text_with(h: &History, dir: &str, t: &Thresholds, v: &TextView) -> String {
    let w = v.width.max(40);
    let mut s = format!(
        "history of {}: {} run(s), oldest first\n",
        inert(dir),
        h.runs.len()
    );
    for (i, r) in h.runs.iter().enumerate() {
        wrap_into(
            &mut s,
            &format!("  #{:<3} ", i + 1),
            &format!(
                "{}  {}{}",
                inert(&r.name),
                inert(&r.verdict),
                if r.simulated { " (simulated)" } else { "" }
            ),
            7,
            w,
        );
    }
    let declining: Vec<&super::history::Series> =
        h.series.iter().filter(|x| x.trend.declining).collect();
    s.push('\n');
    wrap_into(
        &mut s,
        "declining: ",
        &format!(
            "the newest value {} over at least {} runs (the rule compare calls a regression)",
            rule_text(t, "the oldest"),
            super::history::DECLINE_MIN_RUNS
        ),
        11,
        w,
    );
    wrap_into(
        &mut s,
        "",
        &format!(
            "{} declining of {} measurement(s){}",
            declining.len(),
            h.series.len(),
            if declining.is_empty() { "" } else { ":" }
        ),
        0,
        w,
    );
    for x in &declining {
        let text = format!(
            "{}: {} -> {} {} ({})",
            key_line(&x.key),
            x.values
                .iter()
                .flatten()
                .next()
                .map(|v| fmt_val(*v))
                .unwrap_or_default(),
            x.values
                .iter()
                .flatten()
                .last()
                .map(|v| fmt_val(*v))
                .unwrap_or_default(),
            shown(&x.unit),
            fmt_change(x.trend.first_to_last_pct)
        );
        wrap_into(&mut s, "  ", &text, 4, w);
    }
    s.push('\n');
    s.push_str(&history_table(h, w, v.all));
    history_counters(&mut s, h, t, v, w);
    s
}

/// The runs whose values a counter line shows: the newest eight, or every run with `all`.
const COUNTER_RUNS_SHOWN: usize = 8;

/// Each half's port counters that grew in any run (every one with `v.all`, corrected bits
/// included): their growth during each run, oldest first, and whether they are rising.
fn history_counters(s: &mut String, h: &History, t: &Thresholds, v: &TextView, w: usize) {
    let shown_series: Vec<&CounterSeries> = h
        .counters
        .iter()
        .filter(|x| {
            v.all
                || (x.kind != CounterKind::Informative && x.values.iter().flatten().any(|d| *d > 0))
        })
        .collect();
    if h.counters.is_empty() {
        return;
    }
    let rising = h.counters.iter().filter(|x| x.rising).count();
    s.push('\n');
    wrap_into(
        s,
        "port counters: ",
        &format!(
            "{rising} rising, {} of {} grew in a run (growth during each run, oldest first; \
             rising: the newest run's rate per second worse than the oldest's by more than {}%, \
             from none any growth){}",
            shown_series.len(),
            h.counters.len(),
            t.default_pct,
            if v.all { "" } else { "; --all shows every one" }
        ),
        15,
        w,
    );
    let n = h.runs.len();
    let first = if v.all || n <= COUNTER_RUNS_SHOWN {
        0
    } else {
        n - COUNTER_RUNS_SHOWN
    };
    for x in shown_series {
        let vals: Vec<String> = x.values[first..]
            .iter()
            .map(|d| d.map(thousands).unwrap_or_else(|| "-".into()))
            .collect();
        let text = format!(
            "{}: {}{}{}",
            x.label(),
            if first > 0 { "... " } else { "" },
            vals.join(", "),
            if x.rising { "  RISING" } else { "" }
        );
        wrap_into(s, "  ", &shown(&text), 4, w);
    }
}

/// One line per measurement: its unit, its value in each run shown (the newest that leave the
/// name 32 columns, or every run when `all`), the change first to last, the slope, the trend.
fn history_table(h: &History, w: usize, all: bool) -> String {
    let n = h.runs.len();
    let value_w = h
        .series
        .iter()
        .flat_map(|x| x.values.iter().flatten())
        .map(|v| fmt_val(*v).len())
        .max()
        .unwrap_or(1)
        .max(4);
    // unit, first->last, slope/run, trend, then the run columns
    let fixed = 6 + 2 + 11 + 2 + 9 + 2 + 9 + 2;
    let fit = (w.saturating_sub(fixed + 32) / (value_w + 2)).max(2);
    let first = if all || fit >= n { 0 } else { n - fit };
    let mut header: Vec<String> = vec!["measurement".into(), "unit".into()];
    header.extend((first + 1..=n).map(|i| format!("#{i}")));
    header.extend(["first->last".into(), "slope/run".into(), "trend".into()]);
    let rows: Vec<Vec<String>> = h
        .series
        .iter()
        .map(|x| {
            let mut r = vec![key_line(&x.key), shown(&x.unit)];
            r.extend(
                x.values[first..]
                    .iter()
                    .map(|v| v.map(fmt_val).unwrap_or_else(|| "-".into())),
            );
            r.push(fmt_change(x.trend.first_to_last_pct));
            r.push(
                x.trend
                    .slope_pct_per_run
                    .map(|v| format!("{v:+.2}%"))
                    .unwrap_or_else(|| "-".into()),
            );
            r.push(if x.trend.declining {
                "DECLINING".into()
            } else {
                String::new()
            });
            r
        })
        .collect();
    let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
    let right: Vec<bool> = (0..hdr.len())
        .map(|i| i >= 2 && i + 1 < hdr.len())
        .collect();
    let mut s = String::new();
    if first > 0 {
        s.push_str(&format!(
            "runs #{}-#{n} shown (the first->last change is over all {n}); --all shows every run\n",
            first + 1
        ));
    }
    s.push_str(&fit_table(
        &hdr,
        &rows,
        &right,
        if all { usize::MAX / 2 } else { w },
    ));
    s
}

/// The history as JSON: `format_version`, `dir`, `runs`, `series`.
pub fn history_json(h: &History, dir: &str) -> serde_json::Value {
    json!({
        "format_version": FORMAT_VERSION,
        "dir": dir,
        "runs": h.runs,
        "series": h.series,
        "declining": h.series.iter().filter(|x| x.trend.declining).count(),
        "counters": h.counters,
        "rising": h.counters.iter().filter(|x| x.rising).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_lines_up_by_display_width() {
        let rows = vec![
            vec!["節点-a".to_string(), "1".to_string()],
            vec!["node-b".to_string(), "22".to_string()],
            vec!["e\u{301}".to_string(), "333".to_string()],
        ];
        let t = fit_table(&["name", "value"], &rows, &[false, true], 100);
        let ends: Vec<usize> = t.lines().map(columns).collect();
        assert_eq!(ends, [13, 13, 13, 13], "\n{t}");
    }
}
