//! Metrics, units and thresholds: what a gate compares, in which unit, which way is better.

use serde::Serialize;

/// A measured quantity fabricplan gates.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// ib_write_bw average per half, Gb/s.
    RdmaBw,
    /// Both halves of a cable at once, summed per node, Gb/s.
    RdmaBwBoth,
    /// ib_write_lat t_typical, us.
    RdmaLat,
    /// NCCL in-place time at 16 KiB, us.
    NcclSmallTime,
    /// NCCL average bus bandwidth, GB/s.
    NcclBusbw,
    /// iperf3 receiver rate, Gb/s (informational by default).
    Iperf3,
}

impl Metric {
    pub const ALL: [Metric; 6] = [
        Metric::RdmaBw,
        Metric::RdmaBwBoth,
        Metric::RdmaLat,
        Metric::NcclSmallTime,
        Metric::NcclBusbw,
        Metric::Iperf3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::RdmaBw => "rdma-bw",
            Metric::RdmaBwBoth => "rdma-bw-both",
            Metric::RdmaLat => "rdma-lat",
            Metric::NcclSmallTime => "nccl-small-time",
            Metric::NcclBusbw => "nccl-busbw",
            Metric::Iperf3 => "iperf3",
        }
    }

    pub fn from_name(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The unit values of this metric are kept in.
    pub fn unit(self) -> Unit {
        match self {
            Metric::RdmaBw | Metric::RdmaBwBoth | Metric::Iperf3 => Unit::Gbps,
            Metric::RdmaLat | Metric::NcclSmallTime => Unit::Us,
            Metric::NcclBusbw => Unit::GBps,
        }
    }

    pub fn higher_is_better(self) -> bool {
        self.unit().dimension() == Dimension::Bandwidth
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Bandwidth,
    Time,
}

/// Units a threshold may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Unit {
    #[serde(rename = "Gb/s")]
    Gbps,
    #[serde(rename = "GB/s")]
    GBps,
    #[serde(rename = "us")]
    Us,
    #[serde(rename = "ms")]
    Ms,
}

impl Unit {
    pub const SPELLINGS: [(&'static str, Unit); 11] = [
        ("Gb/s", Unit::Gbps),
        ("Gbit/s", Unit::Gbps),
        ("Gbps", Unit::Gbps),
        ("GB/s", Unit::GBps),
        ("GByte/s", Unit::GBps),
        ("us", Unit::Us),
        ("µs", Unit::Us),
        ("usec", Unit::Us),
        ("ms", Unit::Ms),
        ("msec", Unit::Ms),
        ("Gb/sec", Unit::Gbps),
    ];

    pub fn parse(s: &str) -> Option<Unit> {
        Unit::SPELLINGS
            .iter()
            .find(|(name, _)| *name == s)
            .map(|(_, u)| *u)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Gbps => "Gb/s",
            Unit::GBps => "GB/s",
            Unit::Us => "us",
            Unit::Ms => "ms",
        }
    }

    pub fn dimension(self) -> Dimension {
        match self {
            Unit::Gbps | Unit::GBps => Dimension::Bandwidth,
            Unit::Us | Unit::Ms => Dimension::Time,
        }
    }

    /// Convert `value` in `self` to `to` (same dimension).
    pub fn convert(self, value: f64, to: Unit) -> f64 {
        let base = match self {
            Unit::Gbps => value,
            Unit::GBps => value * 8.0,
            Unit::Us => value,
            Unit::Ms => value * 1000.0,
        };
        match to {
            Unit::Gbps => base,
            Unit::GBps => base / 8.0,
            Unit::Us => base,
            Unit::Ms => base / 1000.0,
        }
    }
}

/// One threshold: an absolute value in the metric's unit, or a percentage of the expected
/// value from the capacity model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Threshold {
    Absolute { value: f64 },
    PctOfExpected { pct: f64 },
}

impl Threshold {
    /// The threshold as an absolute value in the metric's unit, given the expected value.
    pub fn resolve(self, expected: Option<f64>) -> Option<f64> {
        match self {
            Threshold::Absolute { value } => Some(value),
            Threshold::PctOfExpected { pct } => expected.map(|e| e * pct / 100.0),
        }
    }
}

/// Why a threshold string could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error("`{0}` is not a number followed by a unit")]
    Malformed(String),
    #[error("unknown unit `{0}`")]
    UnknownUnit(String),
    #[error("`{unit}` is a {found} unit; `{metric}` is measured in {expected}")]
    WrongDimension {
        unit: String,
        found: &'static str,
        metric: &'static str,
        expected: &'static str,
    },
}

/// Parse `"90 Gb/s"`, `"3us"`, `"90%"` for `metric`.
/// `"10%"`, `"10 %"` or `"10"`: a percentage, more than 0.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "`{s}` is not a percentage (write 10% or 10, more than 0)"
        )),
    }
}

pub fn parse_threshold(text: &str, metric: Metric) -> Result<Threshold, ThresholdError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| ThresholdError::Malformed(text.to_string()))?;
    let unit = unit.trim();
    if unit == "%" {
        return Ok(Threshold::PctOfExpected { pct: value });
    }
    if unit.is_empty() {
        return Err(ThresholdError::Malformed(text.to_string()));
    }
    let u = Unit::parse(unit).ok_or_else(|| ThresholdError::UnknownUnit(unit.to_string()))?;
    let want = metric.unit();
    if u.dimension() != want.dimension() {
        let dim = |d| match d {
            Dimension::Bandwidth => "bandwidth",
            Dimension::Time => "time",
        };
        return Err(ThresholdError::WrongDimension {
            unit: unit.to_string(),
            found: dim(u.dimension()),
            metric: metric.name(),
            expected: want.symbol(),
        });
    }
    Ok(Threshold::Absolute {
        value: u.convert(value, want),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_units_and_converts() {
        assert_eq!(
            parse_threshold("90 Gb/s", Metric::RdmaBw),
            Ok(Threshold::Absolute { value: 90.0 })
        );
        assert_eq!(
            parse_threshold("2 GB/s", Metric::RdmaBw),
            Ok(Threshold::Absolute { value: 16.0 })
        );
        assert_eq!(
            parse_threshold("0.06ms", Metric::NcclSmallTime),
            Ok(Threshold::Absolute { value: 60.0 })
        );
        assert_eq!(
            parse_threshold("85%", Metric::RdmaBw),
            Ok(Threshold::PctOfExpected { pct: 85.0 })
        );
    }

    #[test]
    fn rejects_unknown_and_mismatched_units() {
        assert_eq!(
            parse_threshold("90 Gb/min", Metric::RdmaBw),
            Err(ThresholdError::UnknownUnit("Gb/min".into()))
        );
        assert!(matches!(
            parse_threshold("3 us", Metric::RdmaBw),
            Err(ThresholdError::WrongDimension { .. })
        ));
        assert!(matches!(
            parse_threshold("fast", Metric::RdmaBw),
            Err(ThresholdError::Malformed(_))
        ));
        assert!(matches!(
            parse_threshold("90", Metric::RdmaBw),
            Err(ThresholdError::Malformed(_))
        ));
    }
}
