//! The run against its baseline: one row per compared measurement.

use serde::Serialize;

use crate::compare::{self, baseline as base};
use crate::gate::judge::Outcome;
use crate::results::RunResults;

/// A compared measurement: the baseline's value, the run's, the change, what was allowed.
#[derive(Serialize)]
pub(super) struct Row {
    gate: String,
    outcome: Outcome,
    was: Option<f64>,
    now: Option<f64>,
    unit: String,
    /// In percent; `None` when either value is missing.
    change: Option<f64>,
    threshold: String,
}

/// The rows of the run's baseline verdicts (none without a baseline).
pub(super) fn rows(r: &RunResults) -> Vec<Row> {
    base::of(r)
        .into_iter()
        .map(|(_, v)| Row {
            gate: v.gate.strip_suffix(base::SUFFIX).unwrap_or(&v.gate).into(),
            outcome: v.outcome,
            was: v.expected,
            now: v.measured,
            unit: v.unit.clone(),
            change: match (v.expected, v.measured) {
                (Some(o), Some(n)) => compare::change_pct(o, n),
                _ => None,
            },
            threshold: v.threshold.clone(),
        })
        .collect()
}
