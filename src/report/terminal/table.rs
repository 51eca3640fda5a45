//! Every gate in a table (`--verbose`, `--all`): its verdict, the gate, the measured value and
//! the threshold or evidence, each wrapped within its column; a WARN or FAIL with what was
//! seen and its fix, or the part it follows from.

use std::io::{self, Write};

use super::Page;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::RunResults;
use crate::text::inert;
use crate::text::width::{columns, pad, rpad};

/// The verdict column, and the measured value's.
const VERDICT_W: usize = 8;
const MEASURED_W: usize = 14;

/// The widths of the table's wrapped columns.
struct Columns {
    gate: usize,
    rest: usize,
}

impl Columns {
    /// The gate column as wide as the widest gate, up to two fifths of the width; the threshold
    /// or evidence gets the rest (at least 16).
    fn fit(r: &RunResults, width: usize) -> Columns {
        let widest = r
            .verdicts()
            .map(|v| columns(&v.gate))
            .chain(
                r.jobs
                    .iter()
                    .map(|j| columns(&j.kind) + columns(&j.label) + 1),
            )
            .max()
            .unwrap_or(4);
        let gate = widest.min((width * 2 / 5).max(20));
        let rest = width
            .saturating_sub(VERDICT_W + gate + 2 + MEASURED_W + 2)
            .max(16);
        Columns { gate, rest }
    }
}

/// Every gate, then every job that has none (not run), in a table.
pub(super) fn table(p: &mut Page, r: &RunResults) -> io::Result<()> {
    let cols = Columns::fit(r, p.width);
    writeln!(p.out)?;
    let head = format!(
        "{}{}  {}  threshold or evidence",
        pad("verdict", VERDICT_W),
        pad("gate", cols.gate),
        rpad("measured", MEASURED_W),
    );
    p.line(&head)?;
    for v in r.verdicts() {
        verdict(p, v, &cols)?;
    }
    for j in r.jobs.iter().filter(|j| j.verdicts.is_empty()) {
        let gate = inert(&format!("{} {}", j.kind, j.label)).into_owned();
        let reason = inert(j.reason.as_deref().unwrap_or_default()).into_owned();
        row(
            p,
            crate::results::tally::job_word(j),
            None,
            &cols,
            &gate,
            "",
            &reason,
        )?;
    }
    // the count every output prints, in its words
    p.line("")?;
    p.wrapped("gates: ", &crate::results::Tally::of_run(r).words(", "), 7)
}

/// One row of the table: the verdict word (painted), then the gate, the measured value and
/// the threshold or evidence, each wrapped within its column.
fn row(
    p: &mut Page,
    word: &str,
    outcome: Option<Outcome>,
    cols: &Columns,
    gate: &str,
    measured: &str,
    rest: &str,
) -> io::Result<()> {
    let g = Page::cell(gate, cols.gate);
    let r = Page::cell(rest, cols.rest);
    for i in 0..g.len().max(r.len()) {
        let lead = if i == 0 {
            format!(
                "{}{}",
                p.paint(word, outcome),
                " ".repeat(VERDICT_W.saturating_sub(word.len()))
            )
        } else {
            " ".repeat(VERDICT_W)
        };
        let line = format!(
            "{lead}{}  {}  {}",
            pad(g.get(i).map(String::as_str).unwrap_or(""), cols.gate),
            rpad(if i == 0 { measured } else { "" }, MEASURED_W),
            r.get(i).map(String::as_str).unwrap_or(""),
        );
        writeln!(p.out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// One verdict: its row, then for a WARN or FAIL what was seen and the fix (or the part it
/// follows from).
fn verdict(p: &mut Page, v: &Verdict, cols: &Columns) -> io::Result<()> {
    let measured = v
        .measured
        .map(|m| format!("{m:.2} {}", v.unit))
        .unwrap_or_default();
    // the word it is counted under: its outcome, or `follow` (coloured by its outcome)
    let word = crate::results::tally::word(v);
    // the threshold for a measured value (with its attempts when the gate repeats); the
    // evidence of an OK check
    let rest = if !v.attempts.is_empty() && v.outcome == Outcome::Ok {
        format!("{}; {}", v.detail, v.threshold)
    } else if v.measured.is_some() {
        v.threshold.clone()
    } else if v.outcome == Outcome::Ok {
        v.detail.clone()
    } else {
        String::new()
    };
    row(
        p,
        word,
        Some(v.outcome),
        cols,
        &inert(&v.gate),
        &measured,
        &inert(&rest),
    )?;
    if v.outcome == Outcome::Ok {
        return Ok(());
    }
    let mut notes: Vec<String> = Vec::new();
    match (&v.trap_name, v.detail.is_empty()) {
        (Some(t), false) => notes.push(format!("{t}: {}", v.detail)),
        (Some(t), true) => notes.push(t.clone()),
        (None, false) => notes.push(v.detail.clone()),
        (None, true) => {}
    }
    match &v.follows {
        Some(part) => notes.push(format!(
            "a {} that follows from {part}: counted there, not again",
            v.outcome.as_str()
        )),
        None => notes.push("the first evidence of a finding: see what to fix".to_string()),
    }
    for n in notes {
        p.wrapped(&" ".repeat(VERDICT_W + 2), &inert(&n), VERDICT_W + 2)?;
    }
    Ok(())
}
