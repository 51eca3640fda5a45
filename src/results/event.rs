//! What a run reports as it goes, in order, for the terminal and the report sinks: the runner
//! emits every event, from [`Event::Started`] to [`Event::Finished`]; the sinks only listen.

use std::sync::Arc;

use super::{JobResult, RoundRecord, RunResults, StartPhases, Suspect};
use crate::gate::judge::Verdict;
use crate::plan::Plan;

/// One step of a run, as the sinks see it.
#[derive(Debug, Clone)]
pub enum Event {
    /// The run begins: what it runs and is judged against, in memory for the sinks that draw
    /// them (report.html) instead of reading them back.
    Started(Box<Started>),
    Discovered {
        node: String,
        ok: bool,
        detail: String,
    },
    Preflight(Verdict),
    /// Discovery and preflight are over: where their time went.
    BeforeRounds(StartPhases),
    RoundStart {
        index: usize,
        total: usize,
        name: String,
        jobs: usize,
    },
    JobDone(Box<JobResult>),
    RoundDone(RoundRecord),
    /// Localisation named a part of the fabric at fault, and the jobs (ids) whose FAIL and
    /// WARN verdicts now follow from it (their lines were written before it was known).
    Suspect(Box<Suspect>, Vec<String>),
    /// The run is over: its results, judged, diagnosed and summarized (shared, never copied
    /// for a sink).
    Finished(Arc<RunResults>),
}

/// What a run is, as it starts.
#[derive(Debug, Clone)]
pub struct Started {
    pub run_id: String,
    /// The plan it runs, validated.
    pub plan: Arc<Plan>,
    /// The results of the run it is judged against (`run --baseline`).
    pub baseline: Option<Arc<RunResults>>,
    /// `ssh`, `slurm`, `local` or `sim`.
    pub transport: &'static str,
    pub simulated: bool,
}
