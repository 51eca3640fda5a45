//! `ethtool -S NETDEV`: a NIC's statistics, one `name: value` line each under `NIC statistics:`.
//! Every counter is kept by its own name (names differ per driver and firmware, and an unknown
//! name is kept as printed, never guessed at); the mlx5 physical-layer and port counters whose
//! meaning the driver documents are also read by meaning ([`Meaning`]): symbol errors FEC did
//! not correct, bits FEC corrected, CRC errors, link-down events, discards, pause frames.
//!
//! Meanings, from the mlx5 driver's own descriptions (Linux `en_stats.c` and the commits that
//! added them, e.g. 5db0a4f64c04 "Expose physical layer statistical counters to ethtool" and
//! 121fcdc84d82 "Add link down events counter"; the kernel's mlx5 `counters.rst`):
//! `rx_symbol_err_phy` / `rx_pcs_symbol_err_phy`: symbol errors FEC did not correct (or no FEC
//! ran) — errors the traffic saw; `rx_corrected_bits_phy`: bits FEC corrected (normal on PAM4
//! links, not a fault by itself); `rx_crc_errors_phy`: frames dropped for a bad FCS;
//! `link_down_events_phy`: times the link went down.
//!
//! Judgement calls: a value that is no whole number (negative, fractional, beyond 64 bits) is
//! rejected with its name; a name holding whitespace is no counter; the header without any
//! counter is `incomplete`; counters without the header are read (a `grep`ped capture) but a
//! text with neither is `unrecognized`; ethtool's own errors (`Cannot get stats strings
//! information`, `no stats available`, `No such device`) are `error`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::parse::text::{clean_line, is_blank, reject};
use crate::parse::{ErrorKind, MAX_LINE_BYTES, MAX_STORED_ROWS, Rejected, Status, ToolError};

/// What a counter means, where the driver documents it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Meaning {
    /// Symbol errors FEC did not correct: errors the traffic saw.
    SymbolErrors,
    /// Bits FEC corrected: normal on fast (PAM4) links.
    CorrectedBits,
    /// Frames dropped for a bad frame check sequence.
    CrcErrors,
    /// Times the link went down.
    LinkDownEvents,
    /// Frames received and dropped for lack of buffers.
    RxDiscards,
    /// Frames dropped on send (congestion).
    TxDiscards,
    /// Pause frames received (the far end asked this one to stop: congestion beyond it).
    RxPause,
    /// Pause frames sent.
    TxPause,
}

impl Meaning {
    /// The mlx5 names of each meaning.
    pub const MLX5: &'static [(&'static str, Meaning)] = &[
        ("rx_symbol_err_phy", Meaning::SymbolErrors),
        ("rx_pcs_symbol_err_phy", Meaning::SymbolErrors),
        ("rx_corrected_bits_phy", Meaning::CorrectedBits),
        ("rx_crc_errors_phy", Meaning::CrcErrors),
        ("link_down_events_phy", Meaning::LinkDownEvents),
        ("rx_discards_phy", Meaning::RxDiscards),
        ("tx_discards_phy", Meaning::TxDiscards),
        ("rx_pause_ctrl_phy", Meaning::RxPause),
        ("tx_pause_ctrl_phy", Meaning::TxPause),
    ];

    /// The meaning of a counter name, where it is a documented one.
    pub fn of(name: &str) -> Option<Meaning> {
        Meaning::MLX5
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Meaning::SymbolErrors => "symbol errors",
            Meaning::CorrectedBits => "corrected bits",
            Meaning::CrcErrors => "CRC errors",
            Meaning::LinkDownEvents => "link-down events",
            Meaning::RxDiscards => "receive discards",
            Meaning::TxDiscards => "send discards",
            Meaning::RxPause => "pause frames received",
            Meaning::TxPause => "pause frames sent",
        }
    }
}

/// What was read from one `ethtool -S`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EthtoolStats {
    pub status: Status,
    pub error: Option<ToolError>,
    /// Every counter, by its name as printed.
    pub counters: BTreeMap<String, u64>,
    /// The documented ones by meaning (the first name of a meaning that was printed).
    pub known: BTreeMap<Meaning, u64>,
    /// Lines rejected for an impossible value, capped.
    pub rejected: Vec<Rejected>,
    /// Counters and notes read past their caps (not stored, counted).
    pub not_stored: usize,
}

impl crate::parse::Report for EthtoolStats {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        let mut s = format!(
            "ethtool -S: {}, {} counter(s)",
            self.status.as_str(),
            self.counters.len()
        );
        for (m, v) in &self.known {
            s.push_str(&format!("\n  {}: {v}", m.as_str()));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!("\n  error: {}", e.message));
        }
        s
    }

    /// Beyond its status: counters when `ok`; each known value one of the counters read.
    fn check(&self) -> Result<(), String> {
        if self.status == Status::Ok && self.counters.is_empty() {
            return Err("ok without a counter".into());
        }
        for (name, _) in self.counters.iter() {
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(format!("counter `{name}` accepted"));
            }
        }
        for (m, v) in &self.known {
            let named = Meaning::MLX5
                .iter()
                .any(|(n, x)| x == m && self.counters.get(*n) == Some(v));
            if !named {
                return Err(format!("{} = {v} is no counter read", m.as_str()));
            }
        }
        Ok(())
    }
}

/// ethtool's own error lines.
fn tool_error(line: &str) -> Option<ToolError> {
    let l = line.trim();
    let kind = if l.contains("No such device") {
        ErrorKind::NoDevice
    } else if l.starts_with("Cannot get stats")
        || l.starts_with("no stats available")
        || l.starts_with("Cannot get driver information")
        || l.contains("Operation not supported")
    {
        ErrorKind::Other
    } else {
        return None;
    };
    Some(ToolError {
        kind,
        message: l.to_string(),
    })
}

/// Read `ethtool -S` output.
pub fn parse(text: &str) -> EthtoolStats {
    let mut r = EthtoolStats::default();
    if is_blank(text) {
        return r;
    }
    if let Some(e) = text.lines().find_map(tool_error) {
        r.status = Status::Error;
        r.error = Some(e);
        return r;
    }
    let mut header = false;
    for (i, raw) in text.lines().enumerate() {
        if raw.len() > MAX_LINE_BYTES {
            continue;
        }
        let line = clean_line(raw).trim();
        if line == "NIC statistics:" {
            header = true;
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || name.contains(char::is_whitespace) || value.contains(' ') {
            continue;
        }
        match value.parse::<u64>() {
            Ok(v) => add(&mut r, name, v),
            Err(_) => reject(
                &mut r.rejected,
                i + 1,
                format!("counter `{name}` reads `{value}`, not a whole number"),
                &mut r.not_stored,
            ),
        }
    }
    r.status = match (header, r.counters.is_empty()) {
        (_, false) => Status::Ok,
        (true, true) => Status::Incomplete,
        (false, true) => Status::Unrecognized,
    };
    r
}

fn add(r: &mut EthtoolStats, name: &str, v: u64) {
    if r.counters.contains_key(name) {
        return;
    }
    if r.counters.len() >= MAX_STORED_ROWS {
        r.not_stored += 1;
        return;
    }
    r.counters.insert(name.to_string(), v);
    if let Some(m) = Meaning::of(name) {
        r.known.entry(m).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::Report;

    const MLX5: &str = "NIC statistics:\n     rx_packets: 1204\n     rx_symbol_err_phy: 12\n     rx_corrected_bits_phy: 153303800\n     link_down_events_phy: 2\n     rx_vendor_specific_thing: 7\n";

    #[test]
    fn reads_every_counter_and_the_known_ones_by_meaning() {
        let r = parse(MLX5);
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.counters.len(), 5);
        assert_eq!(
            r.counters["rx_vendor_specific_thing"], 7,
            "unknown names are kept"
        );
        assert_eq!(r.known[&Meaning::SymbolErrors], 12);
        assert_eq!(r.known[&Meaning::CorrectedBits], 153_303_800);
        assert_eq!(r.known[&Meaning::LinkDownEvents], 2);
        assert!(!r.known.contains_key(&Meaning::CrcErrors));
        assert!(r.check().is_ok());
    }

    #[test]
    fn errors_rejections_and_nothing() {
        let e = parse("Cannot get stats strings information: Operation not supported\n");
        assert_eq!(e.status, Status::Error);
        assert_eq!(
            parse("netlink error: No such device\n").error.unwrap().kind,
            ErrorKind::NoDevice
        );
        let bad = parse("NIC statistics:\n     rx_crc_errors_phy: -3\n");
        assert_eq!(bad.status, Status::Incomplete);
        assert!(bad.rejected[0].reason.contains("rx_crc_errors_phy"));
        assert_eq!(parse("hello\nworld\n").status, Status::Unrecognized);
        assert_eq!(parse("  \n").status, Status::Empty);
        // a grep of the counters, without the header
        assert_eq!(
            parse("     rx_symbol_err_phy: 4\n").known[&Meaning::SymbolErrors],
            4
        );
    }
}
