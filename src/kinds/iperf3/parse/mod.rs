//! iperf3 output: `-J` JSON (cJSON, tab-indented), `--json-stream` lines, and the human text
//! report of a client or a server (TCP, UDP, `-P` with `[SUM]`, `--bidir` roles, `--timestamps`).
//!
//! iperf3 is only a TCP sanity check in fabricplan, so the report keeps the few numbers a gate
//! needs: the receiver-side rate (`gbps`), the sender-side rate and retransmits, duration, streams,
//! and for UDP the receiver's jitter and loss. iperf 2 output is recognised and refused.
//!
//! The JSON forms are read into typed structs ([`json`]), the text report by a line scanner
//! ([`text`]). A summary whose rate, transfer, time, jitter or loss no run can produce (negative,
//! NaN, a rate above what any link carries, loss above 100 % or more datagrams lost than sent) is
//! rejected and listed in `rejected`.

mod json;
mod text;

use crate::parse::text::{clean_line, is_blank};
use crate::parse::{
    AnyReport, ErrorKind, MAX_STORED_NOTES, Rejected, Report, Status, ToolError, ToolSpec,
    check_max, check_opt, read_as,
};
use serde::{Deserialize, Serialize};
use text::strip_timestamp;

/// The tool: `fabricplan parse iperf3`.
pub static TOOL: ToolSpec = ToolSpec {
    name: "iperf3",
    parse: |t| Box::new(parse(t)) as Box<dyn AnyReport>,
    read: read_as::<IperfReport>,
};

/// Which end of the test printed the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
}

/// Transport protocol of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

/// What the capture was: `json`, `json-stream` or `text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Json,
    JsonStream,
    Text,
}

/// What was read from one iperf3 run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IperfReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// `None` when nothing was recognised.
    pub format: Option<Format>,
    pub role: Option<Role>,
    pub protocol: Option<Protocol>,
    /// iperf3 version, e.g. `3.12`, when the capture says it (JSON always does; text only with -V).
    pub version: Option<String>,
    /// Receiver-side rate of the client-to-server direction (or the only direction), in Gb/s:
    /// `end.sum_received` in JSON, the `[SUM]` (or single stream) `receiver` line in text.
    pub gbps: Option<f64>,
    /// Sender-side rate of the same direction, Gb/s.
    pub sender_gbps: Option<f64>,
    /// Sender-side TCP retransmits of the same direction (Linux only; absent for UDP).
    pub retransmits: Option<u64>,
    /// Length of the measured run, seconds (from the summary).
    pub duration_s: Option<f64>,
    /// Number of parallel streams (per direction).
    pub streams: Option<u32>,
    /// Number of interval reports read (one per time slot, whatever the stream count).
    pub intervals: u32,
    /// `--bidir`: both directions ran at once.
    pub bidir: bool,
    /// `--bidir` only: receiver-side rate of the server-to-client direction, Gb/s.
    pub reverse_gbps: Option<f64>,
    /// UDP only: receiver jitter, milliseconds.
    pub jitter_ms: Option<f64>,
    /// UDP only: receiver datagram loss, percent.
    pub lost_percent: Option<f64>,
    /// Why the capture was not read, when that needs saying (e.g. iperf 2 output).
    pub note: Option<String>,
    /// Rows or summaries rejected for an impossible value, with the line and the value (capped).
    pub rejected: Vec<Rejected>,
    /// Summary rows and notes read past their caps (not stored, counted).
    pub not_stored: usize,
}

impl Report for IperfReport {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        IperfReport::summary(self)
    }

    /// Beyond its status: a rate when `ok`, no impossible figure, a loss within 100 %.
    fn check(&self) -> Result<(), String> {
        let r = self;
        let st = r.status;
        if st == Status::Ok && r.gbps.is_none() && r.sender_gbps.is_none() {
            return Err("ok without a rate".into());
        }
        for (n, v) in [
            ("gbps", r.gbps),
            ("sender_gbps", r.sender_gbps),
            ("reverse_gbps", r.reverse_gbps),
            ("duration_s", r.duration_s),
            ("jitter_ms", r.jitter_ms),
            ("lost_percent", r.lost_percent),
        ] {
            check_opt(n, v)?;
        }
        if r.lost_percent.is_some_and(|l| l > 100.0) {
            return Err("loss above 100%".into());
        }
        for (n, v) in [
            ("gbps", r.gbps),
            ("sender_gbps", r.sender_gbps),
            ("reverse_gbps", r.reverse_gbps),
        ] {
            check_max(n, v, crate::parse::ceiling::MAX_LINK_GBPS)?;
        }
        Ok(())
    }
}

impl IperfReport {
    /// The status of a capture read to its end, whichever format: the tool's error, else
    /// incomplete with a rejected row, else ok with a reading, else incomplete (no total).
    fn settle_status(&mut self) {
        self.status = if self.error.is_some() {
            Status::Error
        } else if !self.rejected.is_empty() {
            Status::Incomplete
        } else if self.gbps.is_some() || self.sender_gbps.is_some() {
            Status::Ok
        } else {
            Status::Incomplete
        };
    }

    fn empty() -> Self {
        IperfReport {
            status: Status::Unrecognized,
            error: None,
            format: None,
            role: None,
            protocol: None,
            version: None,
            gbps: None,
            sender_gbps: None,
            retransmits: None,
            duration_s: None,
            streams: None,
            intervals: 0,
            bidir: false,
            reverse_gbps: None,
            jitter_ms: None,
            lost_percent: None,
            note: None,
            rejected: Vec::new(),
            not_stored: 0,
        }
    }

    /// One line for humans, e.g.
    /// `iperf3 client: 26.4 Gb/s received over 2.0 s, 1 stream, 0 retransmits`.
    pub fn summary(&self) -> String {
        let who = match self.role {
            Some(Role::Client) => "iperf3 client",
            Some(Role::Server) => "iperf3 server",
            None => "iperf3",
        };
        if self.status == Status::Empty {
            return format!("{who}: empty input");
        }
        if self.status == Status::Unrecognized {
            return match &self.note {
                Some(note) => format!("{who}: unrecognized: {note}"),
                None => format!("{who}: unrecognized: no iperf3 output found"),
            };
        }
        let mut parts: Vec<String> = Vec::new();
        let mut head = match (self.gbps, self.sender_gbps) {
            (Some(g), _) => format!("{} received", rate(g)),
            (None, Some(s)) => format!("{} sent", rate(s)),
            (None, None) => "no summary".to_string(),
        };
        if let Some(d) = self.duration_s {
            head.push_str(&format!(" over {d:.1} s"));
        }
        parts.push(head);
        if let Some(r) = self.reverse_gbps {
            parts.push(format!("reverse {}", rate(r)));
        }
        if let Some(n) = self.streams {
            parts.push(format!("{n} stream{}", if n == 1 { "" } else { "s" }));
        }
        if self.protocol == Some(Protocol::Udp) {
            if let Some(j) = self.jitter_ms {
                parts.push(format!("jitter {j:.3} ms"));
            }
            if let Some(l) = self.lost_percent {
                parts.push(format!("{l}% lost"));
            }
        } else if let Some(r) = self.retransmits {
            parts.push(format!("{r} retransmit{}", if r == 1 { "" } else { "s" }));
        }
        let mut out = format!("{who}: {}", parts.join(", "));
        match self.status {
            Status::Incomplete => match self.rejected.first() {
                Some(r) => out.push_str(&format!(
                    " (incomplete: line {}: {}, rejected)",
                    r.line, r.reason
                )),
                None => out.push_str(&format!(
                    " (incomplete: {} interval(s), no final summary)",
                    self.intervals
                )),
            },
            Status::Error => {
                if let Some(e) = &self.error {
                    // The message repeats "iperf3: " from the tool's own line; say it once.
                    let msg = e.message.strip_prefix("iperf3: ").unwrap_or(&e.message);
                    out = format!("{who}: error ({}): {msg}", e.kind.as_str());
                }
            }
            _ => {}
        }
        out
    }
}

/// Gb/s with one decimal, or Mb/s below 1 Gb/s so a slow UDP test does not read `0.0`.
fn rate(gbps: f64) -> String {
    if gbps >= 1.0 || gbps == 0.0 {
        format!("{gbps:.1} Gb/s")
    } else {
        format!("{:.1} Mb/s", gbps * 1e3)
    }
}

/// Parse one iperf3 capture (JSON, JSON stream or text; client or server).
pub fn parse(text: &str) -> IperfReport {
    if is_blank(text) {
        let mut r = IperfReport::empty();
        r.status = Status::Empty;
        return r;
    }
    if let Some(r) = json::parse_json_stream(text) {
        return r;
    }
    if let Some(r) = json::parse_json(text) {
        return r;
    }
    text::parse_text(text)
}

// ---------------------------------------------------------------------------------------------
// Errors

/// Classify an iperf3 error message (`iperf3: error - ...` line or JSON `error` value).
fn classify(msg: &str) -> ErrorKind {
    let m = msg.to_ascii_lowercase();
    if m.contains("unable to connect to server") || m.contains("unable to connect stream") {
        ErrorKind::ConnectFailed
    } else if m.contains("unable to start listener") {
        ErrorKind::ListenFailed
    } else {
        // "the server is busy running a test", "control socket has closed unexpectedly",
        // cookie errors, interrupts: all clearly errors, none with a dedicated kind.
        ErrorKind::Other
    }
}

/// An error line as iperf3 prints it on stderr; `None` for anything else.
fn error_line(line: &str) -> Option<&str> {
    let t = line.trim();
    // iperf_err/iperf_errexit: "iperf3: error - <msg>"; signals: "iperf3: interrupt - ...".
    (t.contains("iperf3: error") || t.contains("iperf3: interrupt - ")).then_some(t)
}

/// The error lines of a capture, distinct, in order (capped).
#[derive(Default)]
struct ErrorLines<'a> {
    msgs: Vec<&'a str>,
}

impl<'a> ErrorLines<'a> {
    /// Every error line of `text`.
    fn read(text: &'a str) -> Self {
        let mut e = ErrorLines::default();
        for l in text.lines() {
            e.line(clean_line(l));
        }
        e
    }

    /// Read one line (launcher prefix already removed).
    fn line(&mut self, line: &'a str) {
        let Some(m) = error_line(strip_timestamp(line)) else {
            return;
        };
        // Keep the message from "iperf3:" on: a --timestamps date or a harness tag is not the tool's.
        let m = m.find("iperf3:").and_then(|i| m.get(i..)).unwrap_or(m);
        if self.msgs.len() < MAX_STORED_NOTES && !self.msgs.contains(&m) {
            self.msgs.push(m);
        }
    }

    fn finish(&self) -> Option<ToolError> {
        let first = self.msgs.first()?;
        Some(ToolError {
            kind: classify(first),
            message: self.msgs.join("\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::text::{Label, parse_row};
    use super::*;

    #[test]
    fn timestamp_prefix_is_stripped() {
        assert_eq!(
            strip_timestamp("Sat May 24 22:41:30 2025 iperf3: error - x"),
            "iperf3: error - x"
        );
        assert_eq!(
            strip_timestamp("Sat May  4 22:41:30 2025 [  5]   0.00"),
            "[  5]   0.00"
        );
        assert_eq!(strip_timestamp("Sat is a day"), "Sat is a day");
    }

    #[test]
    fn row_units_scale() {
        let r = parse_row(
            "[  5]   0.00-1.00   sec  2.27 GBytes  19461 Mbits/sec    8   1023 KBytes       ",
        )
        .unwrap();
        assert!((r.bps - 19.461e9).abs() < 1.0);
        assert_eq!(r.first_int, Some(8));
        let r =
            parse_row("[SUM]   0.00-1.00   sec   512 KBytes  4.19 Kbits/sec  receiver").unwrap();
        assert_eq!(r.id, None);
        assert_eq!(r.label, Some(Label::Receiver));
        assert!((r.bps - 4190.0).abs() < 1e-6);
    }

    #[test]
    fn iperf2_rows_are_not_iperf3() {
        assert!(parse_row("[  3]  0.0-10.0 sec  10.9 GBytes  9.39 Gbits/sec").is_none());
        assert!(parse_row("[  1] 0.0000-10.0153 sec  10.9 GBytes  9.37 Gbits/sec").is_none());
        assert_eq!(
            parse("[  3]  0.0-10.0 sec  10.9 GBytes  9.39 Gbits/sec").status,
            Status::Unrecognized
        );
    }

    #[test]
    fn truncated_row_is_rejected() {
        assert!(parse_row("[  5]   0.00-1.00   sec  2.09 GBytes  17.9 Gbi").is_none());
        assert!(
            parse_row("[  5]   0.00-1.00   sec  11.9 MBytes   100 Mbits/sec  0.007 ms  0/38")
                .is_none()
        );
    }

    #[test]
    fn udp_receiver_row() {
        let r = parse_row(
            "[  5]   0.00-1.00   sec  11.9 MBytes   100 Mbits/sec  0.007 ms  3/382 (0.79%)  receiver",
        )
        .unwrap();
        assert_eq!(r.jitter_ms, Some(0.007));
        assert_eq!(r.lost_percent, Some(0.79));
    }

    #[test]
    fn error_kinds() {
        assert_eq!(
            classify("iperf3: error - unable to connect to server: Connection refused"),
            ErrorKind::ConnectFailed
        );
        assert_eq!(
            classify("iperf3: error - the server is busy running a test. try again later"),
            ErrorKind::Other
        );
    }

    #[test]
    fn empty_is_unrecognized() {
        assert_eq!(parse("").status, Status::Empty);
        assert_eq!(parse("hello\nworld").status, Status::Unrecognized);
    }
}
