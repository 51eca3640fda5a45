//! What a PCIe link carries. A GB10 half is its own PCIe function; a link that trained below
//! its maximum (fewer lanes, a lower generation) caps what the half can move, whatever the
//! cable does. Pure.
//!
//! The model: raw rate = transfer rate x lanes x line encoding (8b/10b up to 5 GT/s, 128b/130b
//! from 8 GT/s: Gen3 to Gen5; Gen6's FLIT mode at 64 GT/s spends ~6% on its own framing, taken as
//! 242/256), times [`EFFICIENCY`], the share left after the transaction layer's overhead: each
//! 256-byte payload travels with ~24 bytes of TLP header, sequence number, LCRC and framing
//! (91%), less the data-link layer's acknowledgements and flow-control updates and the read
//! completions an RDMA write's DMA also needs. Calibrated on GB10: a half is a PCIe Gen5 x4
//! function, 126.0 Gb/s raw, and ib_write_bw reaches 111.9 Gb/s on it (89%).
//!
//! | link | raw | carries |
//! |---|---|---|
//! | Gen5 x4 (a healthy GB10 half) | 126.0 Gb/s | 112.2 Gb/s |
//! | Gen5 x2 | 63.0 Gb/s | 56.1 Gb/s |
//! | Gen4 x4 | 63.0 Gb/s | 56.1 Gb/s |
//! | Gen3 x4 | 31.5 Gb/s | 28.0 Gb/s |
//! | Gen1 x4 | 8.0 Gb/s | 7.1 Gb/s |

/// The share of a PCIe link's raw rate an RDMA flow reaches (see the module doc).
pub const EFFICIENCY: f64 = 0.89;

/// The transfer rate of a sysfs `*_link_speed` text, GT/s: `16.0 GT/s PCIe`, `8 GT/s`, `2.5
/// GT/s`; `None` for `Unknown` or anything else.
pub fn gts(text: &str) -> Option<f64> {
    let t = text.trim();
    let num = t.split_whitespace().next()?;
    let rest = t[num.len()..].trim_start();
    if !rest.starts_with("GT/s") {
        return None;
    }
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1000.0)
}

/// The line encoding's share at a transfer rate.
fn encoding(gts: f64) -> f64 {
    if gts <= 5.0 {
        8.0 / 10.0
    } else if gts < 64.0 {
        128.0 / 130.0
    } else {
        242.0 / 256.0
    }
}

/// The raw data rate of `lanes` lanes at `gts`, Gb/s (after the line encoding).
pub fn raw_gbps(gts: f64, lanes: u32) -> f64 {
    gts * encoding(gts) * f64::from(lanes)
}

/// What an RDMA flow can move over the link, Gb/s.
pub fn carries_gbps(gts: f64, lanes: u32) -> f64 {
    raw_gbps(gts, lanes) * EFFICIENCY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds() {
        let r = |s: &str, w| (carries_gbps(gts(s).unwrap(), w) * 10.0).round() / 10.0;
        assert_eq!(r("32.0 GT/s PCIe", 4), 112.2);
        assert_eq!(r("32.0 GT/s PCIe", 2), 56.1);
        assert_eq!(r("16.0 GT/s PCIe", 4), 56.1);
        assert_eq!(r("8.0 GT/s PCIe", 4), 28.0);
        assert_eq!(r("2.5 GT/s PCIe", 4), 7.1);
        assert_eq!(r("2.5 GT/s", 2), 3.6);
        assert!((raw_gbps(16.0, 4) - 63.015).abs() < 0.01);
        // a healthy GB10 half is not held back by its link
        assert!(carries_gbps(32.0, 4) >= super::super::DEFAULT_HALF_GBPS);
    }

    #[test]
    fn what_is_not_a_speed() {
        for t in [
            "Unknown", "", "GT/s", "nan GT/s", "-8 GT/s", "8 Gb/s", "inf GT/s",
        ] {
            assert_eq!(gts(t), None, "{t}");
        }
        assert_eq!(gts("8 GT/s"), Some(8.0));
    }
}
