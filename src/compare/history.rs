//! A plan's runs in order: one series per link and collective (every gate's measured value),
//! oldest to newest, with its trend, so a slow decline that no single comparison flags is seen.
//!
//! The trend of a series: the change from its first to its last value, the least-squares slope
//! per run (percent of the series' mean), and `declining` when it is consistently worse: at
//! least [`DECLINE_MIN_RUNS`] values, no step better by more than [`NOISE_PCT`], worse first to
//! last by more than [`DECLINE_MIN_PCT`].

use std::collections::HashMap;

use serde::Serialize;

use super::diff::change_pct;
use super::entry::{Key, Quantity, entries};
use crate::gate::threshold::Metric;
use crate::results::RunResults;

/// A step better than this (percent) breaks a decline: run-to-run noise is below it on healthy
/// hardware (ib_write_bw repeats within a few tenths of a percent).
pub const NOISE_PCT: f64 = 1.0;
/// A decline must lose more than this from first to last (percent).
pub const DECLINE_MIN_PCT: f64 = 2.0;
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
    /// Consistently worse (see the module's doc).
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
}

/// Order runs oldest first: by start time, then name.
pub fn order(runs: &mut [(String, RunResults)]) {
    runs.sort_by(|(an, a), (bn, b)| {
        a.started_unix_ms
            .cmp(&b.started_unix_ms)
            .then_with(|| an.cmp(bn))
    });
}

/// The history of `runs`, already ordered oldest first (see [`order`]), each with its name.
pub fn history(runs: &[(String, RunResults)]) -> History {
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
        s.trend = trend(&s.values, s.higher_is_better);
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
    }
}

/// The trend of `values` (`None` = not measured in that run).
pub fn trend(values: &[Option<f64>], higher_is_better: bool) -> Trend {
    let pts: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
        .collect();
    let first_to_last_pct = match (pts.first(), pts.last()) {
        (Some(a), Some(b)) if pts.len() >= 2 => change_pct(a.1, b.1),
        _ => None,
    };
    let slope_pct_per_run = slope(&pts);
    // worse = a drop for a bandwidth, a rise for a time
    let worse = |c: f64| if higher_is_better { -c } else { c };
    let steps_ok = pts
        .windows(2)
        .all(|w| change_pct(w[0].1, w[1].1).is_some_and(|c| worse(c) >= -NOISE_PCT));
    let declining = pts.len() >= DECLINE_MIN_RUNS
        && steps_ok
        && first_to_last_pct.is_some_and(|c| worse(c) > DECLINE_MIN_PCT)
        && slope_pct_per_run.is_some_and(|s| worse(s) > 0.0);
    Trend {
        first_to_last_pct,
        slope_pct_per_run,
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
    fn slow_decline_is_declining() {
        let v = [
            Some(111.5),
            Some(110.9),
            Some(110.1),
            Some(108.8),
            Some(107.0),
        ];
        let t = trend(&v, true);
        assert!(t.declining, "{t:?}");
        assert!(t.first_to_last_pct.unwrap() < -4.0);
        assert!(t.slope_pct_per_run.unwrap() < 0.0);
    }

    #[test]
    fn noise_and_recovery_are_not_declines() {
        // healthy noise
        let t = trend(&[Some(111.5), Some(111.7), Some(111.4), Some(111.6)], true);
        assert!(!t.declining);
        // a drop, then fixed: the step back up breaks it
        let t = trend(&[Some(111.5), Some(100.0), Some(95.0), Some(111.0)], true);
        assert!(!t.declining);
        // two runs are not a trend
        assert!(!trend(&[Some(111.5), Some(90.0)], true).declining);
    }

    #[test]
    fn latency_declines_by_rising_and_gaps_are_skipped() {
        let t = trend(
            &[Some(1.45), None, Some(1.52), Some(1.60), Some(1.71)],
            false,
        );
        assert!(t.declining, "{t:?}");
        assert!(t.first_to_last_pct.unwrap() > 17.0);
        assert!(!trend(&[Some(1.71), Some(1.60), Some(1.45)], false).declining);
    }
}
