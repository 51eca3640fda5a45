//! Latency tables (`print_report_lat`, `print_report_lat_duration`): the three header
//! generations (pre-2016 three values, current nine columns, duration mode) and their rows.

use super::row::{Cell, split_row};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Bytes,
    Iters,
    Min,
    Max,
    Typical,
    Avg,
    Stdev,
    P99,
    P999,
    Tps,
    Cpu,
}

/// A detected latency header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatHeader {
    cols: Vec<Col>,
    /// `#bytes #iterations t_avg[usec] tps average` (`-D`).
    pub(crate) duration: bool,
}

/// Recognise a latency header (whitespace-insensitive, `#` optional, see `bw::header`).
pub(crate) fn header(t: &str) -> Option<LatHeader> {
    let c: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    if !c.contains("bytes") || !c.contains("iterations") {
        return None;
    }
    if !c.contains("t_min") && !c.contains("t_avg") {
        return None;
    }
    let labels = [
        ("bytes", Col::Bytes),
        ("iterations", Col::Iters),
        ("t_min", Col::Min),
        ("t_max", Col::Max),
        ("t_typical", Col::Typical),
        ("t_avg", Col::Avg),
        ("t_stdev", Col::Stdev),
        ("99%percentile", Col::P99),
        ("99.9%percentile", Col::P999),
        ("tpsaverage", Col::Tps),
        ("CPU_Util", Col::Cpu),
    ];
    let mut found: Vec<(usize, Col)> = labels
        .iter()
        .filter_map(|(l, col)| c.find(l).map(|p| (p, *col)))
        .collect();
    found.sort_by_key(|(p, _)| *p);
    let cols: Vec<Col> = found.into_iter().map(|(_, col)| col).collect();
    if cols.first() != Some(&Col::Bytes) || !cols.contains(&Col::Iters) {
        return None;
    }
    let duration = cols.contains(&Col::Tps);
    Some(LatHeader { cols, duration })
}

/// One complete latency row. Values are in the report's `unit` (microseconds, or CPU cycles
/// with `-C`), which is why the fields carry no unit suffix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatRow {
    pub bytes: u64,
    pub iterations: u64,
    pub t_min: Option<f64>,
    pub t_max: Option<f64>,
    pub t_typical: Option<f64>,
    pub t_avg: Option<f64>,
    pub t_stdev: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    /// Transactions per second, duration layout only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps_avg: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_util_pct: Option<f64>,
}

/// Read a row under `h`; `None` unless it is complete.
pub(crate) fn row(h: &LatHeader, t: &str) -> Option<LatRow> {
    let cells: Vec<Cell> = h
        .cols
        .iter()
        .map(|c| match c {
            Col::Bytes | Col::Iters => Cell::Int,
            _ => Cell::Fixed(2),
        })
        .collect();
    let toks = split_row(t, &cells)?;
    let mut r = LatRow {
        bytes: 0,
        iterations: 0,
        t_min: None,
        t_max: None,
        t_typical: None,
        t_avg: None,
        t_stdev: None,
        p99: None,
        p999: None,
        tps_avg: None,
        cpu_util_pct: None,
    };
    for (col, tok) in h.cols.iter().zip(toks) {
        let f = tok.parse::<f64>().ok().filter(|v| v.is_finite())?;
        match col {
            Col::Bytes => r.bytes = tok.parse().ok()?,
            Col::Iters => r.iterations = tok.parse().ok()?,
            Col::Min => r.t_min = Some(f),
            Col::Max => r.t_max = Some(f),
            Col::Typical => r.t_typical = Some(f),
            Col::Avg => r.t_avg = Some(f),
            Col::Stdev => r.t_stdev = Some(f),
            Col::P99 => r.p99 = Some(f),
            Col::P999 => r.p999 = Some(f),
            Col::Tps => r.tps_avg = Some(f),
            Col::Cpu => r.cpu_util_pct = Some(f),
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_layouts() {
        let h = header(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ").unwrap();
        assert_eq!(h.cols.len(), 9);
        let r = row(&h, " 2       1000          1.02           4.87         1.05     \t       1.07        \t0.10   \t\t1.35    \t\t4.87   ").unwrap();
        assert_eq!(r.p999, Some(4.87));
        let old =
            header(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]").unwrap();
        assert_eq!(old.cols.len(), 5);
        let d = header(" #bytes        #iterations       t_avg[usec]    tps average").unwrap();
        assert!(d.duration);
        let r = row(
            &d,
            " 2             2593463          0.77           1296737.50",
        )
        .unwrap();
        assert_eq!(r.tps_avg, Some(1296737.5));
    }
}
