//! Every gate of the run, in a table folded away (a big run's: those that did not pass).

use serde::Serialize;

use crate::gate::judge::Outcome;
use crate::results::RunResults;

/// The table of gates: how many, how many passed, the rows shown.
#[derive(Serialize)]
pub(super) struct Gates {
    /// A big run lists the gates that did not pass and counts the others.
    big: bool,
    total: usize,
    ok: usize,
    rows: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    gate: String,
    outcome: Outcome,
    /// Its outcome, or `follow` (as it is counted).
    word: &'static str,
    measured: Option<f64>,
    unit: String,
    threshold: String,
    trap: Option<String>,
    fix: Option<String>,
    detail: String,
    /// The gate a FAIL follows from: the same cause seen again, counted once.
    follows: Option<String>,
}

pub(super) fn gates(r: &RunResults) -> Gates {
    let big = super::big(r);
    Gates {
        big,
        total: r.verdicts().count(),
        ok: r.verdicts().filter(|v| v.outcome == Outcome::Ok).count(),
        rows: r
            .verdicts()
            .filter(|v| !big || v.outcome != Outcome::Ok)
            .map(|v| Row {
                gate: v.gate.clone(),
                outcome: v.outcome,
                word: crate::results::tally::word(v),
                measured: v.measured,
                unit: v.unit.clone(),
                threshold: v.threshold.clone(),
                trap: v.trap_name.clone(),
                fix: v.fix.clone(),
                detail: v.detail.clone(),
                follows: v.follows.clone().filter(|_| v.outcome != Outcome::Ok),
            })
            .collect(),
    }
}
