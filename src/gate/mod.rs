//! Gates: thresholds per metric and the judgement of measurements into OK / WARN / FAIL with
//! the trap named. Pure and synchronous.

pub mod classify;
pub mod judge;
pub mod part;
pub mod threshold;
pub mod trap;

use serde::Serialize;

use threshold::{Metric, Threshold};
use trap::Trap;

/// The thresholds of one metric, with the trap to name when it is not met.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSpec {
    pub metric: Metric,
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
    /// DOMAIN.md's defaults. Bandwidth gates are relative to the capacity model's expected
    /// value (80% is 90 Gb/s on an uncontended GB10 half, ~111.9 Gb/s expected), so a fairly
    /// shared ISL (81.9 of ~82 expected) passes while a throttled half (13 Gb/s) fails.
    pub fn default_for(metric: Metric) -> GateSpec {
        let (pass, warn, trap) = match metric {
            Metric::RdmaBw => (
                Some(Threshold::PctOfExpected { pct: 80.0 }),
                Some(Threshold::PctOfExpected { pct: 27.0 }),
                Trap::FirmwareThrottle,
            ),
            Metric::RdmaBwBoth => (
                Some(Threshold::PctOfExpected { pct: 90.0 }),
                Some(Threshold::PctOfExpected { pct: 50.0 }),
                Trap::HalfDeadOrThrottled,
            ),
            Metric::RdmaLat => (
                Some(Threshold::Absolute { value: 3.0 }),
                Some(Threshold::Absolute { value: 10.0 }),
                Trap::SlowLatency,
            ),
            // against the model's time for the ranks and the fabric: twice it passes (60 us of
            // ~30 on two GB10 boxes), 6.7 times it warns (200 us there)
            Metric::NcclSmallTime => (
                Some(Threshold::PctOfExpected { pct: 200.0 }),
                Some(Threshold::PctOfExpected { pct: 670.0 }),
                Trap::SlowCollective,
            ),
            // at the largest sizes, against the model (23.75 GB/s all_gather on a GB10 pair):
            // MTU 1500 on the path (18.9) warns, the TCP fallback (1-3) fails
            Metric::NcclBusbw => (
                Some(Threshold::PctOfExpected { pct: 80.0 }),
                Some(Threshold::PctOfExpected { pct: 40.0 }),
                Trap::SlowBusBandwidth,
            ),
            // informational: one TCP stream on GB10 sits near 12 Gb/s whatever the link.
            Metric::Iperf3 => (None, None, Trap::BelowLineRate),
        };
        GateSpec {
            metric,
            pass,
            warn,
            trap,
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
