//! Comparisons and histories as text (aligned columns), Markdown and JSON. Every string that
//! came from a plan or a host is made inert (control characters shown escaped).

use serde_json::json;

use super::baseline::{fmt_change, fmt_val};
use super::diff::Comparison;
use super::entry::Key;
use super::history::History;
use super::threshold::Thresholds;
use crate::results::RunResults;
use crate::text::inert;
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
/// `only_old`, `only_new`, `notes`.
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
        "only_old": c.only_old,
        "only_new": c.only_new,
        "notes": c.notes,
    })
}

/// Aligned columns, padded by display width; `right[i]` aligns column i to the right. No
/// trailing spaces.
fn table(header: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let cols = header.len();
    let mut w: Vec<usize> = header.iter().map(|h| columns(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            w[i] = w[i].max(columns(c));
        }
    }
    let line = |cells: Vec<String>| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&rpad(c, w[i]));
            } else {
                s.push_str(&pad(c, w[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        out.push_str(&line(r.clone()));
    }
    out
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

/// The comparison as aligned text.
pub fn comparison_text(c: &Comparison, old: &Side<'_>, new: &Side<'_>, t: &Thresholds) -> String {
    let mut s = format!(
        "old: {} ({}, {})\nnew: {} ({}, {})\nmax change: {} (a drop for bandwidth, a rise for latency and time)\n\n",
        inert(&old.run.run_id),
        inert(&old.path),
        inert(&old.run.summary.verdict),
        inert(&new.run.run_id),
        inert(&new.path),
        inert(&new.run.summary.verdict),
        t.describe()
    );
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            vec![
                inert(&r.key.round).into_owned(),
                inert(&r.key.to_string()).into_owned(),
                format!("{} {}", fmt_val(r.old), inert(&r.unit)),
                format!("{} {}", fmt_val(r.new), inert(&r.unit)),
                fmt_change(r.change_pct),
                verdict_word(r.regression, r.higher_is_better, r.max_drop_pct),
            ]
        })
        .collect();
    s.push_str(&table(
        &["round", "measurement", "old", "new", "change", ""],
        &rows,
        &[false, false, true, true, true, false],
    ));
    s.push('\n');
    s.push_str(&tail(c, &shown));
    s
}

/// What follows a comparison's table: the regressions, what only one run has, the notes; every
/// text from the runs through `esc`.
fn tail(c: &Comparison, esc: &dyn Fn(&str) -> String) -> String {
    let line = |k: &Key| key_line_with(k, esc);
    let mut s = String::new();
    let n = c.regressions().count();
    if n == 0 {
        s.push_str(&format!(
            "no regression: {} measurement(s) compared\n",
            c.rows.len()
        ));
    } else {
        s.push_str(&format!(
            "{n} regression(s) in {} measurement(s) compared:\n",
            c.rows.len()
        ));
        for r in c.regressions() {
            s.push_str(&format!(
                "  {}: {} -> {} {} ({})\n",
                line(&r.key),
                fmt_val(r.old),
                fmt_val(r.new),
                esc(&r.unit),
                fmt_change(r.change_pct)
            ));
        }
    }
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
    for l in tail(c, &cell).lines() {
        s.push_str(&format!("{l}\n"));
        if !l.starts_with("  ") {
            s.push('\n');
        }
    }
    s.trim_end().to_string() + "\n"
}

/// The history as aligned text: the runs, then one line per measurement with its trend.
pub fn history_text(h: &History, dir: &str) -> String {
    let mut s = format!(
        "history of {}: {} run(s), oldest first\n",
        inert(dir),
        h.runs.len()
    );
    for (i, r) in h.runs.iter().enumerate() {
        s.push_str(&format!(
            "  #{:<3} {}  {}{}\n",
            i + 1,
            inert(&r.name),
            inert(&r.verdict),
            if r.simulated { " (simulated)" } else { "" }
        ));
    }
    s.push('\n');
    let mut header: Vec<String> = vec!["measurement".into(), "unit".into()];
    header.extend((1..=h.runs.len()).map(|i| format!("#{i}")));
    header.extend(["first->last".into(), "slope/run".into(), "trend".into()]);
    let rows: Vec<Vec<String>> = h
        .series
        .iter()
        .map(|x| {
            let mut r = vec![key_line(&x.key), shown(&x.unit)];
            r.extend(
                x.values
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
    s.push_str(&table(&hdr, &rows, &right));
    let declining = h.series.iter().filter(|x| x.trend.declining).count();
    s.push_str(&format!(
        "\n{declining} declining of {} measurement(s)\n",
        h.series.len()
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
        let t = table(&["name", "value"], &rows, &[false, true]);
        let ends: Vec<usize> = t.lines().map(columns).collect();
        assert_eq!(ends, [13, 13, 13, 13], "\n{t}");
    }
}
