//! The human text report of a client or a server, read line by line.

use super::{ErrorLines, Format, IperfReport, Protocol, Role};
use crate::parse::text::{clean_line, num, push_capped, reject};
use crate::parse::{MAX_LINE_BYTES, MAX_STORED_ROWS};

/// Drop a `--timestamps` prefix: the default format is ctime-like, `Sat May 24 22:41:30 2025 `
/// (day space-padded, so split on whitespace rather than counting columns).
pub(super) fn strip_timestamp(line: &str) -> &str {
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
pub(super) enum Label {
    Sender,
    Receiver,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// Client to server (or the only direction of a non-bidir test).
    Forward,
    /// Server to client in `--bidir`.
    Reverse,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row<'a> {
    /// `None` for `[SUM]`.
    pub(super) id: Option<u32>,
    pub(super) dir: Dir,
    pub(super) span: &'a str,
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) bps: f64,
    /// The first bare integer after the rate: Retr for TCP, Total Datagrams for a UDP sender.
    pub(super) first_int: Option<u64>,
    pub(super) jitter_ms: Option<f64>,
    pub(super) lost_percent: Option<f64>,
    pub(super) label: Option<Label>,
    /// UDP receiver `<lost>/<total>` datagrams.
    pub(super) lost_total: Option<(u64, u64)>,
    /// The transfer column (any byte unit).
    pub(super) transfer: f64,
}

impl Row<'_> {
    /// A value no run can print, named: negative transfer, rate or jitter, a rate above what
    /// any link carries, a loss outside 0-100 % or inconsistent with its datagram counts.
    fn impossible(&self) -> Option<String> {
        if self.bps < 0.0 {
            return Some(format!("rate `{}` bits/s is negative", self.bps));
        }
        if let Some(why) = crate::parse::ceiling::link_gbps(self.bps / 1e9) {
            let bps = crate::parse::ceiling::shown(self.bps);
            return Some(format!("rate `{bps}` bits/s {why}"));
        }
        if self.transfer < 0.0 {
            return Some(format!("transfer `{}` is negative", self.transfer));
        }
        if self.end < self.start {
            return Some(format!("interval `{}` ends before it starts", self.span));
        }
        if let Some(j) = self.jitter_ms.filter(|j| *j < 0.0) {
            return Some(format!("jitter `{j}` ms is negative"));
        }
        if let Some(p) = self.lost_percent.filter(|p| !(0.0..=100.0).contains(p)) {
            return Some(format!("loss `{p}`% is outside 0-100"));
        }
        if let Some((lost, total)) = self.lost_total.filter(|(l, t)| l > t) {
            return Some(format!("{lost} datagrams lost of {total} sent"));
        }
        None
    }
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
pub(super) fn parse_row(line: &str) -> Option<Row<'_>> {
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
    let transfer = num(toks.get(2)?)?;
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
        lost_total: None,
        transfer,
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
        row.lost_total = Some((lost.parse::<u64>().ok()?, total.parse::<u64>().ok()?));
        let pct = tail.get(3)?.strip_prefix('(')?.strip_suffix("%)")?;
        row.lost_percent = Some(num(pct)?);
    } else if let Some(first) = tail.first() {
        row.first_int = first.parse::<u64>().ok();
    }
    Some(row)
}

/// Lines that only iperf 2 prints; a capture with them and none of iperf3's is refused.
fn iperf2_line(l: &str) -> bool {
    l.starts_with("Server listening on TCP port")
        || l.starts_with("Server listening on UDP port")
        || l.starts_with("Client connecting to")
        || l.starts_with("TCP window size:")
        || l.starts_with("UDP buffer size:")
        || l.starts_with("iperf version 2.")
}

fn iperf3_line(l: &str) -> bool {
    l.starts_with("Connecting to host")
        || l == "iperf Done."
        || l.starts_with("- - - - -")
        || (l.starts_with("Server listening on ")
            && l.split_whitespace()
                .nth(3)
                .is_some_and(|p| p.parse::<u32>().is_ok()))
        || l.starts_with("iperf 3.")
}

/// What the text lines said so far.
#[derive(Default)]
struct TextScanner<'a> {
    r: IperfReport,
    /// Summary rows (`sender` / `receiver`) of the current test.
    rows: Vec<Row<'a>>,
    post_sep_unlabelled: Vec<Row<'a>>,
    intervals: u32,
    last_span: Option<&'a str>,
    /// (id, dir) rows already seen in the current time slot: with `-O` the omitted slot and the
    /// first counted one share the span `0.00-1.00`.
    slot_keys: Vec<(Option<u32>, Dir)>,
    after_sep: bool,
    connected: u32,
    recognised: bool,
    iperf2: bool,
    iperf3: bool,
    /// `Server output:` of a client's `--get-server-output`: the rest is the server's report.
    done: bool,
    errors: ErrorLines<'a>,
}

impl Default for IperfReport {
    fn default() -> Self {
        IperfReport::empty()
    }
}

impl<'a> TextScanner<'a> {
    fn line(&mut self, no: usize, raw: &'a str) {
        if raw.len() > MAX_LINE_BYTES {
            return;
        }
        let cleaned = clean_line(raw);
        self.errors.line(cleaned);
        let line = strip_timestamp(cleaned);
        let t = line.trim();
        self.iperf2 |= iperf2_line(t);
        self.iperf3 |= iperf3_line(t);
        if self.done {
            return;
        }
        if t == "Server output:" && self.r.role == Some(Role::Client) {
            // --get-server-output appends the server's own report: the client's is what counts.
            self.done = true;
            return;
        }
        self.banner(t);
        self.row(no, t);
    }

    /// Role, version, separator, column header and `connected` lines.
    fn banner(&mut self, t: &'a str) {
        let r = &mut self.r;
        if t.starts_with("Connecting to host") || t == "iperf Done." {
            // a second client run in the same capture: keep only the last one
            if t.starts_with("Connecting") && !self.rows.is_empty() {
                self.new_test();
            }
            self.r.role = Some(Role::Client);
            self.recognised = true;
        } else if t.starts_with("Server listening on") || t.starts_with("Accepted connection from")
        {
            // A long-running server prints one report per test: keep only the last test.
            if t.starts_with("Accepted") && (!self.rows.is_empty() || self.intervals > 0) {
                self.new_test();
            }
            self.r.role = Some(Role::Server);
            self.recognised = true;
        } else if let Some(v) = t.strip_prefix("iperf 3.") {
            let v = v.split_whitespace().next().unwrap_or("");
            r.version = Some(format!("3.{v}"));
            self.recognised = true;
        } else if t.starts_with("- - - - -") {
            self.after_sep = true;
            self.recognised = true;
        } else if t.starts_with("[ ID]") {
            self.recognised = true;
            if t.contains("Datagrams") || t.contains("Jitter") {
                r.protocol = Some(Protocol::Udp);
            } else if r.protocol.is_none() {
                r.protocol = Some(Protocol::Tcp);
            }
            if t.contains("[Role]") {
                r.bidir = true;
            }
        } else if t.contains(" local ") && t.contains(" connected to ") && t.starts_with('[') {
            self.connected = self.connected.saturating_add(1);
            self.recognised = true;
        }
    }

    fn new_test(&mut self) {
        self.rows.clear();
        self.post_sep_unlabelled.clear();
        self.intervals = 0;
        self.last_span = None;
        self.slot_keys.clear();
        self.after_sep = false;
        self.connected = 0;
    }

    /// An interval or summary row.
    fn row(&mut self, no: usize, t: &'a str) {
        let Some(row) = parse_row(t) else {
            return;
        };
        self.recognised = true;
        if let Some(why) = row.impossible() {
            reject(&mut self.r.rejected, no, why, &mut self.r.not_stored);
            return;
        }
        if t.contains("][") {
            self.r.bidir = true;
        }
        if row.jitter_ms.is_some() {
            self.r.protocol = Some(Protocol::Udp);
        }
        if row.label.is_some() {
            push_capped(&mut self.rows, row, MAX_STORED_ROWS, &mut self.r.not_stored);
        } else if self.after_sep && row.jitter_ms.is_some() && row.start == 0.0 {
            // iperf3 3.0/3.1 UDP: the final summary row carried no sender/receiver label.
            push_capped(
                &mut self.post_sep_unlabelled,
                row,
                MAX_STORED_ROWS,
                &mut self.r.not_stored,
            );
        } else {
            let key = (row.id, row.dir);
            if self.last_span != Some(row.span) || self.slot_keys.contains(&key) {
                self.intervals = self.intervals.saturating_add(1);
                self.last_span = Some(row.span);
                self.slot_keys.clear();
            }
            if self.slot_keys.len() < MAX_STORED_ROWS {
                self.slot_keys.push(key);
            }
        }
    }

    fn finish(mut self) -> IperfReport {
        let mut r = std::mem::take(&mut self.r);
        if self.iperf2 && !self.iperf3 {
            let mut e = IperfReport::empty();
            e.note = Some("iperf 2 output, not iperf3".into());
            return e;
        }
        r.intervals = self.intervals;
        let mut rows = self.rows;
        if rows.is_empty() {
            for mut row in self.post_sep_unlabelled {
                row.label = Some(Label::Receiver);
                rows.push(row);
            }
        }
        let recv = pick(&rows, Dir::Forward, Label::Receiver);
        let send = pick(&rows, Dir::Forward, Label::Sender);
        r.gbps = recv.as_ref().map(|x| x.bps / 1e9);
        r.sender_gbps = send.as_ref().map(|x| x.bps / 1e9);
        r.duration_s = recv.as_ref().or(send.as_ref()).map(|x| x.seconds);
        if r.protocol == Some(Protocol::Udp) {
            // The receiver row has the jitter and loss measured where the datagrams arrived.
            let src = recv.as_ref().or(send.as_ref()).map(|x| &x.row);
            r.jitter_ms = src.and_then(|x| x.jitter_ms);
            r.lost_percent = src.and_then(|x| x.lost_percent);
        } else {
            r.retransmits = send.as_ref().and_then(|x| x.retransmits);
        }
        if r.bidir {
            r.reverse_gbps = pick(&rows, Dir::Reverse, Label::Receiver).map(|x| x.bps / 1e9);
        }
        let mut ids: Vec<u32> = rows
            .iter()
            .filter(|x| x.dir == Dir::Forward)
            .filter_map(|x| x.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        r.streams = if ids.is_empty() {
            (self.connected > 0).then(|| {
                if r.bidir {
                    self.connected.div_ceil(2)
                } else {
                    self.connected
                }
            })
        } else {
            u32::try_from(ids.len()).ok()
        };
        r.error = self.errors.finish();
        if !(self.recognised || r.error.is_some()) {
            return IperfReport::empty();
        }
        r.format = Some(Format::Text);
        r.settle_status();
        r
    }
}

/// A direction's summary: its `[SUM]` row, or the sum of its per-stream rows.
struct Picked<'a> {
    bps: f64,
    seconds: f64,
    retransmits: Option<u64>,
    row: Row<'a>,
}

fn pick<'a>(rows: &[Row<'a>], dir: Dir, label: Label) -> Option<Picked<'a>> {
    let mine: Vec<&Row> = rows
        .iter()
        .filter(|x| x.dir == dir && x.label == Some(label))
        .collect();
    if let Some(s) = mine.iter().rfind(|x| x.id.is_none()) {
        return Some(Picked {
            bps: s.bps,
            seconds: s.end - s.start,
            retransmits: s.first_int,
            row: (*s).clone(),
        });
    }
    // One row per stream (the last one, should a row be repeated).
    let mut per_id: Vec<&Row> = Vec::new();
    for x in &mine {
        match per_id.iter_mut().find(|p| p.id == x.id) {
            Some(slot) => *slot = x,
            None => per_id.push(x),
        }
    }
    let first = per_id.first()?;
    let bps: f64 = per_id.iter().map(|x| x.bps).sum();
    let retransmits = per_id
        .iter()
        .map(|x| x.first_int)
        .try_fold(0u64, |acc, x| x.map(|v| acc.saturating_add(v)));
    Some(Picked {
        bps,
        seconds: first.end - first.start,
        retransmits,
        row: (*first).clone(),
    })
}

/// Read a text capture.
pub(super) fn parse_text(text: &str) -> IperfReport {
    let mut sc = TextScanner::default();
    for (i, l) in text.lines().enumerate() {
        sc.line(i + 1, l);
    }
    sc.finish()
}
