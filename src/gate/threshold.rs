//! Metrics, units and thresholds: what a gate compares, in which unit, which way is better.

use serde::Serialize;

use super::trap::Trap;

/// A measured quantity fabricplan gates, by its name (`rdma-bw`, `nccl-busbw`): the key of its
/// `[gates.<name>]` table, of `[regression]` and of a verdict's `metric`. What it is (its unit,
/// its default gate) is its [`MetricSpec`], which the test kind that measures it declares.
///
/// The name is held inline (at most [`Metric::MAX_LEN`] bytes), so a metric is `Copy` and a
/// verdict read back from a results file names any metric, known to this build or not.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Metric {
    len: u8,
    bytes: [u8; Metric::MAX_LEN],
}

impl Metric {
    /// The longest metric name.
    pub const MAX_LEN: usize = 31;

    /// The metric named `name` (at most [`Metric::MAX_LEN`] bytes: longer is a build error
    /// where it is a constant).
    pub const fn new(name: &str) -> Metric {
        let b = name.as_bytes();
        assert!(
            b.len() <= Metric::MAX_LEN,
            "a metric name is at most 31 bytes"
        );
        let mut bytes = [0u8; Metric::MAX_LEN];
        let mut i = 0;
        while i < b.len() {
            bytes[i] = b[i];
            i += 1;
        }
        Metric {
            len: b.len() as u8,
            bytes,
        }
    }

    /// The metric named `name`, if the name fits.
    pub fn named(name: &str) -> Option<Metric> {
        (name.len() <= Metric::MAX_LEN).then(|| Metric::new(name))
    }

    pub fn name(&self) -> &str {
        // built from a `&str` cut at its own length: always UTF-8
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl PartialOrd for Metric {
    fn partial_cmp(&self, other: &Metric) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// By name.
impl Ord for Metric {
    fn cmp(&self, other: &Metric) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl std::fmt::Debug for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Metric({})", self.name())
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let name = String::deserialize(d)?;
        Metric::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "a metric name is at most {} bytes",
                Metric::MAX_LEN
            ))
        })
    }
}

/// What a metric is: its unit (and so which way is better), its default gate, and whether it
/// is measured per flow. Declared by the test kind that measures it.
#[derive(Debug, PartialEq)]
pub struct MetricSpec {
    pub metric: Metric,
    /// The unit values are kept in.
    pub unit: Unit,
    /// One line: what it measures (`fabricplan schema`, the README's gate table).
    pub about: &'static str,
    /// DOMAIN.md's default pass and warn thresholds, and the trap a miss names.
    pub pass: Option<Threshold>,
    pub warn: Option<Threshold>,
    pub trap: Trap,
    /// Measured on one flow (a pair of ends), as bandwidths and latencies are; a collective's
    /// figures are not.
    pub per_flow: bool,
    /// What a healthy link carries at most of it, when anything does: a pass threshold above it
    /// is a plan every healthy job would fail.
    pub ceiling: Option<Ceiling>,
}

/// The most a healthy link carries of a metric, from the profile's rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ceiling {
    /// A half's line rate (`half-rate-gbps`), in Gb/s.
    Half,
    /// A port's line rate (`port-rate-gbps`), in Gb/s.
    Port,
    /// A port's line rate in bytes (GB/s).
    PortBytes,
}

impl MetricSpec {
    pub fn name(&self) -> &str {
        self.metric.name()
    }

    pub fn higher_is_better(&self) -> bool {
        self.unit.higher_is_better()
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

    /// Bandwidths are better higher, times lower.
    pub fn higher_is_better(self) -> bool {
        self.dimension() == Dimension::Bandwidth
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
        metric: String,
        expected: &'static str,
    },
    /// Bytes where the metric counts bits, or the reverse: never converted silently (a gate of
    /// `90 GB/s` on a link measured in Gb/s asks for 720 Gb/s).
    #[error(
        "`{metric}` is measured in {}; {value} {} is {} {}",
        expected.symbol(),
        written.symbol(),
        fmt_num(written.convert(*value, *expected)),
        expected.symbol()
    )]
    BitsOrBytes {
        value: f64,
        written: Unit,
        metric: String,
        expected: Unit,
    },
}

/// A number as a person writes it: no trailing zeros.
pub fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
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

pub fn parse_threshold(text: &str, metric: &MetricSpec) -> Result<Threshold, ThresholdError> {
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
    let want = metric.unit;
    if u.dimension() != want.dimension() {
        let dim = |d| match d {
            Dimension::Bandwidth => "bandwidth",
            Dimension::Time => "time",
        };
        return Err(ThresholdError::WrongDimension {
            unit: unit.to_string(),
            found: dim(u.dimension()),
            metric: metric.name().to_string(),
            expected: want.symbol(),
        });
    }
    if u != want && u.dimension() == Dimension::Bandwidth {
        return Err(ThresholdError::BitsOrBytes {
            value,
            written: u,
            metric: metric.name().to_string(),
            expected: want,
        });
    }
    Ok(Threshold::Absolute {
        value: u.convert(value, want),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_metrics::{BW, TIME};
    use super::*;

    #[test]
    fn a_metric_is_its_name() {
        let m = Metric::new("rdma-bw");
        assert_eq!(m.name(), "rdma-bw");
        assert_eq!(m, Metric::named("rdma-bw").unwrap());
        assert!(Metric::named(&"x".repeat(32)).is_none());
        assert!(Metric::new("a") < Metric::new("b"));
        let j = serde_json::to_string(&m).unwrap();
        assert_eq!(j, "\"rdma-bw\"");
        assert_eq!(serde_json::from_str::<Metric>(&j).unwrap(), m);
        assert!(serde_json::from_str::<Metric>(&format!("\"{}\"", "y".repeat(40))).is_err());
    }

    #[test]
    fn reads_units_and_converts() {
        assert_eq!(
            parse_threshold("90 Gb/s", &BW),
            Ok(Threshold::Absolute { value: 90.0 })
        );
        assert_eq!(
            parse_threshold("2 Gbit/s", &BW),
            Ok(Threshold::Absolute { value: 2.0 })
        );
        assert_eq!(
            parse_threshold("0.06ms", &TIME),
            Ok(Threshold::Absolute { value: 60.0 })
        );
        assert_eq!(
            parse_threshold("85%", &BW),
            Ok(Threshold::PctOfExpected { pct: 85.0 })
        );
    }

    #[test]
    fn rejects_unknown_and_mismatched_units() {
        assert_eq!(
            parse_threshold("90 Gb/min", &BW),
            Err(ThresholdError::UnknownUnit("Gb/min".into()))
        );
        assert!(matches!(
            parse_threshold("3 us", &BW),
            Err(ThresholdError::WrongDimension { .. })
        ));
        // bytes for bits (and the reverse) are never converted behind the user's back
        let e = parse_threshold("90 GB/s", &BW).unwrap_err();
        assert!(matches!(e, ThresholdError::BitsOrBytes { .. }));
        assert_eq!(
            e.to_string(),
            "`test-bw` is measured in Gb/s; 90 GB/s is 720 Gb/s"
        );
        assert!(matches!(
            parse_threshold("fast", &BW),
            Err(ThresholdError::Malformed(_))
        ));
        assert!(matches!(
            parse_threshold("90", &BW),
            Err(ThresholdError::Malformed(_))
        ));
    }
}
