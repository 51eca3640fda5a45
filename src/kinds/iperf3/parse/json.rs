//! iperf3's `-J` document and `--json-stream` events, read into typed structs: every field
//! optional, unknown fields ignored, the `intervals` array counted without being stored.

use super::{ErrorLines, Format, IperfReport, Protocol, Role, classify};
use crate::parse::text::{clean_line, reject};
use crate::parse::{MAX_LINE_BYTES, Status, ToolError};
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A JSON array read only for its length.
#[derive(Debug, Default, Clone, Copy)]
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0usize;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// The top-level `-J` document (also assembled from `--json-stream` events).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Doc {
    start: Option<Start>,
    intervals: Count,
    end: Option<End>,
    error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Start {
    version: Option<String>,
    /// Present on the client only.
    connecting_to: Option<IgnoredAny>,
    /// Present on the server only.
    accepted_connection: Option<IgnoredAny>,
    test_start: Option<TestStart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TestStart {
    protocol: Option<String>,
    num_streams: Option<f64>,
    bidir: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct End {
    sum_sent: Option<Sum>,
    sum_received: Option<Sum>,
    /// Old UDP reports: the receiver's view carried back to the client.
    sum: Option<Sum>,
    sum_received_bidir_reverse: Option<Sum>,
    streams: Count,
}

/// A `sum*` object of `end`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Sum {
    seconds: Option<f64>,
    bytes: Option<f64>,
    bits_per_second: Option<f64>,
    retransmits: Option<f64>,
    jitter_ms: Option<f64>,
    lost_percent: Option<f64>,
}

/// One `--json-stream` line: `{"event": "start"|"interval"|"end"|"error", "data": ...}`.
#[derive(Debug, Deserialize)]
struct Event {
    event: String,
}

#[derive(Debug, Deserialize)]
struct EventData<T> {
    data: T,
}

/// `--json-stream`: one `{"event": ..., "data": ...}` object per line (iperf 3.17+).
pub(super) fn parse_json_stream(text: &str) -> Option<IperfReport> {
    let mut doc = Doc::default();
    let mut seen = false;
    let mut first_line = 0usize;
    for (i, line) in text.lines().enumerate() {
        if line.len() > MAX_LINE_BYTES || !line.contains("\"event\"") {
            continue;
        }
        let t = clean_line(line).trim();
        if !t.starts_with('{') || !t.contains("\"event\"") {
            continue;
        }
        // A line cut short by truncation simply fails to parse and is skipped.
        let Ok(ev) = serde_json::from_str::<Event>(t) else {
            continue;
        };
        if !seen {
            first_line = i + 1;
        }
        seen = true;
        match ev.event.as_str() {
            "start" => {
                doc.start = serde_json::from_str::<EventData<Start>>(t)
                    .ok()
                    .map(|d| d.data)
            }
            "interval" => doc.intervals.0 += 1,
            "end" => {
                doc.end = serde_json::from_str::<EventData<End>>(t)
                    .ok()
                    .map(|d| d.data)
            }
            "error" => {
                doc.error = serde_json::from_str::<EventData<String>>(t)
                    .ok()
                    .map(|d| d.data)
            }
            _ => {}
        }
    }
    if !seen {
        return None;
    }
    let mut r = from_doc(&doc, text, first_line);
    r.format = Some(Format::JsonStream);
    Some(r)
}

/// `-J`: one pretty-printed document; anything before or after it (stderr, prompts) is ignored.
pub(super) fn parse_json(text: &str) -> Option<IperfReport> {
    let mut offset = 0usize;
    let mut first = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.contains('{') && clean_line(line).trim() == "{" {
            first = Some((i + 1, offset));
            break;
        }
        offset += line.len();
    }
    let (line_no, offset) = first?;
    let body = text.get(offset..)?;
    // Launcher prefixes on the document's lines: read a cleaned copy instead.
    let cleaned;
    let body = if body.lines().take(64).any(|l| clean_line(l) != l) {
        cleaned = body.lines().map(clean_line).collect::<Vec<_>>().join("\n");
        cleaned.as_str()
    } else {
        body
    };
    // Deserialize only the first value: trailing text (a second document, a shell prompt) is fine.
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Doc>();
    match stream.next() {
        Some(Ok(doc)) => {
            let mut r = from_doc(&doc, text, line_no);
            r.format = Some(Format::Json);
            Some(r)
        }
        _ => truncated(body, text),
    }
}

/// A document cut short: only say what can be seen, never guess a rate.
fn truncated(body: &str, text: &str) -> Option<IperfReport> {
    if !body.contains("\"start\":") {
        return None;
    }
    let mut r = IperfReport::empty();
    r.format = Some(Format::Json);
    r.status = Status::Incomplete;
    r.intervals = count_truncated_intervals(body);
    r.version = scan_json_string(body, "version").map(|v| version_of(&v));
    if body.contains("\"connecting_to\":") {
        r.role = Some(Role::Client);
    } else if body.contains("\"accepted_connection\":") {
        r.role = Some(Role::Server);
    }
    r.protocol = scan_json_string(body, "protocol").and_then(|p| protocol_of(&p));
    r.error = ErrorLines::read(text).finish();
    if r.error.is_some() {
        r.status = Status::Error;
    }
    Some(r)
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

pub(super) fn version_of(v: &str) -> String {
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

/// A whole non-negative count from a JSON number.
fn whole(v: Option<f64>) -> Option<u64> {
    v.filter(|f| f.is_finite() && *f >= 0.0).map(|f| f as u64)
}

/// The values of a sum object that no run can produce, named; `None` if all are possible.
fn impossible_sum(name: &str, s: &Sum) -> Option<String> {
    let checks = [
        ("bits_per_second", s.bits_per_second),
        ("seconds", s.seconds),
        ("bytes", s.bytes),
        ("retransmits", s.retransmits),
        ("jitter_ms", s.jitter_ms),
        ("lost_percent", s.lost_percent),
    ];
    for (key, v) in checks {
        if let Some(v) = v.filter(|v| !v.is_finite() || *v < 0.0) {
            return Some(format!("end.{name}.{key} `{v}` is negative"));
        }
    }
    if let Some(p) = s.lost_percent.filter(|p| *p > 100.0) {
        return Some(format!("end.{name}.lost_percent `{p}` is above 100"));
    }
    let rate = s.bits_per_second.map(|b| (b, b / 1e9));
    if let Some((b, why)) =
        rate.and_then(|(b, g)| crate::parse::ceiling::link_gbps(g).map(|w| (b, w)))
    {
        let b = crate::parse::ceiling::shown(b);
        return Some(format!("end.{name}.bits_per_second `{b}` {why}"));
    }
    None
}

fn from_doc<'a>(doc: &'a Doc, text: &str, line: usize) -> IperfReport {
    let mut r = IperfReport::empty();
    let start = doc.start.as_ref();
    let test_start = start.and_then(|s| s.test_start.as_ref());
    r.version = start.and_then(|s| s.version.as_deref()).map(version_of);
    if start.is_some_and(|s| s.connecting_to.is_some()) {
        r.role = Some(Role::Client);
    } else if start.is_some_and(|s| s.accepted_connection.is_some()) {
        r.role = Some(Role::Server);
    }
    r.protocol = test_start
        .and_then(|t| t.protocol.as_deref())
        .and_then(protocol_of);
    r.streams = whole(test_start.and_then(|t| t.num_streams))
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0);
    r.intervals = u32::try_from(doc.intervals.0).unwrap_or(u32::MAX);

    // A sum with an impossible value is rejected whole, like a partial row.
    let end = doc.end.as_ref();
    let mut keep = |name: &str, s: Option<&'a Sum>| -> Option<&'a Sum> {
        let s = s?;
        match impossible_sum(name, s) {
            Some(why) => {
                reject(&mut r.rejected, line, why, &mut r.not_stored);
                None
            }
            None => Some(s),
        }
    };
    let sum_sent = keep("sum_sent", end.and_then(|e| e.sum_sent.as_ref()));
    let sum_received = keep("sum_received", end.and_then(|e| e.sum_received.as_ref()));
    let sum = keep("sum", end.and_then(|e| e.sum.as_ref()));
    let reverse = keep(
        "sum_received_bidir_reverse",
        end.and_then(|e| e.sum_received_bidir_reverse.as_ref()),
    );
    r.bidir = whole(test_start.and_then(|t| t.bidir)).unwrap_or(0) > 0
        || end.is_some_and(|e| e.sum_received_bidir_reverse.is_some());
    let udp = r.protocol == Some(Protocol::Udp);
    let recv = sum_received.or(if udp { sum } else { None });

    let gbps = |s: Option<&Sum>| s.and_then(|s| s.bits_per_second).map(|b| b / 1e9);
    r.gbps = gbps(recv);
    r.sender_gbps = gbps(sum_sent);
    // A server that only received reports a placeholder `sum_sent` with zero bytes.
    if r.role == Some(Role::Server) && whole(sum_sent.and_then(|s| s.bytes)) == Some(0) {
        r.sender_gbps = None;
    }
    if !udp {
        r.retransmits = whole(sum_sent.and_then(|s| s.retransmits));
    }
    r.duration_s = recv
        .and_then(|s| s.seconds)
        .or_else(|| sum_sent.and_then(|s| s.seconds))
        .or_else(|| sum.and_then(|s| s.seconds))
        .filter(|s| s.is_finite());
    if r.bidir {
        r.reverse_gbps = gbps(reverse);
    }
    if udp {
        let src = sum_received.or(sum);
        r.jitter_ms = src.and_then(|s| s.jitter_ms);
        r.lost_percent = src.and_then(|s| s.lost_percent);
    }
    if r.streams.is_none() {
        r.streams = end
            .map(|e| e.streams.0)
            .filter(|n| *n > 0)
            .and_then(|n| u32::try_from(n).ok());
    }
    r.error = doc
        .error
        .as_deref()
        .map(|m| ToolError {
            kind: classify(m),
            message: m.trim().to_string(),
        })
        .or_else(|| ErrorLines::read(text).finish());
    // a document with a start block but no end (the run was cut off) is incomplete
    r.settle_status();
    r
}
