//! iperf3 output: `-J` JSON (cJSON, tab-indented), `--json-stream` lines, and the human text
//! report of a client or a server (TCP, UDP, `-P` with `[SUM]`, `--bidir` roles, `--timestamps`).
//!
//! iperf3 is only a TCP sanity check in fabricplan, so the report keeps the few numbers a gate
//! needs: the receiver-side rate (`gbps`), the sender-side rate and retransmits, duration, streams,
//! and for UDP the receiver's jitter and loss. iperf 2 output is recognised and refused.

use super::text::{clean_line, num};
use super::{ErrorKind, Status, ToolError};
use serde::Serialize;
use serde_json::Value;

/// Which end of the test printed the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
}

/// Transport protocol of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

/// What the capture was: `json`, `json-stream` or `text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Json,
    JsonStream,
    Text,
}

/// What was read from one iperf3 run.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

impl IperfReport {
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
            Status::Incomplete => {
                out.push_str(&format!(
                    " (incomplete: {} interval(s), no final summary)",
                    self.intervals
                ));
            }
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
    let lines: Vec<&str> = text.lines().map(clean_line).collect();
    if let Some(r) = parse_json_stream(&lines) {
        return r;
    }
    if let Some(r) = parse_json(&lines) {
        return r;
    }
    parse_text(&lines)
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

fn make_error(lines: &[&str]) -> Option<ToolError> {
    let msgs: Vec<&str> = lines
        .iter()
        .filter_map(|l| error_line(strip_timestamp(l)))
        .collect();
    let first = msgs.first()?;
    // Keep the message from "iperf3:" on: a --timestamps date or a harness tag is not the tool's.
    let trimmed: Vec<&str> = msgs
        .iter()
        .map(|m| m.find("iperf3:").and_then(|i| m.get(i..)).unwrap_or(m))
        .collect();
    let first = first
        .find("iperf3:")
        .and_then(|i| first.get(i..))
        .unwrap_or(first);
    Some(ToolError {
        kind: classify(first),
        message: dedup(&trimmed).join("\n"),
    })
}

fn dedup<'a>(items: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = Vec::new();
    for i in items {
        if !out.contains(i) {
            out.push(i);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// JSON

/// `--json-stream`: one `{"event": ..., "data": ...}` object per line (iperf 3.17+).
fn parse_json_stream(lines: &[&str]) -> Option<IperfReport> {
    let mut start = None;
    let mut intervals = Vec::new();
    let mut end = None;
    let mut error = None;
    let mut seen = false;
    for line in lines {
        let t = line.trim();
        if !t.starts_with('{') || !t.contains("\"event\"") {
            continue;
        }
        // A line cut short by truncation simply fails to parse and is skipped.
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(t) else {
            continue;
        };
        let Some(event) = obj.get("event").and_then(Value::as_str) else {
            continue;
        };
        let data = obj.get("data").cloned().unwrap_or(Value::Null);
        seen = true;
        match event {
            "start" => start = Some(data),
            "interval" => intervals.push(data),
            "end" => end = Some(data),
            "error" => error = Some(data),
            _ => {}
        }
    }
    if !seen {
        return None;
    }
    let mut doc = serde_json::Map::new();
    if let Some(s) = start {
        doc.insert("start".into(), s);
    }
    doc.insert("intervals".into(), Value::Array(intervals));
    if let Some(e) = end {
        doc.insert("end".into(), e);
    }
    if let Some(e) = error {
        doc.insert("error".into(), e);
    }
    let mut r = from_json_doc(&Value::Object(doc), lines);
    r.format = Some(Format::JsonStream);
    Some(r)
}

/// `-J`: one pretty-printed document; anything before or after it (stderr, prompts) is ignored.
fn parse_json(lines: &[&str]) -> Option<IperfReport> {
    let first = lines.iter().position(|l| l.trim() == "{")?;
    let body = lines.get(first..).unwrap_or_default().join("\n");
    // Deserialize only the first value: trailing text (a second document, a shell prompt) is fine.
    let mut stream = serde_json::Deserializer::from_str(&body).into_iter::<Value>();
    match stream.next() {
        Some(Ok(doc @ Value::Object(_))) => {
            let mut r = from_json_doc(&doc, lines);
            r.format = Some(Format::Json);
            Some(r)
        }
        _ => {
            // Truncated document: only say what can be seen, never guess a rate.
            if !body.contains("\"start\":") {
                return None;
            }
            let mut r = IperfReport::empty();
            r.format = Some(Format::Json);
            r.status = Status::Incomplete;
            r.intervals = count_truncated_intervals(&body);
            r.version = scan_json_string(&body, "version").map(|v| version_of(&v));
            if body.contains("\"connecting_to\":") {
                r.role = Some(Role::Client);
            } else if body.contains("\"accepted_connection\":") {
                r.role = Some(Role::Server);
            }
            r.protocol = scan_json_string(&body, "protocol").and_then(|p| protocol_of(&p));
            r.error = make_error(lines);
            if r.error.is_some() {
                r.status = Status::Error;
            }
            Some(r)
        }
    }
}

/// Intervals in a document cut short: each complete interval object carries one `"sum":` key
/// before the top-level `"end": {` (stream objects have a numeric `"end"`).
fn count_truncated_intervals(body: &str) -> u32 {
    let mut n = 0u32;
    let mut in_intervals = false;
    let mut pending_sum = false;
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("\"intervals\":") {
            in_intervals = true;
            continue;
        }
        if !in_intervals {
            continue;
        }
        if t.starts_with("\"end\":") && t.trim_end().ends_with('{') {
            break;
        }
        if t.starts_with("\"sum\":") {
            pending_sum = true;
        }
        // The closing brace of the sum object completes the interval.
        if pending_sum && t.starts_with('}') {
            n = n.saturating_add(1);
            pending_sum = false;
        }
    }
    n
}

/// The string value of `"key":<ws>"value"` anywhere in (possibly broken) JSON text.
fn scan_json_string(body: &str, key: &str) -> Option<String> {
    let needle = format!("\"{key}\":");
    let idx = body.find(&needle)?;
    let rest = body.get(idx + needle.len()..)?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    rest.get(..end).map(str::to_string)
}

fn version_of(v: &str) -> String {
    // "iperf 3.12" -> "3.12"; keep whatever else as printed.
    v.trim()
        .strip_prefix("iperf ")
        .unwrap_or(v.trim())
        .to_string()
}

fn protocol_of(p: &str) -> Option<Protocol> {
    match p.trim().to_ascii_uppercase().as_str() {
        "TCP" => Some(Protocol::Tcp),
        "UDP" => Some(Protocol::Udp),
        "SCTP" => Some(Protocol::Sctp),
        _ => None,
    }
}

fn f(v: Option<&Value>, key: &str) -> Option<f64> {
    v?.get(key)?.as_f64().filter(|x| x.is_finite())
}

fn u(v: Option<&Value>, key: &str) -> Option<u64> {
    let x = v?.get(key)?;
    x.as_u64().or_else(|| {
        x.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

fn gbps(bps: Option<f64>) -> Option<f64> {
    bps.map(|b| b / 1e9)
}

fn from_json_doc(doc: &Value, lines: &[&str]) -> IperfReport {
    let mut r = IperfReport::empty();
    let start = doc.get("start");
    let end = doc.get("end");
    let test_start = start.and_then(|s| s.get("test_start"));

    r.version = start
        .and_then(|s| s.get("version"))
        .and_then(Value::as_str)
        .map(version_of);
    if start.and_then(|s| s.get("connecting_to")).is_some() {
        r.role = Some(Role::Client);
    } else if start.and_then(|s| s.get("accepted_connection")).is_some() {
        r.role = Some(Role::Server);
    }
    r.protocol = test_start
        .and_then(|t| t.get("protocol"))
        .and_then(Value::as_str)
        .and_then(protocol_of);
    r.streams = u(test_start, "num_streams")
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0);
    r.intervals = doc
        .get("intervals")
        .and_then(Value::as_array)
        .map(|a| u32::try_from(a.len()).unwrap_or(u32::MAX))
        .unwrap_or(0);
    r.bidir = u(test_start, "bidir").unwrap_or(0) > 0
        || end
            .and_then(|e| e.get("sum_received_bidir_reverse"))
            .is_some();

    let sum_sent = end.and_then(|e| e.get("sum_sent"));
    let sum_received = end.and_then(|e| e.get("sum_received"));
    // Old UDP reports only have `end.sum` (receiver's view carried back to the client).
    let sum = end.and_then(|e| e.get("sum"));
    let recv = sum_received.or(if r.protocol == Some(Protocol::Udp) {
        sum
    } else {
        None
    });

    r.gbps = gbps(f(recv, "bits_per_second"));
    r.sender_gbps = gbps(f(sum_sent, "bits_per_second"));
    // A server that only received reports a placeholder `sum_sent` with zero bytes.
    if r.role == Some(Role::Server) && u(sum_sent, "bytes") == Some(0) {
        r.sender_gbps = None;
    }
    if r.protocol != Some(Protocol::Udp) {
        r.retransmits = u(sum_sent, "retransmits");
    }
    r.duration_s = f(recv, "seconds")
        .or_else(|| f(sum_sent, "seconds"))
        .or_else(|| f(sum, "seconds"));
    if r.bidir {
        r.reverse_gbps = gbps(f(
            end.and_then(|e| e.get("sum_received_bidir_reverse")),
            "bits_per_second",
        ));
    }
    if r.protocol == Some(Protocol::Udp) {
        let src = sum_received.or(sum);
        r.jitter_ms = f(src, "jitter_ms");
        r.lost_percent = f(src, "lost_percent");
    }
    if r.streams.is_none() {
        r.streams = end
            .and_then(|e| e.get("streams"))
            .and_then(Value::as_array)
            .map(|a| a.len())
            .filter(|n| *n > 0)
            .and_then(|n| u32::try_from(n).ok());
    }

    r.error = doc
        .get("error")
        .and_then(Value::as_str)
        .map(|m| ToolError {
            kind: classify(m),
            message: m.trim().to_string(),
        })
        .or_else(|| make_error(lines));

    r.status = if r.error.is_some() {
        Status::Error
    } else if r.gbps.is_some() || r.sender_gbps.is_some() {
        Status::Ok
    } else {
        // A document with a start block but no end: the run was cut off.
        Status::Incomplete
    };
    r
}

// ---------------------------------------------------------------------------------------------
// Text

/// Drop a `--timestamps` prefix: the default format is ctime-like, `Sat May 24 22:41:30 2025 `
/// (day space-padded, so split on whitespace rather than counting columns).
fn strip_timestamp(line: &str) -> &str {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let t = line.trim_start();
    if !DAYS.iter().any(|d| t.starts_with(d)) {
        return line;
    }
    let mut rest = t;
    for i in 0..5 {
        let r = rest.trim_start();
        let end = r.find(char::is_whitespace).unwrap_or(r.len());
        let tok = r.get(..end).unwrap_or("");
        let ok = match i {
            0 => DAYS.contains(&tok),
            1 => tok.len() == 3 && tok.chars().all(|c| c.is_ascii_alphabetic()),
            2 | 4 => !tok.is_empty() && tok.chars().all(|c| c.is_ascii_digit()),
            _ => tok.len() >= 5 && tok.chars().all(|c| c.is_ascii_digit() || c == ':'),
        };
        if !ok {
            return line;
        }
        rest = r.get(end..).unwrap_or("");
    }
    // Exactly one separator space follows the stamp; keep the tool's own indentation after it.
    rest.strip_prefix(' ').unwrap_or(rest)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Sender,
    Receiver,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Client to server (or the only direction of a non-bidir test).
    Forward,
    /// Server to client in `--bidir`.
    Reverse,
}

#[derive(Debug, Clone, PartialEq)]
struct Row<'a> {
    /// `None` for `[SUM]`.
    id: Option<u32>,
    dir: Dir,
    span: &'a str,
    start: f64,
    end: f64,
    bps: f64,
    /// The first bare integer after the rate: Retr for TCP, Total Datagrams for a UDP sender.
    first_int: Option<u64>,
    jitter_ms: Option<f64>,
    lost_percent: Option<f64>,
    label: Option<Label>,
}

fn rate_scale(unit: &str) -> Option<f64> {
    // iperf3 rates are decimal (units.c uses 1000 for bits/sec).
    match unit {
        "bits/sec" => Some(1.0),
        "Kbits/sec" => Some(1e3),
        "Mbits/sec" => Some(1e6),
        "Gbits/sec" => Some(1e9),
        "Tbits/sec" => Some(1e12),
        _ => None,
    }
}

fn is_bytes_unit(unit: &str) -> bool {
    matches!(unit, "Bytes" | "KBytes" | "MBytes" | "GBytes" | "TBytes")
}

/// One interval or summary row: `[  5]   0.00-1.00   sec  2.09 GBytes  17.9 Gbits/sec ...`,
/// `[SUM]`, `[  5][TX-C]`. Anything incomplete (cut mid-line) is rejected.
fn parse_row(line: &str) -> Option<Row<'_>> {
    let t = line.trim_start().strip_prefix('[')?;
    let close = t.find(']')?;
    let id_txt = t.get(..close)?.trim();
    let id = if id_txt == "SUM" {
        None
    } else {
        Some(id_txt.parse::<u32>().ok()?)
    };
    let mut rest = t.get(close + 1..)?;
    let mut dir = Dir::Forward;
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']')?;
        dir = match r.get(..close)?.trim() {
            "TX-C" | "RX-S" => Dir::Forward,
            "RX-C" | "TX-S" => Dir::Reverse,
            _ => return None,
        };
        rest = r.get(close + 1..)?;
    }
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let span = *toks.first()?;
    let (a, b) = span.split_once('-')?;
    // iperf3 prints both ends with `%.2f`; iperf 2 uses 1 or 4 decimals, so this also keeps a
    // pasted iperf 2 table (without its banner) from being read as iperf3.
    let two_decimals = |x: &str| x.split_once('.').is_some_and(|(_, d)| d.len() == 2);
    if !two_decimals(a) || !two_decimals(b) {
        return None;
    }
    let (start, end) = (num(a)?, num(b)?);
    if *toks.get(1)? != "sec" {
        return None;
    }
    num(toks.get(2)?)?;
    if !is_bytes_unit(toks.get(3)?) {
        return None;
    }
    let bps = num(toks.get(4)?)? * rate_scale(toks.get(5)?)?;
    let tail = toks.get(6..).unwrap_or_default();
    let mut row = Row {
        id,
        dir,
        span,
        start,
        end,
        bps,
        first_int: None,
        jitter_ms: None,
        lost_percent: None,
        label: None,
    };
    let mut tail: Vec<&str> = tail.to_vec();
    match tail.last() {
        Some(&"sender") => row.label = Some(Label::Sender),
        Some(&"receiver") => row.label = Some(Label::Receiver),
        _ => {}
    }
    if row.label.is_some() {
        tail.pop();
    }
    if tail.get(1) == Some(&"ms") {
        // UDP receiver: <jitter> ms <lost>/<total> (<pct>%)
        row.jitter_ms = Some(num(tail.first()?)?);
        let (lost, total) = tail.get(2)?.split_once('/')?;
        lost.parse::<u64>().ok()?;
        total.parse::<u64>().ok()?;
        let pct = tail.get(3)?.strip_prefix('(')?.strip_suffix("%)")?;
        row.lost_percent = Some(num(pct)?);
    } else if let Some(first) = tail.first() {
        row.first_int = first.parse::<u64>().ok();
    }
    Some(row)
}

/// iperf 2 prints a different banner and 1-decimal intervals; do not read it as iperf3.
fn looks_like_iperf2(lines: &[&str]) -> bool {
    lines.iter().any(|l| {
        let l = l.trim();
        l.starts_with("Server listening on TCP port")
            || l.starts_with("Server listening on UDP port")
            || l.starts_with("Client connecting to")
            || l.starts_with("TCP window size:")
            || l.starts_with("UDP buffer size:")
            || l.starts_with("iperf version 2.")
    })
}

fn looks_like_iperf3(lines: &[&str]) -> bool {
    lines.iter().any(|l| {
        let l = l.trim();
        l.starts_with("Connecting to host")
            || l == "iperf Done."
            || l.starts_with("- - - - -")
            || (l.starts_with("Server listening on ")
                && l.split_whitespace()
                    .nth(3)
                    .is_some_and(|p| p.parse::<u32>().is_ok()))
            || l.starts_with("iperf 3.")
    })
}

fn parse_text(raw: &[&str]) -> IperfReport {
    let lines: Vec<&str> = raw.iter().map(|l| strip_timestamp(l)).collect();
    let mut r = IperfReport::empty();
    if looks_like_iperf2(&lines) && !looks_like_iperf3(&lines) {
        r.note = Some("iperf 2 output, not iperf3".into());
        return r;
    }

    let mut rows: Vec<Row> = Vec::new();
    let mut post_sep_unlabelled: Vec<Row> = Vec::new();
    let mut intervals = 0u32;
    let mut last_span: Option<&str> = None;
    // (id, dir) rows already seen in the current time slot: with `-O` the omitted slot and the
    // first counted one share the span `0.00-1.00`.
    let mut slot_keys: Vec<(Option<u32>, Dir)> = Vec::new();
    let mut after_sep = false;
    let mut connected = 0u32;
    let mut recognised = false;
    for line in &lines {
        let t = line.trim();
        if t == "Server output:" && r.role == Some(Role::Client) {
            // --get-server-output appends the server's own report: the client's is what counts.
            break;
        }
        if t.starts_with("Connecting to host") || t == "iperf Done." {
            r.role = Some(Role::Client);
            recognised = true;
        } else if t.starts_with("Server listening on") || t.starts_with("Accepted connection from")
        {
            // A long-running server prints one report per test: keep only the last test.
            if t.starts_with("Accepted") && (!rows.is_empty() || intervals > 0) {
                rows.clear();
                post_sep_unlabelled.clear();
                intervals = 0;
                last_span = None;
                slot_keys.clear();
                after_sep = false;
                connected = 0;
            }
            r.role = Some(Role::Server);
            recognised = true;
        } else if let Some(v) = t.strip_prefix("iperf 3.") {
            let v = v.split_whitespace().next().unwrap_or("");
            r.version = Some(format!("3.{v}"));
            recognised = true;
        } else if t.starts_with("- - - - -") {
            after_sep = true;
            recognised = true;
        } else if t.starts_with("[ ID]") {
            recognised = true;
            if t.contains("Datagrams") || t.contains("Jitter") {
                r.protocol = Some(Protocol::Udp);
            } else if r.protocol.is_none() {
                r.protocol = Some(Protocol::Tcp);
            }
            if t.contains("[Role]") {
                r.bidir = true;
            }
        } else if t.contains(" local ") && t.contains(" connected to ") && t.starts_with('[') {
            connected = connected.saturating_add(1);
            recognised = true;
        }
        let Some(row) = parse_row(t) else {
            continue;
        };
        recognised = true;
        if t.contains("][") {
            r.bidir = true;
        }
        if row.jitter_ms.is_some() {
            r.protocol = Some(Protocol::Udp);
        }
        if row.label.is_some() {
            rows.push(row);
        } else if after_sep && row.jitter_ms.is_some() && row.start == 0.0 {
            // iperf3 3.0/3.1 UDP: the final summary row carried no sender/receiver label.
            post_sep_unlabelled.push(row);
        } else {
            let key = (row.id, row.dir);
            if last_span != Some(row.span) || slot_keys.contains(&key) {
                intervals = intervals.saturating_add(1);
                last_span = Some(row.span);
                slot_keys.clear();
            }
            slot_keys.push(key);
        }
    }
    r.intervals = intervals;
    if rows.is_empty() {
        for mut row in post_sep_unlabelled {
            row.label = Some(Label::Receiver);
            rows.push(row);
        }
    }

    let pick = |dir: Dir, label: Label| -> Option<(f64, f64, Option<u64>, Row)> {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|x| x.dir == dir && x.label == Some(label))
            .collect();
        let sums: Vec<&&Row> = mine.iter().filter(|x| x.id.is_none()).collect();
        if let Some(s) = sums.last() {
            return Some((s.bps, s.end - s.start, s.first_int, (**s).clone()));
        }
        // One row per stream (the last one, should a row be repeated).
        let mut per_id: Vec<&Row> = Vec::new();
        for x in &mine {
            match per_id.iter_mut().find(|p| p.id == x.id) {
                Some(slot) => *slot = x,
                None => per_id.push(x),
            }
        }
        let mine = per_id;
        let first = mine.first()?;
        let bps: f64 = mine.iter().map(|x| x.bps).sum();
        let retr = mine
            .iter()
            .map(|x| x.first_int)
            .try_fold(0u64, |acc, x| x.map(|v| acc.saturating_add(v)));
        Some((bps, first.end - first.start, retr, (*first).clone()))
    };

    let recv = pick(Dir::Forward, Label::Receiver);
    let send = pick(Dir::Forward, Label::Sender);
    r.gbps = recv.as_ref().map(|x| x.0 / 1e9);
    r.sender_gbps = send.as_ref().map(|x| x.0 / 1e9);
    r.duration_s = recv.as_ref().or(send.as_ref()).map(|x| x.1);
    if r.protocol == Some(Protocol::Udp) {
        // The receiver row has the jitter and loss measured where the datagrams arrived.
        let src = recv.as_ref().or(send.as_ref()).map(|x| &x.3);
        r.jitter_ms = src.and_then(|x| x.jitter_ms);
        r.lost_percent = src.and_then(|x| x.lost_percent);
    } else {
        r.retransmits = send.as_ref().and_then(|x| x.2);
    }
    if r.bidir {
        r.reverse_gbps = pick(Dir::Reverse, Label::Receiver).map(|x| x.0 / 1e9);
    }
    let mut ids: Vec<u32> = rows
        .iter()
        .filter(|x| x.dir == Dir::Forward)
        .filter_map(|x| x.id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    r.streams = if ids.is_empty() {
        (connected > 0).then(|| {
            if r.bidir {
                connected.div_ceil(2)
            } else {
                connected
            }
        })
    } else {
        u32::try_from(ids.len()).ok()
    };

    r.error = make_error(raw);
    if r.error.is_some() {
        recognised = true;
    }
    if !recognised {
        return IperfReport::empty();
    }
    r.format = Some(Format::Text);
    r.status = if r.error.is_some() {
        Status::Error
    } else if r.gbps.is_some() || r.sender_gbps.is_some() {
        Status::Ok
    } else {
        Status::Incomplete
    };
    r
}

#[cfg(test)]
mod tests {
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
        assert_eq!(parse("").status, Status::Unrecognized);
        assert_eq!(parse("hello\nworld").status, Status::Unrecognized);
    }
}
