//! Where a run's time went: per round ([`RoundPhases`]) and before the first round
//! ([`StartPhases`]), as results.json records them.

use serde::Serialize;

/// Where one round's time went, in milliseconds. Every duration is fabricplan's, taken on the
/// controller's monotonic clock, except the tools' own: `release_*_ms` and `longest_tool_ms`
/// start at a tool's start mark (the host's clock when the command really started there, see
/// [`super::StepRecord::remote_started_unix_ms`]; on the lab, one clock; on real hosts, as close as
/// their clocks agree). A round whose gate repeats (`attempts = N`) runs its setup, tools and
/// teardown once per attempt: those phases are summed over its `attempts`.
///
/// The setup phases overlap (the counters are read while the servers start and the clients are
/// staged): `counters_before_ms`, `server_start_ms` + `readiness_ms` and `staging_ms` all start
/// at the attempt's start, and the release is decided when the longest of them is over. The
/// teardown's two (`server_stop_and_logs_ms`, `counters_after_ms`) run side by side too.
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RoundPhases {
    /// How many attempts the phases below are summed over (1 unless a gate repeats).
    pub attempts: u32,
    /// Rendering the round's commands, before anything is sent.
    pub prepare_ms: f64,
    /// Reading every host's counters before the round.
    pub counters_before_ms: f64,
    /// The attempt's start to the last server start answered (0 without servers).
    pub server_start_ms: f64,
    /// The last server start answered to every server ready (polled listening, or found dead).
    pub readiness_ms: f64,
    /// The longest server's own start-up: from its start (its shell about to run the tool) to
    /// seen listening, by its host's clock (the readiness poll looks every 10 ms). The tools'
    /// time, on the round's critical path before the release. 0 without servers; `None` when a
    /// ready server's launcher did not report its times (Slurm, the simulator).
    pub server_tool_start_ms: Option<f64>,
    /// The attempt's start to every client (or MPI launcher) staged and waiting.
    pub staging_ms: f64,
    /// The attempt's start to the release decision: the longest of the counters, the servers
    /// (start and readiness) and the staging.
    pub setup_ms: f64,
    /// The release decision to the first client's start mark; `None` when a client reported
    /// no start mark.
    pub release_first_ms: Option<f64>,
    /// The release decision to the last client's start mark (every client runs); `None` when a
    /// client reported no start mark.
    pub release_ms: Option<f64>,
    /// The longest tool run of the attempt: a client's start mark to its exit (when the exit
    /// status reached the controller). The tools' own time.
    pub longest_tool_ms: f64,
    /// `remote` when every client reported its start mark; `sent` when `longest_tool_ms` had to
    /// start at the release instead (the simulator), which counts the release in the tool.
    pub tool_source: String,
    /// The release decision to the last client's exit: the span the round's tools ran, the
    /// release and the longest tool included.
    pub tools_ms: f64,
    /// Stopping exactly the servers started and collecting their logs.
    pub server_stop_and_logs_ms: f64,
    /// Reading the counters after the round (beside the stops).
    pub counters_after_ms: f64,
    /// Judging the round's jobs.
    pub judge_ms: f64,
    /// The round, first command rendered to record written.
    pub wall_ms: f64,
    /// `wall_ms` - `longest_tool_ms`: the round beyond its longest client run (the servers'
    /// start-up included).
    pub overhead_ms: f64,
    /// `overhead_ms` - `server_tool_start_ms`: fabricplan's own share, beyond the tools' own
    /// start to exit; `None` when the servers' start-up is unknown.
    pub fabricplan_ms: Option<f64>,
}

/// Where the time before the first round went, in milliseconds on the controller's monotonic
/// clock, except the launch check's own run (from its start mark, the launching host's clock
/// when mpirun or srun really started, to its answer). The launch checks start with the
/// discovery probes and run beside them and the pings: `total_ms` is the longer of the two
/// paths, `open_ms` + `discovery_ms` + `pings_ms` and `launch_checks_ms`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StartPhases {
    /// The launcher's opening (Slurm: the allocation; SSH: nothing to open).
    pub open_ms: f64,
    /// The discovery probe on every needed node, its SSH connection included.
    pub discovery_ms: f64,
    /// Preflight's pings, from the end of discovery to the last answer (0 without preflight).
    pub pings_ms: f64,
    /// The launch checks, from their start to the last answer; `None` when none ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_checks_ms: Option<f64>,
    /// The longest launch check's own run: its start mark to its answer (the tool's time);
    /// `None` when none ran or none reported its start mark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_check_tool_ms: Option<f64>,
    /// The launcher's opening to the first round's start.
    pub total_ms: f64,
    /// `total_ms` less `launch_check_tool_ms` (`total_ms` without it): what the time before the
    /// first round costs beyond the launch check's own mpirun.
    pub beyond_launch_check_ms: f64,
}
