//! The fastest a measured value can physically be, per metric. A tool that prints more (an
//! nccl-tests row with a busbw of 1e308 GB/s, an iperf3 report of 1.8e19 bit/s) printed a
//! corrupt or misread value, not a fast fabric: the row is rejected like a negative one (listed
//! in the report's `rejected`, status not `ok`), and the verdict says the output is not a
//! measurement instead of passing or failing a gate with it.
//!
//! Each ceiling sits far above any real link, so that no true reading comes near it: a value
//! just past a real line rate is a gate's business, not the parser's.

/// Gb/s (10^9 bit/s) no flow between two NIC ports carries: perftest's bandwidth columns,
/// iperf3's rates. The fastest ports shipping carry 800 Gb/s (1.6 Tb/s announced), and a PCIe
/// Gen6 x16 slot about 1 Tb/s each way: 100 Tb/s is over sixty times the fastest port.
pub const MAX_LINK_GBPS: f64 = 100_000.0;

/// Million messages a second no port sends: [`MAX_LINK_GBPS`] of the smallest Ethernet frames
/// (64 bytes plus 20 of preamble and gap: 672 bits on the wire) is 148,810 Mpps, rounded up.
pub const MAX_MSG_RATE_MPPS: f64 = 150_000.0;

/// GB/s (10^9 byte/s) no collective reaches, as nccl-tests' algbw and busbw: a collective moves
/// data no faster than a GPU's memory feeds it, and HBM3e is about 8 TB/s a GPU (NVLink 5:
/// 1.8 TB/s; a node's eight 800G NICs: 800 GB/s). 100 TB/s is a dozen times the fastest memory.
pub const MAX_COLLECTIVE_GBS: f64 = 100_000.0;

/// Why `v` cannot be a reading of a metric whose ceiling is `max` `unit`: ``is above the
/// 100,000 Gb/s no link carries``; `None` at or below it (and for NaN: that is another check's).
pub fn above(v: f64, max: f64, unit: &str, what: &str) -> Option<String> {
    (v > max).then(|| format!("is above the {} {unit} {what}", grouped(max)))
}

/// A value as a message shows it: plain in the range tools print, in exponent form past it
/// (`1e308`, not 309 digits).
pub fn shown(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 1e-6) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// 100000 -> "100,000" (whole numbers: the ceilings are).
fn grouped(v: f64) -> String {
    let digits = format!("{v:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// [`above`] for a link rate in Gb/s.
pub fn link_gbps(v: f64) -> Option<String> {
    above(v, MAX_LINK_GBPS, "Gb/s", "no link carries")
}

/// [`above`] for a message rate in Mpps.
pub fn msg_rate_mpps(v: f64) -> Option<String> {
    above(v, MAX_MSG_RATE_MPPS, "Mpps", "no port sends")
}

/// [`above`] for a collective's bandwidth in GB/s.
pub fn collective_gbs(v: f64) -> Option<String> {
    above(v, MAX_COLLECTIVE_GBS, "GB/s", "no collective moves")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_readings_pass_corrupt_ones_do_not() {
        assert_eq!(link_gbps(111.9), None);
        assert_eq!(link_gbps(1_600.0), None);
        assert_eq!(
            link_gbps(1.8e10).as_deref(),
            Some("is above the 100,000 Gb/s no link carries")
        );
        assert_eq!(collective_gbs(900.0), None);
        assert!(collective_gbs(1e308).is_some());
        assert!(msg_rate_mpps(2_400.0).is_none());
        assert!(msg_rate_mpps(1e9).is_some());
        assert_eq!(link_gbps(f64::NAN), None);
        assert_eq!(shown(1e308), "1e308");
        assert_eq!(shown(1.8e19), "1.8e19");
        assert_eq!(shown(109.01), "109.01");
        assert_eq!(shown(0.0), "0");
    }
}
