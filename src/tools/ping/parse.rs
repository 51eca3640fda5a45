//! iputils `ping` output, above all the jumbo do-not-fragment probe `ping -M do -s 8972` that
//! proves MTU 9000 end to end: header, reply lines (`icmp_seq=` or the 2010-2012 `icmp_req=`),
//! local `message too long` and remote `Frag needed` errors, ICMP unreachables, statistics.
//!
//! Judgement calls: an unknown host (`Name or service not known`, `Temporary failure in name
//! resolution`) is kind `other` (a naming/config problem, not proof that the path is down); a run
//! with 100% loss and no error line is kind `unreachable` with the statistics line as message; a
//! trailing-dot FQDN is reported without its dot.

use crate::parse::text::{clean_line, impossible, is_blank, num, reject};
use crate::parse::{
    ErrorKind, MAX_LINE_BYTES, MAX_STORED_NOTES, Rejected, Status, ToolError, check_opt,
};
use serde::{Deserialize, Serialize};

/// The do-not-fragment probe failed: the path MTU is smaller than the packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MtuError {
    /// `message-too-long` (refused by the local interface) or `frag-needed` (a router said so).
    pub kind: ErrorKind,
    /// The MTU the kernel or router reported, when printed.
    pub mtu: Option<u32>,
    /// The router that sent `Frag needed`; `None` for a local refusal.
    pub from: Option<String>,
}

/// What was read from one ping run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PingReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// Target as given on the command line (header or statistics line), trailing dot removed.
    pub host: Option<String>,
    /// Resolved address from the header.
    pub ip: Option<String>,
    /// ICMP payload size (`-s`), e.g. 8972 from `8972(9000)`.
    pub payload_bytes: Option<u32>,
    pub transmitted: Option<u64>,
    pub received: Option<u64>,
    pub duplicates: Option<u64>,
    pub corrupted: Option<u64>,
    /// `+N errors` from the statistics; without statistics, the error lines seen.
    pub errors: Option<u64>,
    pub loss_pct: Option<f64>,
    pub time_ms: Option<f64>,
    pub rtt_min_ms: Option<f64>,
    pub rtt_avg_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    pub rtt_mdev_ms: Option<f64>,
    /// `pipe N`: most probes in flight at once.
    pub pipe: Option<u32>,
    pub mtu_error: Option<MtuError>,
    /// Echo reply lines seen (duplicates not counted).
    pub replies: u64,
    /// Lines rejected for an impossible value (negative RTT, loss outside 0-100 % or not
    /// matching the counts, more received than transmitted), with the value named (capped).
    pub rejected: Vec<Rejected>,
    /// Error lines and notes read past their caps (not stored, counted).
    pub not_stored: usize,
}

impl crate::parse::Report for PingReport {
    fn status(&self) -> crate::parse::Status {
        self.status
    }

    fn error(&self) -> Option<&crate::parse::ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        PingReport::summary(self)
    }

    /// Beyond its status: statistics when `ok`, no more received than transmitted, a loss within
    /// 0-100 %, no impossible time.
    fn check(&self) -> Result<(), String> {
        let r = self;
        let st = r.status;
        if st == Status::Ok && (r.transmitted.is_none() || r.received.is_none()) {
            return Err("ok without statistics".into());
        }
        if let (Some(t), Some(rx)) = (r.transmitted, r.received) {
            if rx > t {
                return Err(format!("{rx} received of {t}"));
            }
        }
        if r.loss_pct.is_some_and(|l| !(0.0..=100.0).contains(&l)) {
            return Err(format!("loss {:?}", r.loss_pct));
        }
        for (n, v) in [
            ("rtt_min", r.rtt_min_ms),
            ("rtt_avg", r.rtt_avg_ms),
            ("rtt_max", r.rtt_max_ms),
            ("rtt_mdev", r.rtt_mdev_ms),
            ("time", r.time_ms),
        ] {
            check_opt(n, v)?;
        }
        Ok(())
    }
}

impl PingReport {
    fn empty() -> Self {
        PingReport {
            status: Status::Unrecognized,
            error: None,
            host: None,
            ip: None,
            payload_bytes: None,
            transmitted: None,
            received: None,
            duplicates: None,
            corrupted: None,
            errors: None,
            loss_pct: None,
            time_ms: None,
            rtt_min_ms: None,
            rtt_avg_ms: None,
            rtt_max_ms: None,
            rtt_mdev_ms: None,
            pipe: None,
            mtu_error: None,
            replies: 0,
            rejected: Vec::new(),
            not_stored: 0,
        }
    }

    /// One line for humans, e.g.
    /// `ping 198.19.1.2: 3/3 replies, 0% loss, rtt avg 0.052 ms, payload 8972 B`.
    pub fn summary(&self) -> String {
        let head = match self.host.as_deref().or(self.ip.as_deref()) {
            Some(t) => format!("ping {t}"),
            None => "ping".to_string(),
        };
        if self.status == Status::Empty {
            return "ping: empty input".to_string();
        }
        if self.status == Status::Unrecognized {
            return format!("{head}: unrecognized: no ping output found");
        }
        if let Some(m) = &self.mtu_error {
            let mtu = m.mtu.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
            return match &m.from {
                None => format!("{head}: jumbo ping refused locally: message too long, mtu={mtu}"),
                Some(r) => format!("{head}: fragmentation needed at {r}, mtu={mtu}"),
            };
        }
        let mut parts = Vec::new();
        match (self.transmitted, self.received) {
            (Some(t), Some(r)) => parts.push(format!("{r}/{t} replies")),
            _ => parts.push(format!("{} replies", self.replies)),
        }
        if let Some(l) = self.loss_pct {
            parts.push(format!("{l}% loss"));
        }
        if let Some(a) = self.rtt_avg_ms {
            parts.push(format!("rtt avg {a} ms"));
        }
        if let Some(p) = self.payload_bytes {
            parts.push(format!("payload {p} B"));
        }
        let mut out = format!("{head}: {}", parts.join(", "));
        match self.status {
            Status::Incomplete => match self.rejected.first() {
                Some(r) => out.push_str(&format!(
                    " (incomplete: line {}: {}, rejected)",
                    r.line, r.reason
                )),
                None => out.push_str(" (incomplete: no statistics)"),
            },
            Status::Error => {
                if let Some(e) = &self.error {
                    let first = e.message.lines().next().unwrap_or("");
                    out.push_str(&format!(" (error {}: {first})", e.kind.as_str()));
                }
            }
            _ => {}
        }
        out
    }
}

/// Parse one ping capture.
pub fn parse(text: &str) -> PingReport {
    if is_blank(text) {
        let mut r = PingReport::empty();
        r.status = Status::Empty;
        return r;
    }
    let mut scan = Scan::default();
    for (no, raw) in text.lines().enumerate() {
        if raw.len() > MAX_LINE_BYTES {
            continue;
        }
        let line = strip_epoch(clean_line(raw)).trim();
        if !line.is_empty() {
            scan.line(no + 1, line);
        }
    }
    scan.finish()
}

/// One pass over a ping capture: the report so far and what its verdict needs.
struct Scan {
    r: PingReport,
    /// A line only ping prints was seen.
    recognised: bool,
    /// The `packets transmitted` statistics line was read.
    have_stats: bool,
    stats_line: String,
    /// Error lines, with their kinds (capped).
    errors: Vec<(ErrorKind, String)>,
    /// Error lines seen (not capped).
    error_lines: u64,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            r: PingReport::empty(),
            recognised: false,
            have_stats: false,
            stats_line: String::new(),
            errors: Vec::new(),
            error_lines: 0,
        }
    }
}

impl Scan {
    /// Read line `no` (1-based), cleaned and trimmed, not empty.
    fn line(&mut self, no: usize, line: &str) {
        let r = &mut self.r;
        if let Some(rest) = line.strip_prefix("PING ") {
            if let Some(h) = header(rest) {
                r.host = Some(h.host);
                r.ip = h.ip;
                r.payload_bytes = h.payload_bytes;
                self.recognised = true;
            }
        } else if line.starts_with("--- ") && line.ends_with(" ping statistics ---") {
            self.recognised = true;
            if r.host.is_none() {
                let h = line
                    .strip_prefix("--- ")
                    .and_then(|s| s.strip_suffix(" ping statistics ---"))
                    .unwrap_or("");
                r.host = Some(undot(h).to_string());
            }
        } else if line.contains(" packets transmitted, ") {
            match counts(line, r) {
                Ok(true) => {
                    self.have_stats = true;
                    self.recognised = true;
                    self.stats_line = line.to_string();
                }
                Ok(false) => {}
                Err(why) => {
                    self.recognised = true;
                    reject(&mut r.rejected, no, why, &mut r.not_stored);
                }
            }
        } else if let Some(rest) = line
            .strip_prefix("rtt ")
            .or_else(|| line.strip_prefix("round-trip "))
        {
            match rtt(rest, r) {
                Ok(true) => self.recognised = true,
                Ok(false) => {}
                Err(why) => {
                    self.recognised = true;
                    reject(&mut r.rejected, no, why, &mut r.not_stored);
                }
            }
        } else if line.starts_with("pipe ") {
            // With every probe lost there is no rtt line; iputils prints `pipe N` alone.
            r.pipe = line.get(5..).and_then(|p| p.trim().parse().ok());
        } else if line.contains(" bytes from ")
            && (is_reply(line) || reply_time_impossible(line).is_some())
        {
            self.recognised = true;
            if let Some(why) = reply_time_impossible(line) {
                reject(&mut r.rejected, no, why, &mut r.not_stored);
            } else if !line.contains("(DUP!)") {
                r.replies = r.replies.saturating_add(1);
            }
        } else if let Some(rest) = line.strip_prefix("From ") {
            self.remote_error(line, rest);
        } else if let Some(rest) = line.strip_prefix("ping: ") {
            self.own_error(line, rest);
        }
    }

    /// `From HOST icmp_seq=N Frag needed and DF set (mtu = 1500)` and the other ICMP errors a
    /// router or the target sent back.
    fn remote_error(&mut self, line: &str, rest: &str) {
        if let Some((kind, m)) = from_error(rest) {
            self.recognised = true;
            self.error_lines = self.error_lines.saturating_add(1);
            if kind == ErrorKind::FragNeeded && self.r.mtu_error.is_none() {
                self.r.mtu_error = Some(m);
            }
            if self.errors.len() < MAX_STORED_NOTES {
                self.errors.push((kind, line.to_string()));
            }
        }
    }

    /// `ping: ...`: ping's own error (`message too long, mtu=1500`, an unknown host, a socket
    /// error).
    fn own_error(&mut self, line: &str, rest: &str) {
        self.recognised = true;
        let kind = local_error(rest);
        if kind == ErrorKind::MessageTooLong {
            self.error_lines = self.error_lines.saturating_add(1);
            if self.r.mtu_error.is_none() {
                self.r.mtu_error = Some(MtuError {
                    kind,
                    mtu: mtu_value(rest),
                    from: None,
                });
            }
        } else if self.r.host.is_none() {
            // `ping: spark-x: Name or service not known`: the host is the middle field.
            if let Some((h, _)) = rest.split_once(": ") {
                if !h.contains(' ') && !matches!(h, "connect" | "sendmsg" | "socket") {
                    self.r.host = Some(undot(h).to_string());
                }
            }
        }
        if self.errors.len() < MAX_STORED_NOTES {
            self.errors.push((kind, line.to_string()));
        }
    }

    /// The report: the error the lines add up to, and the status.
    fn finish(self) -> PingReport {
        let mut r = self.r;
        if !self.have_stats && self.error_lines > 0 {
            r.errors = Some(self.error_lines);
        }
        if !self.recognised {
            return PingReport::empty();
        }
        r.error = pick_error(
            &self.errors,
            r.mtu_error.as_ref(),
            self.have_stats,
            r.received,
            self.stats_line,
        );
        r.status = if r.error.is_some() {
            Status::Error
        } else if self.have_stats && r.rejected.is_empty() {
            Status::Ok
        } else {
            Status::Incomplete
        };
        r
    }
}

/// `time=<t> ms` of a reply line, when `<t>` is no possible round trip.
fn reply_time_impossible(line: &str) -> Option<String> {
    let idx = line.find("time=")?;
    let tok = line.get(idx + 5..)?.split_whitespace().next()?;
    impossible(tok).map(|why| format!("reply time `{tok}` ms {why}"))
}

/// The first error decides the kind, except that an MTU error always wins: it is the finding
/// the jumbo probe exists for. No error line but statistics with nothing received: unreachable.
fn pick_error(
    errors: &[(ErrorKind, String)],
    mtu: Option<&MtuError>,
    have_stats: bool,
    received: Option<u64>,
    stats_line: String,
) -> Option<ToolError> {
    let mut kinds: Vec<&(ErrorKind, String)> = errors.iter().collect();
    if let Some(m) = mtu {
        kinds.sort_by_key(|(k, _)| *k != m.kind);
    }
    if let Some((kind, _)) = kinds.first() {
        let mut msgs: Vec<&str> = Vec::new();
        // One line per probe can run to hundreds with -c 100: the first three say it all.
        for (_, m) in errors {
            if !msgs.contains(&m.as_str()) && msgs.len() < 3 {
                msgs.push(m);
            }
        }
        return Some(ToolError {
            kind: *kind,
            message: msgs.join("\n"),
        });
    }
    (have_stats && received == Some(0)).then_some(ToolError {
        kind: ErrorKind::Unreachable,
        message: stats_line,
    })
}

/// `-D` puts `[1717171717.123456] ` in front of each reply.
fn strip_epoch(line: &str) -> &str {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        if let Some((stamp, after)) = rest.split_once(']') {
            if num(stamp).is_some() {
                return after;
            }
        }
    }
    line
}

fn undot(h: &str) -> &str {
    if h.len() > 1 {
        h.strip_suffix('.').unwrap_or(h)
    } else {
        h
    }
}

/// What the `PING ...` header line says.
#[derive(Debug, PartialEq)]
struct Header {
    host: String,
    ip: Option<String>,
    payload_bytes: Option<u32>,
}

/// After `PING `: IPv4 `host (ip) 8972(9000) bytes of data.`; IPv6 `host(ip) 56 data bytes`,
/// where ip may itself be `name (addr)`.
fn header(rest: &str) -> Option<Header> {
    let open = rest.find('(');
    let space = rest.find(' ');
    let host_end = match (open, space) {
        (Some(o), Some(s)) => o.min(s),
        (Some(o), None) => o,
        (None, Some(s)) => s,
        (None, None) => return None,
    };
    let host = rest.get(..host_end)?.trim();
    if host.is_empty() {
        return None;
    }
    let after_host = rest.get(host_end..)?.trim_start();
    let (ip, tail) = if let Some(inner) = after_host.strip_prefix('(') {
        // Balanced scan: `(name (addr))` nests one level.
        let mut depth = 1usize;
        let mut close = None;
        for (i, c) in inner.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close?;
        let inside = inner.get(..close)?;
        let addr = match inside.rsplit_once('(') {
            Some((_, a)) => a.trim_end_matches(')'),
            None => inside,
        };
        (Some(addr.trim().to_string()), inner.get(close + 1..)?)
    } else {
        (None, after_host)
    };
    // busybox puts a colon before the size: `PING h (ip): 56 data bytes`.
    let tok = tail
        .trim_start_matches([':', ' '])
        .split_whitespace()
        .next()
        .unwrap_or("");
    let payload_bytes = tok.split('(').next().and_then(|p| p.parse::<u32>().ok());
    Some(Header {
        host: undot(host).to_string(),
        ip,
        payload_bytes,
    })
}

/// A reply line: `<n> bytes from <who>: icmp_seq=<n> ttl=<n> time=<t> ms` (also `icmp_req=`).
/// A line cut before its `time=... ms` is not accepted.
fn is_reply(line: &str) -> bool {
    // `seq=` also covers busybox's bare `seq=0`.
    let seq = line.contains("seq=") || line.contains("icmp_req=");
    let Some(idx) = line.find("time=").or_else(|| line.find("time<")) else {
        return false;
    };
    let Some(after) = line.get(idx + 5..) else {
        return false;
    };
    let mut it = after.split_whitespace();
    let value_ok = it.next().and_then(num).is_some();
    seq && value_ok && it.next() == Some("ms")
}

/// After `From `: `<ip>[ (<addr>)][:] icmp_seq=<n> <message>`.
fn from_error(rest: &str) -> Option<(ErrorKind, MtuError)> {
    let idx = rest
        .find(" icmp_seq=")
        .or_else(|| rest.find(" icmp_req="))?;
    let who = rest.get(..idx)?.trim().trim_end_matches(':');
    let router = match who.rsplit_once('(') {
        Some((_, a)) => a.trim_end_matches(')').trim(),
        None => who,
    };
    let after = rest.get(idx + 1..)?;
    let msg = after.split_once(' ').map(|(_, m)| m).unwrap_or("").trim();
    let low = msg.to_ascii_lowercase();
    let kind = if low.starts_with("frag needed") || low.starts_with("packet too big") {
        ErrorKind::FragNeeded
    } else if low.contains("unreachable") {
        ErrorKind::Unreachable
    } else if msg.is_empty() {
        return None;
    } else {
        ErrorKind::Other
    };
    Some((
        kind,
        MtuError {
            kind,
            mtu: mtu_value(msg),
            from: Some(router.to_string()),
        },
    ))
}

/// The error kind of a `ping: ...` line.
fn local_error(rest: &str) -> ErrorKind {
    let low = rest.to_ascii_lowercase();
    if low.contains("message too long") {
        ErrorKind::MessageTooLong
    } else if low.contains("network is unreachable")
        || low.contains("no route to host")
        || low.contains("host is unreachable")
    {
        ErrorKind::Unreachable
    } else {
        // Name resolution, permissions, bad arguments.
        ErrorKind::Other
    }
}

/// `mtu=1500`, `mtu: 1500`, `(mtu = 1500)`.
fn mtu_value(s: &str) -> Option<u32> {
    let low = s.to_ascii_lowercase();
    let idx = low.find("mtu")?;
    let after = low.get(idx + 3..)?;
    let after = after.trim_start_matches([' ', '=', ':']);
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `<tx> packets transmitted, <rx> received[, +N duplicates][, +N corrupted][, +N errors],
/// <loss>% packet loss[, time <t>ms]`. A line missing its loss field (cut off) is refused
/// (`Ok(false)`); one with an impossible value is rejected (`Err`, naming it): a negative count
/// or time, received above transmitted, a loss outside 0-100 % or not what the counts give.
fn counts(line: &str, r: &mut PingReport) -> Result<bool, String> {
    let mut tx = None;
    let mut rx = None;
    let mut loss = None;
    let (mut dup, mut corrupt, mut errs, mut time) = (None, None, None, None);
    for part in line.split(',') {
        let p = part.trim();
        let mut it = p.split_whitespace();
        let first = it.next().unwrap_or("");
        let word = it.next().unwrap_or("");
        let value = first.trim_start_matches('+').trim_end_matches('%');
        if let Some(why) = impossible(value) {
            return Err(format!("statistics `{p}`: `{value}` {why}"));
        }
        if p.ends_with("packets transmitted") {
            tx = first.parse::<u64>().ok();
        } else if p.ends_with(" received") {
            // iputils: `3 received`; busybox and BSD: `3 packets received`.
            rx = first.parse::<u64>().ok();
        } else if let Some(n) = first.strip_prefix('+') {
            let n = n.parse::<u64>().ok();
            match word {
                "duplicates" => dup = n,
                "corrupted" => corrupt = n,
                "errors" => errs = n,
                _ => {}
            }
        } else if p.ends_with("packet loss") {
            loss = first.strip_suffix('%').and_then(num);
        } else if first == "time" {
            let t = word.strip_suffix("ms").unwrap_or(word);
            if let Some(why) = impossible(t) {
                return Err(format!("statistics time `{t}` ms {why}"));
            }
            time = num(t);
        }
    }
    let (Some(tx), Some(rx), Some(loss)) = (tx, rx, loss) else {
        return Ok(false);
    };
    if rx > tx {
        return Err(format!("{rx} received of {tx} transmitted"));
    }
    if !(0.0..=100.0).contains(&loss) {
        return Err(format!("loss `{loss}%` is outside 0-100"));
    }
    // iputils: (transmitted - received) * 100 / transmitted, printed with %g (6 digits)
    if tx > 0 {
        let expected = (tx - rx) as f64 * 100.0 / tx as f64;
        // other pings print an integer percentage: allow its truncation
        if (loss - expected).abs() >= 1.0 {
            return Err(format!(
                "loss `{loss}%` does not match {rx} received of {tx} transmitted ({expected:.4}%)"
            ));
        }
    }
    r.transmitted = Some(tx);
    r.received = Some(rx);
    r.loss_pct = Some(loss);
    r.duplicates = Some(dup.unwrap_or(0));
    r.corrupted = Some(corrupt.unwrap_or(0));
    r.errors = Some(errs.unwrap_or(0));
    r.time_ms = time;
    Ok(true)
}

/// After `rtt ` / `round-trip `: `min/avg/max/mdev = a/b/c/d ms[, pipe N][, ipg/ewma x/y ms]`.
/// `Err` names an impossible value: a negative or non-finite time, or min/avg/max out of order.
fn rtt(rest: &str, r: &mut PingReport) -> Result<bool, String> {
    let Some((names, values)) = rest.split_once(" = ") else {
        return Ok(false);
    };
    let mut parts = values.split(',');
    let main = parts.next().unwrap_or("").trim();
    let Some(nums) = main.strip_suffix(" ms") else {
        return Ok(false);
    };
    let names: Vec<&str> = names.trim().split('/').collect();
    for (n, tok) in names.iter().zip(nums.split('/')) {
        if let Some(why) = impossible(tok) {
            return Err(format!("rtt {n} `{tok}` ms {why}"));
        }
    }
    let vals: Vec<Option<f64>> = nums.split('/').map(num).collect();
    if vals.len() != names.len() || vals.len() < 3 || vals.iter().any(Option::is_none) {
        return Ok(false);
    }
    let (lo, mid, hi) = (vals[0], vals[1], vals[2]);
    if names.get(..3) == Some(&["min", "avg", "max"][..]) && !(lo <= mid && mid <= hi) {
        return Err(format!("rtt `{nums}` ms: min/avg/max out of order"));
    }
    for (n, v) in names.iter().zip(vals) {
        match *n {
            "min" => r.rtt_min_ms = v,
            "avg" => r.rtt_avg_ms = v,
            "max" => r.rtt_max_ms = v,
            "mdev" | "stddev" => r.rtt_mdev_ms = v,
            _ => {}
        }
    }
    for p in parts {
        if let Some(n) = p.trim().strip_prefix("pipe ") {
            r.pipe = n.trim().parse().ok();
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_variants() {
        let h = header("198.19.1.2 (198.19.1.2) 8972(9000) bytes of data.").unwrap();
        assert_eq!(
            h,
            Header {
                host: "198.19.1.2".into(),
                ip: Some("198.19.1.2".into()),
                payload_bytes: Some(8972)
            }
        );
        let h = header("::1(::1) 56 data bytes").unwrap();
        assert_eq!((h.ip.as_deref(), h.payload_bytes), (Some("::1"), Some(56)));
        let h = header("spark-1(spark-1 (fd00::2)) 8952 data bytes").unwrap();
        assert_eq!(h.ip.as_deref(), Some("fd00::2"));
        let h = header("spark-1.example. (198.19.1.2) 56(84) bytes of data.").unwrap();
        assert_eq!(h.host, "spark-1.example");
    }

    #[test]
    fn mtu_forms() {
        assert_eq!(
            mtu_value("local error: message too long, mtu=1500"),
            Some(1500)
        );
        assert_eq!(
            mtu_value("local error: message too long, mtu: 9000"),
            Some(9000)
        );
        assert_eq!(mtu_value("Frag needed and DF set (mtu = 1500)"), Some(1500));
        assert_eq!(mtu_value("Frag needed and DF set"), None);
    }

    #[test]
    fn loss_formats() {
        for (line, loss) in [
            (
                "3 packets transmitted, 3 received, 0% packet loss, time 2003ms",
                0.0,
            ),
            (
                "3 packets transmitted, 0 received, 100% packet loss, time 2003ms",
                100.0,
            ),
            (
                "3 packets transmitted, 2 received, 33.3333% packet loss, time 2ms",
                33.3333,
            ),
        ] {
            let mut r = PingReport::empty();
            assert_eq!(counts(line, &mut r), Ok(true));
            assert_eq!(r.loss_pct, Some(loss));
        }
        let mut r = PingReport::empty();
        assert_eq!(
            counts("3 packets transmitted, 3 received, 0", &mut r),
            Ok(false)
        );
    }

    #[test]
    fn reply_must_be_complete() {
        assert!(is_reply(
            "64 bytes from 1.2.3.4: icmp_seq=1 ttl=64 time=0.045 ms"
        ));
        assert!(is_reply(
            "64 bytes from h (1.2.3.4): icmp_req=1 ttl=64 time=0.045 ms"
        ));
        assert!(!is_reply(
            "64 bytes from 1.2.3.4: icmp_seq=1 ttl=64 time=0.0"
        ));
    }

    #[test]
    fn frag_needed_router() {
        let (k, m) =
            from_error("198.19.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1500)").unwrap();
        assert_eq!(k, ErrorKind::FragNeeded);
        assert_eq!(m.from.as_deref(), Some("198.19.0.1"));
        assert_eq!(m.mtu, Some(1500));
    }

    #[test]
    fn unrecognized() {
        assert_eq!(parse("").status, Status::Empty);
        assert_eq!(parse("hello world").status, Status::Unrecognized);
    }
}
