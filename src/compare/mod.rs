//! Runs over time: a run against a baseline (`fabricplan compare`, `run --baseline`) and a
//! plan's runs in order (`fabricplan history`). Pure: results in, comparisons, verdicts and text
//! out; reading run directories and printing are the CLI's.
//!
//! Measurements are matched across runs by stable keys ([`Key`]): kind + round name + gate for
//! every gate's value (`rdma-bw spark-b.f0.a -> spark-a.f0.a`), test + collective + message size
//! for NCCL rows. A regression is a drop of a bandwidth, or a rise of a latency or time, beyond
//! the metric's threshold ([`Thresholds`], 10% unless the plan's `[regression]` table or
//! `--max-drop` says otherwise).

pub mod baseline;
mod diff;
mod entry;
mod format;
mod history;
mod threshold;

pub use baseline::{baseline_verdicts, is_baseline_verdict};
pub use diff::{Comparison, NCCL_BANDWIDTH_REGIME_GBS, Row, change_pct, compare, is_regression};
pub use entry::{
    Entry, Flow, Key, NcclRow, Quantity, entries, flow_of, is_nccl, nccl_rows_of, nccl_subject,
    node_names,
};
pub use format::{
    FORMAT_VERSION, Side, comparison_json, comparison_markdown, comparison_text, history_json,
    history_text,
};
pub use history::{History, RunPoint, Series, Trend, history, order, trend};
pub use threshold::{DEFAULT_MAX_DROP_PCT, RegressionError, Thresholds, parse_pct};

use crate::results::{ReadError, RunResults};

/// Why text is not a run's results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Parsed(String),
    #[error("not a fabricplan results.json (no `format_version`, `plan` or `jobs`)")]
    NotResults,
}

/// Read a run's `results.json` text. Fields this version does not know are ignored, missing ones
/// take their defaults; a document without `format_version`, `plan` or `jobs` is not a run.
pub fn parse_results(text: &str) -> Result<RunResults, ResultsError> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let has = |k: &str| v.get(k).is_some();
    if !(has("format_version") && has("plan") && has("jobs")) {
        return Err(ResultsError::NotResults);
    }
    let r = RunResults::read(v, &crate::kinds::tool).map_err(|e| match e {
        ReadError::Json(e) => ResultsError::Json(e),
        e => ResultsError::Parsed(e.to_string()),
    })?;
    if r.format_version == 0 {
        return Err(ResultsError::NotResults);
    }
    Ok(r)
}
