//! One round, the way a careful engineer runs it by hand: snapshot the counters; start every
//! server (a job of its node's session that runs until stopped); wait until each listens
//! (polling, never a fixed sleep); release every client together; collect; stop exactly the
//! servers that were started (by what their sessions recorded); snapshot the counters again;
//! judge, with how each tool ended and what it left running. One job failing never stops its
//! round; a lost host fails its own jobs.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::{oneshot, watch};

use super::ctx::{Ctx, SHORT};
use super::ending::{ending, left_running};
use super::judge::{
    Collected, Counters, counter_deltas, failed, gate_name, job_devices, judge, skipped,
};
use super::phases::{Anchor, AttemptTimes, ClientRun, round_phases};
use crate::discover;
use crate::exec::evidence::Captured;
use crate::exec::launch::{Readiness, ServerHandle};
use crate::exec::transport::{Output, TransportError};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::kinds;
use crate::plan::NodeId;
use crate::render::job::{JobCommands, Role, Step};
use crate::render::wrap;
use crate::results::Event;
use crate::results::{JobResult, RoundRecord, StepRecord, now_ms};
use crate::schedule::{Job, Round};

/// A job of the round while it runs.
struct Running<'j> {
    c: Collected<'j>,
    /// The server's node and what stops it.
    server: Option<(NodeId, ServerHandle)>,
}

/// A server's start: where, what, when it was sent and answered, and what identifies it.
struct ServerStart {
    step: Step,
    sent_ms: u64,
    answered_ms: u64,
    answered: Instant,
    answer: Result<ServerHandle, TransportError>,
}

/// A client's (or MPI launcher's) run.
struct Launched {
    step: Step,
    /// When it was sent (released), unix ms.
    sent_ms: u64,
    /// The same, on the monotonic clock.
    sent: Instant,
    /// When its exit status (or error) arrived.
    ended: Instant,
    took: Duration,
    out: Result<Output, TransportError>,
}

/// What a round's setup found, per job in `running` order.
struct RoundSetup {
    /// The counters before any byte of the round moved.
    before: Counters,
    starts: Vec<Vec<ServerStart>>,
    /// For a job whose server started: its node and whether it listens.
    ready: Vec<Option<(NodeId, Readiness)>>,
    /// When the counters before were in.
    counted: Instant,
    /// When the last readiness poll was over (a server started); `None` when none did.
    ready_at: Option<Instant>,
}

impl RoundSetup {
    /// Job `i` may run its clients: it has no server, or its server started and listens.
    fn up(&self, i: usize, r: &Running) -> bool {
        !r.c.cmds.steps.iter().any(|s| s.role == Role::Server)
            || (self.starts[i].iter().all(|s| s.answer.is_ok())
                && matches!(&self.ready[i], Some((_, Readiness::Ready(..)))))
    }
}

fn servers<'a>(r: &'a Running) -> impl Iterator<Item = &'a Step> {
    r.c.cmds.steps.iter().filter(|s| s.role == Role::Server)
}

/// Render each selected job's commands; a job that cannot run (its host unreachable, a
/// preflight check failed, a value not discovered) is decided here.
fn prepare<'r>(
    ctx: &Ctx<'_>,
    round: &'r Round,
    selected: impl Fn(&Job) -> bool,
) -> (Vec<JobResult>, Vec<Running<'r>>) {
    let plan = ctx.plan;
    // a half whose PCIe link carries less than its rate is expected at what it carries
    let expected =
        crate::capacity::capped(plan, round, kinds::expected(plan, round), &ctx.pcie_caps);
    let mut done = Vec::new();
    let mut running = Vec::new();
    for (i, job) in round.jobs.iter().enumerate().filter(|(_, j)| selected(j)) {
        let gate = gate_name(plan, round, job);
        // one root cause, one FAIL: `reach NODE` failed already; this job is skipped for it
        if let Some(n) = job.nodes().iter().find(|n| ctx.unreachable.contains_key(n)) {
            let name = &plan.node(*n).name;
            let gate = ctx
                .out_by
                .get(n)
                .cloned()
                .unwrap_or_else(|| format!("reach {name}"));
            done.push(skipped(
                plan,
                round,
                job,
                format!("{name} is unreachable (`{gate}` failed)"),
            ));
            continue;
        }
        let test_block = job
            .ranks
            .as_ref()
            .and_then(|r| ctx.blocked_tests.get(&r.name));
        let isl_block = || {
            ctx.blocked_isls.iter().find_map(|(isl, why)| {
                let crosses = match (&job.pair, &job.ranks) {
                    (Some(p), _) => p.path.isl_hops().any(|(x, _)| x == *isl),
                    (None, Some(r)) => ctx.ranks_cross(&r.nodes, *isl),
                    (None, None) => false,
                };
                crosses.then_some(why)
            })
        };
        if let Some(reason) = job
            .resources
            .iter()
            .find_map(|e| ctx.blocked.get(e))
            .or(test_block)
            .or_else(isl_block)
        {
            done.push(skipped(plan, round, job, reason.clone()));
            continue;
        }
        let style = ctx.launcher.style();
        match kinds::commands(plan, &ctx.renderer, style, &ctx.res, job) {
            Ok(cmds) if cmds.unresolved.is_empty() => running.push(Running {
                c: Collected::new(job, 1, cmds, expected.get(i).copied().flatten()),
                server: None,
            }),
            Ok(cmds) => done.push(failed(
                plan,
                round,
                job,
                format!("not discovered: {}", cmds.unresolved.join(" ")),
                Verdict::check(
                    gate,
                    Outcome::Fail,
                    format!(
                        "values discovery could not find: {}",
                        cmds.unresolved.join(" ")
                    ),
                    Some(Trap::NoDevice),
                ),
            )),
            Err(e) => done.push(failed(
                plan,
                round,
                job,
                e.to_string(),
                Verdict::check(gate, Outcome::Fail, e.to_string(), Some(Trap::ToolError)),
            )),
        }
    }
    (done, running)
}

/// Read the counters of `devices`, one script per host, all hosts at once.
async fn snapshot(ctx: &Ctx<'_>, devices: &[(NodeId, String)]) -> Counters {
    let mut by_host: BTreeMap<NodeId, Vec<String>> = BTreeMap::new();
    for (n, d) in devices {
        if crate::plan::validate::is_safe_ifname(d) {
            by_host.entry(*n).or_default().push(d.clone());
        }
    }
    let outs = join_all(by_host.iter().map(|(n, devs)| async move {
        (
            *n,
            ctx.exec_oneshot(*n, &discover::counters_script(devs), SHORT)
                .await,
        )
    }))
    .await;
    let mut out = Counters::new();
    for (n, o) in outs {
        if let Ok(o) = o {
            for d in discover::probe::parse(&o.stdout).devices {
                out.insert((n, d.name.clone()), d.counters);
            }
        }
    }
    out
}

/// The round's setup: the counters before, read while the servers start (a server only
/// listens until its client connects, so no byte of the round moves before every snapshot is
/// in), and each started server's readiness (it listens on its port, or it died), polled as soon
/// as its own start answered: neither the counters nor another job's server is waited for (the
/// poll reads `/proc/net/tcp`, it never connects).
async fn setup(ctx: &Ctx<'_>, running: &[Running<'_>], devices: &[(NodeId, String)]) -> RoundSetup {
    let ((before, counted), jobs) = tokio::join!(
        async { (snapshot(ctx, devices).await, Instant::now()) },
        join_all(running.iter().map(|r| async move {
            let mut recs = Vec::new();
            for s in servers(r) {
                let sent_ms = now_ms();
                let answer = ctx.start(s.node, &r.c.job.id, &s.script).await;
                recs.push(ServerStart {
                    step: s.clone(),
                    sent_ms,
                    answered_ms: now_ms(),
                    answered: Instant::now(),
                    answer,
                });
            }
            let ready = match recs.first() {
                Some(ServerStart {
                    step,
                    answer: Ok(handle),
                    ..
                }) if recs.iter().all(|s| s.answer.is_ok()) => Some((
                    step.node,
                    ctx.ready(step.node, handle, r.c.job.port).await,
                    Instant::now(),
                )),
                _ => None,
            };
            (recs, ready)
        }))
    );
    let mut starts = Vec::new();
    let mut ready = Vec::new();
    let mut ready_at: Option<Instant> = None;
    for (recs, rd) in jobs {
        starts.push(recs);
        ready.push(rd.map(|(node, readiness, at)| {
            ready_at = Some(ready_at.map_or(at, |t| t.max(at)));
            (node, readiness)
        }));
    }
    RoundSetup {
        before,
        starts,
        ready,
        counted,
        ready_at,
    }
}

/// Two things run side by side until the release: the setup ([`setup`]) and the staging (each
/// job's first client, or MPI launcher, has its command started and waiting). When both are
/// done, every client whose server is up is released at once; a client whose server did not come
/// up is withdrawn unrun.
/// Returns the setup, the launches, when every client was staged and when the release was
/// decided.
async fn start_and_release(
    ctx: &Ctx<'_>,
    running: &[Running<'_>],
    devices: &[(NodeId, String)],
) -> (RoundSetup, Vec<Vec<Launched>>, Instant, Instant) {
    let mut go_txs = Vec::new();
    let mut go_rxs = Vec::new();
    let mut arms = Vec::new();
    let mut armers = Vec::new();
    for _ in running {
        let (tx, rx) = watch::channel(false);
        go_txs.push(tx);
        go_rxs.push(rx);
        let (tx, rx) = oneshot::channel::<()>();
        armers.push(tx);
        arms.push(rx);
    }
    let release_at: OnceLock<(Instant, u64)> = OnceLock::new();
    let release = async {
        let (set, armed) = tokio::join!(setup(ctx, running, devices), async {
            // a dropped armer (the command failed before it was staged) counts as armed
            let _ = join_all(arms).await;
            Instant::now()
        });
        let decided = Instant::now();
        let _ = release_at.set((decided, now_ms()));
        for (i, (r, go)) in running.iter().zip(go_txs).enumerate() {
            if set.up(i, r) {
                let _ = go.send(true);
            }
            // else dropped unsent: withdrawn
        }
        (set, armed, decided)
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
                    for s in r.c.cmds.steps.iter().filter(|s| s.role != Role::Server) {
                        let timeout = Duration::from_secs(u64::from(s.timeout_s) + 15);
                        let (sent, sent_ms, out) = match armer.take() {
                            Some(a) => {
                                let out = ctx
                                    .exec_released(s.node, &s.script, timeout, a, go.clone())
                                    .await;
                                if matches!(out, Err(TransportError::Withdrawn { .. })) {
                                    // its server is not up: nothing of this job runs
                                    return recs;
                                }
                                // sent when released (a command that failed before could not be)
                                let (t, ms) = release_at
                                    .get()
                                    .copied()
                                    .unwrap_or_else(|| (Instant::now(), now_ms()));
                                (t, ms, out)
                            }
                            None => {
                                let (t, ms) = (Instant::now(), now_ms());
                                (t, ms, ctx.exec(s.node, &s.script, timeout).await)
                            }
                        };
                        let ended = Instant::now();
                        recs.push(Launched {
                            step: s.clone(),
                            sent_ms,
                            sent,
                            ended,
                            took: ended.saturating_duration_since(sent),
                            out,
                        });
                    }
                    recs
                }
            }),
    );
    let (launches, (set, armed, decided)) = tokio::join!(launches, release);
    (set, launches, armed, decided)
}

/// The record of one step of an attempt; its outputs are captured beside it (a repeated job
/// keeps every attempt's), and the file names are set once the job is judged and they are kept.
fn step_record(
    ctx: &Ctx,
    c: &mut Collected<'_>,
    step: &Step,
    started: u64,
    out: &Result<Output, TransportError>,
) -> StepRecord {
    let mut rec = StepRecord {
        attempt: c.attempt,
        host: ctx.plan.node(step.node).name.clone(),
        role: step.role,
        command: step.command.clone(),
        script: step.script.clone(),
        exit_status: None,
        error: None,
        started_unix_ms: started,
        finished_unix_ms: now_ms(),
        remote_started_unix_ms: None,
        stdout_file: None,
        stderr_file: None,
    };
    match out {
        Ok(o) => {
            rec.exit_status = Some(o.status);
            let [so, se] = rec.output_names();
            c.outputs.push(Captured {
                name: so,
                text: o.stdout.clone(),
            });
            c.outputs.push(Captured {
                name: se,
                text: o.stderr.clone(),
            });
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    rec
}

/// The record of a server's start: how it ended and its log are filled in when it is stopped.
fn server_record(ctx: &Ctx, c: &Collected<'_>, s: &ServerStart) -> StepRecord {
    StepRecord {
        attempt: c.attempt,
        host: ctx.plan.node(s.step.node).name.clone(),
        role: s.step.role,
        command: s.step.command.clone(),
        script: s.step.script.clone(),
        exit_status: None,
        error: None,
        started_unix_ms: s.sent_ms,
        finished_unix_ms: s.answered_ms,
        remote_started_unix_ms: s.answer.as_ref().ok().and_then(|h| h.started_unix_ms),
        stdout_file: None,
        stderr_file: None,
    }
}

/// What the server starts and readiness polls said, into each job.
fn record_setup(
    ctx: &Ctx<'_>,
    round: &Round,
    running: &mut [Running<'_>],
    starts: Vec<Vec<ServerStart>>,
    ready: Vec<Option<(NodeId, Readiness)>>,
) {
    for (r, recs) in running.iter_mut().zip(starts) {
        for s in recs {
            let mut rec = server_record(ctx, &r.c, &s);
            match s.answer {
                Ok(handle) => r.server = Some((s.step.node, handle)),
                Err(e) => {
                    let trap = e.trap().unwrap_or(Trap::Unreachable);
                    r.c.failure = Some(
                        Verdict::check(
                            gate_name(ctx.plan, round, r.c.job),
                            Outcome::Fail,
                            format!("could not start the server: {e}"),
                            Some(trap),
                        )
                        .about(vec![ctx.launcher.reach_part(e.host(), trap)]),
                    );
                    rec.error = Some(e.to_string());
                }
            }
            r.c.steps.push(rec);
        }
    }
    for (r, rd) in running.iter_mut().zip(ready) {
        // a server that is not ready is stopped like any other: that gives its log
        if let Some((_, Readiness::NotReady { why, trap })) = rd {
            r.c.failure = Some(Verdict::check(
                gate_name(ctx.plan, round, r.c.job),
                Outcome::Fail,
                why,
                Some(trap.unwrap_or(Trap::ServerGoneOrFirewall)),
            ));
        }
    }
}

/// What the clients said, into each job; the launch times for the round's skew, and each client's
/// run from `anchor` (the attempt's start).
fn record_launches(
    ctx: &Ctx<'_>,
    round: &Round,
    running: &mut [Running<'_>],
    launches: Vec<Vec<Launched>>,
    anchor: &Anchor,
) -> (Vec<u64>, Vec<Option<f64>>, Vec<ClientRun>) {
    let mut sent_ms = Vec::new();
    let mut remote_ms = Vec::new();
    let mut runs = Vec::new();
    for (r, recs) in running.iter_mut().zip(launches) {
        for mut l in recs {
            sent_ms.push(l.sent_ms);
            let mut remote = None;
            if let Ok(o) = l.out.as_mut() {
                let (start, rest) = wrap::take_start_mark(&o.stderr);
                remote = start;
                o.stderr = rest;
            }
            remote_ms.push(remote);
            runs.push(ClientRun {
                sent: anchor.ms(l.sent),
                mark: remote.map(|m| anchor.mark(m)),
                end: anchor.ms(l.ended),
            });
            r.c.tool_seconds = Some(l.took.as_secs_f64());
            let mut rec = step_record(ctx, &mut r.c, &l.step, l.sent_ms, &l.out);
            rec.remote_started_unix_ms = remote;
            r.c.steps.push(rec);
            let gate = gate_name(ctx.plan, round, r.c.job);
            match l.out {
                Ok(o) => {
                    if let Some(v) = ending(
                        &gate,
                        &l.step.host,
                        (o.status, o.bound_reached),
                        l.took,
                        l.step.timeout_s,
                    ) {
                        r.c.ended.get_or_insert(v);
                    }
                    r.c.extra.extend(left_running(&gate, &l.step.host, &o.left));
                    r.c.client_out = Some(o);
                }
                Err(e) => {
                    let trap = match e {
                        TransportError::Timeout { .. } => Trap::Timeout,
                        _ => e.trap().unwrap_or(Trap::Unreachable),
                    };
                    let v = Verdict::check(gate, Outcome::Fail, e.to_string(), Some(trap));
                    // a lost connection is the host's; a timeout is the job's own path
                    let v = if trap == Trap::Timeout {
                        v
                    } else {
                        v.about(vec![ctx.launcher.reach_part(e.host(), trap)])
                    };
                    r.c.failure.get_or_insert(v);
                }
            }
        }
    }
    (sent_ms, remote_ms, runs)
}

/// Stop every server that was started (exactly it) and collect its output, while the counters
/// after are read (every client has exited: nothing moves any more). Returns the counters and
/// how long the stops and the counters took, ms.
async fn teardown(
    ctx: &Ctx<'_>,
    round: &Round,
    running: &mut [Running<'_>],
    devices: &[(NodeId, String)],
) -> (Counters, f64, f64) {
    let t = Anchor::now();
    let ((stops, stopped_at), (after, counted)) = tokio::join!(
        async {
            let stops = join_all(running.iter().map(|r| async move {
                match &r.server {
                    Some((node, h)) => Some((*node, ctx.stop(*node, h).await)),
                    None => None,
                }
            }))
            .await;
            (stops, Instant::now())
        },
        async { (snapshot(ctx, devices).await, Instant::now()) }
    );
    for (r, stopped) in running.iter_mut().zip(stops) {
        let Some((node, stopped)) = stopped else {
            continue;
        };
        r.server = None;
        let host = ctx.plan.node(node).name.clone();
        let gate = gate_name(ctx.plan, round, r.c.job);
        let Some(rec) =
            r.c.steps
                .iter_mut()
                .rev()
                .find(|s| s.role == Role::Server && s.host == host)
        else {
            continue;
        };
        rec.exit_status = stopped.output.as_ref().map(|o| o.status);
        rec.error = stopped.error.as_ref().map(|e| e.to_string());
        let Some(out) = stopped.output else { continue };
        // its streams are its log, kept as the step's own outputs
        let [so, se] = rec.output_names();
        r.c.extra.extend(left_running(&gate, &host, &out.left));
        r.c.server_log = Some(format!("{}{}", out.stdout, out.stderr));
        r.c.outputs.push(Captured {
            name: so,
            text: out.stdout,
        });
        r.c.outputs.push(Captured {
            name: se,
            text: out.stderr,
        });
    }
    (after, t.ms(stopped_at), t.ms(counted))
}

/// The spread of the clients' start times, ms: from the hosts' own clocks when every client
/// reported its start, else from when the commands were sent.
fn launch_skew(sent_ms: &[u64], remote_ms: Vec<Option<f64>>) -> (Option<f64>, Option<String>) {
    let remote: Option<Vec<f64>> = remote_ms.into_iter().collect();
    match remote {
        Some(v) if v.len() > 1 => {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
            (
                Some(((hi - lo) * 1000.0).round() / 1000.0),
                Some("remote".to_string()),
            )
        }
        _ => match (sent_ms.iter().min(), sent_ms.iter().max()) {
            (Some(a), Some(b)) if sent_ms.len() > 1 => {
                (Some(b.saturating_sub(*a) as f64), Some("sent".to_string()))
            }
            _ => (None, None),
        },
    }
}

/// The launch times of an attempt (for the round's skew) and where its time went.
struct AttemptDone {
    sent_ms: Vec<u64>,
    remote_ms: Vec<Option<f64>>,
    times: AttemptTimes,
}

/// One attempt of the round's jobs (all of them the first time; then those whose gate repeats):
/// servers, release, teardown, the counters that moved.
async fn attempt(ctx: &Ctx<'_>, round: &Round, running: &mut [Running<'_>]) -> AttemptDone {
    let anchor = Anchor::now();
    let devices: Vec<(NodeId, String)> = running
        .iter()
        .flat_map(|r| job_devices(&ctx.res, r.c.job, &r.c.cmds))
        .collect();
    let (set, launches, armed, decided) = start_and_release(ctx, running, &devices).await;
    let answered = set.starts.iter().flatten().map(|s| s.answered).max();
    // the servers' own start-up (started .. seen listening, by their hosts' clocks): the longest;
    // unknown when a ready server's launcher did not say
    let server_tool_start = set
        .ready
        .iter()
        .flatten()
        .filter_map(|(_, rd)| match rd {
            Readiness::Ready(marks) => {
                Some(marks.map(|m| (m.listening_unix_ms - m.started_unix_ms).max(0.0)))
            }
            Readiness::NotReady { .. } => None,
        })
        .try_fold(0.0, |m: f64, v| v.map(|v| m.max(v)));
    let mut times = AttemptTimes {
        server_tool_start,
        counters_before: anchor.ms(set.counted),
        servers_answered: answered.map(|t| anchor.ms(t)),
        servers_ready: set.ready_at.map(|t| anchor.ms(t)),
        armed: anchor.ms(armed),
        release: anchor.ms(decided),
        ..AttemptTimes::default()
    };
    record_setup(ctx, round, running, set.starts, set.ready);
    let (sent_ms, remote_ms, clients) = record_launches(ctx, round, running, launches, &anchor);
    times.clients = clients;
    let (after, stops, counted) = teardown(ctx, round, running, &devices).await;
    times.stop_and_logs = stops;
    times.counters_after = counted;
    for r in running.iter_mut() {
        let devs = job_devices(&ctx.res, r.c.job, &r.c.cmds);
        r.c.counters = counter_deltas(ctx.plan, r.c.attempt, &devs, &set.before, &after);
    }
    AttemptDone {
        sent_ms,
        remote_ms,
        times,
    }
}

/// The collection for the attempt after `c`'s: the same job, nothing collected yet, and its
/// commands again when it runs `again`; none after the last (an NCCL job's commands are large).
fn next_attempt<'j>(c: &Collected<'j>, again: bool) -> Collected<'j> {
    let cmds = if again {
        c.cmds.clone()
    } else {
        JobCommands {
            job: c.cmds.job.clone(),
            steps: Vec::new(),
            unresolved: Vec::new(),
            ranks: Vec::new(),
            nccl_env: BTreeMap::new(),
            notes: Vec::new(),
        }
    };
    Collected::new(c.job, c.attempt + 1, cmds, c.expected)
}

/// The record of a round whose jobs are `done`, started at `started` (unix ms), with its
/// launch skew and where the skew was read; its phases are added by the caller.
fn round_record(
    round: &Round,
    done: &[JobResult],
    started: u64,
    (skew, source): (Option<f64>, Option<String>),
) -> RoundRecord {
    RoundRecord {
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
        phases: None,
    }
}

/// Run one round to its jobs' results and its record. A job whose main gate has `attempts = N`
/// runs N times in its round, a fresh server each time, with the others of the round that
/// repeat too.
///
/// Each job's outputs come back beside its result, by job id, for the runner to keep
/// ([`crate::exec::evidence::Evidence::keep`]) once every verdict of the round is in.
pub(crate) async fn run_round(
    ctx: &Ctx<'_>,
    round: &Round,
    total: usize,
    selected: impl Fn(&Job) -> bool,
) -> (Vec<JobResult>, HashMap<String, Vec<Captured>>, RoundRecord) {
    let plan = ctx.plan;
    let started = now_ms();
    let clock = Anchor::now();
    let (mut done, running) = prepare(ctx, round, &selected);
    let prepared = clock.ms(Instant::now());
    ctx.emit(Event::RoundStart {
        index: round.index,
        total,
        name: round.name.clone(),
        jobs: round.jobs.iter().filter(|j| selected(j)).count(),
    });
    let wanted: Vec<u32> = running
        .iter()
        .map(|r| kinds::attempts(plan, r.c.job.kind))
        .collect();
    let most = wanted.iter().copied().max().unwrap_or(1);
    let mut finished: Vec<Vec<Collected>> = running.iter().map(|_| Vec::new()).collect();
    let mut jobs: Vec<Option<Running>> = running.into_iter().map(Some).collect();
    let (mut sent_ms, mut remote_ms) = (Vec::new(), Vec::new());
    let mut times = Vec::new();
    for n in 1..=most {
        let idx: Vec<usize> = (0..jobs.len()).filter(|i| wanted[*i] >= n).collect();
        let mut now: Vec<Running> = idx.iter().filter_map(|i| jobs[*i].take()).collect();
        let a = attempt(ctx, round, &mut now).await;
        times.push(a.times);
        if n == 1 {
            (sent_ms, remote_ms) = (a.sent_ms, a.remote_ms);
        }
        for (i, mut r) in idx.into_iter().zip(now) {
            let next = next_attempt(&r.c, n < wanted[i]);
            finished[i].push(std::mem::replace(&mut r.c, next));
            r.server = None;
            jobs[i] = Some(r);
        }
    }
    let judging = Instant::now();
    let mut outputs = HashMap::new();
    for (mut attempts, job) in finished.into_iter().zip(jobs) {
        if let Some(job) = job {
            let outs: Vec<Captured> = attempts
                .iter_mut()
                .flat_map(|c| std::mem::take(&mut c.outputs))
                .collect();
            outputs.insert(job.c.job.id.clone(), outs);
            done.push(judge(plan, round, job.c.job, attempts));
        }
    }
    done.sort_by(|a, b| a.job.cmp(&b.job));
    if let Some(kind) = kinds::get(round.kind) {
        kind.judge_round(plan, round, &mut done);
    }
    super::physical::follow_pcie(ctx, round, &mut done);
    let judged = judging.elapsed().as_secs_f64() * 1000.0;
    let mut record = round_record(round, &done, started, launch_skew(&sent_ms, remote_ms));
    // the last instant of the round: its wall ends here
    record.phases = Some(round_phases(
        &times,
        prepared,
        judged,
        clock.ms(Instant::now()),
    ));
    (done, outputs, record)
}
