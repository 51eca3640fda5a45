//! Gates: thresholds per metric and the judgement of measurements into OK / WARN / FAIL with
//! the trap named. Pure and synchronous.

pub mod classify;
pub mod flow;
pub mod judge;
pub mod part;
pub mod threshold;
pub mod trap;

use serde::Serialize;

use threshold::{Metric, MetricSpec, Threshold, Unit};
use trap::Trap;

/// The thresholds of one metric, with the trap to name when it is not met.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSpec {
    pub metric: Metric,
    /// The metric's unit (which way is better).
    #[serde(skip)]
    pub unit: Unit,
    pub pass: Option<Threshold>,
    pub warn: Option<Threshold>,
    pub trap: Trap,
    /// Plan-given trap name and fix (override the library's text).
    pub trap_text: Option<String>,
    pub fix_text: Option<String>,
    pub attempts: u32,
    pub pass_if: u32,
}

impl GateSpec {
    /// The metric's own default gate (DOMAIN.md's, declared with the metric by its kind).
    pub fn default_for(spec: &MetricSpec) -> GateSpec {
        GateSpec {
            metric: spec.metric,
            unit: spec.unit,
            pass: spec.pass,
            warn: spec.warn,
            trap: spec.trap,
            trap_text: None,
            fix_text: None,
            attempts: 1,
            pass_if: 1,
        }
    }

    pub fn trap_name(&self) -> String {
        self.trap_text
            .clone()
            .unwrap_or_else(|| self.trap.name().to_string())
    }

    pub fn fix(&self) -> String {
        self.fix_text
            .clone()
            .unwrap_or_else(|| self.trap.fix().to_string())
    }
}

/// Metrics for the gate layer's own tests (the real ones are the kinds').
#[cfg(test)]
pub(crate) mod test_metrics {
    use super::threshold::{Metric, MetricSpec, Threshold, Unit};
    use super::trap::Trap;

    /// A bandwidth against the expected value.
    pub static BW: MetricSpec = MetricSpec {
        metric: Metric::new("test-bw"),
        unit: Unit::Gbps,
        about: "a bandwidth",
        pass: Some(Threshold::PctOfExpected { pct: 80.0 }),
        warn: Some(Threshold::PctOfExpected { pct: 27.0 }),
        trap: Trap::FirmwareThrottle,
        per_flow: true,
        ceiling: None,
    };
    /// A latency under an absolute bound.
    pub static LAT: MetricSpec = MetricSpec {
        metric: Metric::new("test-lat"),
        unit: Unit::Us,
        about: "a latency",
        pass: Some(Threshold::Absolute { value: 3.0 }),
        warn: Some(Threshold::Absolute { value: 10.0 }),
        trap: Trap::SlowLatency,
        per_flow: true,
        ceiling: None,
    };
    /// A time against the expected value.
    pub static TIME: MetricSpec = MetricSpec {
        metric: Metric::new("test-time"),
        unit: Unit::Us,
        about: "a time",
        pass: Some(Threshold::PctOfExpected { pct: 200.0 }),
        warn: Some(Threshold::PctOfExpected { pct: 670.0 }),
        trap: Trap::SlowCollective,
        per_flow: false,
        ceiling: None,
    };
    /// A bus bandwidth against the expected value.
    pub static BUSBW: MetricSpec = MetricSpec {
        metric: Metric::new("test-busbw"),
        unit: Unit::GBps,
        about: "a bus bandwidth",
        pass: Some(Threshold::PctOfExpected { pct: 80.0 }),
        warn: Some(Threshold::PctOfExpected { pct: 40.0 }),
        trap: Trap::SlowBusBandwidth,
        per_flow: false,
        ceiling: None,
    };
    /// Reported, not gated.
    pub static INFO: MetricSpec = MetricSpec {
        metric: Metric::new("test-info"),
        unit: Unit::Gbps,
        about: "informational",
        pass: None,
        warn: None,
        trap: Trap::BelowLineRate,
        per_flow: true,
        ceiling: None,
    };
}
