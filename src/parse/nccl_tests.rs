//! nccl-tests (`all_reduce_perf`, `all_gather_perf`, `sendrecv_perf`, ...) output: the result
//! table in all four historical layouts, the header blocks, the footer, the test's own error
//! lines, plus what the interleaved NCCL log ([`super::nccl_log`]) and any mpirun error box
//! ([`super::mpirun`]) in the same capture say. Also the `-J` JSON file ([`parse_json`]).
//!
//! Rows are read by splitting on whitespace against a column schema taken from the column
//! header (values wider than their column shift the rest of the line, so fixed positions are
//! never used). A row is accepted only if every expected column is present and well-formed, and
//! the last line of a capture that does not end in a newline is never read as a row: it may have
//! been cut inside its last number.

use super::nccl_log::{self, clean, nccl_message};
use super::text::num;
use super::{ErrorKind, Status, ToolError, mpirun};
use serde::Serialize;
use std::collections::BTreeMap;

/// One half (out-of-place or in-place) of a result row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Half {
    /// `time` column (or `cputime` with `-C 1`, see [`NcclReport::cputime`]), microseconds.
    pub time_us: f64,
    pub algbw_gbs: f64,
    pub busbw_gbs: f64,
    /// Wrong element count (`#wrong`); `null` for `N/A` or for the 2017-2022 layouts whose
    /// column is a float deviation (then in `max_error`).
    pub wrong: Option<u64>,
    /// 2017-2022 layouts only: the float max deviation printed in the `error`/`res` column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
    /// `-I 1` per-iteration columns, when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_iter: Option<PerIter>,
}

/// `-I 1` per-iteration statistics of one half.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerIter {
    pub min_us: Option<f64>,
    pub max_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub cv_pct: Option<f64>,
}

/// One complete result row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub size_bytes: u64,
    pub count: u64,
    #[serde(rename = "type")]
    pub dtype: String,
    pub redop: Option<String>,
    pub root: Option<i64>,
    pub out_of_place: Option<Half>,
    pub in_place: Option<Half>,
    /// `-S 1` timestamp at the end of the row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// A `#  Rank  0 Group  0 Pid  1234 on host device  0 [0000:01:00] NVIDIA GB10` line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    pub rank: u64,
    pub group: Option<u64>,
    pub pid: Option<u64>,
    pub host: String,
    pub device: Option<u64>,
    pub bus_id: Option<String>,
    pub name: Option<String>,
}

/// The `# nThread ...` parameter line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Params {
    pub nthread: Option<u64>,
    pub ngpus: Option<u64>,
    pub min_bytes: Option<u64>,
    pub max_bytes: Option<u64>,
    /// e.g. `2(factor)` or `1048576(bytes)`.
    pub step: Option<String>,
    pub warmup_iters: Option<u64>,
    pub iters: Option<u64>,
    pub agg_iters: Option<u64>,
    pub validation: Option<u64>,
    pub graph: Option<u64>,
    pub unalign: Option<u64>,
}

/// Everything read from one nccl-tests capture (or `-J` JSON file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NcclReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// Program name, from `# Collective test starting:` (or a command line / JSON `args`).
    pub collective: Option<String>,
    /// `v1-2017`, `float-error-2019`, `wrong-count-2022`, `formatter-2025`, `json`, or null.
    pub layout: Option<String>,
    pub rows: Vec<Row>,
    /// Lines that start like a result row (an integer size, 5+ fields) but could not be read
    /// completely (glued numbers, cut lines): dropped, never guessed, and counted here.
    pub rejected_rows: usize,
    pub out_of_bounds: Option<u64>,
    pub out_of_bounds_ok: Option<bool>,
    pub avg_busbw_gbs: Option<f64>,
    /// `OK` / `FAILED` when `NCCL_TESTS_MIN_BW` was set, otherwise null.
    pub avg_busbw_check: Option<String>,
    /// Sum of `#wrong` over all rows and both halves; null when no row carried a count.
    pub wrong_total: Option<u64>,
    /// Distinct rank numbers in the `# Using devices` block(s).
    pub ranks: usize,
    /// Distinct device lines (rank, host, pid): more than `ranks` when processes ran independently.
    pub processes: usize,
    pub hosts: Vec<String>,
    pub devices: Vec<Device>,
    /// `NET/IB`, `NET/Socket` or null, per [`nccl_log`]'s rules.
    pub transport: Option<String>,
    pub mixed_transport: bool,
    pub gdr: Option<bool>,
    pub roce: Option<bool>,
    pub net_devices: Vec<String>,
    pub nccl_version: Option<String>,
    pub nccl_tests_version: Option<String>,
    pub env: BTreeMap<String, String>,
    /// NCCL WARN lines.
    pub warnings: Vec<String>,
    /// Several processes each printed their own header (binary built without MPI=1 launched by
    /// mpirun): they were independent single-communicator runs, not one N-rank run. Only one
    /// sweep of rows is kept (sizes strictly increasing, first seen wins).
    pub duplicate_headers: bool,
    pub params: Option<Params>,
    /// `-C 1`: the time columns are CPU time.
    pub cputime: bool,
    /// `# error: ...` (2025-10+) or JSON `errors`: ncclGetLastError at the end of the run.
    pub nccl_last_error: Option<String>,
    /// Every mpirun error box in the capture.
    pub mpirun_errors: Vec<ToolError>,
    pub exit_code: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Pre {
    Size,
    Count,
    Type,
    Redop,
    Root,
    OpOrRoot,
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Col {
    Time,
    Algbw,
    Busbw,
    Wrong,
    Err,
    IMin,
    IMax,
    IP99,
    ICv,
    Skip,
}

#[derive(Debug, Clone, PartialEq)]
struct Schema {
    pre: Vec<Pre>,
    halves: Vec<Vec<Col>>,
    timestamp: bool,
}

impl Schema {
    fn width(&self) -> usize {
        self.pre.len() + self.halves.iter().map(Vec::len).sum::<usize>()
    }

    /// Read the column header line (`#       size  count  type  redop  root  time ...`).
    fn from_header(h: &str) -> Option<(Schema, bool)> {
        let toks: Vec<&str> = h.split_whitespace().collect();
        let first = *toks.first()?;
        if !(first == "size" || first == "bytes") || !toks.contains(&"type") {
            return None;
        }
        let mut pre = Vec::new();
        let mut halves: Vec<Vec<Col>> = Vec::new();
        let mut timestamp = false;
        let mut cputime = false;
        for t in toks {
            let lower = t.to_ascii_lowercase();
            match lower.as_str() {
                "time" | "cputime" => {
                    cputime |= lower == "cputime";
                    halves.push(vec![Col::Time]);
                    continue;
                }
                "timestamp" => {
                    timestamp = true;
                    break;
                }
                _ => {}
            }
            if let Some(h) = halves.last_mut() {
                h.push(match lower.as_str() {
                    "algbw" => Col::Algbw,
                    "busbw" => Col::Busbw,
                    "#wrong" | "wrong" => Col::Wrong,
                    "error" | "res" | "#error" => Col::Err,
                    "i_min" => Col::IMin,
                    "i_max" => Col::IMax,
                    "i_p99" => Col::IP99,
                    "i_cv%" => Col::ICv,
                    _ => Col::Skip,
                });
            } else {
                pre.push(match lower.as_str() {
                    "size" | "bytes" => Pre::Size,
                    "count" | "n" => Pre::Count,
                    "type" => Pre::Type,
                    "redop" | "op" => Pre::Redop,
                    "root" => Pre::Root,
                    _ => Pre::Skip,
                });
            }
        }
        if halves.is_empty() {
            return None;
        }
        Some((
            Schema {
                pre,
                halves,
                timestamp,
            },
            cputime,
        ))
    }

    /// No header seen (markdown pastes drop `#` lines): guess from the token count.
    fn infer(n: usize) -> Option<Schema> {
        let four = |last| vec![Col::Time, Col::Algbw, Col::Busbw, last];
        match n {
            13 => Some(Schema {
                pre: vec![Pre::Size, Pre::Count, Pre::Type, Pre::Redop, Pre::Root],
                halves: vec![four(Col::Wrong), four(Col::Wrong)],
                timestamp: false,
            }),
            12 => Some(Schema {
                pre: vec![Pre::Size, Pre::Count, Pre::Type, Pre::OpOrRoot],
                halves: vec![four(Col::Err), four(Col::Err)],
                timestamp: false,
            }),
            11 => Some(Schema {
                pre: vec![Pre::Size, Pre::Count, Pre::Type],
                halves: vec![four(Col::Err), four(Col::Err)],
                timestamp: false,
            }),
            _ => None,
        }
    }
}

fn uint(tok: &str) -> Option<u64> {
    if tok.is_empty() || !tok.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    tok.parse().ok()
}

fn int(tok: &str) -> Option<i64> {
    let digits = tok.strip_prefix('-').unwrap_or(tok);
    uint(digits)?;
    tok.parse().ok()
}

fn is_word(tok: &str) -> bool {
    tok.chars().any(|c| c.is_ascii_alphabetic())
        && tok.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `N/A` -> Ok(None); a number -> Ok(Some); anything else -> Err.
fn opt_num(tok: &str) -> Result<Option<f64>, ()> {
    if tok == "N/A" {
        return Ok(None);
    }
    num(tok).map(Some).ok_or(())
}

fn parse_half(toks: &[&str], cols: &[Col]) -> Option<Half> {
    let mut half = Half {
        time_us: f64::NAN,
        algbw_gbs: f64::NAN,
        busbw_gbs: f64::NAN,
        wrong: None,
        max_error: None,
        per_iter: None,
    };
    let mut per = PerIter {
        min_us: None,
        max_us: None,
        p99_us: None,
        cv_pct: None,
    };
    let mut has_per = false;
    for (tok, col) in toks.iter().zip(cols) {
        match col {
            Col::Time => half.time_us = num(tok)?,
            Col::Algbw => half.algbw_gbs = num(tok)?,
            Col::Busbw => half.busbw_gbs = num(tok)?,
            Col::Wrong => {
                let v = opt_num(tok).ok()?;
                if let Some(v) = v {
                    if v < 0.0 {
                        return None;
                    }
                    half.wrong = Some(v.round() as u64);
                }
            }
            Col::Err => half.max_error = opt_num(tok).ok()?,
            Col::IMin => (per.min_us, has_per) = (opt_num(tok).ok()?, true),
            Col::IMax => (per.max_us, has_per) = (opt_num(tok).ok()?, true),
            Col::IP99 => (per.p99_us, has_per) = (opt_num(tok).ok()?, true),
            Col::ICv => (per.cv_pct, has_per) = (opt_num(tok).ok()?, true),
            Col::Skip => {}
        }
    }
    if !(half.time_us.is_finite() && half.algbw_gbs.is_finite() && half.busbw_gbs.is_finite()) {
        return None;
    }
    if has_per {
        half.per_iter = Some(per);
    }
    Some(half)
}

fn parse_row(line: &str, schema: &Schema) -> Option<Row> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let width = schema.width();
    if toks.len() < width || (!schema.timestamp && toks.len() != width) {
        return None;
    }
    let mut row = Row {
        size_bytes: 0,
        count: 0,
        dtype: String::new(),
        redop: None,
        root: None,
        out_of_place: None,
        in_place: None,
        timestamp: None,
    };
    let (pre_toks, rest) = toks.split_at(schema.pre.len().min(toks.len()));
    let mut have_size = false;
    for (tok, col) in pre_toks.iter().zip(&schema.pre) {
        match col {
            Pre::Size => {
                row.size_bytes = uint(tok)?;
                have_size = true;
            }
            Pre::Count => row.count = uint(tok)?,
            Pre::Type => {
                if !is_word(tok) {
                    return None;
                }
                row.dtype = (*tok).to_string();
            }
            Pre::Redop => {
                if !is_word(tok) {
                    return None;
                }
                row.redop = Some((*tok).to_string());
            }
            Pre::Root => row.root = Some(int(tok)?),
            Pre::OpOrRoot => {
                if let Some(r) = int(tok) {
                    row.root = Some(r);
                } else if is_word(tok) {
                    row.redop = Some((*tok).to_string());
                } else {
                    return None;
                }
            }
            Pre::Skip => {}
        }
    }
    if !have_size || row.dtype.is_empty() {
        return None;
    }
    let mut at = 0usize;
    for (i, cols) in schema.halves.iter().enumerate() {
        let toks = rest.get(at..at + cols.len())?;
        at += cols.len();
        let half = parse_half(toks, cols)?;
        if i == 0 {
            row.out_of_place = Some(half);
        } else if i == 1 {
            row.in_place = Some(half);
        }
    }
    if schema.timestamp {
        let ts = rest.get(at..).unwrap_or(&[]).join(" ");
        if ts.is_empty() {
            return None;
        }
        row.timestamp = Some(ts);
    }
    Some(row)
}

fn parse_params(h: &str) -> Params {
    let toks: Vec<&str> = h.split_whitespace().collect();
    let mut p = Params::default();
    let next = |i: usize| toks.get(i + 1).copied();
    let next_u = |i: usize| next(i).and_then(uint);
    for (i, t) in toks.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| toks.get(j)).copied();
        match *t {
            "nThread" => p.nthread = next_u(i),
            "nGpus" => p.ngpus = next_u(i),
            "minBytes" => p.min_bytes = next_u(i),
            "maxBytes" => p.max_bytes = next_u(i),
            "step:" => p.step = next(i).map(str::to_string),
            "iters:" => match prev {
                Some("warmup") => p.warmup_iters = next_u(i),
                Some("agg") => p.agg_iters = next_u(i),
                _ => p.iters = next_u(i),
            },
            "validation:" => p.validation = next_u(i),
            "graph:" => p.graph = next_u(i),
            "unalign:" => p.unalign = next_u(i),
            _ => {}
        }
    }
    p
}

/// `Rank  0 Group  0 Pid  1234 on spark-a device  0 [0000:01:00] NVIDIA GB10` (after `#`).
fn parse_device(h: &str) -> Option<Device> {
    let toks: Vec<&str> = h.split_whitespace().collect();
    if toks.first() != Some(&"Rank") {
        return None;
    }
    let after = |key: &str| {
        toks.iter()
            .position(|t| *t == key)
            .and_then(|i| toks.get(i + 1))
            .copied()
    };
    let rank = toks.get(1).and_then(|t| uint(t))?;
    let host = after("on")?.to_string();
    let dev_pos = toks.iter().position(|t| *t == "device");
    let bus_pos = dev_pos.map(|p| p + 2);
    let bus_id = bus_pos
        .and_then(|p| toks.get(p))
        .filter(|t| t.starts_with('['))
        .map(|t| t.trim_matches(['[', ']']).to_string());
    let name = bus_pos.and_then(|p| {
        let rest = toks.get(p + 1..)?;
        (!rest.is_empty()).then(|| rest.join(" "))
    });
    Some(Device {
        rank,
        group: after("Group").and_then(uint),
        pid: after("Pid").and_then(uint),
        host,
        device: after("device").and_then(uint),
        bus_id,
        name,
    })
}

/// NCCL_VERSION_CODE -> `2.31.2` (codes below 10000 are the pre-2.9 `x*1000+y*100+z` form).
fn version_from_code(code: u64) -> Option<String> {
    if code == 0 {
        return None;
    }
    Some(if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    })
}

/// The nccl-tests error a line reports, if any.
fn error_line(t: &str) -> Option<(ErrorKind, bool)> {
    // (kind, primary): propagation lines (" .. host pid N: Test failure") are secondary
    if t.contains("Test NCCL failure") {
        return Some((ErrorKind::NcclFailure, true));
    }
    if t.contains("Test CUDA failure") {
        return Some((ErrorKind::CudaFailure, true));
    }
    if t.contains("Test timeout") {
        return Some((ErrorKind::Timeout, true));
    }
    if t.contains("Invalid number of GPUs") {
        return Some((ErrorKind::Other, true));
    }
    // 2017-2018: "NCCL failure common.cu:916 '...'" / "CUDA failure ..." possibly after "host: "
    let body = t.split_once(": ").map(|(_, b)| b).unwrap_or(t);
    for (word, kind) in [
        ("NCCL failure ", ErrorKind::NcclFailure),
        ("CUDA failure ", ErrorKind::CudaFailure),
    ] {
        if (t.starts_with(word) || body.starts_with(word)) && t.contains(".cu") {
            return Some((kind, true));
        }
    }
    if t.contains(": Test failure ") || t.starts_with("Test failure ") {
        return Some((ErrorKind::Other, false));
    }
    None
}

fn after_colon(h: &str) -> Vec<&str> {
    h.split_once(':')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default()
}

fn layout_name(header_raw: &str, schema: &Schema, version_line: bool) -> &'static str {
    if schema.pre.first() == Some(&Pre::Size) && header_raw.contains("bytes") {
        return "v1-2017";
    }
    let has_err = schema.halves.iter().flatten().any(|c| *c == Col::Err);
    if has_err {
        if header_raw.split_whitespace().any(|t| t == "bytes") {
            return "v1-2017";
        }
        return "float-error-2019";
    }
    if version_line || header_raw.contains("busbw  #wrong") {
        "formatter-2025"
    } else {
        "wrong-count-2022"
    }
}

/// Parse the combined stdout/stderr of an nccl-tests run (a JSON document goes to [`parse_json`]).
pub fn parse(text: &str) -> NcclReport {
    if text.trim_start().starts_with('{') {
        return parse_json(text);
    }
    let log = nccl_log::scan(text);
    let mp = mpirun::parse(text);
    let unterminated_last = !text.is_empty() && !text.ends_with('\n');
    let n_lines = text.lines().count();

    let mut schema: Option<Schema> = None;
    let mut layout: Option<&'static str> = None;
    let mut cputime = false;
    let mut rows: Vec<Row> = Vec::new();
    let mut rejected_rows = 0usize;
    let mut devices: Vec<Device> = Vec::new();
    let mut params: Option<Params> = None;
    let mut param_lines = 0usize;
    let mut device_blocks = 0usize;
    let mut collective: Option<String> = None;
    let mut command_collective: Option<String> = None;
    let mut tests_version: Option<String> = None;
    let mut library_code: Option<u64> = None;
    let mut version_line = false;
    let mut oob: Option<u64> = None;
    let mut oob_ok: Option<bool> = None;
    let mut avg: Option<f64> = None;
    let mut avg_check: Option<String> = None;
    let mut footer_seen = false;
    let mut recognized = false;
    let mut primary_err: Option<ToolError> = None;
    let mut secondary_err: Option<ToolError> = None;
    let mut last_error: Option<String> = None;

    for (idx, raw) in text.lines().enumerate() {
        let line = clean(raw);
        let t = line.trim();
        let cut = unterminated_last && idx + 1 == n_lines;
        if let Some((kind, primary)) = error_line(t) {
            let e = ToolError {
                kind,
                message: t.to_string(),
            };
            if primary && primary_err.is_none() {
                primary_err = Some(e);
            } else if !primary && secondary_err.is_none() {
                secondary_err = Some(e);
            }
            continue;
        }
        if cut || nccl_message(t).is_some() {
            continue;
        }
        // `#` lines lose their `#` in markdown pastes; pre-2019 footers start with a space
        let h = t.trim_start_matches('#').trim();
        if let Some(rest) = h.strip_prefix("nccl-tests version ") {
            version_line = true;
            recognized = true;
            tests_version = rest.split_whitespace().next().map(str::to_string);
            library_code = rest
                .split_whitespace()
                .find_map(|w| w.strip_prefix("nccl-library="))
                .and_then(uint);
            continue;
        }
        if let Some(rest) = h.strip_prefix("Collective test starting:") {
            recognized = true;
            if collective.is_none() {
                collective = rest.split_whitespace().next().map(str::to_string);
            }
            continue;
        }
        if h.starts_with("Collective test concluded:") {
            continue;
        }
        if h.starts_with("nThread ") {
            recognized = true;
            param_lines += 1;
            if params.is_none() {
                params = Some(parse_params(h));
            }
            continue;
        }
        if h == "Using devices" {
            recognized = true;
            device_blocks += 1;
            continue;
        }
        if let Some(d) = parse_device(h) {
            recognized = true;
            devices.push(d);
            continue;
        }
        if h.starts_with("Out of bounds values") {
            recognized = true;
            let v = after_colon(h);
            if let Some(n) = v.first().and_then(|n| uint(n)) {
                oob = Some(oob.unwrap_or(0) + n);
            }
            match v.get(1).copied() {
                Some("OK") => oob_ok = Some(oob_ok.unwrap_or(true)),
                Some("FAILED") => oob_ok = Some(false),
                _ => {}
            }
            continue;
        }
        if h.starts_with("Avg bus bandwidth") {
            recognized = true;
            footer_seen = true;
            let v = after_colon(h);
            if avg.is_none() {
                avg = v.first().and_then(|n| num(n));
            }
            match v.get(1).copied() {
                Some("OK") if avg_check.is_none() => avg_check = Some("OK".into()),
                Some("FAILED") => avg_check = Some("FAILED".into()),
                _ => {}
            }
            continue;
        }
        if let Some(rest) = h.strip_prefix("error:") {
            let rest = rest.trim();
            if !rest.is_empty() && last_error.is_none() {
                last_error = Some(rest.to_string());
            }
            continue;
        }
        if let Some((s, c)) = Schema::from_header(h) {
            recognized = true;
            cputime |= c;
            layout = Some(layout_name(line, &s, version_line));
            schema = Some(s);
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if (t.contains("mpirun") || t.starts_with("+ ") || t.starts_with("$ "))
            && command_collective.is_none()
        {
            command_collective = t
                .split_whitespace()
                .map(|w| w.rsplit('/').next().unwrap_or(w))
                .find(|w| {
                    w.ends_with("_perf")
                        && w.chars()
                            .all(|c| c.is_ascii_lowercase() || c == '_' || c == '2')
                })
                .map(str::to_string);
            continue;
        }
        let n = t.split_whitespace().count();
        let row = match &schema {
            Some(s) => parse_row(t, s),
            None => Schema::infer(n).and_then(|s| {
                let r = parse_row(t, &s);
                if r.is_some() && layout.is_none() {
                    layout = Some(if n == 13 {
                        "wrong-count-2022"
                    } else {
                        "float-error-2019"
                    });
                }
                r
            }),
        };
        match row {
            Some(r) => rows.push(r),
            None => {
                if n >= 5 && t.split_whitespace().next().and_then(uint).is_some() {
                    rejected_rows += 1;
                }
            }
        }
    }

    // independent processes each printing a header (see `duplicate_headers`)
    let mut seen: Vec<(u64, &str, Option<u64>)> = Vec::new();
    let mut rank_clash = false;
    for d in &devices {
        let key = (d.rank, d.host.as_str(), d.pid);
        if seen.contains(&key) {
            continue;
        }
        if seen.iter().any(|(r, _, _)| *r == d.rank) {
            rank_clash = true;
        }
        seen.push(key);
    }
    let duplicate_headers = param_lines > 1 || device_blocks > 1 || rank_clash;
    if duplicate_headers {
        let mut kept: Vec<Row> = Vec::new();
        for r in rows {
            if kept.last().is_none_or(|k| r.size_bytes > k.size_bytes) {
                kept.push(r);
            }
        }
        rows = kept;
    }
    let mut ranks: Vec<u64> = devices.iter().map(|d| d.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut hosts: Vec<String> = Vec::new();
    for d in &devices {
        if !hosts.contains(&d.host) {
            hosts.push(d.host.clone());
        }
    }
    let wrong: Vec<u64> = rows
        .iter()
        .flat_map(|r| [&r.out_of_place, &r.in_place])
        .filter_map(|h| h.as_ref().and_then(|h| h.wrong))
        .collect();
    let wrong_total =
        (!wrong.is_empty()).then(|| wrong.iter().fold(0u64, |a, b| a.saturating_add(*b)));

    let error = choose_error(
        &mp,
        primary_err.or(secondary_err),
        oob,
        oob_ok,
        avg_check.as_deref(),
        avg,
    );
    let status = if error.is_some() {
        Status::Error
    } else if !rows.is_empty() && footer_seen {
        Status::Ok
    } else if !rows.is_empty() || recognized {
        Status::Incomplete
    } else {
        Status::Unrecognized
    };

    NcclReport {
        status,
        error,
        collective: collective.or(command_collective),
        layout: layout.map(str::to_string),
        rows,
        rejected_rows,
        out_of_bounds: oob,
        out_of_bounds_ok: oob_ok,
        avg_busbw_gbs: avg,
        avg_busbw_check: avg_check,
        wrong_total,
        ranks: ranks.len(),
        processes: seen.len(),
        hosts,
        devices,
        transport: log.transport,
        mixed_transport: log.mixed_transport,
        gdr: log.gdr,
        roce: log.roce,
        net_devices: log.net_devices,
        nccl_version: log
            .nccl_version
            .or_else(|| library_code.and_then(version_from_code)),
        nccl_tests_version: tests_version,
        env: log.env,
        warnings: log.warnings,
        duplicate_headers,
        params,
        cputime,
        nccl_last_error: last_error,
        mpirun_errors: mp.errors.clone(),
        exit_code: mp.exit_code,
    }
}

/// Which error the report carries when several sources speak: a launch/infrastructure mpirun
/// box (docker0 trap, slots, daemons, missing binary) is the root cause; otherwise the test's own
/// error line; then a FAILED footer; then mpirun's generic exit/signal box that those cause.
fn choose_error(
    mp: &mpirun::MpirunReport,
    test_err: Option<ToolError>,
    oob: Option<u64>,
    oob_ok: Option<bool>,
    avg_check: Option<&str>,
    avg: Option<f64>,
) -> Option<ToolError> {
    if let Some(e) = &mp.error {
        if matches!(
            e.kind,
            ErrorKind::ProcessEntry
                | ErrorKind::NotEnoughSlots
                | ErrorKind::DaemonLaunchFailed
                | ErrorKind::DaemonLost
                | ErrorKind::ExecNotFound
        ) {
            return Some(e.clone());
        }
    }
    if test_err.is_some() {
        return test_err;
    }
    if oob_ok == Some(false) {
        return Some(ToolError {
            kind: ErrorKind::Other,
            message: format!("Out of bounds values : {} FAILED", oob.unwrap_or(0)),
        });
    }
    if avg_check == Some("FAILED") {
        return Some(ToolError {
            kind: ErrorKind::Other,
            message: format!(
                "Avg bus bandwidth    : {} FAILED",
                avg.map(|a| a.to_string()).unwrap_or_default()
            ),
        });
    }
    mp.error.clone()
}

// ---------------------------------------------------------------------------------------------
// -J JSON

fn jnum(v: Option<&serde_json::Value>) -> Option<f64> {
    match v? {
        serde_json::Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        // "nan" is how nccl-tests writes NaN; numbers are never quoted otherwise
        serde_json::Value::String(s) => num(s.trim()),
        _ => None,
    }
}

fn juint(v: Option<&serde_json::Value>) -> Option<u64> {
    let f = jnum(v)?;
    (f >= 0.0).then_some(f.round() as u64)
}

/// jsonBool writes the strings "true"/"false"; accept real booleans too.
fn jbool(v: Option<&serde_json::Value>) -> Option<bool> {
    match v? {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::String(s) => match s.as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        serde_json::Value::Number(n) => n.as_u64().map(|n| n != 0),
        _ => None,
    }
}

fn jstr(v: Option<&serde_json::Value>) -> Option<String> {
    v?.as_str().map(|s| s.trim().to_string())
}

fn jhalf(v: Option<&serde_json::Value>, per: Option<&serde_json::Value>) -> Option<Half> {
    let o = v?.as_object()?;
    let time = jnum(o.get("time")).or_else(|| jnum(o.get("cpu_time")))?;
    let per_iter = per.and_then(|p| p.as_object()).map(|p| PerIter {
        min_us: jnum(p.get("min_us")),
        max_us: jnum(p.get("max_us")),
        p99_us: jnum(p.get("p99_us")),
        cv_pct: jnum(p.get("cv_pct")),
    });
    Some(Half {
        time_us: time,
        algbw_gbs: jnum(o.get("alg_bw"))?,
        busbw_gbs: jnum(o.get("bus_bw"))?,
        wrong: juint(o.get("nwrong")),
        max_error: None,
        per_iter,
    })
}

fn empty_report(status: Status) -> NcclReport {
    NcclReport {
        status,
        error: None,
        collective: None,
        layout: None,
        rows: Vec::new(),
        rejected_rows: 0,
        out_of_bounds: None,
        out_of_bounds_ok: None,
        avg_busbw_gbs: None,
        avg_busbw_check: None,
        wrong_total: None,
        ranks: 0,
        processes: 0,
        hosts: Vec::new(),
        devices: Vec::new(),
        transport: None,
        mixed_transport: false,
        gdr: None,
        roce: None,
        net_devices: Vec::new(),
        nccl_version: None,
        nccl_tests_version: None,
        env: BTreeMap::new(),
        warnings: Vec::new(),
        duplicate_headers: false,
        params: None,
        cputime: false,
        nccl_last_error: None,
        mpirun_errors: Vec::new(),
        exit_code: None,
    }
}

/// Parse the `-J/--output_file` JSON document. A file cut short (the run died before
/// finalising it) is not valid JSON: it is reported `incomplete` without rows.
pub fn parse_json(text: &str) -> NcclReport {
    let doc: serde_json::Value = match serde_json::from_str(text.trim()) {
        Ok(v) => v,
        Err(_) => {
            let looks = text.contains("\"results\"") || text.contains("\"config\"");
            let mut r = empty_report(if looks {
                Status::Incomplete
            } else {
                Status::Unrecognized
            });
            r.layout = looks.then(|| "json".to_string());
            return r;
        }
    };
    let Some(obj) = doc.as_object() else {
        return empty_report(Status::Unrecognized);
    };
    if !obj.contains_key("results") && !obj.contains_key("config") {
        return empty_report(Status::Unrecognized);
    }
    let mut r = empty_report(Status::Incomplete);
    r.layout = Some("json".into());
    r.collective = obj
        .get("args")
        .and_then(|a| a.as_array())
        .and_then(|a| a.first())
        .and_then(|p| p.as_str())
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    r.nccl_version = juint(obj.get("nccl_version")).and_then(version_from_code);
    if let Some(env) = obj.get("env").and_then(|e| e.as_array()) {
        for kv in env.iter().filter_map(|e| e.as_str()) {
            if let Some((k, v)) = kv.split_once('=') {
                if k.starts_with("NCCL_") {
                    r.env.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    if let Some(cfg) = obj.get("config").and_then(|c| c.as_object()) {
        r.params = Some(Params {
            nthread: juint(cfg.get("nthreads")),
            ngpus: juint(cfg.get("ngpus")),
            min_bytes: juint(cfg.get("minimum_bytes")),
            max_bytes: juint(cfg.get("maximum_bytes")),
            step: juint(cfg.get("step_factor"))
                .map(|f| format!("{f}(factor)"))
                .or_else(|| juint(cfg.get("step_bytes")).map(|b| format!("{b}(bytes)"))),
            warmup_iters: juint(cfg.get("warmup_iters")),
            iters: juint(cfg.get("iterations")),
            agg_iters: juint(cfg.get("aggregated_iterations")),
            validation: juint(cfg.get("validation")),
            graph: juint(cfg.get("graph")),
            unalign: juint(cfg.get("unalign")),
        });
        for d in cfg
            .get("devices")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
        {
            let Some(rank) = juint(d.get("rank")) else {
                continue;
            };
            r.devices.push(Device {
                rank,
                group: juint(d.get("group")),
                pid: juint(d.get("pid")),
                host: jstr(d.get("hostname")).unwrap_or_default(),
                device: juint(d.get("device")),
                bus_id: jstr(d.get("device_hex")),
                name: jstr(d.get("device_info")),
            });
        }
    }
    for res in obj
        .get("results")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
    {
        let (Some(size), Some(count)) = (juint(res.get("size")), juint(res.get("count"))) else {
            continue;
        };
        let oop = res.get("out_of_place");
        if oop.and_then(|o| o.get("cpu_time")).is_some() {
            r.cputime = true;
        }
        r.rows.push(Row {
            size_bytes: size,
            count,
            dtype: jstr(res.get("type")).unwrap_or_default(),
            redop: jstr(res.get("redop")),
            root: jstr(res.get("root")).and_then(|s| int(&s)),
            out_of_place: jhalf(oop, res.get("out_of_place_per_iter")),
            in_place: jhalf(res.get("in_place"), res.get("in_place_per_iter")),
            timestamp: None,
        });
    }
    if let Some(o) = obj.get("out_of_bounds") {
        r.out_of_bounds = juint(o.get("count"));
        r.out_of_bounds_ok = jbool(o.get("okay"));
    }
    let mut footer = false;
    if let Some(a) = obj.get("average_bus_bandwidth") {
        footer = true;
        r.avg_busbw_gbs = jnum(a.get("bandwidth"));
        r.avg_busbw_check = jbool(a.get("okay")).map(|ok| if ok { "OK" } else { "FAILED" }.into());
    }
    r.nccl_last_error = obj
        .get("errors")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str())
        .find(|s| !s.trim().is_empty())
        .map(str::to_string);
    let mut ranks: Vec<u64> = r.devices.iter().map(|d| d.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    r.ranks = ranks.len();
    r.processes = r.devices.len();
    for d in &r.devices {
        if !r.hosts.contains(&d.host) {
            r.hosts.push(d.host.clone());
        }
    }
    let wrong: Vec<u64> = r
        .rows
        .iter()
        .flat_map(|x| [&x.out_of_place, &x.in_place])
        .filter_map(|h| h.as_ref().and_then(|h| h.wrong))
        .collect();
    r.wrong_total =
        (!wrong.is_empty()).then(|| wrong.iter().fold(0u64, |a, b| a.saturating_add(*b)));
    r.error = choose_error(
        &mpirun::parse(""),
        None,
        r.out_of_bounds,
        r.out_of_bounds_ok,
        r.avg_busbw_check.as_deref(),
        r.avg_busbw_gbs,
    );
    r.status = if r.error.is_some() {
        Status::Error
    } else if !r.rows.is_empty() && footer {
        Status::Ok
    } else {
        Status::Incomplete
    };
    r
}

// ---------------------------------------------------------------------------------------------
// summary

fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    let unit = UNITS.get(u).copied().unwrap_or("B");
    if (v - v.round()).abs() < 1e-9 {
        format!("{} {unit}", v.round())
    } else {
        format!("{v:.1} {unit}")
    }
}

impl NcclReport {
    /// A few human lines: what ran where, over which transport, and the headline numbers.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let name = self.collective.as_deref().unwrap_or("nccl-tests");
        let mut who = format!(
            "{name}, {} rank{}",
            self.ranks,
            if self.ranks == 1 { "" } else { "s" }
        );
        if !self.hosts.is_empty() {
            who.push_str(&format!(" on {}", self.hosts.join(", ")));
        }
        if self.duplicate_headers {
            who.push_str(&format!(
                " ({} independent processes: binary built without MPI)",
                self.processes
            ));
        }
        parts.push(who);
        let mut net = format!(
            "NCCL {}",
            self.nccl_version.as_deref().unwrap_or("(version unknown)")
        );
        match self.transport.as_deref() {
            Some(t) => {
                net.push_str(&format!(" over {t}"));
                let mut q = Vec::new();
                if t == "NET/IB" {
                    match self.roce {
                        Some(true) => q.push("RoCE".to_string()),
                        Some(false) => q.push("IB".to_string()),
                        None => {}
                    }
                    match self.gdr {
                        Some(true) => q.push("GDR on".into()),
                        Some(false) => q.push("GDR off".into()),
                        None => {}
                    }
                }
                if self.mixed_transport {
                    q.push("mixed: some connections over IB".into());
                }
                if !q.is_empty() {
                    net.push_str(&format!(" ({})", q.join(", ")));
                }
            }
            None => net.push_str(" (no network transport seen)"),
        }
        parts.push(net);
        if let (Some(lo), Some(hi)) = (
            self.rows.iter().map(|r| r.size_bytes).min(),
            self.rows.iter().map(|r| r.size_bytes).max(),
        ) {
            parts.push(format!(
                "{} sizes {}..{}",
                self.rows.len(),
                human_bytes(lo),
                human_bytes(hi)
            ));
        } else {
            parts.push("no result rows".into());
        }
        match self.wrong_total {
            Some(w) => parts.push(format!("#wrong {w}")),
            None => parts.push("#wrong n/a".into()),
        }
        if let Some(o) = self.out_of_bounds {
            let ok = match self.out_of_bounds_ok {
                Some(true) => " OK",
                Some(false) => " FAILED",
                None => "",
            };
            parts.push(format!("out of bounds {o}{ok}"));
        }
        if let Some(a) = self.avg_busbw_gbs {
            let check = self
                .avg_busbw_check
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            parts.push(format!("avg busbw {a:.2} GB/s{check}"));
        }
        if self.rejected_rows > 0 {
            parts.push(format!(
                "{} unreadable row line(s) dropped",
                self.rejected_rows
            ));
        }
        let mut s = parts.join("; ");
        match (&self.error, self.status) {
            (Some(e), _) => {
                s.push_str(&format!(
                    "\nerror ({}): {}",
                    e.kind.as_str(),
                    e.message.lines().next().unwrap_or("")
                ));
            }
            (None, Status::Incomplete) => {
                s.push_str("\nincomplete: the output stops before the footer")
            }
            (None, Status::Unrecognized) => {
                s = "not nccl-tests output".to_string();
            }
            _ => {}
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HDR22: &str = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";

    #[test]
    fn row_2022_and_na() {
        let t = format!(
            "{HDR22}       16384          4096     float     sum      -1    29.61    0.55    0.55      0    29.53    0.55    0.55    N/A\n"
        );
        let r = parse(&t);
        assert_eq!(r.rows.len(), 1);
        let row = &r.rows[0];
        assert_eq!(row.root, Some(-1));
        assert_eq!(row.in_place.as_ref().map(|h| h.wrong), Some(None));
        assert_eq!(r.wrong_total, Some(0));
        assert_eq!(r.status, Status::Incomplete);
    }

    #[test]
    fn unterminated_last_row_is_dropped() {
        let t = format!(
            "{HDR22}       16384          4096     float     sum      -1    29.61    0.55    0.55      0    29.53    0.55    0.55      1"
        );
        assert!(parse(&t).rows.is_empty());
    }

    #[test]
    fn wide_values_and_exponents() {
        let t = format!(
            "{HDR22}  17179869184    4294967296     float    none      -1  8.1e+05  21.21  1715.44      0  8.1e+05  21.21  21.21      0\n"
        );
        let r = parse(&t);
        assert_eq!(r.rows.len(), 1);
        assert_eq!(
            r.rows[0].out_of_place.as_ref().map(|h| h.time_us),
            Some(8.1e5)
        );
    }

    #[test]
    fn version_codes() {
        assert_eq!(version_from_code(23102).as_deref(), Some("2.31.2"));
        assert_eq!(version_from_code(2804).as_deref(), Some("2.8.4"));
    }

    #[test]
    fn json_nan_and_strings() {
        let j = r#"{"version":2,"args":["./build/all_reduce_perf"],"nccl_version":22907,
          "results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
          "out_of_place":{"time":"nan","alg_bw":0.0,"bus_bw":0.0,"nwrong":0},
          "in_place":{"time":10.5,"alg_bw":0.0,"bus_bw":0.0,"nwrong":null}}],
          "out_of_bounds":{"count":0,"okay":"true"},
          "average_bus_bandwidth":{"bandwidth":0.0,"okay":"unchecked"},"errors":[""]}"#;
        let r = parse(j);
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.rows[0].root, Some(-1));
        assert!(r.rows[0].out_of_place.is_none());
        assert_eq!(r.rows[0].in_place.as_ref().map(|h| h.wrong), Some(None));
        assert_eq!(r.avg_busbw_check, None);
        assert_eq!(r.nccl_version.as_deref(), Some("2.29.7"));
        assert_eq!(r.collective.as_deref(), Some("all_reduce_perf"));
        assert_eq!(r.nccl_last_error, None);
    }
}
