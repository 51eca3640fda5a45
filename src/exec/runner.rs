//! The runner: discovery, preflight, then each round the way a careful engineer does it by hand:
//! snapshot counters; start every server detached; wait until each listens (polling, never a
//! fixed sleep); release every client together; collect; kill exactly the process groups we
//! started; snapshot counters again; parse; judge. One job failing never stops its round; a lost
//! host fails its own jobs and the rest runs. Results stream to disk as each job finishes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use super::evidence::Evidence;
use super::transport::{Output, Transport, TransportError};
use crate::capacity;
use crate::discover::{self, HalfResolution, Probe};
use crate::gate::classify::{self, Context};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::kinds;
use crate::parse::{self, Status};
use crate::plan::{Endpoint, NodeId, Plan};
use crate::render::job::{JobCommands, Resolution, Role, remote_dir};
use crate::render::{Renderer, wrap};
use crate::results::*;
use crate::schedule::{Job, Round, Schedule};
use crate::topology::Fabric;

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub run_id: String,
    /// Only jobs matching one of these selectors (empty: all).
    pub only: Vec<String>,
    /// Skip jobs matching any of these.
    pub skip: Vec<String>,
    /// At most this many commands in flight at once.
    pub max_parallel: usize,
}

/// Progress, for the terminal reporter.
#[derive(Debug, Clone)]
pub enum Event {
    Discovered {
        node: String,
        ok: bool,
        detail: String,
    },
    Preflight(Verdict),
    RoundStart {
        index: usize,
        total: usize,
        name: String,
        jobs: usize,
    },
    JobDone(Box<JobResult>),
    RoundDone(RoundRecord),
}

pub(crate) struct Ctx<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) transport: &'a dyn Transport,
    pub(crate) renderer: Renderer,
    pub(crate) res: Resolution,
    pub(crate) opts: &'a RunOptions,
    pub(crate) sem: Semaphore,
    pub(crate) events: mpsc::UnboundedSender<Event>,
    pub(crate) cancel: watch::Receiver<bool>,
    pub(crate) unreachable: HashMap<NodeId, String>,
    /// endpoint -> why its measurements are skipped
    pub(crate) blocked: HashMap<Endpoint, String>,
    /// NCCL test name -> why it is skipped (its launch check failed)
    pub(crate) blocked_tests: HashMap<String, String>,
    pub(crate) probes: HashMap<NodeId, Probe>,
    pub(crate) resolutions: HashMap<NodeId, Vec<HalfResolution>>,
}

/// How long a server has to listen on its port.
const READY_LIMIT_S: u32 = 15;
pub(crate) const SHORT: Duration = Duration::from_secs(20);

impl Ctx<'_> {
    pub(crate) async fn exec(
        &self,
        node: NodeId,
        script: &str,
        timeout: Duration,
    ) -> Result<Output, TransportError> {
        let _permit = self.sem.acquire().await;
        self.transport
            .exec(self.plan.node(node), script, timeout)
            .await
    }

    /// [`Transport::exec_released`] under the same limit as [`Ctx::exec`]. A staged command
    /// holds its slot while it waits, and the round's setup (snapshots, server starts, readiness)
    /// runs meanwhile and needs slots too: so a command is staged only while a slot stays free
    /// for the setup. Otherwise it is armed at once and takes a slot only once released: staging
    /// never waits on itself nor starves the setup it waits for.
    pub(crate) async fn exec_released(
        &self,
        node: NodeId,
        script: &str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> Result<Output, TransportError> {
        let node = self.plan.node(node);
        if let Ok(permit) = self.sem.try_acquire() {
            if self.sem.available_permits() > 0 {
                let _permit = permit;
                return self
                    .transport
                    .exec_released(node, script, timeout, armed, go)
                    .await;
            }
        }
        let _ = armed.send(());
        if !super::transport::released(go).await {
            return Err(TransportError::Withdrawn {
                host: node.name.clone(),
            });
        }
        let _permit = self.sem.acquire().await;
        self.transport.exec(node, script, timeout).await
    }

    fn cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    pub(crate) fn emit(&self, e: Event) {
        let _ = self.events.send(e);
    }
}

/// Run a plan to its results.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    plan: &Plan,
    fabric: &Fabric,
    schedule: &Schedule,
    transport: Arc<dyn Transport>,
    opts: &RunOptions,
    evidence: &mut Evidence,
    events: mpsc::UnboundedSender<Event>,
    cancel: watch::Receiver<bool>,
) -> RunResults {
    let started = now_ms();
    let mut ctx = Ctx {
        plan,
        transport: transport.as_ref(),
        renderer: Renderer::new(&plan.templates),
        res: Resolution::from_plan(plan),
        opts,
        sem: Semaphore::new(opts.max_parallel.max(1)),
        events,
        cancel,
        unreachable: HashMap::new(),
        blocked: HashMap::new(),
        blocked_tests: HashMap::new(),
        probes: HashMap::new(),
        resolutions: HashMap::new(),
    };
    let mut results = RunResults {
        format_version: RESULTS_FORMAT_VERSION,
        plan: plan.name.clone(),
        run_id: opts.run_id.clone(),
        transport: transport.name().to_string(),
        simulated: transport.simulated(),
        started_unix_ms: started,
        finished_unix_ms: started,
        interrupted: false,
        discovery: Vec::new(),
        preflight: Vec::new(),
        jobs: Vec::new(),
        rounds: Vec::new(),
        summary: Summary::default(),
    };

    // the nodes any selected job needs
    let mut needed: Vec<NodeId> = Vec::new();
    let selected: Vec<usize> = (0..schedule.len())
        .filter(|i| {
            schedule
                .round(plan, fabric, *i)
                .is_some_and(|r| r.jobs.iter().any(|j| selected_job(plan, &r, j, opts)))
        })
        .collect();
    for i in &selected {
        if let Some(r) = schedule.round(plan, fabric, *i) {
            for j in r.jobs.iter().filter(|j| selected_job(plan, &r, j, opts)) {
                for n in j.nodes() {
                    if !needed.contains(&n) {
                        needed.push(n);
                    }
                }
            }
        }
    }
    needed.sort();

    // the launch checks depend on the plan alone: they start with the discovery probes
    let launches = plan.tests.preflight.then(|| {
        let checks = super::preflight::launch_checks(&ctx, &needed);
        let answers = super::preflight::start_launch_checks(&ctx, transport.clone(), &checks);
        (checks, answers)
    });
    let probes = probe_nodes(&ctx, &needed).await;
    apply_discovery(&mut ctx, probes, &mut results);
    if let Some((checks, answers)) = launches {
        super::preflight::preflight(&mut ctx, &needed, &mut results, checks, answers).await;
    }

    for i in selected {
        let Some(round) = schedule.round(plan, fabric, i) else {
            continue;
        };
        if ctx.cancelled() {
            results.interrupted = true;
            for j in round
                .jobs
                .iter()
                .filter(|j| selected_job(plan, &round, j, opts))
            {
                let r = skipped(
                    plan,
                    &round,
                    j,
                    "interrupted before this round started".into(),
                );
                results.jobs.push(r);
            }
            continue;
        }
        let (jobs, record) = run_round(&ctx, &round, schedule.len(), evidence).await;
        results.rounds.push(record.clone());
        ctx.emit(Event::RoundDone(record));
        results.jobs.extend(jobs);
    }
    if ctx.cancelled() {
        results.interrupted = true;
    }
    transport.close().await;
    results.finished_unix_ms = now_ms();
    results.summarize();
    results
}

fn selected_job(plan: &Plan, round: &Round, job: &Job, opts: &RunOptions) -> bool {
    (opts.only.is_empty() || opts.only.iter().any(|s| job.matches(plan, &round.name, s)))
        && !opts.skip.iter().any(|s| job.matches(plan, &round.name, s))
}

/// The discovery probe on every needed host, all at once.
async fn probe_nodes(
    ctx: &Ctx<'_>,
    needed: &[NodeId],
) -> Vec<(NodeId, Result<Output, TransportError>)> {
    join_all(needed.iter().map(|n| async move {
        (
            *n,
            ctx.exec(*n, discover::PROBE_SCRIPT, discover::PROBE_TIMEOUT)
                .await,
        )
    }))
    .await
}

/// What the probes found: each planned half's device, netdev and GID, or the host unreachable.
fn apply_discovery(
    ctx: &mut Ctx<'_>,
    probes: Vec<(NodeId, Result<Output, TransportError>)>,
    results: &mut RunResults,
) {
    for (n, out) in probes {
        let name = ctx.plan.node(n).name.clone();
        match out {
            Ok(o) => {
                let probe = discover::probe::parse(&o.stdout);
                let halves = discover::resolve_node(ctx.plan, n, &probe);
                for h in &halves {
                    if let Some(f) = ctx.res.halves.get_mut(&h.endpoint) {
                        let facts = h.facts();
                        f.device = f.device.clone().or(facts.device);
                        f.netdev = f.netdev.clone().or(facts.netdev);
                        f.gid_index = f.gid_index.or(facts.gid_index);
                    }
                }
                ctx.emit(Event::Discovered {
                    node: name.clone(),
                    ok: true,
                    detail: format!("{} RDMA device(s)", probe.devices.len()),
                });
                results.discovery.push(NodeDiscovery {
                    node: name,
                    reachable: true,
                    error: None,
                    hostname: Some(probe.hostname.clone()),
                    halves: halves.clone(),
                });
                ctx.resolutions.insert(n, halves);
                ctx.probes.insert(n, probe);
            }
            Err(e) => {
                ctx.emit(Event::Discovered {
                    node: name.clone(),
                    ok: false,
                    detail: e.to_string(),
                });
                let v = Verdict::check(
                    format!("reach {name}"),
                    Outcome::Fail,
                    e.to_string(),
                    Some(match e {
                        TransportError::HostKey { .. } => Trap::Unreachable,
                        _ => Trap::Unreachable,
                    }),
                );
                ctx.emit(Event::Preflight(v.clone()));
                results.preflight.push(v);
                results.discovery.push(NodeDiscovery {
                    node: name,
                    reachable: false,
                    error: Some(e.to_string()),
                    hostname: None,
                    halves: Vec::new(),
                });
                ctx.unreachable.insert(n, e.to_string());
            }
        }
    }
}

/// The name a job's verdicts carry: kind, the declared round when there is one (the same flow
/// runs in several rounds of a matrix), and the job's label.
fn gate_name(plan: &Plan, round: &Round, job: &Job) -> String {
    if round.name.starts_with(job.kind.name()) {
        format!("{} {}", job.kind.name(), job.label(plan))
    } else {
        format!("{} {} {}", job.kind.name(), round.name, job.label(plan))
    }
}

fn skipped(plan: &Plan, round: &Round, job: &Job, reason: String) -> JobResult {
    JobResult {
        format_version: RESULTS_FORMAT_VERSION,
        job: job.id.clone(),
        kind: job.kind.name().into(),
        round: round.index,
        round_name: round.name.clone(),
        label: job.label(plan),
        hosts: job
            .nodes()
            .iter()
            .map(|n| plan.node(*n).name.clone())
            .collect(),
        expected_gbps: None,
        status: JobStatus::Skipped,
        reason: Some(reason),
        steps: Vec::new(),
        parsed: None,
        counters: Vec::new(),
        verdicts: Vec::new(),
        tool_seconds: None,
    }
}

struct Running<'j> {
    job: &'j Job,
    cmds: JobCommands,
    expected: Option<f64>,
    steps: Vec<StepRecord>,
    pgid: Option<(NodeId, u32)>,
    failure: Option<Verdict>,
    client_out: Option<Output>,
    server_log: Option<String>,
    tool_seconds: Option<f64>,
    launched: Option<Instant>,
}

/// The devices a job's counters are read on, per host.
fn job_devices(ctx: &Ctx, r: &Running) -> Vec<(NodeId, String)> {
    let mut out = Vec::new();
    let eps: Vec<&Endpoint> = if r.cmds.ranks.is_empty() {
        r.job.resources.iter().collect()
    } else {
        r.cmds
            .ranks
            .iter()
            .flat_map(|k| k.endpoints.iter())
            .collect()
    };
    for e in eps {
        if let Some(d) = ctx.res.halves.get(e).and_then(|f| f.device.clone())
            && !out.contains(&(e.node, d.clone()))
        {
            out.push((e.node, d));
        }
    }
    out
}

async fn snapshot(
    ctx: &Ctx<'_>,
    devices: &[(NodeId, String)],
) -> HashMap<(NodeId, String), BTreeMap<String, u64>> {
    let mut by_host: BTreeMap<NodeId, Vec<String>> = BTreeMap::new();
    for (n, d) in devices {
        if crate::plan::validate::is_safe_ifname(d) {
            by_host.entry(*n).or_default().push(d.clone());
        }
    }
    let outs = join_all(by_host.iter().map(|(n, devs)| async move {
        (
            *n,
            ctx.exec(*n, &discover::counters_script(devs), SHORT).await,
        )
    }))
    .await;
    let mut out = HashMap::new();
    for (n, o) in outs {
        if let Ok(o) = o {
            for d in discover::probe::parse(&o.stdout).devices {
                out.insert((n, d.name.clone()), d.counters);
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn step_record(
    ctx: &Ctx,
    evidence: &Evidence,
    job: &str,
    node: NodeId,
    role: Role,
    command: &str,
    script: &str,
    started: u64,
    out: &Result<Output, TransportError>,
) -> StepRecord {
    let host = ctx.plan.node(node).name.clone();
    let tag = match role {
        Role::Server => "server",
        Role::Client => "client",
        Role::Launcher => "mpirun",
    };
    let (status, error, so, se) = match out {
        Ok(o) => (
            Some(o.status),
            None,
            evidence.save(job, &format!("{host}.{tag}.stdout"), &o.stdout),
            evidence.save(job, &format!("{host}.{tag}.stderr"), &o.stderr),
        ),
        Err(e) => (None, Some(e.to_string()), None, None),
    };
    StepRecord {
        host,
        role,
        command: command.to_string(),
        script: script.to_string(),
        exit_status: status,
        error,
        started_unix_ms: started,
        finished_unix_ms: now_ms(),
        remote_started_unix_ms: None,
        stdout_file: so,
        stderr_file: se,
    }
}

/// A server's start command and what it answered: node, command, script, (sent, answered) in
/// unix ms, the answer.
type ServerStart = (
    NodeId,
    String,
    String,
    (u64, u64),
    Result<Output, TransportError>,
);

/// What a round's setup found, per job in `running` order.
struct RoundSetup {
    /// The counters before any byte of the round moved.
    before: HashMap<(NodeId, String), BTreeMap<String, u64>>,
    /// Each job's server starts.
    starts: Vec<Vec<ServerStart>>,
    /// For a job whose server started: its node and the readiness poll's answer.
    ready: Vec<Option<(NodeId, Result<Output, TransportError>)>>,
}

impl RoundSetup {
    /// Job `i` may run its clients: it has no server, or its server started and listens.
    fn up(&self, i: usize, r: &Running) -> bool {
        !r.cmds.steps.iter().any(|s| s.role == Role::Server)
            || (self.starts[i].iter().all(|rec| rec.4.is_ok())
                && matches!(&self.ready[i], Some((_, Ok(o))) if o.status == 0))
    }
}

/// The round's setup: the counters before, read while the servers start detached (a server only
/// listens until its client connects, so no byte of the round moves before every snapshot is
/// in), then each started server's readiness (it listens on its port, or it died).
async fn setup_round(
    ctx: &Ctx<'_>,
    running: &[Running<'_>],
    devices: &[(NodeId, String)],
    dir: &str,
) -> RoundSetup {
    let (before, starts) = tokio::join!(
        snapshot(ctx, devices),
        join_all(running.iter().map(|r| async move {
            let mut recs = Vec::new();
            for s in r.cmds.steps.iter().filter(|s| s.role == Role::Server) {
                let t0 = now_ms();
                let out = ctx.exec(s.node, &s.script, SHORT).await;
                recs.push((
                    s.node,
                    s.command.clone(),
                    s.script.clone(),
                    (t0, now_ms()),
                    out,
                ));
            }
            recs
        }))
    );
    let ready = join_all(running.iter().zip(&starts).map(|(r, recs)| async move {
        let server = r.cmds.steps.iter().find(|s| s.role == Role::Server)?;
        if recs.iter().any(|rec| rec.4.is_err()) {
            return None;
        }
        Some((
            server.node,
            ctx.exec(
                server.node,
                &wrap::ready(dir, &r.job.id, r.job.port, READY_LIMIT_S),
                Duration::from_secs(READY_LIMIT_S as u64 + 10),
            )
            .await,
        ))
    }))
    .await;
    RoundSetup {
        before,
        starts,
        ready,
    }
}

async fn run_round(
    ctx: &Ctx<'_>,
    round: &Round,
    total: usize,
    evidence: &mut Evidence,
) -> (Vec<JobResult>, RoundRecord) {
    let plan = ctx.plan;
    let started = now_ms();
    let expected = kinds::expected(plan, round);
    let dir_owned = remote_dir(&ctx.opts.run_id);
    let dir = dir_owned.as_str();
    let mut done: Vec<JobResult> = Vec::new();
    let mut running: Vec<Running> = Vec::new();
    let jobs: Vec<(usize, &Job)> = round
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| selected_job(plan, round, j, ctx.opts))
        .collect();
    ctx.emit(Event::RoundStart {
        index: round.index,
        total,
        name: round.name.clone(),
        jobs: jobs.len(),
    });
    for (i, job) in jobs {
        let nodes = job.nodes();
        if let Some(n) = nodes.iter().find(|n| ctx.unreachable.contains_key(n)) {
            let mut r = skipped(
                plan,
                round,
                job,
                format!("{} unreachable: {}", plan.node(*n).name, ctx.unreachable[n]),
            );
            r.status = JobStatus::Failed;
            r.verdicts.push(Verdict::check(
                gate_name(plan, round, job),
                Outcome::Fail,
                format!("{} is unreachable", plan.node(*n).name),
                Some(Trap::Unreachable),
            ));
            done.push(r);
            continue;
        }
        let test_block = job
            .ranks
            .as_ref()
            .and_then(|r| ctx.blocked_tests.get(&r.name));
        if let Some(reason) = job
            .resources
            .iter()
            .find_map(|e| ctx.blocked.get(e))
            .or(test_block)
        {
            done.push(skipped(plan, round, job, reason.clone()));
            continue;
        }
        match kinds::commands(plan, &ctx.renderer, &ctx.res, job, &ctx.opts.run_id) {
            Ok(cmds) if cmds.unresolved.is_empty() => running.push(Running {
                job,
                cmds,
                expected: expected.get(i).copied().flatten(),
                steps: Vec::new(),
                pgid: None,
                failure: None,
                client_out: None,
                server_log: None,
                tool_seconds: None,
                launched: None,
            }),
            Ok(cmds) => {
                let mut r = skipped(
                    plan,
                    round,
                    job,
                    format!("not discovered: {}", cmds.unresolved.join(" ")),
                );
                r.status = JobStatus::Failed;
                r.verdicts.push(Verdict::check(
                    gate_name(plan, round, job),
                    Outcome::Fail,
                    format!(
                        "values discovery could not find: {}",
                        cmds.unresolved.join(" ")
                    ),
                    Some(Trap::NoDevice),
                ));
                done.push(r);
            }
            Err(e) => {
                let mut r = skipped(plan, round, job, e.to_string());
                r.status = JobStatus::Failed;
                r.verdicts.push(Verdict::check(
                    gate_name(plan, round, job),
                    Outcome::Fail,
                    e.to_string(),
                    Some(Trap::ToolError),
                ));
                done.push(r);
            }
        }
    }

    // Two things run side by side until the release:
    // - the setup ([`setup_round`]): counters before, server starts, readiness;
    // - the staging: each job's first client (or mpirun launcher) has its remote shell started
    //   and waiting for one line of stdin.
    // When both are done, every client whose server is up is released with one byte; a client
    // whose server did not come up is withdrawn unrun (its shell reads EOF and exits).
    let all_devices: Vec<(NodeId, String)> =
        running.iter().flat_map(|r| job_devices(ctx, r)).collect();
    let setup = setup_round(ctx, &running, &all_devices, dir);
    let mut go_txs = Vec::new();
    let mut go_rxs = Vec::new();
    let mut arms = Vec::new();
    let mut armers = Vec::new();
    for _ in &running {
        let (tx, rx) = watch::channel(false);
        go_txs.push(tx);
        go_rxs.push(rx);
        let (tx, rx) = oneshot::channel::<()>();
        armers.push(tx);
        arms.push(rx);
    }
    let release_at: std::sync::OnceLock<(Instant, u64)> = std::sync::OnceLock::new();
    let release = async {
        let done = setup.await;
        // a dropped armer (the command failed before it was staged) counts as armed
        let _ = join_all(arms).await;
        let _ = release_at.set((Instant::now(), now_ms()));
        for (i, (r, go)) in running.iter().zip(go_txs).enumerate() {
            if done.up(i, r) {
                let _ = go.send(true);
            }
            // else dropped unsent: withdrawn
        }
        done
    };
    let launches = join_all(
        running
            .iter()
            .zip(armers)
            .zip(go_rxs)
            .map(|((r, armer), go)| {
                let release_at = &release_at;
                async move {
                    let mut recs = Vec::new();
                    let mut armer = Some(armer);
                    for s in r.cmds.steps.iter().filter(|s| s.role != Role::Server) {
                        let timeout = Duration::from_secs(s.timeout_s as u64 + 15);
                        let (t0, ms, out) = match armer.take() {
                            Some(a) => {
                                let out = ctx
                                    .exec_released(s.node, &s.script, timeout, a, go.clone())
                                    .await;
                                if matches!(out, Err(TransportError::Withdrawn { .. })) {
                                    // its server is not up: nothing of this job runs
                                    return recs;
                                }
                                // sent when released (a command that failed before could not be)
                                let (t0, ms) = release_at
                                    .get()
                                    .copied()
                                    .unwrap_or_else(|| (Instant::now(), now_ms()));
                                (t0, ms, out)
                            }
                            None => {
                                let (t0, ms) = (Instant::now(), now_ms());
                                (t0, ms, ctx.exec(s.node, &s.script, timeout).await)
                            }
                        };
                        recs.push((
                            s.node,
                            s.role,
                            s.command.clone(),
                            s.script.clone(),
                            ms,
                            t0,
                            t0.elapsed(),
                            out,
                        ));
                    }
                    recs
                }
            }),
    );
    let (
        launches,
        RoundSetup {
            before,
            starts,
            ready,
        },
    ) = tokio::join!(launches, release);
    for (r, recs) in running.iter_mut().zip(starts) {
        for (node, command, script, (t0, t1), out) in recs {
            if let Err(e) = &out {
                r.failure = Some(Verdict::check(
                    gate_name(plan, round, r.job),
                    Outcome::Fail,
                    format!("could not start the server: {e}"),
                    Some(Trap::Unreachable),
                ));
            }
            let mut rec = step_record(
                ctx,
                evidence,
                &r.job.id,
                node,
                Role::Server,
                &command,
                &script,
                t0,
                &out,
            );
            // recorded after the round: when the start itself answered
            rec.finished_unix_ms = t1;
            r.steps.push(rec);
        }
    }
    for (r, rd) in running.iter_mut().zip(ready) {
        let Some((node, out)) = rd else { continue };
        match out {
            Ok(o) if o.status == 0 => {
                r.pgid = o.stdout.trim().parse().ok().map(|p| (node, p));
            }
            other => {
                let log = ctx
                    .exec(node, &wrap::cat(dir, &format!("{}.log", r.job.id)), SHORT)
                    .await
                    .map(|o| o.stdout)
                    .unwrap_or_default();
                let pg = ctx
                    .exec(node, &wrap::cat(dir, &format!("{}.pgid", r.job.id)), SHORT)
                    .await
                    .ok()
                    .and_then(|o| o.stdout.trim().parse().ok());
                r.pgid = pg.map(|p| (node, p));
                let why = match other {
                    Ok(o) if o.status == 3 => "the server exited before listening".to_string(),
                    Ok(o) => format!(
                        "the server did not listen on port {} (poll exit {})",
                        r.job.port, o.status
                    ),
                    Err(e) => e.to_string(),
                };
                r.server_log = Some(log);
                r.failure = Some(Verdict::check(
                    gate_name(plan, round, r.job),
                    Outcome::Fail,
                    why,
                    Some(Trap::ServerGoneOrFirewall),
                ));
            }
        }
    }
    let mut launch_ms: Vec<u64> = Vec::new();
    let mut remote_ms: Vec<Option<f64>> = Vec::new();
    for (r, recs) in running.iter_mut().zip(launches) {
        for (node, role, command, script, ms, t0, took, mut out) in recs {
            launch_ms.push(ms);
            let mut remote = None;
            if let Ok(o) = out.as_mut() {
                let (start, rest) = wrap::take_start_mark(&o.stderr);
                remote = start;
                o.stderr = rest;
            }
            remote_ms.push(remote);
            r.launched = Some(t0);
            r.tool_seconds = Some(took.as_secs_f64());
            let mut rec = step_record(
                ctx, evidence, &r.job.id, node, role, &command, &script, ms, &out,
            );
            rec.remote_started_unix_ms = remote;
            r.steps.push(rec);
            match out {
                Ok(o) => {
                    if o.status == 124 || o.status == 137 {
                        r.failure.get_or_insert(Verdict::check(
                            gate_name(plan, round, r.job),
                            Outcome::Fail,
                            format!(
                                "no result within {} s: killed by the remote timeout",
                                r.cmds.steps.iter().map(|s| s.timeout_s).max().unwrap_or(0)
                            ),
                            Some(Trap::Timeout),
                        ));
                    }
                    r.client_out = Some(o);
                }
                Err(e) => {
                    let trap = match e {
                        TransportError::Timeout { .. } => Trap::Timeout,
                        _ => Trap::Unreachable,
                    };
                    r.failure.get_or_insert(Verdict::check(
                        gate_name(plan, round, r.job),
                        Outcome::Fail,
                        e.to_string(),
                        Some(trap),
                    ));
                }
            }
        }
    }

    // per server: its output, and kill exactly the group we started and check it is gone (the
    // log is a file: the kill does not take it, so both go at once); the counters after are
    // read meanwhile (every client has exited: nothing moves any more)
    let after_devices = all_devices.clone();
    let (logs_kills, after) = tokio::join!(
        join_all(running.iter().map(|r| async move {
            let log = async {
                match (r.pgid, &r.server_log) {
                    (Some((node, _)), None) => ctx
                        .exec(node, &wrap::cat(dir, &format!("{}.log", r.job.id)), SHORT)
                        .await
                        .ok()
                        .map(|o| o.stdout),
                    _ => None,
                }
            };
            let kill = async {
                match r.pgid {
                    Some((node, pgid)) => {
                        Some(ctx.exec(node, &wrap::kill_group(pgid), SHORT).await)
                    }
                    None => None,
                }
            };
            tokio::join!(log, kill)
        })),
        snapshot(ctx, &after_devices)
    );
    let (logs, kills): (Vec<_>, Vec<_>) = logs_kills.into_iter().unzip();
    for (r, l) in running.iter_mut().zip(logs) {
        if l.is_some() {
            r.server_log = l;
        }
        if let (Some(log), Some(server)) = (
            &r.server_log,
            r.cmds.steps.iter().find(|s| s.role == Role::Server),
        ) {
            evidence.save(
                &r.job.id,
                &format!("{}.server.log", plan.node(server.node).name),
                log,
            );
        }
    }
    for (r, k) in running.iter_mut().zip(kills) {
        if let Some(Ok(o)) = k
            && o.status != 0
        {
            r.failure.get_or_insert(Verdict::check(
                format!("{} cleanup", gate_name(plan, round, r.job)),
                Outcome::Warn,
                "the server's process group survived SIGKILL",
                Some(Trap::ToolError),
            ));
        }
    }

    for r in running {
        let res = judge(ctx, round, r, &before, &after);
        done.push(res);
    }
    done.sort_by(|a, b| a.job.cmp(&b.job));
    if let Some(kind) = kinds::get(round.kind) {
        kind.judge_round(plan, round, &mut done);
    }
    for d in &done {
        evidence.append(d);
        ctx.emit(Event::JobDone(Box::new(d.clone())));
    }
    let remote: Option<Vec<f64>> = remote_ms.into_iter().collect();
    let (skew, source) = match remote {
        Some(v) if v.len() > 1 => {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
            (
                Some(((hi - lo) * 1000.0).round() / 1000.0),
                Some("remote".to_string()),
            )
        }
        _ => match (launch_ms.iter().min(), launch_ms.iter().max()) {
            (Some(a), Some(b)) if launch_ms.len() > 1 => {
                (Some((*b - *a) as f64), Some("sent".to_string()))
            }
            _ => (None, None),
        },
    };
    let record = RoundRecord {
        index: round.index,
        name: round.name.clone(),
        jobs: done.iter().map(|d| d.job.clone()).collect(),
        started_unix_ms: started,
        finished_unix_ms: now_ms(),
        launch_skew_ms: skew,
        launch_skew_source: source,
        longest_tool_s: done
            .iter()
            .filter_map(|d| d.tool_seconds)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
    };
    (done, record)
}

fn judge(
    ctx: &Ctx,
    round: &Round,
    r: Running,
    before: &HashMap<(NodeId, String), BTreeMap<String, u64>>,
    after: &HashMap<(NodeId, String), BTreeMap<String, u64>>,
) -> JobResult {
    let plan = ctx.plan;
    let job = r.job;
    let gate = gate_name(plan, round, job);
    // counter deltas
    let mut counters = Vec::new();
    for (node, dev) in job_devices(ctx, &r) {
        let (Some(b), Some(a)) = (
            before.get(&(node, dev.clone())),
            after.get(&(node, dev.clone())),
        ) else {
            continue;
        };
        for (k, av) in a {
            if let Some(bv) = b.get(k)
                && (av != bv
                    || matches!(
                        k.as_str(),
                        "port_xmit_data" | "port_rcv_data" | "packet_seq_err"
                    ))
            {
                counters.push(CounterDelta {
                    host: plan.node(node).name.clone(),
                    device: dev.clone(),
                    counter: k.clone(),
                    before: *bv,
                    after: *av,
                    delta: *av as i64 - *bv as i64,
                });
            }
        }
    }
    let seq: i64 = counters
        .iter()
        .filter(|c| c.counter == "packet_seq_err")
        .map(|c| c.delta)
        .sum();
    let seq_known = counters.iter().any(|c| c.counter == "packet_seq_err");
    let client_text = r
        .client_out
        .as_ref()
        .map(|o| format!("{}{}", o.stdout, o.stderr))
        .unwrap_or_default();
    let Some(kind) = kinds::get(job.kind) else {
        return skipped(plan, round, job, format!("no test kind `{}`", job.kind));
    };
    let tool = kind.tool();
    let mut parsed = parse::parse(tool, &client_text);
    // a client that never got a result may still say why on the server side
    if parsed.error().is_none()
        && parsed.status() != Status::Ok
        && let Some(log) = &r.server_log
    {
        let sp = parse::parse(tool, log);
        if sp.error().is_some() {
            parsed = sp;
        }
    }
    let mut verdicts = Vec::new();
    let cctx = Context {
        gate: gate.clone(),
        expected_gbps: r.expected,
        standalone_gbps: capacity::standalone(plan, job),
        crosses_isl: job
            .pair
            .as_ref()
            .is_some_and(|p| p.path.isl_hops().next().is_some()),
        seq_err_delta: seq_known.then_some(seq),
        fabric_bytes_per_rank: r
            .cmds
            .ranks
            .iter()
            .map(|k| {
                let host = plan.node(k.node).name.clone();
                let moved: Option<i64> = {
                    let ds: Vec<i64> = counters
                        .iter()
                        .filter(|c| {
                            c.host == host
                                && (c.counter == "port_xmit_data" || c.counter == "port_rcv_data")
                        })
                        .map(|c| c.delta)
                        .collect();
                    if ds.is_empty() {
                        None
                    } else {
                        Some(ds.iter().sum())
                    }
                };
                (host, moved)
            })
            .collect(),
        nccl_hca: r.cmds.nccl_env.get("NCCL_IB_HCA").cloned(),
        cabled_devices: r
            .cmds
            .ranks
            .iter()
            .flat_map(|k| k.devices.clone())
            .collect(),
    };
    if let Some(f) = &r.failure {
        // the tool's own error is more specific than "server did not listen"
        if let Some(v) = classify::error_verdict(&gate, parsed.error()) {
            let mut v = v;
            if f.trap == Some(Trap::ServerGoneOrFirewall) && v.trap == Some(Trap::ToolError) {
                v = v.with_trap(Trap::ServerGoneOrFirewall);
            }
            verdicts.push(v);
        } else {
            verdicts.push(f.clone());
        }
    } else {
        verdicts.extend(kind.judge(plan, job, &parsed, &cctx));
    }
    let measured = verdicts.iter().any(|v| v.measured.is_some()) || kind.measured(&parsed);
    JobResult {
        format_version: RESULTS_FORMAT_VERSION,
        job: job.id.clone(),
        kind: job.kind.name().into(),
        round: round.index,
        round_name: round.name.clone(),
        label: job.label(plan),
        hosts: job
            .nodes()
            .iter()
            .map(|n| plan.node(*n).name.clone())
            .collect(),
        expected_gbps: r.expected,
        status: if measured {
            JobStatus::Measured
        } else {
            JobStatus::Failed
        },
        reason: r.failure.as_ref().map(|f| f.detail.clone()),
        steps: r.steps,
        parsed: Some(parsed.to_json(tool)),
        counters,
        verdicts,
        tool_seconds: r.tool_seconds,
    }
}
