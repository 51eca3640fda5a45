//! What a run found, as data. `results.json` is [`RunResults`] serialized; `results.jsonl` holds
//! one [`JobResult`] per line as each job finishes, and after a sampled test's rounds one line per
//! part localisation names at fault (`{"suspect": Suspect, "follows": {"gate", "jobs"}}`: the
//! jobs, written before, whose FAIL and WARN verdicts follow from it). Both carry
//! `format_version`.
//!
//! Stable shape (format version 1):
//! - `RunResults`: `format_version`, `plan`, `run_id`, `transport`, `simulated`, `started_unix_ms`,
//!   `finished_unix_ms`, `interrupted`, `discovery` (per node: reachable, error, halves),
//!   `preflight` (verdicts), `jobs` (JobResult), `rounds` (RoundRecord), `summary`.
//! - `JobResult`: `format_version`, `job`, `kind`, `round`, `round_name`, `label`, `hosts`,
//!   `expected_gbps`, `status` (`measured` | `failed` | `skipped`), `reason`, `steps`
//!   (host, role, command, exit status, times, output file names), `parsed` (the `fabricplan parse`
//!   JSON of the tool output: `tool`, then its report's fields; held typed, as the tool's report,
//!   and read back through it by [`RunResults::read`]), `counters` (per device deltas),
//!   `verdicts`.
//! - `Verdict`: `gate`, `metric`, `outcome` (`OK` | `WARN` | `FAIL`), `measured`, `unit`,
//!   `threshold`, `expected`, `trap`, `trap_name`, `fix`, `detail`.
//!
//! Added later, all optional (a file without them reads as before):
//! - `RunResults.keep_evidence` (`all` | `failed`): which outputs the run kept as files (see
//!   [`KeepEvidence`]); missing means `all`. `RunResults.counter_totals`: each counter's growth
//!   summed over every job of the run, per host and device, taken before any job's counters
//!   were trimmed. `RunResults.keep_evidence_chosen` (`option` | `default`) and
//!   `RunResults.keep_evidence_failed_above_jobs` (the default's threshold, 256): why.
//! - `JobResult.digests`: the outputs of a job kept as a digest instead of a file (name, bytes,
//!   sha256). A digested job (`failed` mode, a job that was OK) also has no `script` in
//!   its steps (every job's wrapped script has the same shape around the `command`, which is
//!   kept), only the counters that matter (see [`CounterDelta::matters`]) and no `banner` in
//!   its `parsed` output (perftest's header as printed; the values read from it stay), nor
//!   a single `rows` entry that only repeats the parsed fields, nor a parsed field that is
//!   null, an empty list or an empty text.
//!   A digested job's counters keep their `delta` without `before` and `after`.
//! - Fields left out when they hold nothing (absent reads as null or empty): a step's `script`,
//!   `error`, `remote_started_unix_ms`, `stdout_file`, `stderr_file`; a verdict's `trap`,
//!   `trap_name`, `fix`; `attempt` of a step or counter when it is 1.
//! - `RunResults.suspects` ([`Suspect`], after a sampled schedule's re-tests): `kind`, `what`
//!   (`end` | `isl`), `name`, `node`/`port`/`half` or `isl`, `ways`, `flows` (job ids),
//!   `retests` (job ids), `verdict` (counted once; the flows' FAILs follow it).
//! - `RoundRecord.phases` ([`RoundPhases`]): where the round's time went, in ms: counters before,
//!   server starts, readiness, staging, setup, release, the longest tool run, the tools' span,
//!   server stops and logs, counters after, judging, the round's wall, its overhead, the
//!   servers' own start-up and fabricplan's own share.
//! - `RunResults.inventory` ([`InventoryRow`]): per planned half discovery reached, its device,
//!   netdev, firmware, board id, PCI address, PCIe link now and at its maximum (`pcie_degraded`,
//!   what it carries in `pcie_gbps`), driver and version, and the node's kernel (also
//!   `discovery[].kernel`).
//! - `RunResults.before_rounds` ([`StartPhases`]): the time before the first round, in ms: the
//!   launcher's opening, discovery, the pings, the launch checks and the longest one's own run,
//!   the total and the total beyond that own run.
//!
//! - `Summary.gates` ([`Tally`]): every gate counted once as `ok`, `warn`, `fail`, `follows`
//!   (a WARN or FAIL a finding explains) or `not_run` (a job that judged nothing), the count
//!   every output prints.
//! - `Summary.evidence_complete` (written only when false) and `Summary.evidence_lost` (each file
//!   or output that could not be written): a run whose evidence is incomplete (exit 3).
//!
//! Runs of more than [`LINE_PER_JOB_ABOVE`] jobs write `results.json` with one job per line
//! (the top level still indented), so the file opens, greps and diffs line by line.

mod flow;
pub use flow::{Flow, flow_of, flow_of_verdict, node_names};

use serde::Serialize;

use crate::discover::HalfResolution;
pub use crate::discover::inventory::InventoryRow;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::render::job::Role;
pub use event::{Event, Started};
pub use phases::{RoundPhases, StartPhases};

pub mod counters;
pub mod coverage;
mod event;
mod phases;
pub mod service;
pub mod tally;
pub use tally::Tally;

pub const RESULTS_FORMAT_VERSION: u32 = 1;

/// The name of the baseline's results in a run directory judged against one
/// (`run --baseline`): its results.json as read, copied.
pub const BASELINE_FILE: &str = "baseline.json";

/// Runs of more than this many jobs write `results.json` one job per line, and default to
/// `--keep-evidence failed`. At 256 jobs (a 17-node all-pairs plan both ways, or 128 nodes'
/// single round) `all` writes about 1,300 output files and 10-15 MB; past it the per-job files
/// outgrow everything else in the run directory (a 64-node all-pairs run: 4,000 folders, 48 MB),
/// while no shipped plan comes near it.
pub const LINE_PER_JOB_ABOVE: usize = 256;

/// Which outputs of its jobs a run keeps as files under `jobs/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepEvidence {
    /// Every job's stdout, stderr and server log.
    All,
    /// Full outputs only for jobs with a WARN or FAIL, that could not measure, or whose repeated
    /// gate saw an attempt fail; an OK job keeps a digest of each output in `digests`.
    Failed,
}

impl KeepEvidence {
    /// The default for a run of `jobs` jobs: `all` up to [`LINE_PER_JOB_ABOVE`], `failed` above.
    pub fn default_for(jobs: usize) -> KeepEvidence {
        if jobs > LINE_PER_JOB_ABOVE {
            KeepEvidence::Failed
        } else {
            KeepEvidence::All
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KeepEvidence::All => "all",
            KeepEvidence::Failed => "failed",
        }
    }
}

/// How a run's [`KeepEvidence`] was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepChosen {
    /// `--keep-evidence` said so.
    Option,
    /// [`KeepEvidence::default_for`] the run's number of jobs.
    Default,
}

/// One output of a job kept as a digest instead of a file.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct OutputDigest {
    /// The file name it would have had in the job's folder (`n00001.client.stdout`,
    /// `n00002.server.log`).
    pub name: String,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
}

impl OutputDigest {
    pub fn of(name: &str, text: &str) -> OutputDigest {
        use sha2::Digest;
        OutputDigest {
            name: name.to_string(),
            bytes: text.len() as u64,
            sha256: data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(text.as_bytes())),
        }
    }
}

/// One counter's growth summed over a run's jobs, on one host's device.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CounterTotal {
    pub host: String,
    pub device: String,
    pub counter: String,
    pub delta: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobStatus {
    /// The tools ran and produced a reading (its verdicts may still fail).
    Measured,
    /// The job ran but could not measure (unreachable, timeout, tool error, unreadable output).
    Failed,
    /// Not run: a preflight check it depends on failed, or the run was interrupted.
    #[default]
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StepRecord {
    /// Which attempt of the job it belongs to (1 unless the gate repeats).
    #[serde(default = "first_attempt", skip_serializing_if = "is_first_attempt")]
    pub attempt: u32,
    pub host: String,
    pub role: Role,
    pub command: String,
    /// The full wrapped script; left out of a digested job (see the module doc).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub script: String,
    pub exit_status: Option<i32>,
    /// What went wrong running it; absent when nothing did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Unix time in ms when the command was sent.
    pub started_unix_ms: u64,
    /// Unix time in ms when it really started on the host, by the host's clock (foreground
    /// commands and servers report it); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_started_unix_ms: Option<f64>,
    /// Unix time in ms when its answer came: a command's end; a server's start (it runs on
    /// until stopped after the clients, its status and outputs then).
    pub finished_unix_ms: u64,
    /// Files in the job's folder of the run directory; absent when the output was not kept
    /// (empty, or digested).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_file: Option<String>,
}

impl StepRecord {
    /// The names its stdout and stderr have in the job's folder: `HOST.ROLE.stdout`, with the
    /// attempt after the role from the second on (`HOST.client.2.stdout`).
    pub fn output_names(&self) -> [String; 2] {
        let role = match self.role {
            Role::Server => "server",
            Role::Client => "client",
            Role::Launcher => "mpirun",
        };
        let tag = if self.attempt > 1 {
            format!("{role}.{}", self.attempt)
        } else {
            role.to_string()
        };
        [
            format!("{}.{tag}.stdout", self.host),
            format!("{}.{tag}.stderr", self.host),
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CounterDelta {
    /// Which attempt of the job it was read around.
    #[serde(default = "first_attempt", skip_serializing_if = "is_first_attempt")]
    pub attempt: u32,
    pub host: String,
    pub device: String,
    pub counter: String,
    /// The counter's values around the job; left out of a digested job, which keeps the delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    pub delta: i64,
}

/// Counts of packets carried, which follow from the data counters.
const TRAFFIC_PACKETS: [&str; 6] = [
    "port_xmit_packets",
    "port_rcv_packets",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
];

impl CounterDelta {
    /// Kept in a digested job: the data counters (the bytes the fabric carried),
    /// `packet_seq_err` ("did not move" is evidence too) and every other counter that moved,
    /// except the counts of packets carried, which follow from the data counters.
    pub fn matters(&self) -> bool {
        matches!(
            self.counter.as_str(),
            "port_xmit_data" | "port_rcv_data" | "packet_seq_err"
        ) || (self.delta != 0 && !TRAFFIC_PACKETS.contains(&self.counter.as_str()))
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct JobResult {
    pub format_version: u32,
    pub job: String,
    pub kind: String,
    pub round: usize,
    pub round_name: String,
    pub label: String,
    pub hosts: Vec<String>,
    pub expected_gbps: Option<f64>,
    pub status: JobStatus,
    pub reason: Option<String>,
    pub steps: Vec<StepRecord>,
    /// The tool's output as its parser read it, typed (its JSON is `fabricplan parse`'s). Read
    /// back by [`RunResults::read`], through the tool's own report type.
    #[serde(skip_deserializing)]
    pub parsed: Option<Parsed>,
    pub counters: Vec<CounterDelta>,
    pub verdicts: Vec<Verdict>,
    /// Wall time of the measurement itself (client or mpirun), seconds.
    pub tool_seconds: Option<f64>,
    /// Every attempt of a job whose gate repeats (`attempts = N`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Outputs kept as a digest instead of a file (`--keep-evidence failed`, a job that was
    /// OK); an empty output is not listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub digests: Vec<OutputDigest>,
}

/// One attempt of a job whose gate repeats.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Attempt {
    /// 1, 2, ...
    pub attempt: u32,
    /// The main metric's value, when it measured.
    pub measured: Option<f64>,
    pub outcome: Outcome,
    /// What it saw (the tool's error, a timeout), when it did not pass.
    pub detail: String,
}

impl JobResult {
    pub fn worst(&self) -> Option<Outcome> {
        self.verdicts.iter().map(|v| v.outcome).max()
    }

    /// A job whose outputs are evidence of a problem: it has a WARN or FAIL, could not measure,
    /// or an attempt of its repeated gate did not pass.
    pub fn troubled(&self) -> bool {
        self.status != JobStatus::Measured
            || self.worst().is_some_and(|o| o != Outcome::Ok)
            || self.attempts.iter().any(|a| a.outcome != Outcome::Ok)
    }

    /// The measured value of the job's main gate (bandwidth, latency).
    pub fn main_value(&self) -> Option<f64> {
        self.verdicts
            .iter()
            .find(|v| v.metric.is_some())
            .and_then(|v| v.measured)
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RoundRecord {
    pub index: usize,
    pub name: String,
    pub jobs: Vec<String>,
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    /// Spread of the clients' start times, ms (the round's clients are released together):
    /// from the hosts' own clocks when every client reported its start, else from when the
    /// commands were sent.
    pub launch_skew_ms: Option<f64>,
    /// `remote` or `sent`: which times `launch_skew_ms` was taken from.
    pub launch_skew_source: Option<String>,
    /// Longest tool time of the round, s (the round's share of the critical path).
    pub longest_tool_s: Option<f64>,
    /// Where the round's time went, phase by phase (missing in files written before it was
    /// recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<RoundPhases>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct NodeDiscovery {
    pub node: String,
    pub reachable: bool,
    pub error: Option<String>,
    pub hostname: Option<String>,
    pub halves: Vec<HalfResolution>,
    /// The kernel release the node runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    /// Failures counted once per root cause: a FAIL that follows from another is not counted.
    pub fail: usize,
    /// FAIL verdicts that follow from one counted in `fail`.
    pub fail_following: usize,
    pub jobs: usize,
    /// Jobs that ran (all of them, unless the run was interrupted).
    pub jobs_run: usize,
    pub jobs_not_measured: usize,
    /// Every gate counted once, in the words every output uses (see [`Tally`]): absent in
    /// files written before it (read as zeros), and left out when every count is zero.
    #[serde(default, skip_serializing_if = "Tally::is_empty")]
    pub gates: Tally,
    /// `ALL GREEN`, `PASS with N warning(s)`, `N FAIL`, `NOTHING MEASURED`, or for an interrupted
    /// run `INTERRUPTED after R of N jobs: F FAIL so far` (never green); a run without a job
    /// whose preflight said something starts `PREFLIGHT ONLY, NO TEST RAN: `.
    pub verdict: String,
    pub exit_code: i32,
    /// False when the run could not write all of its evidence (a full disk, a permission): the
    /// verdict then starts `EVIDENCE INCOMPLETE` and the exit code is 3. Written only when false
    /// (absent reads as true, as in files written before it was recorded).
    #[serde(skip_serializing_if = "is_true")]
    pub evidence_complete: bool,
    /// What could not be written, one line each (`PATH: error`); left out when nothing was lost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence_lost: Vec<String>,
}

impl Default for Summary {
    fn default() -> Summary {
        Summary {
            ok: 0,
            warn: 0,
            fail: 0,
            fail_following: 0,
            jobs: 0,
            jobs_run: 0,
            jobs_not_measured: 0,
            gates: Tally::default(),
            verdict: String::new(),
            exit_code: 0,
            evidence_complete: true,
            evidence_lost: Vec::new(),
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

/// How the verdict of a run without a job starts (a plan with no test: discovery and preflight
/// only), so that preflight's green is never read as a measured fabric's.
pub const PREFLIGHT_ONLY: &str = "PREFLIGHT ONLY, NO TEST RAN";

/// How the verdict of a run whose evidence is incomplete starts.
pub const EVIDENCE_INCOMPLETE: &str = "EVIDENCE INCOMPLETE";

impl Summary {
    /// Record that `lost` (one line per file or output) could not be written: the verdict says
    /// so first (`EVIDENCE INCOMPLETE (2 not written): ALL GREEN`, never green alone) and the
    /// exit code is 3. Nothing changes when `lost` is empty; called again, the list is replaced.
    pub fn evidence_lost(&mut self, lost: &[String]) {
        if lost.is_empty() {
            return;
        }
        let measured = match self.verdict.strip_prefix(EVIDENCE_INCOMPLETE) {
            Some(rest) => rest.split_once("): ").map_or(rest, |x| x.1).to_string(),
            None => self.verdict.clone(),
        };
        self.verdict = format!(
            "{EVIDENCE_INCOMPLETE} ({} not written): {measured}",
            lost.len()
        );
        self.evidence_complete = false;
        self.evidence_lost = lost.to_vec();
        self.exit_code = crate::exit::EVIDENCE;
    }
}

/// Results written before attempts were recorded ran each job once.
fn first_attempt() -> u32 {
    1
}

/// The first attempt is the one a job without repeats has: not written out.
fn is_first_attempt(n: &u32) -> bool {
    *n == 1
}

/// The reason a job not run because of an interrupt carries.
pub const INTERRUPTED_REASON: &str = "interrupted before this round started";

/// What a suspect is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuspectKind {
    /// One half of one node port.
    #[default]
    End,
    /// An inter-switch link.
    Isl,
}

/// A part of the fabric named at fault by localisation: the one thing a set of failing flows
/// share, every other end and ISL of theirs having passed in other flows.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Suspect {
    /// The test whose flows it explains (`rdma-bw`).
    pub kind: String,
    pub what: SuspectKind,
    /// `n00007.f0.a`, or the ISL's name.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isl: Option<String>,
    /// Which ways it fails: `send` and/or `receive` for an end, `SW -> SW` for an ISL.
    #[serde(default)]
    pub ways: Vec<String>,
    /// The failing flows (job ids) that prove it: each failed, and nothing else on it is
    /// left unexplained by a flow that passed.
    pub flows: Vec<String>,
    /// Of those, the localisation re-tests.
    #[serde(default)]
    pub retests: Vec<String>,
    /// Its verdict, counted once: the FAILs of the flows it explains follow it.
    pub verdict: Verdict,
}

/// One broken part, with the evidence that names it, what follows from it and its fix.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Finding {
    pub part: Part,
    /// The other parts the evidence cannot tell apart from `part`: one of them is at fault
    /// (the finding names them all; `--drain` takes none of them out on it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub among: Vec<Part>,
    /// The part's short name, as the verdict line lists it: `spark-b.f0.b`, `ISL sw-a-sw-b`.
    pub name: String,
    /// The part as a person reads it: `spark-b.f0.b (enP2p1s0f0np0 on spark-b)`.
    pub label: String,
    /// FAIL or WARN.
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trap: Option<Trap>,
    /// The trap in words (the plan's own name for a site trap).
    pub trap_name: String,
    /// What was seen, with the numbers.
    pub seen: String,
    /// The gates whose verdicts are its direct evidence.
    pub evidence: Vec<String>,
    /// The other failing gates that follow from it (shown, not counted again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follows: Vec<String>,
    /// The jobs not run because they need it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The node whose host the fix runs on, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The command that fixes it on that host, where one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_command: Option<String>,
    /// The fix in words.
    pub fix: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RunResults {
    pub format_version: u32,
    pub plan: String,
    pub run_id: String,
    pub transport: String,
    pub simulated: bool,
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    pub interrupted: bool,
    pub discovery: Vec<NodeDiscovery>,
    pub preflight: Vec<Verdict>,
    pub jobs: Vec<JobResult>,
    pub rounds: Vec<RoundRecord>,
    /// Where the time before the first round went (missing in files written before it was
    /// recorded, and in runs that ended before a round).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_rounds: Option<StartPhases>,
    /// What localisation named at fault, worst first (empty unless a sampled test failed).
    pub suspects: Vec<Suspect>,
    /// The hardware under every planned half discovery reached: firmware, PCIe link, driver
    /// (empty in older files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<InventoryRow>,
    /// The broken parts the diagnosis chose, worst first: every failing gate is one of their
    /// evidence or follows from one of them (empty when nothing failed, and in older files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Which of the plan's declared halves, cables and ISLs the run measured (missing in files
    /// written before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<coverage::Coverage>,
    /// Blamed nodes out of service and healthy ones back (`run --drain`, `--resume-passed`,
    /// `--exclude-file`; under Slurm the drain commands otherwise): `None` when nothing was
    /// asked and nothing blamed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<service::Service>,
    pub summary: Summary,
    /// Which outputs the run kept as files; `None` (files written before it was recorded) is
    /// `all`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_evidence: Option<KeepEvidence>,
    /// How `keep_evidence` was chosen: `option` (`--keep-evidence`) or `default` (by the run's
    /// size, see `keep_evidence_failed_above_jobs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_evidence_chosen: Option<KeepChosen>,
    /// The size above which the default is `failed`, in jobs ([`LINE_PER_JOB_ABOVE`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_evidence_failed_above_jobs: Option<usize>,
    /// Each counter's growth over the run, per host and device (empty in older files: sum the
    /// jobs' counters then).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counter_totals: Vec<CounterTotal>,
    /// Each planned half's port counters (errors, flaps, retransmissions, congestion) as
    /// discovery read them and once the rounds were done (empty in older files, and when the
    /// run ended before its end-of-run probe).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub port_counters: Vec<counters::HalfCounters>,
}

/// Why a `results.json` document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("job {job}: its {tool} output does not read as one: {error}")]
    Parsed {
        job: String,
        tool: String,
        error: serde_json::Error,
    },
}

impl RunResults {
    /// Read a `results.json` document: every field by its type, and each job's `parsed` output
    /// through the report type of its tool (`tools` names them: the shared ones and the test
    /// kinds' own). A tool this build does not know leaves `parsed` empty; a known tool's
    /// output that does not read as its report is an error naming the job.
    pub fn read(
        mut doc: serde_json::Value,
        tools: &dyn Fn(&str) -> Option<Tool>,
    ) -> Result<RunResults, ReadError> {
        let outputs: Vec<Option<serde_json::Value>> = match doc.get_mut("jobs") {
            Some(serde_json::Value::Array(jobs)) => jobs
                .iter_mut()
                .map(|j| j.as_object_mut().and_then(|o| o.remove("parsed")))
                .collect(),
            _ => Vec::new(),
        };
        let mut r: RunResults = serde_json::from_value(doc)?;
        for (job, out) in r.jobs.iter_mut().zip(outputs) {
            job.parsed = read_parsed(&job.job, out, tools)?;
        }
        Ok(r)
    }

    /// Every verdict: preflight, the jobs', then the suspects'.
    pub fn verdicts(&self) -> impl Iterator<Item = &Verdict> {
        self.preflight
            .iter()
            .chain(self.jobs.iter().flat_map(|j| j.verdicts.iter()))
            .chain(self.suspects.iter().map(|s| &s.verdict))
    }

    /// Count outcomes and decide the one-line verdict and exit code. A diagnosed run counts its
    /// findings (`2 FAIL: spark-b.f0.b, ISL sw-a-sw-b`); one that was not (older files) counts
    /// the FAIL verdicts that follow from nothing.
    pub fn summarize(&mut self) {
        let mut s = Summary {
            gates: Tally::of_run(self),
            ..Summary::default()
        };
        for v in self.verdicts() {
            match v.outcome {
                Outcome::Ok => s.ok += 1,
                Outcome::Warn => s.warn += 1,
                Outcome::Fail if v.follows.is_some() => s.fail_following += 1,
                Outcome::Fail => s.fail += 1,
            }
        }
        let mut named = (Vec::new(), Vec::new());
        if !self.findings.is_empty() {
            let fails = self.findings.iter().filter(|f| f.outcome == Outcome::Fail);
            let warns = self.findings.iter().filter(|f| f.outcome == Outcome::Warn);
            named = (
                fails.map(|f| f.name.clone()).collect::<Vec<_>>(),
                warns.map(|f| f.name.clone()).collect::<Vec<_>>(),
            );
            s.fail = named.0.len();
            s.warn = named.1.len();
        }
        s.jobs = self.jobs.len();
        s.jobs_run = self
            .jobs
            .iter()
            .filter(|j| {
                !(j.status == JobStatus::Skipped && j.reason.as_deref() == Some(INTERRUPTED_REASON))
            })
            .count();
        s.jobs_not_measured = self
            .jobs
            .iter()
            .filter(|j| j.status != JobStatus::Measured)
            .count();
        // green only on evidence: a run that measured nothing is not green
        let nothing = s.ok + s.warn + s.fail + s.fail_following == 0;
        s.verdict = if self.interrupted {
            let warn = match s.warn {
                0 => String::new(),
                n => format!(", {n} warning(s)"),
            };
            format!(
                "INTERRUPTED after {} of {} jobs: {} FAIL so far{warn}",
                s.jobs_run, s.jobs, s.fail
            )
        } else if s.fail > 0 {
            format!("{} FAIL{}", s.fail, listed(&named.0))
        } else if nothing {
            "NOTHING MEASURED".to_string()
        } else if s.warn > 0 {
            format!("PASS with {} warning(s){}", s.warn, listed(&named.1))
        } else {
            "ALL GREEN".to_string()
        };
        // a run with no job (its plan has no test) judged its fabric by preflight alone
        if s.jobs == 0 && !nothing && !self.interrupted {
            s.verdict = format!("{PREFLIGHT_ONLY}: {}", s.verdict);
        }
        s.exit_code = if self.interrupted {
            crate::exit::INTERRUPTED
        } else if s.fail > 0 || nothing || s.jobs_not_measured > 0 {
            crate::exit::FAIL
        } else {
            crate::exit::OK
        };
        self.summary = s;
    }
}

/// A job's `parsed` output, read by its tool.
fn read_parsed(
    job: &str,
    out: Option<serde_json::Value>,
    tools: &dyn Fn(&str) -> Option<Tool>,
) -> Result<Option<Parsed>, ReadError> {
    let Some(out) = out.filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    let name = out.get("tool").and_then(|t| t.as_str()).unwrap_or_default();
    let Some(tool) = tools(name) else {
        return Ok(None);
    };
    tool.read(out).map(Some).map_err(|error| ReadError::Parsed {
        job: job.to_string(),
        tool: tool.name().to_string(),
        error,
    })
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `: a, b, c and 2 more`, or nothing for an empty list.
fn listed(names: &[String]) -> String {
    const SHOWN: usize = 3;
    match names.len() {
        0 => String::new(),
        n if n <= SHOWN + 1 => format!(": {}", names.join(", ")),
        n => format!(": {} and {} more", names[..SHOWN].join(", "), n - SHOWN),
    }
}

#[cfg(test)]
mod keep_tests {
    use super::{KeepEvidence, LINE_PER_JOB_ABOVE, OutputDigest};

    #[test]
    fn the_default_switches_above_the_threshold() {
        assert_eq!(LINE_PER_JOB_ABOVE, 256);
        assert_eq!(KeepEvidence::default_for(0), KeepEvidence::All);
        assert_eq!(KeepEvidence::default_for(256), KeepEvidence::All);
        assert_eq!(KeepEvidence::default_for(257), KeepEvidence::Failed);
    }

    #[test]
    fn a_digest_is_the_sha256_and_size() {
        let d = OutputDigest::of("x.client.stdout", "abc");
        assert_eq!(d.bytes, 3);
        assert_eq!(
            d.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

#[cfg(test)]
mod evidence_tests {
    use super::{EVIDENCE_INCOMPLETE, Summary};

    #[test]
    fn lost_evidence_is_never_green_alone() {
        let mut s = Summary {
            verdict: "ALL GREEN".into(),
            ..Summary::default()
        };
        assert!(s.evidence_complete);
        s.evidence_lost(&[]);
        assert_eq!(s.verdict, "ALL GREEN");
        s.evidence_lost(&["R/results.jsonl: No space left on device".into()]);
        assert_eq!(
            s.verdict,
            format!("{EVIDENCE_INCOMPLETE} (1 not written): ALL GREEN")
        );
        assert_eq!((s.evidence_complete, s.exit_code), (false, 3));
        // again, with more lost: one prefix, the new count
        s.evidence_lost(&["a".into(), "b".into()]);
        assert_eq!(
            s.verdict,
            format!("{EVIDENCE_INCOMPLETE} (2 not written): ALL GREEN")
        );
        // a file written before it was recorded reads as complete
        let old: Summary = serde_json::from_str(r#"{"verdict": "ALL GREEN"}"#).unwrap();
        assert!(old.evidence_complete && old.evidence_lost.is_empty());
    }
}
