//! A plan's runs in order: one series per link and collective (every gate's measured value),
//! oldest to newest, with its trend, so a slow decline that no single comparison flags is seen.
//!
//! The trend of a series: the change from its first to its last value, the least-squares slope
//! per run (percent of the series' mean), and `declining` by the rule `compare` calls a
//! regression: at least [`DECLINE_MIN_RUNS`] values, and the newest worse than the oldest by
//! more than the metric's maximum change (the plan's `[regression]` table, `--max-drop`, else
//! 10%). One rule for both: a measurement `history` calls declining is one `compare` of its
//! first and last runs calls a regression.

use std::collections::HashMap;

use serde::Serialize;

use super::diff::{change_pct, is_regression};
use super::entry::{Key, Quantity, entries};
use super::threshold::Thresholds;
use crate::gate::threshold::Metric;
use crate::results::RunResults;

/// Values a decline needs.
pub const DECLINE_MIN_RUNS: usize = 3;

/// One run of the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPoint {
    /// Where it was read from (the run directory's name).
    pub name: String,
    pub run_id: String,
    pub started_unix_ms: u64,
    pub verdict: String,
    pub simulated: bool,
}

/// Whether a series gets better or worse.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trend {
    /// (last - first) / first, percent.
    pub first_to_last_pct: Option<f64>,
    /// Least-squares slope per run, percent of the mean (positive: the value rises).
    pub slope_pct_per_run: Option<f64>,
    /// Worse first to last beyond the metric's maximum change (see the module's doc).
    pub declining: bool,
}

/// One measurement over the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    #[serde(flatten)]
    pub key: Key,
    pub metric: Metric,
    pub unit: String,
    pub higher_is_better: bool,
    /// One per run, oldest first; `None` where that run did not measure it.
    pub values: Vec<Option<f64>>,
    pub trend: Trend,
}

/// The history of `runs` (oldest first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    pub runs: Vec<RunPoint>,
    pub series: Vec<Series>,
    /// Each half's port counters: what each grew by during each run.
    pub counters: Vec<super::counters::CounterSeries>,
}

/// Order runs oldest first: by start time, then name.
pub fn order(runs: &mut [(String, RunResults)]) {
    runs.sort_by(|(an, a), (bn, b)| {
        a.started_unix_ms
            .cmp(&b.started_unix_ms)
            .then_with(|| an.cmp(bn))
    });
}

/// The history of `runs` with the default 10% rule: see [`history_with`].
pub fn history(runs: &[(String, RunResults)]) -> History {
    history_with(runs, &Thresholds::new(super::DEFAULT_MAX_DROP_PCT))
}

/// The history of `runs`, already ordered oldest first (see [`order`]), each with its name; a
/// decline judged by `t`, as `compare` judges a regression.
pub fn history_with(runs: &[(String, RunResults)], t: &Thresholds) -> History {
    let n = runs.len();
    let mut series: Vec<Series> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        for e in entries(r)
            .into_iter()
            .filter(|e| e.key.quantity == Quantity::Gate)
        {
            let at = *index.entry(e.key.clone()).or_insert_with(|| {
                series.push(Series {
                    key: e.key.clone(),
                    metric: e.metric,
                    unit: e.unit.clone(),
                    higher_is_better: e.higher_is_better,
                    values: vec![None; n],
                    trend: Trend {
                        first_to_last_pct: None,
                        slope_pct_per_run: None,
                        declining: false,
                    },
                });
                series.len() - 1
            });
            series[at].values[i] = Some(e.value);
        }
    }
    for s in &mut series {
        s.trend = trend(&s.values, s.higher_is_better, t.max_drop(s.metric));
    }
    History {
        runs: runs
            .iter()
            .map(|(name, r)| RunPoint {
                name: name.clone(),
                run_id: r.run_id.clone(),
                started_unix_ms: r.started_unix_ms,
                verdict: r.summary.verdict.clone(),
                simulated: r.simulated,
            })
            .collect(),
        series,
        counters: super::counters::series(runs, t.default_pct),
    }
}

/// The trend of `values` (`None` = not measured in that run): declining when there are at least
/// [`DECLINE_MIN_RUNS`] values and the last is a regression against the first beyond `max_pct`.
pub fn trend(values: &[Option<f64>], higher_is_better: bool, max_pct: f64) -> Trend {
    let pts: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
        .collect();
    let first_to_last_pct = match (pts.first(), pts.last()) {
        (Some(a), Some(b)) if pts.len() >= 2 => change_pct(a.1, b.1),
        _ => None,
    };
    let declining = match (pts.first(), pts.last()) {
        (Some(a), Some(b)) if pts.len() >= DECLINE_MIN_RUNS => {
            is_regression(a.1, b.1, higher_is_better, max_pct)
        }
        _ => false,
    };
    Trend {
        first_to_last_pct,
        slope_pct_per_run: slope(&pts),
        declining,
    }
}

fn slope(pts: &[(f64, f64)]) -> Option<f64> {
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx == 0.0 || my == 0.0 {
        return None;
    }
    Some(sxy / sxx / my.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decline_is_a_regression_first_to_last() {
        let v = [
            Some(111.5),
            Some(108.9),
            Some(104.1),
            Some(101.8),
            Some(99.0),
        ];
        let t = trend(&v, true, 10.0);
        assert!(t.declining, "{t:?}");
        assert!(t.first_to_last_pct.unwrap() < -10.0);
        assert!(t.slope_pct_per_run.unwrap() < 0.0);
        // the same series under a looser rule, and a small drift, are not
        assert!(!trend(&v, true, 15.0).declining);
        let t = trend(&[Some(30.36), Some(30.6), Some(30.99)], false, 10.0);
        assert!(!t.declining, "+2.1% is inside 10%: {t:?}");
    }

    #[test]
    fn noise_and_recovery_are_not_declines() {
        // healthy noise
        let t = trend(
            &[Some(111.5), Some(111.7), Some(111.4), Some(111.6)],
            true,
            10.0,
        );
        assert!(!t.declining);
        // a drop, then fixed
        let t = trend(
            &[Some(111.5), Some(100.0), Some(95.0), Some(111.0)],
            true,
            10.0,
        );
        assert!(!t.declining);
        // two runs are not a trend (that is compare's)
        assert!(!trend(&[Some(111.5), Some(90.0)], true, 10.0).declining);
    }

    #[test]
    fn latency_declines_by_rising_and_gaps_are_skipped() {
        let t = trend(
            &[Some(1.45), None, Some(1.52), Some(1.60), Some(1.71)],
            false,
            10.0,
        );
        assert!(t.declining, "{t:?}");
        assert!(t.first_to_last_pct.unwrap() > 17.0);
        assert!(!trend(&[Some(1.71), Some(1.60), Some(1.45)], false, 10.0).declining);
    }
}
