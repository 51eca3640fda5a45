//! nccl-tests (`all_reduce_perf`, `all_gather_perf`, `sendrecv_perf`, ...) output: the result
//! table in all four historical layouts, the header blocks, the footer, the test's own error
//! lines, plus what the interleaved NCCL log ([`nccl_log`]) and any mpirun error box
//! ([`crate::parse::mpirun`]) in the same capture say. Also the `-J` JSON file ([`parse_json`]).
//!
//! Rows are read by splitting on whitespace against a column schema taken from the column
//! header (values wider than their column shift the rest of the line, so fixed positions are
//! never used). A row is accepted only if every expected column is present and well-formed, and
//! the last line of a capture that does not end in a newline is never read as a row: it may have
//! been cut inside its last number. A complete row with an impossible value (negative time,
//! bandwidth, size or `#wrong`, NaN, infinity) is rejected and listed in `rejected`.
//!
//! The capture is read in one pass by [`scan::Scanner`] (one method per kind of line); the
//! table schema and row reading live in `row`, the single-line readers in `lines`, the `-J`
//! document in `json`, the human summary in `summary`.
//!
//! A capture with NCCL INFO lines but no table (a hung or killed job) is `incomplete`, and still
//! reports what the log proves: [`NcclReport::nranks`], [`NcclReport::hosts`],
//! [`NcclReport::net_devices`], [`NcclReport::transport`], [`NcclReport::gdr`].

mod json;
mod lines;
mod row;
mod scan;
mod summary;

pub use json::parse_json;

pub mod nccl_log;

use crate::parse::text::is_blank;
use crate::parse::{ErrorKind, Rejected, Status, ToolError, mpirun};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One half (out-of-place or in-place) of a result row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerIter {
    pub min_us: Option<f64>,
    pub max_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub cv_pct: Option<f64>,
}

/// One complete result row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NcclReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// Program name, from `# Collective test starting:` (or a command line / JSON `args`).
    pub collective: Option<String>,
    /// `v1-2017`, `float-error-2019`, `wrong-count-2022`, `formatter-2025`, `json`, or null.
    pub layout: Option<String>,
    pub rows: Vec<Row>,
    /// Lines that start like a result row (an integer size, 5+ fields) but could not be read
    /// completely (glued numbers, cut lines) or carry an impossible value: dropped, never
    /// guessed, and counted here.
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
    /// Hosts of the `# Using devices` lines in order; without such lines (a job that hung or was
    /// killed before its header), the hosts that printed NCCL debug lines.
    pub hosts: Vec<String>,
    pub devices: Vec<Device>,
    /// `NET/IB`, `NET/Socket` or null, per [`nccl_log`]'s rules.
    pub transport: Option<String>,
    pub mixed_transport: bool,
    /// Hosts whose own NCCL lines show the socket fallback (see [`nccl_log`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_hosts: Vec<String>,
    /// Some rank's NCCL said `NET/IB : No device found` (the fallback's cause, on
    /// `fallback_hosts`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ib_unavailable: bool,
    /// GPUDirect RDMA: `true` only if every NET/IB connection (`/GDRDMA`) and `GDR 1` flag says
    /// on; `false` if any says off; null when the log does not say.
    pub gdr: Option<bool>,
    /// `true` if a device NCCL listed on NET/IB is RoCE, `false` if all are native IB.
    pub roce: Option<bool>,
    /// The IB/RoCE devices NCCL listed (`NET/IB : Using [0]rocep1s0f0:1/RoCE ...`), e.g.
    /// `rocep1s0f0:1`, distinct, in order.
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
    /// The node mpirun's own words name (`... on node spark-b`, `Remote host:`, `ssh: connect
    /// to host ...`), when its boxes name one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpirun_host: Option<String>,
    pub exit_code: Option<i64>,
    /// Ranks of the communicator as NCCL announced it (`comm 0x.. rank R nranks N ... Init
    /// COMPLETE`, `ncclCommInitRank ... nRanks N`): known even when no table was printed.
    pub nranks: Option<u64>,
    /// Rows rejected for an impossible value, with the line and the value (capped).
    pub rejected: Vec<Rejected>,
    /// Rows, devices, warnings and notes read past their caps (not stored, counted).
    pub not_stored: usize,
}

/// Parse the combined stdout/stderr of an nccl-tests run (a JSON document goes to [`parse_json`]).
pub fn parse(text: &str) -> NcclReport {
    if is_blank(text) {
        return empty_report(Status::Empty);
    }
    if text.trim_start().starts_with('{') {
        return parse_json(text);
    }
    let unterminated_last = !text.ends_with('\n');
    let mut sc = scan::Scanner::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, raw)) = lines.next() {
        let cut = unterminated_last && lines.peek().is_none();
        sc.line(i + 1, raw, cut);
    }
    sc.finish()
}

/// NCCL_VERSION_CODE -> `2.31.2` (codes below 10000 are the pre-2.9 `x*1000+y*100+z` form).
pub(super) fn version_from_code(code: u64) -> Option<String> {
    if code == 0 {
        return None;
    }
    Some(if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    })
}

/// Which error the report carries when several sources speak: a launch/infrastructure mpirun
/// box (docker0 trap, slots, daemons, missing binary) is the root cause; otherwise the test's own
/// error line; then a FAILED footer; then mpirun's generic exit/signal box that those cause.
pub(super) fn choose_error(
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
                | ErrorKind::RunAsRoot
                | ErrorKind::NotEnoughSlots
                | ErrorKind::DaemonLaunchFailed
                | ErrorKind::DaemonLost
                | ErrorKind::RouteFailed
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

pub(super) fn empty_report(status: Status) -> NcclReport {
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
        ib_unavailable: false,
        fallback_hosts: Vec::new(),
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
        mpirun_host: None,
        exit_code: None,
        nranks: None,
        rejected: Vec::new(),
        not_stored: 0,
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

    /// A `-J` document whose bandwidth no memory moves: the row and the average are rejected.
    #[test]
    fn json_bandwidth_above_any_memory_is_rejected() {
        let j = r#"{"version":2,"args":["./build/all_reduce_perf"],
          "results":[{"size":8,"count":2,"type":"float","redop":"sum","root":-1,
          "out_of_place":{"time":10.0,"alg_bw":0.5,"bus_bw":1e308,"nwrong":0},
          "in_place":{"time":10.5,"alg_bw":0.5,"bus_bw":0.5,"nwrong":0}}],
          "out_of_bounds":{"count":0,"okay":"true"},
          "average_bus_bandwidth":{"bandwidth":2e300,"okay":"unchecked"}}"#;
        let r = parse(j);
        assert_eq!(r.status, Status::Incomplete);
        assert!(r.rows.is_empty());
        assert_eq!(r.avg_busbw_gbs, None);
        let why: Vec<&str> = r.rejected.iter().map(|x| x.reason.as_str()).collect();
        assert_eq!(
            why,
            [
                "size 8: out-of-place busbw `1e308` GB/s is above the 100,000 GB/s no collective moves: no run prints that, row rejected",
                "average bus bandwidth `2e300` GB/s is above the 100,000 GB/s no collective moves"
            ]
        );
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
