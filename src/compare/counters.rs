//! Port counters over time: what each half's port counters (errors, flaps, retransmissions,
//! congestion; see [`crate::results::counters`]) grew by during each run, matched across runs by
//! the half and the counter's name, so that a cable taking more errors run after run is seen.
//!
//! Runs last different times, so a counter is judged by its growth per second of the run. A
//! counter **grew** (compare) or is **rising** (history) by the rule a regression follows: the
//! newer run's rate worse than the older's by more than the maximum change (`[regression]`
//! `max-drop`, `--max-drop`, else 10%); from nothing, any growth. History judges its newest run
//! against its oldest that read the counter, as it judges a decline.

use crate::text::thousands;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::results::RunResults;
use crate::results::counters::{CounterKind, HalfCounters};

/// One counter of one half over a history's runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSeries {
    pub half: String,
    pub node: String,
    pub cable: Option<String>,
    pub counter: String,
    pub kind: CounterKind,
    /// Its growth during each run, oldest first; `None` where that run did not read it at both
    /// ends (an older results.json, a run that ended early, a counter reset).
    pub values: Vec<Option<u64>>,
    /// The same per second of each run.
    pub per_s: Vec<Option<f64>>,
    /// Its newest growth rate worse than its oldest's (see the module's doc).
    pub rising: bool,
}

impl CounterSeries {
    /// `spark-a.f0.a symbol-errors (cable spark-a.f0 -- spark-b.f0)`.
    pub fn label(&self) -> String {
        label(&self.half, &self.counter, self.cable.as_deref())
    }
}

/// One counter of one half in both runs of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRow {
    pub half: String,
    pub node: String,
    pub cable: Option<String>,
    pub counter: String,
    pub kind: CounterKind,
    /// Its growth during the old run and during the new one.
    pub old: u64,
    pub new: u64,
    pub old_per_s: f64,
    pub new_per_s: f64,
    pub new_interval_s: f64,
    /// The new run's rate worse than the old run's (see the module's doc).
    pub grew: bool,
}

impl CounterRow {
    /// `spark-a.f0.a symbol-errors: 0 -> 1,204 during the run (0/s -> 13.4/s)`.
    pub fn line(&self) -> String {
        format!(
            "{} {}: {} -> {} during the run ({} -> {})",
            self.half,
            self.counter,
            thousands(self.old),
            thousands(self.new),
            per_s(self.old_per_s),
            per_s(self.new_per_s)
        )
    }

    /// Is a finding about `part` (its short name) about this half or its cable?
    pub fn about(&self, part: &str) -> bool {
        part == self.half || self.cable.as_deref() == Some(part)
    }
}

fn label(half: &str, counter: &str, cable: Option<&str>) -> String {
    match cable {
        Some(c) => format!("{half} {counter} ({c})"),
        None => format!("{half} {counter}"),
    }
}

/// `13.4/s`, `0/s`, `2.1e-3/s`, `8,636,364/s`.
pub fn per_s(v: f64) -> String {
    if v == 0.0 {
        "0/s".into()
    } else if v >= 1000.0 {
        format!("{}/s", crate::text::thousands(v.round() as u64))
    } else if v >= 0.1 {
        format!("{v:.1}/s")
    } else {
        format!("{v:.1e}/s")
    }
}

/// Is `new` (a growth rate) worse than `old` by more than `max_pct`? From nothing, any growth.
pub fn worse(old: f64, new: f64, new_growth: u64, max_pct: f64) -> bool {
    if new_growth == 0 {
        return false;
    }
    if old <= 0.0 {
        return true;
    }
    (new - old) / old * 100.0 > max_pct
}

/// Every half's counters of a run by half name.
fn by_half(r: &RunResults) -> BTreeMap<&str, &HalfCounters> {
    r.port_counters
        .iter()
        .map(|h| (h.half.as_str(), h))
        .collect()
}

/// The counters of `runs` (oldest first): one series per half and counter, judged by `max_pct`.
pub fn series(runs: &[(String, RunResults)], max_pct: f64) -> Vec<CounterSeries> {
    let n = runs.len();
    let mut out: BTreeMap<(String, String), CounterSeries> = BTreeMap::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        for h in &r.port_counters {
            for (counter, d) in h.grew() {
                let s = out
                    .entry((h.half.clone(), counter.to_string()))
                    .or_insert_with(|| CounterSeries {
                        half: h.half.clone(),
                        node: h.node.clone(),
                        cable: h.cable.clone(),
                        counter: counter.to_string(),
                        kind: CounterKind::of(counter),
                        values: vec![None; n],
                        per_s: vec![None; n],
                        rising: false,
                    });
                s.values[i] = Some(d);
                s.per_s[i] = h.rate(counter);
            }
        }
    }
    let mut out: Vec<CounterSeries> = out.into_values().collect();
    for s in &mut out {
        let read: Vec<(u64, f64)> = s
            .values
            .iter()
            .zip(&s.per_s)
            .filter_map(|(v, r)| Some(((*v)?, (*r)?)))
            .collect();
        s.rising = match (read.first(), read.last()) {
            (Some(a), Some(b)) if read.len() >= 2 => worse(a.1, b.1, b.0, max_pct),
            _ => false,
        };
    }
    out
}

/// The counters both runs read, per half and counter, in the new run's order.
pub fn rows(old: &RunResults, new: &RunResults, max_pct: f64) -> Vec<CounterRow> {
    let was = by_half(old);
    let mut out = Vec::new();
    for h in &new.port_counters {
        let Some(o) = was.get(h.half.as_str()) else {
            continue;
        };
        let before = o.grew();
        for (counter, d) in h.grew() {
            let Some(od) = before.get(counter).copied() else {
                continue;
            };
            let (or, nr) = (
                o.rate(counter).unwrap_or(0.0),
                h.rate(counter).unwrap_or(0.0),
            );
            out.push(CounterRow {
                half: h.half.clone(),
                node: h.node.clone(),
                cable: h.cable.clone(),
                counter: counter.to_string(),
                kind: CounterKind::of(counter),
                old: od,
                new: d,
                old_per_s: or,
                new_per_s: nr,
                new_interval_s: h.interval_s,
                grew: worse(or, nr, d, max_pct),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worse_is_the_regression_rule_and_any_growth_from_nothing() {
        assert!(worse(0.0, 0.01, 1, 10.0));
        assert!(!worse(0.0, 0.0, 0, 10.0));
        assert!(worse(1.0, 1.2, 12, 10.0));
        assert!(!worse(1.0, 1.05, 12, 10.0));
        assert!(!worse(2.0, 1.0, 5, 10.0), "fewer per second is better");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(per_s(13.44), "13.4/s");
        assert_eq!(per_s(0.0021), "2.1e-3/s");
        assert_eq!(per_s(8_636_363.6), "8,636,364/s");
    }
}
