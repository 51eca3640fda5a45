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
//! `ok` (`incomplete`, unless the tool itself reported an error). So is a bandwidth or rate
//! above what any link or memory carries ([`ceiling`]: 100 Tb/s for a link, 100 TB/s for a
//! collective): a corrupt value, not a measurement.
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

pub mod ceiling;
mod invariants;
pub mod lldp;
pub mod mpirun;
pub mod neigh;
pub(crate) mod text;

use crate::tools::ethtool::parse as ethtool;
use crate::tools::nccl_tests::parse as nccl_tests;
use crate::tools::perftest::parse as perftest;
use crate::tools::ping::parse as ping;
pub use invariants::check_invariants;
pub(crate) use invariants::{check_max, check_opt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::any::Any;

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected {
    /// 1-based line number in the capture.
    pub line: usize,
    /// Names the offending value, e.g. ``out-of-place time `-29.71` us is negative``.
    pub reason: String,
}

/// How far a parser got through a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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
    #[default]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    pub kind: ErrorKind,
    /// The tool's own line(s), trimmed, joined with `\n`.
    pub message: String,
}

/// What one tool's parser reads, as a typed report: every report type of this module (and of a
/// test kind's own tool) implements it. The report is its own JSON (serde), read back from a
/// run's `results.json` by the same type.
pub trait Report:
    Serialize + DeserializeOwned + Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    fn status(&self) -> Status;

    fn error(&self) -> Option<&ToolError>;

    /// A short human summary, a few lines, for `fabricplan parse --format text`.
    fn summary(&self) -> String;

    /// Drop what only repeats the report's own fields (a banner as printed whose values the
    /// fields hold, a single row equal to the totals): what a digested job keeps.
    fn shed(&mut self) {}

    /// What the report promises beyond its status (see [`check_invariants`]); `Err` names the
    /// broken promise.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// A [`Report`] behind a pointer: what [`Parsed`] holds, whatever the tool.
pub trait AnyReport: std::fmt::Debug + Send + Sync {
    fn status(&self) -> Status;
    fn error(&self) -> Option<&ToolError>;
    fn summary(&self) -> String;
    fn shed(&mut self);
    fn check(&self) -> Result<(), String>;
    /// The report's own fields, as a JSON object.
    fn fields(&self) -> serde_json::Value;
    fn as_any(&self) -> &dyn Any;
    fn clone_box(&self) -> Box<dyn AnyReport>;
    fn same(&self, other: &dyn AnyReport) -> bool;
}

impl<T: Report> AnyReport for T {
    fn status(&self) -> Status {
        Report::status(self)
    }

    fn error(&self) -> Option<&ToolError> {
        Report::error(self)
    }

    fn summary(&self) -> String {
        Report::summary(self)
    }

    fn shed(&mut self) {
        Report::shed(self)
    }

    fn check(&self) -> Result<(), String> {
        Report::check(self)
    }

    fn fields(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn clone_box(&self) -> Box<dyn AnyReport> {
        Box::new(self.clone())
    }

    fn same(&self, other: &dyn AnyReport) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// A tool whose output fabricplan reads: its name, its parser and the reader of its report's
/// JSON. The tools below are the shared ones (perftest, nccl-tests, mpirun, ping, ip-neigh,
/// lldpcli); a test kind with a tool of its own declares it beside its parser.
pub struct ToolSpec {
    /// The program's name (`ib_write_bw`), the `fabricplan parse` argument.
    pub name: &'static str,
    pub parse: fn(&str) -> Box<dyn AnyReport>,
    pub read: fn(serde_json::Value) -> Result<Box<dyn AnyReport>, serde_json::Error>,
}

/// [`ToolSpec::read`] for the report type `T`.
pub fn read_as<T: Report>(v: serde_json::Value) -> Result<Box<dyn AnyReport>, serde_json::Error> {
    Ok(Box::new(serde_json::from_value::<T>(v)?))
}

/// A tool, by its spec; equal when the names are.
#[derive(Clone, Copy)]
pub struct Tool {
    spec: &'static ToolSpec,
}

impl PartialEq for Tool {
    fn eq(&self, other: &Tool) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Tool {}

impl std::hash::Hash for Tool {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tool({})", self.name())
    }
}

/// A perftest bandwidth tool (`ib_*_bw`).
const fn perftest_bw(name: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        parse: |t| Box::new(perftest::parse_bw(t)),
        read: read_as::<perftest::BwReport>,
    }
}

/// A perftest latency tool (`ib_*_lat`).
const fn perftest_lat(name: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        parse: |t| Box::new(perftest::parse_lat(t)),
        read: read_as::<perftest::LatReport>,
    }
}

impl Tool {
    pub const IB_WRITE_BW: Tool = Tool {
        spec: &perftest_bw("ib_write_bw"),
    };
    pub const IB_READ_BW: Tool = Tool {
        spec: &perftest_bw("ib_read_bw"),
    };
    pub const IB_SEND_BW: Tool = Tool {
        spec: &perftest_bw("ib_send_bw"),
    };
    pub const IB_WRITE_LAT: Tool = Tool {
        spec: &perftest_lat("ib_write_lat"),
    };
    pub const IB_READ_LAT: Tool = Tool {
        spec: &perftest_lat("ib_read_lat"),
    };
    pub const IB_SEND_LAT: Tool = Tool {
        spec: &perftest_lat("ib_send_lat"),
    };
    pub const NCCL_TESTS: Tool = Tool {
        spec: &ToolSpec {
            name: "nccl-tests",
            parse: |t| Box::new(nccl_tests::parse(t)),
            read: read_as::<nccl_tests::NcclReport>,
        },
    };
    pub const MPIRUN: Tool = Tool {
        spec: &ToolSpec {
            name: "mpirun",
            parse: |t| Box::new(mpirun::parse(t)),
            read: read_as::<mpirun::MpirunReport>,
        },
    };
    pub const PING: Tool = Tool {
        spec: &ToolSpec {
            name: "ping",
            parse: |t| Box::new(ping::parse(t)),
            read: read_as::<ping::PingReport>,
        },
    };
    /// `ip -j neigh show`: the neighbour table.
    pub const IP_NEIGH: Tool = Tool {
        spec: &ToolSpec {
            name: "ip-neigh",
            parse: |t| Box::new(neigh::parse(t)),
            read: read_as::<neigh::NeighReport>,
        },
    };
    /// `lldpcli -f json0 show neighbors`.
    pub const LLDPCLI: Tool = Tool {
        spec: &ToolSpec {
            name: "lldpcli",
            parse: |t| Box::new(lldp::parse(t)),
            read: read_as::<lldp::LldpReport>,
        },
    };

    /// `ethtool -S NETDEV`: a NIC's statistics.
    pub const ETHTOOL: Tool = Tool {
        spec: &ToolSpec {
            name: "ethtool",
            parse: |t| Box::new(ethtool::parse(t)),
            read: read_as::<ethtool::EthtoolStats>,
        },
    };

    /// The shared tools, in `fabricplan parse`'s order.
    pub const ALL: [Tool; 12] = [
        Tool::IB_WRITE_BW,
        Tool::IB_READ_BW,
        Tool::IB_SEND_BW,
        Tool::IB_WRITE_LAT,
        Tool::IB_READ_LAT,
        Tool::IB_SEND_LAT,
        Tool::NCCL_TESTS,
        Tool::MPIRUN,
        Tool::PING,
        Tool::IP_NEIGH,
        Tool::LLDPCLI,
        Tool::ETHTOOL,
    ];

    /// The tool of `spec` (a test kind's own).
    pub const fn new(spec: &'static ToolSpec) -> Tool {
        Tool { spec }
    }

    pub fn name(self) -> &'static str {
        self.spec.name
    }

    /// One of the shared tools, by name.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Read `text` as this tool's output.
    pub fn parse(self, text: &str) -> Parsed {
        Parsed {
            tool: self,
            report: (self.spec.parse)(text),
            shed: false,
        }
    }

    /// Read back a report of this tool from its JSON (`fabricplan parse`'s, or a job's `parsed`
    /// in `results.json`): fields missing take their defaults, unknown ones are ignored.
    pub fn read(self, fields: serde_json::Value) -> Result<Parsed, serde_json::Error> {
        Ok(Parsed {
            tool: self,
            report: (self.spec.read)(fields)?,
            shed: false,
        })
    }
}

/// What a parser read: the tool, and its typed report.
#[derive(Debug)]
pub struct Parsed {
    tool: Tool,
    report: Box<dyn AnyReport>,
    /// Its repeats were shed (a digested job's): empty fields are left out of its JSON.
    shed: bool,
}

impl Clone for Parsed {
    fn clone(&self) -> Parsed {
        Parsed {
            tool: self.tool,
            report: self.report.clone_box(),
            shed: self.shed,
        }
    }
}

impl PartialEq for Parsed {
    fn eq(&self, other: &Parsed) -> bool {
        self.tool == other.tool && self.shed == other.shed && self.report.same(&*other.report)
    }
}

/// Parse `text` as the output of `tool`.
pub fn parse(tool: Tool, text: &str) -> Parsed {
    tool.parse(text)
}

impl Parsed {
    pub fn tool(&self) -> Tool {
        self.tool
    }

    /// The report, when it is a `T` (the tool's report type).
    pub fn get<T: Report>(&self) -> Option<&T> {
        self.report.as_any().downcast_ref::<T>()
    }

    pub fn status(&self) -> Status {
        self.report.status()
    }

    pub fn error(&self) -> Option<&ToolError> {
        self.report.error()
    }

    /// A short human summary, a few lines, for `fabricplan parse --format text`.
    pub fn summary(&self) -> String {
        self.report.summary()
    }

    /// Drop what only repeats the report's own fields, and from then on leave the fields that
    /// hold nothing (null, an empty list, an empty text) out of its JSON: what a digested job
    /// keeps.
    pub fn shed(&mut self) {
        self.report.shed();
        self.shed = true;
    }

    /// The documented JSON object: `tool` first, then the report's own fields.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert("tool".into(), self.tool.name().into());
        if let serde_json::Value::Object(map) = self.report.fields() {
            out.extend(map.into_iter().filter(|(_, v)| !self.shed || !empty(v)));
        }
        serde_json::Value::Object(out)
    }

    /// What the report promises beyond its status.
    pub(crate) fn check(&self) -> Result<(), String> {
        self.report.check()
    }
}

/// A field with nothing in it: null, an empty list, an empty text.
fn empty(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => a.is_empty(),
        serde_json::Value::String(t) => t.is_empty(),
        _ => false,
    }
}

impl Serialize for Parsed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
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
