//! The run against its baseline: one row per compared measurement.

use std::fmt::Write as _;

use super::format::{class, esc, fmt_val};
use crate::compare::{self, baseline as base};
use crate::results::RunResults;

pub(super) fn baseline_table(h: &mut String, r: &RunResults) {
    let rows = base::of(r);
    if rows.is_empty() {
        return;
    }
    h.push_str("<section id=\"baseline\"><h2>Against the baseline</h2>\n<table><tr><th>measurement</th><th></th><th class=\"num\">baseline</th><th class=\"num\">now</th><th class=\"num\">change</th><th>allowed</th></tr>\n");
    for (_, v) in rows {
        let gate = v.gate.strip_suffix(base::SUFFIX).unwrap_or(&v.gate);
        let change = match (v.expected, v.measured) {
            (Some(o), Some(n)) => base::fmt_change(compare::change_pct(o, n)),
            _ => "-".into(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(gate),
            class(v.outcome),
            v.outcome.as_str(),
            v.expected
                .map(|x| format!("{} {}", fmt_val(x), esc(&v.unit)))
                .unwrap_or_default(),
            v.measured
                .map(|x| format!("{} {}", fmt_val(x), esc(&v.unit)))
                .unwrap_or_default(),
            change,
            esc(&v.threshold)
        );
    }
    h.push_str("</table></section>\n");
}
