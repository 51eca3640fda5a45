//! The runner: discovery, preflight, then each round (see [`round`]); results stream to disk as
//! each job finishes and every step is reported as an [`Event`]. The only async part of
//! fabricplan besides the launchers and transports it drives: it decides nothing a pure stage
//! can (commands come from the test kinds, verdicts from [`judge`]).

mod ctx;
pub mod discovery;
mod ending;
pub mod judge;
mod localise;
mod phases;
mod physical;
mod preflight;
mod round;
mod sessions;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::evidence::{Captured, Evidence};
use super::launch::Launcher;
use super::service::Requested;
use crate::compare::Baseline;
use crate::plan::{NodeId, Plan};
use crate::results::{
    CounterTotal, Event, JobResult, KeepChosen, KeepEvidence, LINE_PER_JOB_ABOVE,
    RESULTS_FORMAT_VERSION, RunResults, StartPhases, Started, now_ms,
};
use crate::schedule::{Job, Round, Schedule, Stage};
use crate::topology::Fabric;

pub use ctx::RunOptions;

fn selected_job(plan: &Plan, round: &Round, job: &Job, opts: &RunOptions) -> bool {
    (opts.only.is_empty() || opts.only.iter().any(|s| job.matches(plan, &round.name, s)))
        && !opts.skip.iter().any(|s| job.matches(plan, &round.name, s))
}

/// What a run's selection covers: its rounds, the nodes their jobs need, the NCCL tests.
struct Selection {
    rounds: Vec<usize>,
    /// How many jobs.
    jobs: usize,
    needed: Vec<NodeId>,
    nccl_tests: Vec<usize>,
}

/// The rounds with a selected job, and the nodes and NCCL tests those jobs need (every node
/// when the plan has no test: its run is discovery and preflight).
fn selection(plan: &Plan, fabric: &Fabric, schedule: &Schedule, opts: &RunOptions) -> Selection {
    let mut needed: Vec<NodeId> = Vec::new();
    let mut nccl_tests = Vec::new();
    let mut selected = Vec::new();
    let mut jobs = 0;
    for i in 0..schedule.len() {
        let Some(r) = schedule.round(plan, fabric, i) else {
            continue;
        };
        let mut any = false;
        for j in r.jobs.iter().filter(|j| selected_job(plan, &r, j, opts)) {
            any = true;
            jobs += 1;
            needed.extend(j.nodes());
            if let Some(r) = &j.ranks
                && !nccl_tests.contains(&r.test)
            {
                nccl_tests.push(r.test);
            }
        }
        if any {
            selected.push(i);
        }
    }
    // a plan without tests is still discovered and checked: every one of its nodes
    if schedule.is_empty() {
        needed = plan.nodes.iter().map(|n| n.id).collect();
    }
    needed.sort();
    needed.dedup();
    Selection {
        rounds: selected,
        jobs,
        needed,
        nccl_tests,
    }
}

/// What the runner carries from round to round: which outputs to keep as files, the causes
/// counted so far, each counter's growth over the run.
pub(super) struct Books {
    keep: KeepEvidence,
    causes: judge::Causes,
    totals: BTreeMap<(String, String, String), i64>,
}

impl Books {
    /// A round's judged `jobs` (in order): failures that follow a cause counted before marked,
    /// counters summed, each job's outputs kept as files or digests.
    pub(super) fn book(
        &mut self,
        evidence: &Evidence,
        jobs: &mut [JobResult],
        mut outputs: HashMap<String, Vec<Captured>>,
    ) {
        self.causes.follow(jobs);
        for d in jobs.iter_mut() {
            for c in &d.counters {
                *self
                    .totals
                    .entry((c.host.clone(), c.device.clone(), c.counter.clone()))
                    .or_insert(0) += c.delta;
            }
            evidence.keep(self.keep, d, outputs.remove(&d.job).unwrap_or_default());
        }
    }
}

/// Run one round (its jobs that `pick` selects) and record it: its jobs booked, each job and
/// the round told to the sinks, both kept in `results`. `total` is the count of rounds shown.
#[allow(clippy::too_many_arguments)]
pub(super) async fn measure(
    ctx: &mut ctx::Ctx<'_>,
    round: &Round,
    total: usize,
    pick: impl Fn(&Job) -> bool,
    results: &mut RunResults,
    evidence: &Evidence,
    books: &mut Books,
) {
    ctx.launcher.expect_round(round);
    let (mut jobs, outputs, record) = round::run_round(ctx, round, total, pick).await;
    // a session that ended during the round: one FAIL, its failures following it, opened again
    let when = format!("during round {}", round.name);
    sessions::check(ctx, &when, &mut jobs, results).await;
    books.book(evidence, &mut jobs, outputs);
    for d in &jobs {
        ctx.emit(Event::JobDone(Box::new(d.clone())));
    }
    results.rounds.push(record.clone());
    ctx.emit(Event::RoundDone(record));
    results.jobs.extend(jobs);
}

/// Where the time before the first round went: the launcher opened at `opened`, discovery
/// over at `discovered`, preflight over at `total` (each from the run's start).
fn start_phases(
    opened: std::time::Duration,
    discovered: std::time::Duration,
    total: std::time::Duration,
    t: preflight::PreflightTimes,
) -> StartPhases {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let total_ms = ms(total);
    StartPhases {
        open_ms: ms(opened),
        discovery_ms: ms(discovered.saturating_sub(opened)),
        pings_ms: t.pings_ms,
        launch_checks_ms: t.launch_checks_ms,
        launch_check_tool_ms: t.launch_check_tool_ms,
        total_ms,
        beyond_launch_check_ms: (total_ms - t.launch_check_tool_ms.unwrap_or(0.0)).max(0.0),
    }
}

/// A run's results before anything ran: what it is, and which outputs it keeps as files.
fn empty_results(
    plan: &Plan,
    launcher: &dyn Launcher,
    opts: &RunOptions,
    jobs: usize,
) -> RunResults {
    let started = now_ms();
    let keep = opts
        .keep_evidence
        .unwrap_or_else(|| KeepEvidence::default_for(jobs));
    RunResults {
        format_version: RESULTS_FORMAT_VERSION,
        plan: plan.name.clone(),
        run_id: opts.run_id.clone(),
        transport: launcher.transport_name().to_string(),
        simulated: launcher.simulated(),
        started_unix_ms: started,
        finished_unix_ms: started,
        interrupted: false,
        discovery: Vec::new(),
        preflight: Vec::new(),
        jobs: Vec::new(),
        rounds: Vec::new(),
        before_rounds: None,
        suspects: Vec::new(),
        inventory: Vec::new(),
        findings: Vec::new(),
        coverage: None,
        service: None,
        summary: Default::default(),
        keep_evidence: Some(keep),
        counter_totals: Vec::new(),
        port_counters: Vec::new(),
        keep_evidence_chosen: Some(if opts.keep_evidence.is_some() {
            KeepChosen::Option
        } else {
            KeepChosen::Default
        }),
        keep_evidence_failed_above_jobs: Some(LINE_PER_JOB_ABOVE),
    }
}

/// Everything before the first round: the launcher opens the run (what it cannot reach is one
/// FAIL per node, never probed), the setup stage when asked (`setup`: it changes hosts, so
/// only on request, before anything is measured), discovery, preflight (the launch checks start with the
/// discovery probes: they depend on the plan alone), the sessions that ended meanwhile; and
/// where that time went.
async fn before_rounds(
    ctx: &mut ctx::Ctx<'_>,
    sel: &Selection,
    setup: bool,
    results: &mut RunResults,
) {
    let clock = std::time::Instant::now();
    // the setup stage needs every node: then the run is opened on all of them, once
    let all: Vec<NodeId>;
    let opened_on = if setup {
        all = ctx.plan.nodes.iter().map(|n| n.id).collect();
        &all
    } else {
        &sel.needed
    };
    let opening = discovery::open(ctx, opened_on).await;
    let set_up = if setup {
        super::setup::run(ctx.plan, ctx.launcher.as_ref(), &opening).await
    } else {
        Vec::new()
    };
    let reachable = discovery::opened(ctx, &sel.needed, opening, results);
    for v in set_up {
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
    }
    let opened = clock.elapsed();
    let preflight = ctx.plan.tests.preflight;
    let launches = preflight.then(|| {
        let checks = preflight::launch_checks(ctx, &sel.nccl_tests);
        let answers = preflight::start_launch_checks(ctx, &checks);
        (checks, answers)
    });
    discovery::discover_needed(ctx, &reachable, results).await;
    let discovered = clock.elapsed();
    let checked = if preflight {
        preflight::preflight(ctx, &sel.needed, results, launches).await
    } else {
        preflight::PreflightTimes::default()
    };
    sessions::check(ctx, "before the first round", &mut [], results).await;
    let before = start_phases(opened, discovered, clock.elapsed(), checked);
    ctx.emit(Event::BeforeRounds(before.clone()));
    results.before_rounds = Some(before);
}

/// When round `i` is the last selected round (`next` the one after it) of a stage whose kind
/// re-tests its failing ends alone (see [`crate::kinds::TestKind::loopback`]): the stage's
/// selected jobs. Sampled stages localise their own way.
fn stage_done_for_loopback(
    plan: &Plan,
    fabric: &Fabric,
    opts: &RunOptions,
    schedule: &Schedule,
    selected: &[usize],
    i: usize,
    next: Option<usize>,
) -> Option<Vec<Job>> {
    let (stage, span) = schedule.stage_of(i)?;
    if matches!(stage, Stage::Sampled { .. }) || next.is_some_and(|n| span.contains(&n)) {
        return None;
    }
    let round = schedule.round(plan, fabric, i)?;
    if !crate::kinds::get(round.kind).is_some_and(|k| k.loopback()) {
        return None;
    }
    let jobs = span
        .clone()
        .filter(|r| selected.contains(r))
        .filter_map(|r| schedule.round(plan, fabric, r))
        .flat_map(|r| {
            let picked: Vec<Job> = r
                .jobs
                .iter()
                .filter(|j| selected_job(plan, &r, j, opts))
                .cloned()
                .collect();
            picked
        })
        .collect();
    Some(jobs)
}

/// The selected rounds, in order (each sampled test's re-tests after its last round); once
/// interrupted, the rest is recorded as skipped.
async fn rounds(
    ctx: &mut ctx::Ctx<'_>,
    schedule: &Schedule,
    selected: &[usize],
    results: &mut RunResults,
    evidence: &Evidence,
    books: &mut Books,
) {
    let (plan, fabric, opts) = (ctx.plan, ctx.fabric, ctx.opts);
    // re-test rounds are numbered after the schedule's
    let mut next = schedule.len();
    let mut sampled = localise::Sampled::default();
    for (at, &i) in selected.iter().enumerate() {
        let Some(round) = schedule.round(plan, fabric, i) else {
            continue;
        };
        let pick = |j: &Job| selected_job(plan, &round, j, opts);
        if ctx.cancelled() {
            results.interrupted = true;
            for j in round.jobs.iter().filter(|j| pick(j)) {
                let why = crate::results::INTERRUPTED_REASON.into();
                results.jobs.push(judge::skipped(plan, &round, j, why));
            }
            continue;
        }
        measure(ctx, &round, schedule.len(), pick, results, evidence, books).await;
        // a bandwidth test's last selected round: its uncleared failing ends alone, looped back
        let last = selected.get(at + 1).copied();
        if let Some(jobs) = stage_done_for_loopback(plan, fabric, opts, schedule, selected, i, last)
        {
            localise::loopback(ctx, round.kind, &jobs, results, evidence, books, &mut next).await;
        }
        // a sampled test's last selected round: re-test its failing flows, name the culprit
        if let Some((Stage::Sampled { kind, .. }, span)) = schedule.stage_of(i) {
            sampled.kind = Some(*kind);
            sampled
                .jobs
                .extend(round.jobs.iter().filter(|j| pick(j)).cloned());
            if selected.get(at + 1).is_none_or(|n| !span.contains(n)) {
                let done = std::mem::take(&mut sampled);
                localise::localise(ctx, done, results, evidence, books, &mut next).await;
            }
        }
    }
}

/// A run, as the command line resolved it: the plan, how its commands reach the nodes, what
/// it keeps as evidence, and what is done before and after the measurements.
pub struct RunConfig<'a> {
    pub plan: Arc<Plan>,
    pub launcher: Arc<dyn Launcher>,
    pub opts: RunOptions,
    pub evidence: &'a Evidence,
    /// The plan's setup stage first (`run --setup`).
    pub setup: bool,
    /// The run it is judged against too (`run --baseline`).
    pub baseline: Option<Baseline>,
    /// What is done about the findings (`--drain`, `--resume-passed`, `--exclude-file`).
    pub service: Requested,
}

impl<'a> RunConfig<'a> {
    /// A run of `plan` through `launcher`: no setup, no baseline, nothing asked about the
    /// findings.
    pub fn new(
        plan: Arc<Plan>,
        launcher: Arc<dyn Launcher>,
        opts: RunOptions,
        evidence: &'a Evidence,
    ) -> RunConfig<'a> {
        RunConfig {
            plan,
            launcher,
            opts,
            evidence,
            setup: false,
            baseline: None,
            service: Requested::default(),
        }
    }
}

/// Run a plan, whole, as one session: [`Event::Started`]; the launcher opened, the setup stage
/// when asked, discovery and preflight; the rounds (loopbacks and localisation among them);
/// the baseline judged; the diagnosis; what was asked about the findings; then
/// [`Event::Finished`] with the results, their lost evidence said. Every step is an event on
/// `events`; `cancel` interrupts (the rest is recorded as skipped).
pub async fn run(
    cfg: &RunConfig<'_>,
    events: mpsc::UnboundedSender<Event>,
    cancel: watch::Receiver<bool>,
) {
    let results = session(cfg, &events, cancel).await;
    let _ = events.send(Event::Finished(Arc::new(results)));
}

/// [`run`] to its results, its events unheard.
pub async fn results(cfg: &RunConfig<'_>) -> RunResults {
    let (tx, _) = mpsc::unbounded_channel();
    let (_cancel, cancel) = watch::channel(false);
    session(cfg, &tx, cancel).await
}

/// Everything [`run`] does but say the end.
async fn session(
    cfg: &RunConfig<'_>,
    events: &mpsc::UnboundedSender<Event>,
    cancel: watch::Receiver<bool>,
) -> RunResults {
    let _ = events.send(Event::Started(Box::new(Started {
        run_id: cfg.opts.run_id.clone(),
        plan: cfg.plan.clone(),
        baseline: cfg.baseline.as_ref().map(|b| b.results.clone()),
        transport: cfg.launcher.transport_name(),
        simulated: cfg.launcher.simulated(),
    })));
    if let Some(b) = &cfg.baseline {
        cfg.evidence.save_baseline(&b.text);
    }
    let mut results = measure_plan(cfg, events.clone(), cancel).await;
    if let Some(b) = &cfg.baseline {
        crate::compare::baseline::judge(&mut results, b);
    }
    crate::diagnose::diagnose(&cfg.plan, &mut results);
    let scheduled = cfg.launcher.nodes_are_scheduled();
    let mut lost = super::service::take(&mut results, &cfg.service, scheduled).await;
    lost.splice(0..0, cfg.evidence.errors());
    results.summary.evidence_lost(&lost);
    results
}

/// The measurements: the fabric and schedule of the plan built, everything before the first
/// round, the rounds, the launcher closed, the counters totalled.
async fn measure_plan(
    cfg: &RunConfig<'_>,
    events: mpsc::UnboundedSender<Event>,
    cancel: watch::Receiver<bool>,
) -> RunResults {
    let plan = cfg.plan.as_ref();
    let fabric = Fabric::build(plan);
    let schedule = crate::kinds::schedule(plan);
    let (launcher, opts) = (&cfg.launcher, &cfg.opts);
    let mut ctx = ctx::Ctx::new(plan, &fabric, launcher.clone(), opts, events, cancel);
    let sel = selection(plan, &fabric, &schedule, opts);
    let mut results = empty_results(plan, launcher.as_ref(), opts, sel.jobs);
    let mut books = Books {
        keep: results.keep_evidence.unwrap_or(KeepEvidence::All),
        causes: judge::Causes::default(),
        totals: BTreeMap::new(),
    };
    before_rounds(&mut ctx, &sel, cfg.setup, &mut results).await;
    let evidence = cfg.evidence;
    rounds(
        &mut ctx,
        &schedule,
        &sel.rounds,
        &mut results,
        evidence,
        &mut books,
    )
    .await;
    if ctx.cancelled() {
        results.interrupted = true;
    } else {
        discovery::changed(&mut ctx, &mut results).await;
    }
    launcher.close().await;
    results.counter_totals = books
        .totals
        .into_iter()
        .map(|((host, device, counter), delta)| CounterTotal {
            host,
            device,
            counter,
            delta,
        })
        .collect();
    results.finished_unix_ms = now_ms();
    results
}
