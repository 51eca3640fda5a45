//! Parsers for what the measured tools print.
//!
//! Pure, synchronous, one file per tool output. A parser never panics, never accepts a partial
//! row, and reports what it could not read through [`Status`] instead of guessing. The JSON shape
//! produced by [`Parsed::to_json`] is the documented, stable output of `fabricplan parse`:
//! `tool`, `status` (`ok` | `error` | `incomplete` | `unrecognized`), `error`
//! (`null` or `{ "kind", "message" }`) and the tool's own fields.

pub mod iperf3;
pub mod mpirun;
pub mod nccl_log;
pub mod nccl_tests;
pub mod perftest;
pub mod ping;
mod text;

use serde::Serialize;

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
    // nccl-tests
    NcclFailure,
    CudaFailure,
    Timeout,
    // ping
    MessageTooLong,
    FragNeeded,
    Unreachable,
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
            ErrorKind::NcclFailure => "nccl-failure",
            ErrorKind::CudaFailure => "cuda-failure",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MessageTooLong => "message-too-long",
            ErrorKind::FragNeeded => "frag-needed",
            ErrorKind::Unreachable => "unreachable",
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
}

impl Tool {
    pub const ALL: [Tool; 10] = [
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
        }
    }
}
