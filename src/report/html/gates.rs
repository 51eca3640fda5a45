//! Every gate of the run, in a table folded away (a big run's: those that did not pass).

use std::fmt::Write as _;

use super::format::{class, esc, fmt_val};
use crate::gate::judge::Outcome;
use crate::results::RunResults;

pub(super) fn all_gates(h: &mut String, r: &RunResults) {
    // a big run lists the gates that did not pass and counts the others
    let big = super::big(r);
    let ok = r.verdicts().filter(|v| v.outcome == Outcome::Ok).count();
    let summary = if big {
        format!(
            "{} gate(s): {ok} OK (in results.json), the {} WARN and FAIL here",
            r.verdicts().count(),
            r.verdicts().count() - ok
        )
    } else {
        format!("{} gate(s): show the table", r.verdicts().count())
    };
    let _ = writeln!(
        h,
        "<section id=\"gates\"><h2>Every gate</h2><details><summary>{summary}</summary><table><tr><th>gate</th><th></th><th class=\"num\">measured</th><th>threshold</th><th>trap and fix, or evidence</th></tr>"
    );
    for v in r.verdicts().filter(|v| !big || v.outcome != Outcome::Ok) {
        let trap = match (&v.trap_name, &v.fix) {
            (Some(t), Some(f)) => format!("<b>{}</b>: {}", esc(t), esc(f)),
            _ => esc(&v.detail),
        };
        // a FAIL that follows from another is the same cause seen again, counted once
        let trap = match &v.follows {
            Some(g) if v.outcome == Outcome::Fail => {
                format!("follows from <b>{}</b> (not counted again); {trap}", esc(g))
            }
            _ => trap,
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"num\">{}</td><td>{}</td><td>{trap}</td></tr>",
            esc(&v.gate),
            class(v.outcome),
            v.outcome.as_str(),
            v.measured
                .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                .unwrap_or_default(),
            esc(&v.threshold),
        );
    }
    h.push_str("</table></details></section>\n");
}
