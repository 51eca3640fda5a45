//! A run against an older one: per measurement both values, the change and whether it is a
//! regression; what only one of them measured; notes when they are not runs of the same plan.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::entry::{Entry, Key, Quantity, entries};
use super::threshold::Thresholds;
use crate::gate::threshold::Metric;
use crate::results::RunResults;

/// Below this in-place bus bandwidth (GB/s) an NCCL message size is latency-bound: it is judged
/// on its time, above it on its bus bandwidth (nccl-tests prints busbw with two decimals, so a
/// small busbw is too coarse for a percentage, and a large size's time only repeats its busbw).
pub const NCCL_BANDWIDTH_REGIME_GBS: f64 = 1.0;

/// One measurement in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub key: Key,
    pub metric: Metric,
    pub unit: String,
    pub higher_is_better: bool,
    pub old: f64,
    pub new: f64,
    /// (new - old) / old, percent; `None` when the old value is 0.
    pub change_pct: Option<f64>,
    /// The regression threshold that applied, percent.
    pub max_drop_pct: f64,
    /// A drop (bandwidth) or a rise (latency, time) beyond `max_drop_pct`.
    pub regression: bool,
    /// The job in the new run.
    pub job: String,
    /// The capacity model's expected value in the new run, if any.
    pub expected: Option<f64>,
}

impl Row {
    /// The change in the worse direction, percent (a drop for a bandwidth, a rise for a time);
    /// negative when it got better.
    pub fn worsening_pct(&self) -> Option<f64> {
        self.change_pct
            .map(|c| if self.higher_is_better { -c } else { c })
    }
}

/// A comparison of two runs.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Comparison {
    /// Every measurement both runs have, in the new run's order.
    pub rows: Vec<Row>,
    /// Measured only by the old run.
    pub only_old: Vec<Key>,
    /// Measured only by the new run.
    pub only_new: Vec<Key>,
    pub notes: Vec<String>,
    /// Each half's port counters both runs read: their growth during each run.
    pub counters: Vec<super::counters::CounterRow>,
}

impl Comparison {
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.regression)
    }
}

/// `(new - old) / old` in percent, `None` when `old` is 0 or either is not finite.
pub fn change_pct(old: f64, new: f64) -> Option<f64> {
    (old != 0.0 && old.is_finite() && new.is_finite()).then(|| (new - old) / old.abs() * 100.0)
}

/// Is `new` a regression against `old` for a metric better `higher_is_better`, with `max_pct`?
pub fn is_regression(old: f64, new: f64, higher_is_better: bool, max_pct: f64) -> bool {
    match change_pct(old, new) {
        Some(c) if higher_is_better => c < -max_pct,
        Some(c) => c > max_pct,
        None => false,
    }
}

/// Compare `new` with `old`.
pub fn compare(old: &RunResults, new: &RunResults, t: &Thresholds) -> Comparison {
    let old_e = entries(old);
    let new_e = entries(new);
    let (old_e, new_e) = nccl_regime(old_e, new_e);
    let mut notes = Vec::new();
    if old.plan != new.plan {
        notes.push(format!(
            "different plans (`{}` and `{}`): compared on what both measured",
            old.plan, new.plan
        ));
    }
    if old.simulated != new.simulated {
        notes.push(format!(
            "the {} run is simulated, the other is not",
            if old.simulated { "old" } else { "new" }
        ));
    }
    for (which, r) in [("old", old), ("new", new)] {
        if r.interrupted {
            notes.push(format!(
                "the {which} run was interrupted: it measured only part of the plan"
            ));
        }
    }
    let old_by: HashMap<&Key, &Entry> = old_e.iter().map(|e| (&e.key, e)).collect();
    let new_keys: HashMap<&Key, ()> = new_e.iter().map(|e| (&e.key, ())).collect();
    let mut rows = Vec::new();
    let mut only_new = Vec::new();
    for n in &new_e {
        let Some(o) = old_by.get(&n.key) else {
            only_new.push(n.key.clone());
            continue;
        };
        let hib = n.higher_is_better;
        let max = t.max_drop(n.metric);
        rows.push(Row {
            key: n.key.clone(),
            metric: n.metric,
            unit: n.unit.clone(),
            higher_is_better: hib,
            old: o.value,
            new: n.value,
            change_pct: change_pct(o.value, n.value),
            max_drop_pct: max,
            regression: is_regression(o.value, n.value, hib, max),
            job: n.job.clone(),
            expected: n.expected,
        });
    }
    let only_old: Vec<Key> = old_e
        .iter()
        .filter(|e| !new_keys.contains_key(&e.key))
        .map(|e| e.key.clone())
        .collect();
    Comparison {
        rows,
        only_old,
        only_new,
        notes,
        counters: super::counters::rows(old, new, t.default_pct),
    }
}

/// Keep, per NCCL message size, the quantity of its regime: time where the old run's bus
/// bandwidth at that size is below [`NCCL_BANDWIDTH_REGIME_GBS`], bus bandwidth above (the new
/// run's where the old has no such size), the same choice on both sides.
fn nccl_regime(old: Vec<Entry>, new: Vec<Entry>) -> (Vec<Entry>, Vec<Entry>) {
    let busbw = |es: &[Entry]| -> BTreeMap<(String, String, u64), f64> {
        es.iter()
            .filter(|e| e.key.quantity == Quantity::Busbw)
            .filter_map(|e| {
                Some((
                    (
                        e.key.round.clone(),
                        e.key.subject.clone(),
                        e.key.size_bytes?,
                    ),
                    e.value,
                ))
            })
            .collect()
    };
    let (ob, nb) = (busbw(&old), busbw(&new));
    let keep = |e: &Entry| -> bool {
        let Some(size) = e.key.size_bytes else {
            return true;
        };
        let k = (e.key.round.clone(), e.key.subject.clone(), size);
        let bw = ob.get(&k).or_else(|| nb.get(&k)).copied();
        let bandwidth_bound = bw.is_some_and(|b| b >= NCCL_BANDWIDTH_REGIME_GBS);
        match e.key.quantity {
            Quantity::Busbw => bandwidth_bound,
            Quantity::Time => !bandwidth_bound,
            Quantity::Gate => true,
        }
    };
    let old = old.into_iter().filter(|e| keep(e)).collect();
    let new = new.into_iter().filter(|e| keep(e)).collect();
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_per_metric() {
        // 111 -> 100 Gb/s is -9.9%: within 10%, a regression at 5%
        assert!(!is_regression(111.0, 100.0, true, 10.0));
        assert!(is_regression(111.0, 100.0, true, 5.0));
        // a latency regresses by rising
        assert!(is_regression(1.45, 1.80, false, 20.0));
        assert!(!is_regression(1.45, 1.20, false, 20.0));
        assert!(!is_regression(0.0, 5.0, true, 10.0));
        assert_eq!(change_pct(0.0, 1.0), None);
    }
}
