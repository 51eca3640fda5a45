//! perftest (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_*_lat`) output: banner, address
//! block, result tables, trailers and errors, per FORMATS.md section 1, tolerant of the capture
//! artefacts of section 7.
//!
//! One line scanner ([`scan`]) serves both report kinds; the table-specific parts live in
//! [`bw`] and [`lat`], the banner and address block in [`banner`], error wording in [`error`].

mod banner;
mod bw;
mod error;
mod lat;
mod row;

pub use banner::Gid;
pub use bw::{BwRow, BwUnit};
pub use lat::LatRow;

use crate::parse::text::{impossible, is_blank, push_capped, reject, strip_harness_prefix};
use crate::parse::{
    MAX_LINE_BYTES, MAX_STORED_NOTES, MAX_STORED_ROWS, Rejected, Status, ToolError, check_opt,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which side of the test printed the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Server,
    Client,
}

/// Setup facts shared by BW and LAT reports: the banner, the address block, role and warnings.
/// Flattened into the report JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Setup {
    /// The title, e.g. `RDMA_Write BW Test`, `RDMA_Write Bidirectional BW Test`, `Send Latency Test`.
    pub test: Option<String>,
    pub device: Option<String>,
    /// `IB` | `Ethernet` | `Unknown`.
    pub link_type: Option<String>,
    pub gid_index: Option<u32>,
    pub mtu: Option<u32>,
    pub qps: Option<u32>,
    /// `RC` | `UC` | `UD` | `RawEth` | `XRC` | `DC` | `SRD`.
    pub connection_type: Option<String>,
    /// `IB` | `IW` | `Unknown`.
    pub transport_type: Option<String>,
    pub bidirectional: bool,
    /// Duration-style run: the ` WARNING: BW peak won't be measured in this run.` line (also
    /// printed for `--run_infinitely` and > 20000 iterations), a duration latency header, or a
    /// `CPU_Util` column.
    pub duration_mode: bool,
    pub role: Option<Role>,
    /// rdma_cm used for the connection (`rdma_cm QPs : ON` or `Data ex. method : rdma_cm`).
    pub rdma_cm: bool,
    pub local_gids: Vec<Gid>,
    pub remote_gids: Vec<Gid>,
    /// IPv4 of the first IPv4-mapped local / remote GID.
    pub local_ipv4: Option<String>,
    pub remote_ipv4: Option<String>,
    /// Some address-block GID is all zeros: an empty GID table entry.
    pub gid_all_zero: bool,
    /// Every banner `key : value` pair as printed (key whitespace-normalised); shed from a
    /// digested job (its values are in the fields above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub banner: Option<BTreeMap<String, String>>,
    /// Warning lines the tool printed (CPU frequency, MTU changes, peak not measured, ...).
    pub warnings: Vec<String>,
}

/// What an `ib_*_bw` capture says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BwReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// Values of the last complete row, in 10^9 bit/s.
    pub bw_avg_gbps: Option<f64>,
    pub bw_peak_gbps: Option<f64>,
    pub msg_rate_mpps: Option<f64>,
    pub bytes: Option<u64>,
    pub iterations: Option<u64>,
    pub rows: Vec<BwRow>,
    /// The BW unit as the header printed it.
    pub unit: Option<BwUnit>,
    /// Server of a unidirectional WRITE/READ test: its row is the client's numbers copied over
    /// TCP, not a measurement of its own (FORMATS.md 1.4).
    pub copied_from_client: bool,
    /// Bare `%f` numbers of `--output=bandwidth|message_rate` (no banner, no header): the unit is
    /// not printed (MiB/s, Gb/s with `--report_gbits`, or Mpps), so they are not converted.
    pub bare_values: Vec<f64>,
    /// Work-completion status number of a completion error (12 = retry exceeded).
    pub wc_status: Option<u32>,
    /// Table lines rejected for an impossible value (negative, NaN or infinite bandwidth,
    /// message rate, size or iterations; a bandwidth or message rate above what any port
    /// carries, see [`crate::parse::ceiling`]), with the line and the value (capped).
    pub rejected: Vec<Rejected>,
    /// Rows, warnings and notes read past their caps (not stored, counted); the `bw_*` values
    /// are still those of the last complete row.
    pub not_stored: usize,
    #[serde(flatten)]
    pub setup: Setup,
}

/// What an `ib_*_lat` capture says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LatReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// Values of the last complete row in microseconds; `None` when the values are CPU cycles.
    pub t_min_us: Option<f64>,
    pub t_max_us: Option<f64>,
    pub t_typical_us: Option<f64>,
    pub t_avg_us: Option<f64>,
    pub t_stdev_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub bytes: Option<u64>,
    pub iterations: Option<u64>,
    /// Transactions per second of the last row (duration layout).
    pub tps_avg: Option<f64>,
    pub rows: Vec<LatRow>,
    /// Unit of the row values: `usec`, or `cycles` with `-C/--report-cycles`.
    pub unit: Option<String>,
    /// `-C`: values are CPU cycles although the header still says `[usec]`. Known only from a
    /// `#, cycles` histogram line or the command line in the capture.
    pub cycles: bool,
    /// `-H`/`-U` sample lines were printed before the row.
    pub histogram: bool,
    /// Bare `%f` numbers of `--output=latency`.
    pub bare_values: Vec<f64>,
    pub wc_status: Option<u32>,
    /// Table lines rejected for an impossible value (negative, NaN or infinite latency,
    /// iterations or size), with the line and the value (capped).
    pub rejected: Vec<Rejected>,
    /// Rows, warnings and notes read past their caps (not stored, counted); the `t_*` values
    /// are still those of the last complete row.
    pub not_stored: usize,
    #[serde(flatten)]
    pub setup: Setup,
}

/// What the line scanner found, generic over the table kind.
struct Scanned<H, R> {
    /// The last table header read.
    header: Option<H>,
    setup: Setup,
    rows: Vec<R>,
    /// The last complete row (stored or not).
    last: Option<R>,
    error: Option<ToolError>,
    wc_status: Option<u32>,
    status: Status,
    bare_values: Vec<f64>,
    cycles: bool,
    histogram: bool,
    /// Title says BW (`Some(true)`) or Latency (`Some(false)`).
    title_is_bw: Option<bool>,
    rejected: Vec<Rejected>,
    not_stored: usize,
}

/// A trimmed line made only of dashes (87, or 163 with `--report-per-port`; shorter ones are
/// accepted from damaged copies).
fn is_dash(t: &str) -> bool {
    t.len() >= 20 && t.bytes().all(|b| b == b'-')
}

/// `--output=...` prints a bare `%f`: digits, a point, six digits.
fn bare_number(t: &str) -> Option<f64> {
    if row::is_fixed(t, 6) {
        crate::parse::text::num(t)
    } else {
        None
    }
}

fn is_warning(t: &str) -> bool {
    let lower = t.to_ascii_lowercase();
    lower.starts_with("warning")
        || lower.starts_with("libibverbs: warning")
        || t.starts_with("Conflicting CPU frequency")
        || t.starts_with("Requested mtu is higher")
        || t.starts_with("Changing to active mtu")
        || t.starts_with("Max msg size in UD")
        || t.starts_with("Changing to this MTU")
        || t.starts_with("Requested SQ size might be too big")
        || t.starts_with("Client closed connection")
}

/// A shell prompt / trace line that runs the tool with `-C` or `--report-cycles`.
fn command_with_cycles(t: &str) -> bool {
    t.contains("ib_")
        && (t.contains("_lat") || t.contains("_bw"))
        && t.split_whitespace()
            .any(|w| w == "-C" || w == "--report-cycles")
}

/// The non-table state of a scan: banner, address block, errors, warnings, role clues.
#[derive(Default)]
struct State {
    s: Setup,
    errors: error::Errors,
    bare: Vec<f64>,
    perftest_like: bool,
    peak_warning: bool,
    server_box: bool,
    tx_depth: bool,
    cycles: bool,
    histogram: bool,
    title_is_bw: Option<bool>,
    side: Option<banner::Side>,
    section: Option<&'static str>,
    listen_failed: bool,
    connect_failed: bool,
    /// A header has been read and its table not yet closed by a dash line.
    table_open: bool,
    rejected: Vec<Rejected>,
    not_stored: usize,
}

impl State {
    /// Read a line that is not a header nor a row of the open table.
    fn line(&mut self, t: &str) {
        if t.contains("Waiting for client to connect")
            || t.contains("Waiting for client rdma_cm QP to connect")
        {
            self.server_box = true;
            self.perftest_like = true;
        } else if t.starts_with("Local results") {
            self.section = Some("local");
        } else if t.starts_with("Remote results") {
            self.section = Some("remote");
        } else if let Some((title, is_bw)) = banner::title(t) {
            self.s.bidirectional = title.contains("Bidirectional");
            self.s.test = Some(title);
            self.title_is_bw = Some(is_bw);
            self.perftest_like = true;
        } else if let Some(which) = banner::address_side(t) {
            self.side = Some(which);
            self.perftest_like = true;
        } else if let Some(gid) = banner::gid_line(t) {
            self.gid(gid);
        } else if t == "#, usec" || t == "#, cycles" || t == ", usec" || t == ", cycles" {
            self.histogram = true;
            self.cycles |= t.ends_with("cycles");
        } else if let Some((kind, weight)) = error::classify(t) {
            self.errors.push(t, kind, weight);
            self.listen_failed |= kind == crate::parse::ErrorKind::ListenFailed;
            self.connect_failed |= kind == crate::parse::ErrorKind::ConnectFailed;
        } else if let Some(kvs) = banner::key_values(t) {
            self.perftest_like = true;
            for (k, v) in kvs {
                apply_banner(&mut self.s, k, &v);
                self.tx_depth |= k == "TX depth";
            }
        } else if is_warning(t) {
            self.warning(t);
        } else if command_with_cycles(t) {
            self.cycles = true;
        } else if let Some(v) = bare_number(t) {
            push_capped(&mut self.bare, v, MAX_STORED_ROWS, &mut self.not_stored);
        }
    }

    fn gid(&mut self, gid: Gid) {
        self.s.gid_all_zero |= gid.all_zero;
        let list = match self.side {
            Some(banner::Side::Local) => &mut self.s.local_gids,
            Some(banner::Side::Remote) => &mut self.s.remote_gids,
            None => return,
        };
        push_capped(list, gid, MAX_STORED_NOTES, &mut self.not_stored);
    }

    fn warning(&mut self, t: &str) {
        if t.contains("BW peak won't be measured") {
            // Not `perftest_like`: `--output=bandwidth -D` may print it before a bare number.
            self.s.duration_mode = true;
            self.peak_warning = true;
        }
        if t.starts_with("Client closed connection") {
            // --run_infinitely server: printed instead of a row, ends the table normally.
            self.table_open = false;
        }
        push_capped(
            &mut self.s.warnings,
            t.to_string(),
            MAX_STORED_NOTES,
            &mut self.not_stored,
        );
    }

    /// Which side printed the capture, from everything read.
    fn role(&self) -> Option<Role> {
        let s = &self.s;
        let unidirectional_banner = !s.bidirectional
            && s.test.is_some()
            && (!s.local_gids.is_empty() || self.side.is_some());
        if self.server_box || self.listen_failed {
            Some(Role::Server)
        } else if self.tx_depth || self.connect_failed {
            Some(Role::Client)
        } else if unidirectional_banner {
            // TX depth is printed by the client, or by both sides only when bidirectional
            // (FORMATS.md 1.2): a complete unidirectional banner without it is the server's.
            Some(Role::Server)
        } else if s.test.is_some() || self.side.is_some() {
            Some(Role::Client)
        } else {
            None
        }
    }
}

/// A line of the open table that is no row because a value is impossible (negative, NaN,
/// infinite): it starts with the message size like a row and carries such a value.
fn impossible_row(t: &str) -> Option<String> {
    let mut toks = t.split_whitespace();
    let first = toks.next()?;
    if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest: Vec<&str> = toks.take(16).collect();
    if rest.len() < 2 {
        return None;
    }
    rest.iter().find_map(|tok| {
        impossible(tok).map(|why| format!("row of {first} B: value `{tok}` {why}, row rejected"))
    })
}

/// Read `text` line by line: `header` opens a table, `row` reads one of its rows, `corrupt`
/// names what makes a read row no measurement (a value above its ceiling: the row is rejected),
/// `tag` marks a row with the section it is in.
fn scan<H, R: Clone>(
    text: &str,
    header: impl Fn(&str) -> Option<H>,
    row: impl Fn(&H, &str) -> Option<R>,
    corrupt: impl Fn(&R) -> Option<String>,
    mut tag: impl FnMut(&mut R, Option<&'static str>),
) -> Scanned<H, R> {
    let mut st = State::default();
    let mut rows = Vec::new();
    let mut last: Option<R> = None;
    let mut current: Option<H> = None;
    if is_blank(text) {
        let mut sc = finish_scan(st, current, rows, last);
        sc.status = Status::Empty;
        return sc;
    }
    for (no, raw) in text.split('\n').enumerate() {
        if raw.len() > MAX_LINE_BYTES || raw.bytes().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let line = strip_harness_prefix(raw);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if is_dash(t) {
            st.table_open = false;
            continue;
        }
        if let Some(h) = header(t) {
            current = Some(h);
            st.table_open = true;
            st.perftest_like = true;
            continue;
        }
        if st.table_open {
            if let Some(h) = &current {
                if let Some(mut r) = row(h, t) {
                    if let Some(why) = corrupt(&r) {
                        reject(&mut st.rejected, no + 1, why, &mut st.not_stored);
                        continue;
                    }
                    tag(&mut r, st.section);
                    last = Some(r.clone());
                    push_capped(&mut rows, r, MAX_STORED_ROWS, &mut st.not_stored);
                    continue;
                }
                if let Some(why) = impossible_row(t) {
                    reject(&mut st.rejected, no + 1, why, &mut st.not_stored);
                    continue;
                }
            }
        }
        st.line(t);
    }
    finish_scan(st, current, rows, last)
}

fn finish_scan<H, R>(
    mut st: State,
    current: Option<H>,
    rows: Vec<R>,
    last: Option<R>,
) -> Scanned<H, R> {
    st.s.local_ipv4 = st.s.local_gids.iter().find_map(|g| g.ipv4.clone());
    st.s.remote_ipv4 = st.s.remote_gids.iter().find_map(|g| g.ipv4.clone());
    st.s.role = st.role();
    let error = st.errors.finish(st.s.gid_all_zero);
    let header_seen = current.is_some();
    let status = if error.is_some() {
        Status::Error
    } else if !st.rejected.is_empty() {
        Status::Incomplete
    } else if !rows.is_empty() {
        if st.table_open {
            Status::Incomplete
        } else {
            Status::Ok
        }
    } else if !st.bare.is_empty() && !st.perftest_like {
        Status::Ok
    } else if st.perftest_like || header_seen || st.peak_warning {
        Status::Incomplete
    } else {
        Status::Unrecognized
    };
    if st.perftest_like {
        st.bare.clear();
    }
    Scanned {
        header: current,
        wc_status: st.errors.status_number(),
        setup: st.s,
        rows,
        last,
        error,
        status,
        bare_values: st.bare,
        cycles: st.cycles,
        histogram: st.histogram,
        title_is_bw: st.title_is_bw,
        rejected: st.rejected,
        not_stored: st.not_stored,
    }
}

fn apply_banner(s: &mut Setup, key: &'static str, v: &str) {
    let owned = || Some(v.to_string()).filter(|v| !v.is_empty());
    match key {
        "Device" => s.device = owned(),
        "Number of qps" => s.qps = banner::leading_u32(v),
        "Transport type" => s.transport_type = owned(),
        "Connection type" => s.connection_type = owned(),
        "Mtu" => s.mtu = banner::leading_u32(v),
        "Link type" => s.link_type = owned(),
        "GID index" => s.gid_index = banner::leading_u32(v),
        "rdma_cm QPs" => s.rdma_cm |= v.eq_ignore_ascii_case("ON"),
        "Data ex. method" => s.rdma_cm |= v.eq_ignore_ascii_case("rdma_cm"),
        _ => {}
    }
    s.banner
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), v.to_string());
}

/// Parse the output of `ib_write_bw`, `ib_read_bw` or `ib_send_bw`.
pub fn parse_bw(text: &str) -> BwReport {
    let mut sc = scan(
        text,
        bw::header,
        bw::row,
        BwRow::corrupt,
        |r: &mut BwRow, sec| {
            r.section = sec.map(str::to_string);
        },
    );
    if is_blank(text) {
        sc.status = Status::Empty;
    }
    let last = sc.last.as_ref();
    let mut setup = sc.setup;
    setup.banner.get_or_insert_with(BTreeMap::new);
    let unit = sc.header.as_ref().map(|h| h.unit);
    // --cpu_util exists only in duration mode (FORMATS.md 1.4).
    if sc.header.as_ref().is_some_and(|h| h.cpu_util) {
        setup.duration_mode = true;
    }
    let copied_from_client = setup.role == Some(Role::Server)
        && !setup.bidirectional
        && sc.title_is_bw == Some(true)
        && setup
            .test
            .as_deref()
            .is_some_and(|t| t.starts_with("RDMA_Write") || t.starts_with("RDMA_Read"));
    BwReport {
        status: sc.status,
        error: sc.error,
        bw_avg_gbps: last.map(|r| r.bw_avg_gbps),
        bw_peak_gbps: last.map(|r| r.bw_peak_gbps),
        msg_rate_mpps: last.map(|r| r.msg_rate_mpps),
        bytes: last.map(|r| r.bytes),
        iterations: last.map(|r| r.iterations),
        unit,
        copied_from_client,
        bare_values: sc.bare_values,
        wc_status: sc.wc_status,
        rows: sc.rows,
        rejected: sc.rejected,
        not_stored: sc.not_stored,
        setup,
    }
}

/// Parse the output of `ib_write_lat`, `ib_read_lat` or `ib_send_lat`.
pub fn parse_lat(text: &str) -> LatReport {
    let mut sc = scan(text, lat::header, lat::row, |_| None, |_, _| {});
    if is_blank(text) {
        sc.status = Status::Empty;
    }
    let duration_header = sc.header.as_ref().is_some_and(|h| h.duration);
    let mut setup = sc.setup;
    setup.banner.get_or_insert_with(BTreeMap::new);
    setup.duration_mode |= duration_header;
    let last = sc.last.as_ref();
    let us = |f: fn(&LatRow) -> Option<f64>| {
        if sc.cycles { None } else { last.and_then(f) }
    };
    let unit = if sc.rows.is_empty() && !sc.cycles {
        None
    } else if sc.cycles {
        Some("cycles".to_string())
    } else {
        Some("usec".to_string())
    };
    LatReport {
        status: sc.status,
        error: sc.error,
        t_min_us: us(|r| r.t_min),
        t_max_us: us(|r| r.t_max),
        t_typical_us: us(|r| r.t_typical),
        t_avg_us: us(|r| r.t_avg),
        t_stdev_us: us(|r| r.t_stdev),
        p99_us: us(|r| r.p99),
        p999_us: us(|r| r.p999),
        bytes: last.map(|r| r.bytes),
        iterations: last.map(|r| r.iterations),
        tps_avg: last.and_then(|r| r.tps_avg),
        unit,
        cycles: sc.cycles,
        histogram: sc.histogram,
        bare_values: sc.bare_values,
        wc_status: sc.wc_status,
        rows: sc.rows,
        rejected: sc.rejected,
        not_stored: sc.not_stored,
        setup,
    }
}

/// `ib_write_bw`-style name from the banner title, for summaries.
fn tool_name(test: Option<&str>, bw: bool) -> String {
    let kind = if bw { "bw" } else { "lat" };
    let verb = test
        .and_then(|t| t.split_whitespace().next())
        .map(|v| match v {
            "RDMA_Write" | "RDMA_Write_imm" => "write",
            "RDMA_Read" => "read",
            "Send" | "Send_imm" => "send",
            "Atomic" => "atomic",
            _ => "",
        })
        .unwrap_or("");
    if verb.is_empty() {
        format!("perftest {kind}")
    } else {
        format!("ib_{verb}_{kind}")
    }
}

fn role_name(role: Option<Role>) -> &'static str {
    match role {
        Some(Role::Server) => " server",
        Some(Role::Client) => " client",
        None => "",
    }
}

fn setup_line(s: &Setup) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(d) = &s.device {
        parts.push(format!("device {d}"));
    }
    if let Some(l) = &s.link_type {
        parts.push(l.clone());
    }
    if let Some(g) = s.gid_index {
        parts.push(format!("GID {g}"));
    }
    if let Some(m) = s.mtu {
        parts.push(format!("MTU {m}"));
    }
    if let Some(q) = s.qps {
        parts.push(format!("{q} QP{}", if q == 1 { "" } else { "s" }));
    }
    if let Some(c) = &s.connection_type {
        parts.push(c.clone());
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(", "))
    }
}

fn status_word(st: Status) -> &'static str {
    match st {
        Status::Ok => "ok",
        Status::Error => "error",
        Status::Incomplete => "incomplete",
        Status::Unrecognized => "unrecognized",
        Status::Empty => "empty",
    }
}

impl crate::parse::Report for BwReport {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        BwReport::summary(self)
    }

    /// The banner as printed (its values are in the fields), and a single row that only
    /// repeats the totals.
    fn shed(&mut self) {
        self.setup.banner = None;
        if let [row] = self.rows.as_slice()
            && row.repeats(self)
        {
            self.rows.clear();
        }
    }

    /// Beyond its status: a row (or a bare value) when `ok`, no impossible rate or CPU share.
    fn check(&self) -> Result<(), String> {
        let r = self;
        let st = r.status;
        if st == Status::Ok && r.rows.is_empty() && r.bare_values.is_empty() {
            return Err("ok without a row".into());
        }
        for row in &r.rows {
            for (n, v) in [
                ("bw_peak", row.bw_peak_gbps),
                ("bw_avg", row.bw_avg_gbps),
                ("msg_rate", row.msg_rate_mpps),
            ] {
                check_opt(n, Some(v))?;
            }
            check_opt("cpu_util", row.cpu_util_pct)?;
            if let Some(why) = row.corrupt() {
                return Err(format!("row accepted: {why}"));
            }
        }
        for v in &r.bare_values {
            check_opt("bare", Some(*v))?;
        }
        check_opt("bw_avg_gbps", r.bw_avg_gbps)?;
        Ok(())
    }
}

impl BwReport {
    /// A few human lines: the result (or why there is none), then the setup.
    pub fn summary(&self) -> String {
        let name = tool_name(self.setup.test.as_deref(), true);
        let role = role_name(self.setup.role);
        let mut out = Vec::new();
        match (
            self.bw_avg_gbps,
            self.bw_peak_gbps,
            self.bytes,
            self.iterations,
        ) {
            (Some(avg), Some(peak), Some(b), Some(it)) => {
                let mut l = format!(
                    "{name}{role}: {avg:.2} Gb/s avg (peak {peak:.2}) at {b} B, {it} iterations"
                );
                if self.rows.len() > 1 {
                    l.push_str(&format!(" (last of {} rows)", self.rows.len()));
                }
                if self.copied_from_client {
                    l.push_str(" [server copy of the client's numbers]");
                }
                out.push(l);
            }
            _ if !self.bare_values.is_empty() => out.push(format!(
                "{name}: bare --output values {:?} (unit not printed)",
                self.bare_values
            )),
            _ => out.push(format!(
                "{name}{role}: no result ({})",
                status_word(self.status)
            )),
        }
        summary_tail(
            out,
            self.error.as_ref(),
            (self.status, !self.rows.is_empty()),
            &self.rejected,
            &self.setup,
        )
    }
}

/// The lines every perftest summary ends with: the error, truncation, the setup.
fn summary_tail(
    mut out: Vec<String>,
    error: Option<&ToolError>,
    (status, has_rows): (Status, bool),
    rejected: &[Rejected],
    setup: &Setup,
) -> String {
    if let Some(e) = error {
        out.push(format!(
            "error {}: {}",
            e.kind.as_str(),
            e.message.replace('\n', " / ")
        ));
    }
    if let Some(r) = rejected.first() {
        let more = match rejected.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        out.push(format!("rejected: line {}: {}{more}", r.line, r.reason));
    } else if status == Status::Incomplete && has_rows {
        out.push("incomplete: the table was not closed (truncated or killed)".into());
    }
    if let Some(l) = setup_line(setup) {
        out.push(l);
    }
    out.join("\n")
}

impl crate::parse::Report for LatReport {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        LatReport::summary(self)
    }

    /// The banner as printed (its values are in the fields).
    fn shed(&mut self) {
        self.setup.banner = None;
    }

    /// Beyond its status: a row (or a bare value) when `ok`, no impossible latency.
    fn check(&self) -> Result<(), String> {
        let r = self;
        let st = r.status;
        if st == Status::Ok && r.rows.is_empty() && r.bare_values.is_empty() {
            return Err("ok without a row".into());
        }
        for row in &r.rows {
            for v in [
                row.t_min,
                row.t_max,
                row.t_typical,
                row.t_avg,
                row.t_stdev,
                row.p99,
                row.p999,
                row.tps_avg,
                row.cpu_util_pct,
            ] {
                check_opt("latency", v)?;
            }
        }
        Ok(())
    }
}

impl LatReport {
    /// A few human lines: the result (or why there is none), then the setup.
    pub fn summary(&self) -> String {
        let name = tool_name(self.setup.test.as_deref(), false);
        let role = role_name(self.setup.role);
        let unit = if self.cycles { "cycles" } else { "us" };
        let mut out = Vec::new();
        match self.rows.last() {
            Some(r) => {
                let val = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
                let mut l = format!(
                    "{name}{role}: typical {} {unit}, avg {}, min {}, max {}, p99 {}, p99.9 {} at {} B, {} iterations",
                    val(r.t_typical),
                    val(r.t_avg),
                    val(r.t_min),
                    val(r.t_max),
                    val(r.p99),
                    val(r.p999),
                    r.bytes,
                    r.iterations
                );
                if let Some(tps) = r.tps_avg {
                    l.push_str(&format!(", {tps:.2} tps"));
                }
                out.push(l);
            }
            None if !self.bare_values.is_empty() => out.push(format!(
                "{name}: bare --output values {:?}",
                self.bare_values
            )),
            None => out.push(format!(
                "{name}{role}: no result ({})",
                status_word(self.status)
            )),
        }
        summary_tail(
            out,
            self.error.as_ref(),
            (self.status, !self.rows.is_empty()),
            &self.rejected,
            &self.setup,
        )
    }
}
