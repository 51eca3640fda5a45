//! Parsers for what the measured tools print.
//!
//! Pure, synchronous, one file per tool output (the measured tools, and what proves the cabling:
//! the neighbour table and lldpd's neighbours). A parser never panics, never accepts a partial
//! row, and reports what it could not read through [`Status`] instead of guessing. The JSON shape
//! produced by [`Parsed::to_json`] is the documented, stable output of `fabricplan parse`:
//! `tool`, `status` (`ok` | `error` | `incomplete` | `unrecognized` | `empty`), `error`
//! (`null` or `{ "kind", "message" }`) and the tool's own fields.
//!
//! # Values no tool can print
//!
//! A row whose values are impossible (a negative time, rate or count, NaN or infinity, a loss
//! outside 0-100 % or inconsistent with the transmitted/received counts, more replies received
//! than requests sent) is rejected like a partial row: it is not stored, the report's
//! `rejected` list says which line and which value (see [`Rejected`]), and the status is not
//! `ok` (`incomplete`, unless the tool itself reported an error).
//!
//! # Bounded work
//!
//! Every parser reads its input line by line, once, and keeps no per-line copy: memory stays a
//! small multiple of the input whatever it holds (50 MB of newlines, one 50 MB line). Stored
//! lists are capped ([`MAX_STORED_ROWS`] result rows, [`MAX_STORED_NOTES`] warnings, errors and
//! rejections, distinct devices and hosts); what was read past a cap is counted in the report's
//! `not_stored` field instead. Lines longer than [`MAX_LINE_BYTES`] are no tool's output and are
//! skipped.
//!
//! # Exit codes of `fabricplan parse`
//!
//! [`input_exit_code`] maps a result to the exit status of `fabricplan parse TOOL [FILE]`:
//!
//! | code | constant | when |
//! | --- | --- | --- |
//! | 0 | [`EXIT_READ`] | the capture was read: status `ok`, `incomplete` or `error` (the error is the tool's, the reading succeeded) |
//! | 1 | [`EXIT_NOTHING_READ`] | nothing recognisable: status `unrecognized`, or `empty` input |
//! | 2 | [`EXIT_UNREADABLE`] | usage error or a file that cannot be read (decided by the CLI before parsing) |

mod invariants;
pub mod iperf3;
pub mod lldp;
pub mod mpirun;
pub mod nccl_log;
pub mod nccl_tests;
pub mod neigh;
pub mod perftest;
pub mod ping;
pub mod slurm;
mod text;

pub use invariants::check_invariants;
use serde::Serialize;

/// Result rows kept per report; further complete rows are counted in `not_stored`.
pub const MAX_STORED_ROWS: usize = 10_000;
/// Warnings, error boxes, rejections and devices kept per list; the rest is counted.
pub const MAX_STORED_NOTES: usize = 100;
/// Lines longer than this are no tool's output (the longest real ones, iperf3 `--json-stream`
/// interval events with 128 streams, stay far below) and are skipped unread.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// `fabricplan parse` exit code: the capture was read (`ok`, `incomplete`, or the tool's `error`).
pub const EXIT_READ: i32 = 0;
/// `fabricplan parse` exit code: nothing recognisable, or empty input.
pub const EXIT_NOTHING_READ: i32 = 1;
/// `fabricplan parse` exit code: usage error or unreadable file (the CLI's own check).
pub const EXIT_UNREADABLE: i32 = 2;

/// The exit code `fabricplan parse` should end with for `parsed`: [`EXIT_READ`] when the capture
/// was read, whatever the tool reported; [`EXIT_NOTHING_READ`] for `unrecognized` and `empty`.
/// ([`EXIT_UNREADABLE`] is the CLI's for a file it could not read; no parse result maps to it.)
pub fn input_exit_code(parsed: &Parsed) -> i32 {
    match parsed.status() {
        Status::Ok | Status::Incomplete | Status::Error => EXIT_READ,
        Status::Unrecognized | Status::Empty => EXIT_NOTHING_READ,
    }
}

/// A line that looked like a result but was not accepted, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// 1-based line number in the capture.
    pub line: usize,
    /// Names the offending value, e.g. ``out-of-place time `-29.71` us is negative``.
    pub reason: String,
}

/// How far a parser got through a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// At least one complete result was read and no error was reported.
    Ok,
    /// The tool reported an error (see [`ToolError`]); complete rows read before it are kept.
    Error,
    /// Some complete rows were read but the output stops early (truncated capture, killed tool).
    Incomplete,
    /// Nothing in the text looks like this tool's output.
    Unrecognized,
    /// The input was empty (or only whitespace): there was nothing to read.
    Empty,
}

impl Status {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Incomplete => "incomplete",
            Status::Unrecognized => "unrecognized",
            Status::Empty => "empty",
        }
    }
}

/// The classified error kinds, kebab-case in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    // perftest
    NoDevice,
    PortState,
    ConnectFailed,
    ListenFailed,
    QpRtrFailed,
    QpRtsFailed,
    CompletionError,
    Gid,
    Resource,
    // Open MPI
    NotEnoughSlots,
    DaemonLaunchFailed,
    DaemonLost,
    NonzeroExit,
    Signal,
    ExecNotFound,
    /// "cannot find a corresponding process entry": the docker0 / overlapping subnet trap.
    ProcessEntry,
    /// mpirun refused to start as root (no `--allow-run-as-root` / `OMPI_ALLOW_RUN_AS_ROOT=1`).
    RunAsRoot,
    /// ORTE could not route to, or connect to, a daemon ("does not know how to route a message",
    /// "unable to establish a communication connection").
    RouteFailed,
    /// A process ended without calling `MPI_Finalize` ("exiting improperly").
    ExitedImproperly,
    // nccl-tests
    NcclFailure,
    CudaFailure,
    Timeout,
    // ping
    MessageTooLong,
    FragNeeded,
    Unreachable,
    // lldpcli
    /// The daemon the tool talks to is not running (lldpcli: no lldpd control socket).
    NotRunning,
    // anything the tool said that is clearly an error but not one of the above
    Other,
}

impl ErrorKind {
    /// The kebab-case name used in JSON and in trap signatures.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NoDevice => "no-device",
            ErrorKind::PortState => "port-state",
            ErrorKind::ConnectFailed => "connect-failed",
            ErrorKind::ListenFailed => "listen-failed",
            ErrorKind::QpRtrFailed => "qp-rtr-failed",
            ErrorKind::QpRtsFailed => "qp-rts-failed",
            ErrorKind::CompletionError => "completion-error",
            ErrorKind::Gid => "gid",
            ErrorKind::Resource => "resource",
            ErrorKind::NotEnoughSlots => "not-enough-slots",
            ErrorKind::DaemonLaunchFailed => "daemon-launch-failed",
            ErrorKind::DaemonLost => "daemon-lost",
            ErrorKind::NonzeroExit => "nonzero-exit",
            ErrorKind::Signal => "signal",
            ErrorKind::ExecNotFound => "exec-not-found",
            ErrorKind::ProcessEntry => "process-entry",
            ErrorKind::RunAsRoot => "run-as-root",
            ErrorKind::RouteFailed => "route-failed",
            ErrorKind::ExitedImproperly => "exited-improperly",
            ErrorKind::NcclFailure => "nccl-failure",
            ErrorKind::CudaFailure => "cuda-failure",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MessageTooLong => "message-too-long",
            ErrorKind::FragNeeded => "frag-needed",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::NotRunning => "not-running",
            ErrorKind::Other => "other",
        }
    }
}

/// An error the tool itself reported, with its own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    pub kind: ErrorKind,
    /// The tool's own line(s), trimmed, joined with `\n`.
    pub message: String,
}

/// The tools `fabricplan parse` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    IbWriteBw,
    IbReadBw,
    IbSendBw,
    IbWriteLat,
    IbReadLat,
    IbSendLat,
    NcclTests,
    Mpirun,
    Iperf3,
    Ping,
    /// `ip -j neigh show`: the neighbour table.
    IpNeigh,
    /// `lldpcli -f json0 show neighbors`.
    Lldpcli,
}

impl Tool {
    pub const ALL: [Tool; 12] = [
        Tool::IbWriteBw,
        Tool::IbReadBw,
        Tool::IbSendBw,
        Tool::IbWriteLat,
        Tool::IbReadLat,
        Tool::IbSendLat,
        Tool::NcclTests,
        Tool::Mpirun,
        Tool::Iperf3,
        Tool::Ping,
        Tool::IpNeigh,
        Tool::Lldpcli,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::IbWriteBw => "ib_write_bw",
            Tool::IbReadBw => "ib_read_bw",
            Tool::IbSendBw => "ib_send_bw",
            Tool::IbWriteLat => "ib_write_lat",
            Tool::IbReadLat => "ib_read_lat",
            Tool::IbSendLat => "ib_send_lat",
            Tool::NcclTests => "nccl-tests",
            Tool::Mpirun => "mpirun",
            Tool::Iperf3 => "iperf3",
            Tool::Ping => "ping",
            Tool::IpNeigh => "ip-neigh",
            Tool::Lldpcli => "lldpcli",
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What a parser read, per tool.
// Reports differ a lot in size (nccl-tests carries ~30 fields); one value per parsed capture,
// so boxing them would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    PerftestBw(perftest::BwReport),
    PerftestLat(perftest::LatReport),
    NcclTests(nccl_tests::NcclReport),
    Mpirun(mpirun::MpirunReport),
    Iperf3(iperf3::IperfReport),
    Ping(ping::PingReport),
    Neigh(neigh::NeighReport),
    Lldp(lldp::LldpReport),
}

/// Parse `text` as the output of `tool`.
pub fn parse(tool: Tool, text: &str) -> Parsed {
    match tool {
        Tool::IbWriteBw | Tool::IbReadBw | Tool::IbSendBw => {
            Parsed::PerftestBw(perftest::parse_bw(text))
        }
        Tool::IbWriteLat | Tool::IbReadLat | Tool::IbSendLat => {
            Parsed::PerftestLat(perftest::parse_lat(text))
        }
        Tool::NcclTests => Parsed::NcclTests(nccl_tests::parse(text)),
        Tool::Mpirun => Parsed::Mpirun(mpirun::parse(text)),
        Tool::Iperf3 => Parsed::Iperf3(iperf3::parse(text)),
        Tool::Ping => Parsed::Ping(ping::parse(text)),
        Tool::IpNeigh => Parsed::Neigh(neigh::parse(text)),
        Tool::Lldpcli => Parsed::Lldp(lldp::parse(text)),
    }
}

impl Parsed {
    pub fn status(&self) -> Status {
        match self {
            Parsed::PerftestBw(r) => r.status,
            Parsed::PerftestLat(r) => r.status,
            Parsed::NcclTests(r) => r.status,
            Parsed::Mpirun(r) => r.status,
            Parsed::Iperf3(r) => r.status,
            Parsed::Ping(r) => r.status,
            Parsed::Neigh(r) => r.status,
            Parsed::Lldp(r) => r.status,
        }
    }

    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Parsed::PerftestBw(r) => r.error.as_ref(),
            Parsed::PerftestLat(r) => r.error.as_ref(),
            Parsed::NcclTests(r) => r.error.as_ref(),
            Parsed::Mpirun(r) => r.error.as_ref(),
            Parsed::Iperf3(r) => r.error.as_ref(),
            Parsed::Ping(r) => r.error.as_ref(),
            Parsed::Neigh(r) => r.error.as_ref(),
            Parsed::Lldp(r) => r.error.as_ref(),
        }
    }

    /// The documented JSON object: `tool` first, then the report's own fields.
    pub fn to_json(&self, tool: Tool) -> serde_json::Value {
        let body = match self {
            Parsed::PerftestBw(r) => serde_json::to_value(r),
            Parsed::PerftestLat(r) => serde_json::to_value(r),
            Parsed::NcclTests(r) => serde_json::to_value(r),
            Parsed::Mpirun(r) => serde_json::to_value(r),
            Parsed::Iperf3(r) => serde_json::to_value(r),
            Parsed::Ping(r) => serde_json::to_value(r),
            Parsed::Neigh(r) => serde_json::to_value(r),
            Parsed::Lldp(r) => serde_json::to_value(r),
        }
        .unwrap_or(serde_json::Value::Null);
        let mut out = serde_json::Map::new();
        out.insert("tool".into(), tool.name().into());
        if let serde_json::Value::Object(map) = body {
            out.extend(map);
        }
        serde_json::Value::Object(out)
    }

    /// A short human summary, a few lines, for `fabricplan parse --format text`.
    pub fn summary(&self) -> String {
        match self {
            Parsed::PerftestBw(r) => r.summary(),
            Parsed::PerftestLat(r) => r.summary(),
            Parsed::NcclTests(r) => r.summary(),
            Parsed::Mpirun(r) => r.summary(),
            Parsed::Iperf3(r) => r.summary(),
            Parsed::Ping(r) => r.summary(),
            Parsed::Neigh(r) => r.summary(),
            Parsed::Lldp(r) => r.summary(),
        }
    }
}

#[cfg(test)]
mod architecture {
    //! Issue "architecture": every parser file stays readable.

    use std::path::{Path, PathBuf};

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// (name, lines) of every function: from its `fn` line to the `}` at the same indent.
    fn functions(text: &str) -> Vec<(String, usize)> {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            let indent = l.len() - t.len();
            let body = ["pub fn ", "pub(crate) fn ", "pub(super) fn ", "fn "]
                .iter()
                .find_map(|p| t.strip_prefix(p));
            let Some(sig) = body else { continue };
            let close = " ".repeat(indent) + "}";
            if let Some(end) = lines.iter().skip(i + 1).position(|x| *x == close) {
                let name = sig.split(['(', '<']).next().unwrap_or("").to_string();
                out.push((name, end + 2));
            }
        }
        out
    }

    #[test]
    fn no_file_over_900_lines_no_function_over_150() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/parse");
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        assert!(files.len() > 5);
        let mut problems = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let n = text.lines().count();
            if n > 900 {
                problems.push(format!("{}: {n} lines", f.display()));
            }
            for (name, len) in functions(&text) {
                if len > 150 {
                    problems.push(format!("{}: fn {name} is {len} lines", f.display()));
                }
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
