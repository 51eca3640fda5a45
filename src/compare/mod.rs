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
mod counters;
mod diff;
mod entry;
mod explain;
mod format;
mod history;
mod read;
mod threshold;

pub use crate::results::{Flow, flow_of, flow_of_verdict, node_names};
pub use baseline::{Baseline, baseline_verdicts, is_baseline_verdict};
pub use counters::{CounterRow, CounterSeries};
pub use diff::{Comparison, NCCL_BANDWIDTH_REGIME_GBS, Row, change_pct, compare, is_regression};
pub use entry::{Entry, Key, Quantity, entries};
pub use explain::{Cause, Explained, explain};
pub use format::{
    FORMAT_VERSION, Side, TextView, comparison_json, comparison_markdown, comparison_text,
    comparison_text_with, history_json, history_text, history_text_with, rule_text,
};
pub use history::{History, RunPoint, Series, Trend, history, history_with, order, trend};
pub use threshold::{DEFAULT_MAX_DROP_PCT, RegressionError, Thresholds, parse_pct};

pub use read::{
    MAX_UNIX_MS, READS, ResultsError, check_head, outputs_from, parse_results, results_from,
};
