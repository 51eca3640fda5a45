//! Bandwidth tables (`print_full_bw_report`): header detection, column layout, unit conversion.

use super::row::{Cell, split_row};
use serde::{Deserialize, Serialize};

/// The unit of the BW columns, as the header prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BwUnit {
    #[serde(rename = "Gb/sec")]
    Gbits,
    #[serde(rename = "MiB/sec")]
    MiB,
    /// Builds before 2024-03 say `MB/sec` but mean 2^20 bytes/s too (FORMATS.md 1.4).
    #[serde(rename = "MB/sec")]
    MB,
}

impl BwUnit {
    /// Convert a value in this unit to 10^9 bit/s.
    pub fn to_gbps(self, v: f64) -> f64 {
        match self {
            BwUnit::Gbits => v,
            BwUnit::MiB | BwUnit::MB => round6(v * 1_048_576.0 * 8.0 / 1e9),
        }
    }
}

fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Bytes,
    Sl,
    Iters,
    Peak,
    Avg,
    Rate,
    Port1Bw,
    Port1Rate,
    Port2Bw,
    Port2Rate,
    Cpu,
}

/// A detected BW header: its columns in printed order and its unit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BwHeader {
    cols: Vec<Col>,
    pub(crate) unit: BwUnit,
    pub(crate) cpu_util: bool,
}

/// Recognise a BW header line. Matching is done on the text with all whitespace removed, because
/// TAB damage can glue or split the labels, and without relying on the leading `#` (lost when a
/// capture was pasted into markdown, FORMATS.md 7).
pub(crate) fn header(t: &str) -> Option<BwHeader> {
    let c: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    let avg_at = c.find("BWaverage[")?;
    if !c.contains("bytes") || !c.contains("iterations") {
        return None;
    }
    let unit_text = c.get(avg_at + "BWaverage[".len()..)?;
    let unit = if unit_text.starts_with("Gb/sec") {
        BwUnit::Gbits
    } else if unit_text.starts_with("MiB/sec") {
        BwUnit::MiB
    } else if unit_text.starts_with("MB/sec") {
        BwUnit::MB
    } else {
        return None;
    };
    let labels = [
        ("bytes", Col::Bytes),
        ("#sl", Col::Sl),
        ("iterations", Col::Iters),
        ("BWpeak[", Col::Peak),
        ("BWaverage[", Col::Avg),
        ("MsgRate[", Col::Rate),
        ("BWPort1[", Col::Port1Bw),
        ("MsgRatePort1[", Col::Port1Rate),
        ("BWPort2[", Col::Port2Bw),
        ("MsgRatePort2[", Col::Port2Rate),
        ("CPU_Util[", Col::Cpu),
    ];
    let mut found: Vec<(usize, Col)> = labels
        .iter()
        .filter_map(|(l, col)| c.find(l).map(|p| (p, *col)))
        .collect();
    found.sort_by_key(|(p, _)| *p);
    let cols: Vec<Col> = found.into_iter().map(|(_, col)| col).collect();
    let need = [Col::Bytes, Col::Iters, Col::Peak, Col::Avg, Col::Rate];
    if cols.first() != Some(&Col::Bytes) || !need.iter().all(|n| cols.contains(n)) {
        return None;
    }
    let cpu_util = cols.contains(&Col::Cpu);
    Some(BwHeader {
        cols,
        unit,
        cpu_util,
    })
}

/// One complete result row, converted to Gb/s (10^9 bit/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BwRow {
    pub bytes: u64,
    pub iterations: u64,
    pub bw_peak_gbps: f64,
    pub bw_avg_gbps: f64,
    pub msg_rate_mpps: f64,
    /// Raw-Ethernet QoS tables only (`#sl` column).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sl: Option<u32>,
    /// `--cpu_util` (duration mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_util_pct: Option<f64>,
    /// `--report-per-port` columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw_port1_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_rate_port1_mpps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw_port2_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_rate_port2_mpps: Option<f64>,
    /// Printed with 6 decimals (Gb/s rows under 0.1 Gb/s).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extended_accuracy: bool,
    /// `--report-both`: `local` or `remote` results section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
}

impl BwRow {
    /// Why the row is no measurement: a bandwidth or message rate above what any port carries
    /// (see [`crate::parse::ceiling`]), named with its value.
    pub(crate) fn corrupt(&self) -> Option<String> {
        use crate::parse::ceiling::{link_gbps, msg_rate_mpps};
        let rates = [
            (
                "BW peak",
                self.bw_peak_gbps,
                "Gb/s",
                link_gbps(self.bw_peak_gbps),
            ),
            (
                "BW average",
                self.bw_avg_gbps,
                "Gb/s",
                link_gbps(self.bw_avg_gbps),
            ),
            (
                "MsgRate",
                self.msg_rate_mpps,
                "Mpps",
                msg_rate_mpps(self.msg_rate_mpps),
            ),
        ];
        rates.into_iter().find_map(|(what, v, unit, why)| {
            why.map(|why| {
                let v = crate::parse::ceiling::shown(v);
                format!(
                    "row of {} B: {what} {v} {unit} {why}, row rejected",
                    self.bytes
                )
            })
        })
    }

    /// Every figure of the row is the report's own (the row only repeats the totals).
    pub(super) fn repeats(&self, r: &super::BwReport) -> bool {
        let plain = self.sl.is_none()
            && self.cpu_util_pct.is_none()
            && self.bw_port1_gbps.is_none()
            && self.msg_rate_port1_mpps.is_none()
            && self.bw_port2_gbps.is_none()
            && self.msg_rate_port2_mpps.is_none()
            && !self.extended_accuracy
            && self.section.is_none();
        plain
            && r.bytes == Some(self.bytes)
            && r.iterations == Some(self.iterations)
            && r.bw_peak_gbps == Some(self.bw_peak_gbps)
            && r.bw_avg_gbps == Some(self.bw_avg_gbps)
            && r.msg_rate_mpps == Some(self.msg_rate_mpps)
    }
}

fn cells(h: &BwHeader, extended: bool) -> Vec<Cell> {
    let bw = if extended {
        Cell::Fixed(6)
    } else {
        Cell::Fixed(2)
    };
    h.cols
        .iter()
        .map(|c| match c {
            Col::Bytes | Col::Sl | Col::Iters => Cell::Int,
            Col::Peak | Col::Avg => bw,
            Col::Rate | Col::Port1Rate | Col::Port2Rate => Cell::Fixed(6),
            Col::Port1Bw | Col::Port2Bw | Col::Cpu => Cell::Fixed(2),
        })
        .collect()
}

/// Read a row under `h`; `None` unless it is complete.
///
/// Extended accuracy (FORMATS.md 1.4): with `--report_gbits` and an average under 0.1 Gb/s, peak,
/// average and message rate are all printed with 6 decimals, so one `-a` sweep mixes both shapes.
pub(crate) fn row(h: &BwHeader, t: &str) -> Option<BwRow> {
    let (toks, extended) = match split_row(t, &cells(h, false)) {
        Some(toks) => (toks, false),
        None if h.unit == BwUnit::Gbits => (split_row(t, &cells(h, true))?, true),
        None => return None,
    };
    let mut r = BwRow {
        bytes: 0,
        iterations: 0,
        bw_peak_gbps: 0.0,
        bw_avg_gbps: 0.0,
        msg_rate_mpps: 0.0,
        sl: None,
        cpu_util_pct: None,
        bw_port1_gbps: None,
        msg_rate_port1_mpps: None,
        bw_port2_gbps: None,
        msg_rate_port2_mpps: None,
        extended_accuracy: extended,
        section: None,
    };
    let u = h.unit;
    for (col, tok) in h.cols.iter().zip(toks) {
        let f = tok.parse::<f64>().ok().filter(|v| v.is_finite())?;
        match col {
            Col::Bytes => r.bytes = tok.parse().ok()?,
            Col::Sl => r.sl = Some(tok.parse().ok()?),
            Col::Iters => r.iterations = tok.parse().ok()?,
            Col::Peak => r.bw_peak_gbps = u.to_gbps(f),
            Col::Avg => r.bw_avg_gbps = u.to_gbps(f),
            Col::Rate => r.msg_rate_mpps = f,
            Col::Port1Bw => r.bw_port1_gbps = Some(u.to_gbps(f)),
            Col::Port1Rate => r.msg_rate_port1_mpps = Some(f),
            Col::Port2Bw => r.bw_port2_gbps = Some(u.to_gbps(f)),
            Col::Port2Rate => r.msg_rate_port2_mpps = Some(f),
            Col::Cpu => r.cpu_util_pct = Some(f),
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: &str =
        " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";

    #[test]
    fn mib_converts_to_gbps() {
        let h = header(MIB).unwrap();
        let r = row(
            &h,
            " 65536      5000             11664.85            11664.85\t\t     0.186638",
        )
        .unwrap();
        assert!((r.bw_avg_gbps - 97.85).abs() < 0.005, "{}", r.bw_avg_gbps);
        assert_eq!(r.bytes, 65536);
        assert_eq!(r.iterations, 5000);
    }

    #[test]
    fn header_variants() {
        let g =
            header("bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]").unwrap();
        assert_eq!(g.unit, BwUnit::Gbits);
        let m = header(
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
        )
        .unwrap();
        assert_eq!(m.unit, BwUnit::MB);
        let sl = header(" #bytes    #sl      #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]").unwrap();
        assert_eq!(sl.cols.get(1), Some(&Col::Sl));
        assert!(header(" #bytes #iterations    t_min[usec]    t_max[usec]").is_none());
    }

    #[test]
    fn extended_accuracy_only_in_gbits() {
        let g =
            header("#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]").unwrap();
        let r = row(
            &g,
            " 2          5000           0.042350            0.042185            2.636533",
        )
        .unwrap();
        assert!(r.extended_accuracy);
        assert_eq!(r.bw_avg_gbps, 0.042185);
        let m = header(MIB).unwrap();
        assert!(
            row(
                &m,
                " 2          5000           0.042350            0.042185            2.636533"
            )
            .is_none()
        );
    }
}
