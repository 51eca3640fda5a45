//! How far a value may move against its baseline before it is a regression: a percentage per
//! metric. A bandwidth regresses when it drops by more than that; a latency or a time when it
//! rises by more than that.
//!
//! A plan may set them in its `[regression]` table (read here from the plan text, beside the
//! plan's own validation):
//!
//! ```toml
//! [regression]
//! max-drop = "10%"        # every metric not named below
//! rdma-bw = "5%"
//! nccl-busbw = "10%"
//! rdma-lat = "20%"        # a rise: latency is better lower
//! ```
//!
//! Keys are the metric names the kinds measure (`rdma-bw`, `rdma-lat`, `nccl-busbw`, ...:
//! every one has its key) and `max-drop`; values a percentage, `"5%"` or `5`. An unknown key
//! is an error, as everywhere in a plan: a misspelled key silently ignored would judge with
//! the wrong threshold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::gate::threshold::Metric;
pub use crate::gate::threshold::parse_pct;
use crate::plan::Regression;

/// The default maximum drop, percent.
pub const DEFAULT_MAX_DROP_PCT: f64 = 10.0;

/// The regression threshold of each metric, percent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    /// For any metric not in `per_metric`.
    pub default_pct: f64,
    pub per_metric: BTreeMap<Metric, f64>,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::new(DEFAULT_MAX_DROP_PCT)
    }
}

/// Why a `[regression]` table or a `--max-drop` value could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegressionError {
    #[error("the plan is not TOML: {0}")]
    Toml(String),
    /// The key, and the metric names the kinds measure (`, `-separated).
    #[error("`[regression]` has an unknown key `{0}`; use `max-drop` or a metric name: {1}")]
    UnknownKey(String, String),
    #[error("`{key}` = {value}: not a percentage (write \"5%\" or 5, more than 0)")]
    BadValue { key: String, value: String },
}

#[derive(Deserialize)]
struct PlanRegression {
    #[serde(default)]
    regression: BTreeMap<String, toml::Value>,
}

impl Thresholds {
    pub fn new(default_pct: f64) -> Thresholds {
        Thresholds {
            default_pct,
            per_metric: BTreeMap::new(),
        }
    }

    /// The maximum change of `metric`, percent.
    pub fn max_drop(&self, metric: Metric) -> f64 {
        self.per_metric
            .get(&metric)
            .copied()
            .unwrap_or(self.default_pct)
    }

    /// The thresholds a plan's `[regression]` table sets. `cli_default` (`--max-drop`) applies
    /// to every metric the table does not name and wins over its `max-drop`; without either,
    /// 10%.
    pub fn from_plan_text(
        text: &str,
        cli_default: Option<f64>,
    ) -> Result<Thresholds, RegressionError> {
        let table: PlanRegression =
            toml::from_str(text).map_err(|e| RegressionError::Toml(e.message().to_string()))?;
        let mut r = Regression::default();
        for (k, v) in &table.regression {
            let pct = pct_value(v).ok_or_else(|| RegressionError::BadValue {
                key: k.clone(),
                value: v.to_string(),
            })?;
            let metrics = crate::kinds::metrics();
            if k == "max-drop" {
                r.max_drop_pct = Some(pct);
            } else if let Some(m) = metrics.iter().find(|m| m.name() == k) {
                r.per_metric.insert(m.metric, pct);
            } else {
                let names: Vec<&str> = metrics.iter().map(|m| m.name()).collect();
                return Err(RegressionError::UnknownKey(k.clone(), names.join(", ")));
            }
        }
        Ok(Thresholds::from_plan(&r, cli_default))
    }

    /// The thresholds of a validated plan's `[regression]` table, `cli_default` as above.
    pub fn from_plan(r: &Regression, cli_default: Option<f64>) -> Thresholds {
        Thresholds {
            default_pct: cli_default
                .or(r.max_drop_pct)
                .unwrap_or(DEFAULT_MAX_DROP_PCT),
            per_metric: r.per_metric.clone(),
        }
    }

    /// `rdma-bw 5%, rdma-lat 20%, others 10%`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .per_metric
            .iter()
            .map(|(m, p)| format!("{} {}%", m.name(), fmt_pct(*p)))
            .collect();
        parts.push(if self.per_metric.is_empty() {
            format!("{}%", fmt_pct(self.default_pct))
        } else {
            format!("others {}%", fmt_pct(self.default_pct))
        });
        parts.join(", ")
    }
}

fn fmt_pct(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

fn pct_value(v: &toml::Value) -> Option<f64> {
    let x = match v {
        toml::Value::String(s) => parse_pct(s).ok()?,
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        _ => return None,
    };
    (x.is_finite() && x > 0.0).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_table_per_metric_and_default() {
        let t = Thresholds::from_plan_text(
            "name = \"x\"\n[regression]\nrdma-bw = \"5%\"\nrdma-lat = 20\nmax-drop = \"12.5 %\"\n",
            None,
        )
        .unwrap();
        assert_eq!(t.max_drop(Metric::new("rdma-bw")), 5.0);
        assert_eq!(t.max_drop(Metric::new("rdma-lat")), 20.0);
        assert_eq!(t.max_drop(Metric::new("nccl-busbw")), 12.5);
        // --max-drop wins over the table's default, not over a metric it names
        let c = Thresholds::from_plan_text("[regression]\nrdma-bw = \"5%\"\n", Some(3.0)).unwrap();
        assert_eq!(c.max_drop(Metric::new("rdma-bw")), 5.0);
        assert_eq!(c.max_drop(Metric::new("nccl-busbw")), 3.0);
        assert_eq!(
            Thresholds::from_plan_text("name = \"x\"\n", None).unwrap(),
            Thresholds::default()
        );
    }

    #[test]
    fn misspelled_or_bad_values_are_errors() {
        let e = Thresholds::from_plan_text("[regression]\nrdma-bandwidth = \"5%\"\n", None);
        let Err(e @ RegressionError::UnknownKey(..)) = e else {
            panic!("{e:?}");
        };
        // every metric a kind measures is offered, the newest kinds' too
        for m in crate::kinds::metrics() {
            assert!(e.to_string().contains(m.name()), "{e}");
        }
        assert!(
            e.to_string().contains("unknown key `rdma-bandwidth`"),
            "{e}"
        );
        assert!(matches!(
            Thresholds::from_plan_text("[regression]\nrdma-bw = \"fast\"\n", None),
            Err(RegressionError::BadValue { .. })
        ));
        assert!(matches!(
            Thresholds::from_plan_text("[regression]\nrdma-bw = -5\n", None),
            Err(RegressionError::BadValue { .. })
        ));
        assert_eq!(parse_pct("10%"), Ok(10.0));
        assert!(parse_pct("0").is_err());
    }
}
