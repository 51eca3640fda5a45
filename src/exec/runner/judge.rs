//! From what a round's jobs left behind to their results: counter deltas, the tool's output read
//! by its kind's parser, the verdicts of its kind's classifier. Synchronous and pure: tested
//! without a runtime.

use std::collections::{BTreeMap, HashMap};

use crate::capacity;
use crate::exec::evidence::Captured;
use crate::exec::transport::Output;
use crate::gate::classify::{self, Context};
use crate::gate::judge::Outcome;
use crate::gate::judge::Verdict;
use crate::gate::trap::Trap;
use crate::kinds::{self, TestKind};
use crate::parse::{self, Parsed, Status};
use crate::plan::{Endpoint, NodeId, Plan};
use crate::render::job::{JobCommands, Resolution};
use crate::results::{
    Attempt, CounterDelta, JobResult, JobStatus, RESULTS_FORMAT_VERSION, StepRecord,
};
use crate::schedule::{Job, Round};

/// Counters per (node, device), as a snapshot read them.
pub type Counters = HashMap<(NodeId, String), BTreeMap<String, u64>>;

/// Everything one attempt of a job left behind.
#[derive(Debug)]
pub struct Collected<'j> {
    pub job: &'j Job,
    /// 1, 2, ... (the job runs again while its gate's `attempts` last).
    pub attempt: u32,
    pub cmds: JobCommands,
    /// The capacity model's expected value in its round.
    pub expected: Option<f64>,
    pub steps: Vec<StepRecord>,
    /// Why it could not measure (set by the first phase that failed).
    pub failure: Option<Verdict>,
    /// How its tool ended when not by itself (its remote timeout, a signal): a FAIL unless
    /// what it printed before is a complete measurement, which is kept with this beside it as
    /// a WARN.
    pub ended: Option<Verdict>,
    /// Verdicts beside its measurement (a process its tools left running, stopped since).
    pub extra: Vec<Verdict>,
    pub client_out: Option<Output>,
    pub server_log: Option<String>,
    /// Wall time of the measurement itself, seconds.
    pub tool_seconds: Option<f64>,
    /// The counters that moved on its devices during the attempt.
    pub counters: Vec<CounterDelta>,
    /// Its outputs, until the job is judged and they are kept as files or digests.
    pub outputs: Vec<Captured>,
}

impl<'j> Collected<'j> {
    /// Attempt `attempt` of `job` with its commands, before anything ran.
    pub fn new(job: &'j Job, attempt: u32, cmds: JobCommands, expected: Option<f64>) -> Self {
        Collected {
            job,
            attempt,
            cmds,
            expected,
            steps: Vec::new(),
            failure: None,
            ended: None,
            extra: Vec::new(),
            client_out: None,
            server_log: None,
            tool_seconds: None,
            counters: Vec::new(),
            outputs: Vec::new(),
        }
    }
}

/// One root cause, one FAIL: a failure that repeats one already counted follows from the
/// first, which is where it is counted and fixed. A repeat is the same trap seen again on the
/// same link half, either direction (a throttled half fails `rdma-bw` each way and then
/// `rdma-bw-both`), or on another flow from or to the same node half (a throttled half on a
/// switch fails its flow to every peer: the half is the cause, not each peer).
/// `earlier` are the run's results so far; `jobs` are a round's, in order.
pub fn follow_repeats(earlier: &[JobResult], jobs: &mut [JobResult]) {
    let mut causes = Causes::default();
    causes.count(earlier);
    causes.follow(jobs);
}

/// The root causes counted so far in a run: (what was judged, without its kind and direction;
/// trap) -> the gate where it was first counted, and the same for each node half of a counted
/// flow. Kept as the run goes, so that each round is checked against it in time linear in the
/// round (not in the run so far).
#[derive(Debug, Default)]
pub struct Causes {
    counted: HashMap<(Key, Trap), String>,
    /// node -> (order counted, gate): the first counted failure on one of the node's halves.
    /// A collective whose ranks include the node is slowed by it (see [`Causes::follow`]).
    by_node: HashMap<String, (usize, String)>,
    /// `node.port` -> (order counted, gate): the first counted failure on one of the port's
    /// halves. Both halves of the port summed short follow it (see [`Causes::follow`]).
    by_port: HashMap<String, (usize, String)>,
}

/// Both halves of a port summed short (`one half dead or throttled`): a counted failure on one
/// of the two ports' halves is the half that makes it short.
fn port_sum_short(v: &Verdict) -> bool {
    v.outcome != Outcome::Ok && v.follows.is_none() && v.trap == Some(Trap::HalfDeadOrThrottled)
}

/// The two ports (`node.port`) of a port-level verdict's flow (both halves summed).
fn port_ends(v: &Verdict) -> Option<[String; 2]> {
    let f = v.flow.as_ref().filter(|f| f.half == "both")?;
    Some([f.src_endpoint(), f.dst_endpoint()])
}

/// What a counted failure is known by (with its trap).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A flow's link, its two ends in order (halves, or ports for a sum; one end measured
    /// against itself is a link of its own).
    Link(String, String),
    /// A node half a counted flow leaves or reaches.
    End {
        node: String,
        port: String,
        half: String,
    },
    /// A verdict about no flow: its gate.
    Gate(String),
}

/// A collective's own performance: its bus bandwidth or small-message time below the model. A
/// counted failure on a half of one of its ranks explains it (NCCL's ring is as fast as its
/// slowest hop, and every half of every rank is in NCCL_IB_HCA): fixed there first.
fn collective_performance(v: &Verdict) -> bool {
    v.outcome != Outcome::Ok
        && v.follows.is_none()
        && matches!(v.trap, Some(Trap::SlowBusBandwidth | Trap::SlowCollective))
}

impl Causes {
    /// What a counted failure is known by: its flow's link (ends in order) and each end that
    /// is a node half, each with the trap; a verdict about no flow by its gate.
    fn keys(v: &Verdict) -> Vec<(Key, Trap)> {
        let Some(trap) = v.trap else {
            return Vec::new();
        };
        if v.outcome != Outcome::Fail || v.follows.is_some() {
            return Vec::new();
        }
        let Some(f) = &v.flow else {
            return vec![(Key::Gate(v.gate.clone()), trap)];
        };
        let (x, y) = (f.src_endpoint(), f.dst_endpoint());
        if x == y {
            // an end measured alone against its own NIC
            return vec![(Key::Link(x, y), trap)];
        }
        let link = if x > y {
            Key::Link(y, x)
        } else {
            Key::Link(x, y)
        };
        let mut keys = vec![(link, trap)];
        if f.half != "both" {
            for (node, port) in [(&f.src, &f.src_port), (&f.dst, &f.dst_port)] {
                let end = Key::End {
                    node: node.clone(),
                    port: port.clone(),
                    half: f.half.clone(),
                };
                keys.push((end, trap));
            }
        }
        keys
    }

    /// Count the causes of results already judged.
    pub fn count(&mut self, jobs: &[JobResult]) {
        for v in jobs.iter().flat_map(|j| &j.verdicts) {
            for k in Self::keys(v) {
                if let Key::End { node, port, .. } = &k.0 {
                    let port = format!("{node}.{port}");
                    for (map, key) in [(&mut self.by_node, node.clone()), (&mut self.by_port, port)]
                    {
                        let order = map.len();
                        map.entry(key).or_insert_with(|| (order, v.gate.clone()));
                    }
                }
                self.counted.entry(k).or_insert_with(|| v.gate.clone());
            }
        }
    }

    /// Localisation named what gates follow from (`explained`: gate -> the suspect's gate): the
    /// causes counted at those gates are known by their suspect from now on.
    pub fn explained_by(&mut self, explained: &HashMap<String, String>) {
        for gate in self.counted.values_mut().chain(
            self.by_node
                .values_mut()
                .chain(self.by_port.values_mut())
                .map(|(_, g)| g),
        ) {
            if let Some(suspect) = explained.get(gate.as_str()) {
                *gate = suspect.clone();
            }
        }
    }

    /// The first cause counted on a half of one of `hosts` (nodes).
    fn on_nodes(&self, hosts: &[String]) -> Option<&String> {
        hosts
            .iter()
            .filter_map(|h| self.by_node.get(h))
            .min_by_key(|(order, _)| *order)
            .map(|(_, gate)| gate)
    }

    /// Mark the failures of a round's `jobs` (in order) that follow from a cause counted
    /// before them, and count the new causes.
    pub fn follow(&mut self, jobs: &mut [JobResult]) {
        // counted in this round, after each job
        let mut here: HashMap<(Key, Trap), String> = HashMap::new();
        for job in jobs.iter_mut() {
            let mut first_here: Vec<((Key, Trap), String)> = Vec::new();
            if let Some(cause) = self.on_nodes(&job.hosts) {
                for v in job
                    .verdicts
                    .iter_mut()
                    .filter(|v| collective_performance(v))
                {
                    v.follows = Some(cause.clone());
                }
            }
            for v in job.verdicts.iter_mut().filter(|v| port_sum_short(v)) {
                let cause = port_ends(v).and_then(|ends| {
                    ends.iter()
                        .filter_map(|e| self.by_port.get(e))
                        .min_by_key(|(order, _)| *order)
                        .map(|(_, g)| g.clone())
                });
                if cause.is_some() {
                    v.follows = cause;
                }
            }
            for v in &mut job.verdicts {
                let keys = Self::keys(v);
                let seen = keys
                    .iter()
                    .find_map(|k| self.counted.get(k).or_else(|| here.get(k)));
                match seen {
                    Some(gate) if *gate != v.gate => v.follows = Some(gate.clone()),
                    Some(_) => {}
                    None => first_here.extend(keys.into_iter().map(|k| (k, v.gate.clone()))),
                }
            }
            // a job's own verdicts never follow each other: they are counted after it
            here.extend(first_here);
        }
        // for the rounds after: the first gate of each cause, in job order
        self.count(jobs);
    }
}

/// The name a job's verdicts carry, unique in the run: kind, the declared round when there is
/// one (the same flow runs in several rounds of a matrix), the sampled or re-test round when
/// the round is one (a sampled schedule may pair two ends again, a re-test measures a flow
/// again), and the job's label.
pub fn gate_name(plan: &Plan, round: &Round, job: &Job) -> String {
    let kind = job.kind.name();
    match round.name.strip_prefix(kind) {
        Some(_) if round.repeats_flows() => format!("{} {}", round.name, job.label(plan)),
        Some(_) => format!("{kind} {}", job.label(plan)),
        None => format!("{kind} {} {}", round.name, job.label(plan)),
    }
}

/// A job that did not run, and why.
pub fn skipped(plan: &Plan, round: &Round, job: &Job, reason: String) -> JobResult {
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
        attempts: Vec::new(),
        digests: Vec::new(),
    }
}

/// A job that could not run because of `verdict` (a FAIL naming why).
pub fn failed(
    plan: &Plan,
    round: &Round,
    job: &Job,
    reason: String,
    verdict: Verdict,
) -> JobResult {
    let mut r = skipped(plan, round, job, reason);
    r.status = JobStatus::Failed;
    r.verdicts.push(verdict);
    on_its_flow(plan, round, job, &mut r.verdicts);
    r
}

/// The job's own verdicts (those its gate names) carry the flow it measured.
fn on_its_flow(plan: &Plan, round: &Round, job: &Job, verdicts: &mut [Verdict]) {
    let Some(flow) = job.flow(plan) else {
        return;
    };
    let gate = gate_name(plan, round, job);
    for v in verdicts
        .iter_mut()
        .filter(|v| v.gate == gate && v.flow.is_none())
    {
        v.flow = Some(flow.clone());
    }
}

/// The devices a job's counters are read on, per host: its ranks' devices, or its resources'.
pub fn job_devices(res: &Resolution, job: &Job, cmds: &JobCommands) -> Vec<(NodeId, String)> {
    let mut out = Vec::new();
    let eps: Vec<&Endpoint> = if cmds.ranks.is_empty() {
        job.resources.iter().collect()
    } else {
        cmds.ranks.iter().flat_map(|k| k.endpoints.iter()).collect()
    };
    for e in eps {
        if let Some(d) = res.halves.get(e).and_then(|f| f.device.clone())
            && !out.contains(&(e.node, d.clone()))
        {
            out.push((e.node, d));
        }
    }
    out
}

/// The counters that moved on `devices` between the snapshots (and the data and sequence-error
/// counters always, moved or not: "did not move" is evidence too).
pub fn counter_deltas(
    plan: &Plan,
    attempt: u32,
    devices: &[(NodeId, String)],
    before: &Counters,
    after: &Counters,
) -> Vec<CounterDelta> {
    let mut counters = Vec::new();
    for (node, dev) in devices {
        let key = (*node, dev.clone());
        let (Some(b), Some(a)) = (before.get(&key), after.get(&key)) else {
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
                    attempt,
                    host: plan.node(*node).name.clone(),
                    device: dev.clone(),
                    counter: k.clone(),
                    before: Some(*bv),
                    after: Some(*av),
                    delta: i64::try_from(*av)
                        .unwrap_or(i64::MAX)
                        .saturating_sub(i64::try_from(*bv).unwrap_or(i64::MAX)),
                });
            }
        }
    }
    counters
}

/// One attempt read and judged.
struct Judged {
    parsed: Parsed,
    verdicts: Vec<Verdict>,
    /// It could not measure (its verdict is the failure).
    failed: bool,
}

/// One attempt: its output read by its kind's parser (the server's log when the client says
/// nothing), then its verdicts, or the failure that kept it from measuring.
fn judge_attempt(plan: &Plan, round: &Round, kind: &dyn TestKind, c: &Collected<'_>) -> Judged {
    let job = c.job;
    let gate = gate_name(plan, round, job);
    let seq: i64 = c
        .counters
        .iter()
        .filter(|c| c.counter == "packet_seq_err")
        .map(|c| c.delta)
        .sum();
    let seq_known = c.counters.iter().any(|c| c.counter == "packet_seq_err");
    let client_text = c
        .client_out
        .as_ref()
        .map(|o| format!("{}{}", o.stdout, o.stderr))
        .unwrap_or_default();
    let tool = kind.tool();
    let mut parsed = parse::parse(tool, &client_text);
    if parsed.error().is_none()
        && parsed.status() != Status::Ok
        && let Some(log) = &c.server_log
    {
        let sp = parse::parse(tool, log);
        if sp.error().is_some() {
            parsed = sp;
        }
    }
    let cctx = Context {
        gate: gate.clone(),
        expected_gbps: c.expected,
        standalone_gbps: capacity::standalone(plan, job),
        crosses_isl: job
            .pair
            .as_ref()
            .is_some_and(|p| p.path.isl_hops().next().is_some()),
        seq_err_delta: seq_known.then_some(seq),
        fabric_bytes_per_rank: c
            .cmds
            .ranks
            .iter()
            .map(|k| {
                let host = &plan.node(k.node).name;
                let moved: Vec<i64> = c
                    .counters
                    .iter()
                    .filter(|d| {
                        &d.host == host
                            && (d.counter == "port_xmit_data" || d.counter == "port_rcv_data")
                    })
                    .map(|d| d.delta)
                    .collect();
                (
                    host.clone(),
                    (!moved.is_empty()).then(|| moved.iter().sum()),
                )
            })
            .collect(),
        nccl_hca: c.cmds.nccl_env.get("NCCL_IB_HCA").cloned(),
        cabled_devices: c
            .cmds
            .ranks
            .iter()
            .flat_map(|k| k.devices.clone())
            .collect(),
    };
    // a tool that ended oddly after a complete measurement keeps it, its end beside it
    let complete = parsed.error().is_none() && parsed.status() == Status::Ok;
    let mut verdicts = match (&c.failure, &c.ended) {
        (Some(f), _) => vec![match classify::error_verdict(&gate, parsed.error()) {
            // the tool's own error is more specific than "server did not listen"
            Some(mut v) => {
                if f.trap == Some(Trap::ServerGoneOrFirewall) && v.trap == Some(Trap::ToolError) {
                    v = v.with_trap(Trap::ServerGoneOrFirewall);
                }
                v
            }
            None => f.clone(),
        }],
        (None, Some(end)) if complete => {
            let mut v = kind.judge(plan, job, &parsed, &cctx);
            let mut end = end.clone();
            end.outcome = Outcome::Warn;
            end.gate = format!("{} end", end.gate);
            end.detail = format!("{} (after a complete measurement, kept)", end.detail);
            v.push(end);
            v
        }
        (None, Some(end)) => vec![end.clone()],
        (None, None) => kind.judge(plan, job, &parsed, &cctx),
    };
    verdicts.extend(c.extra.iter().cloned());
    Judged {
        parsed,
        verdicts,
        failed: c.failure.is_some() || (c.ended.is_some() && !complete),
    }
}

/// The attempts of a repeated job as one verdict set: the main gate judged over every
/// attempt's value (OK when `pass-if` of them pass), its trap and what was seen taken from the
/// first attempt that did not pass; the other verdicts from the last attempt.
fn merge_attempts(
    plan: &Plan,
    kind: &dyn TestKind,
    gate: &str,
    expected: Option<f64>,
    judged: &[Judged],
) -> (Vec<Verdict>, Vec<Attempt>) {
    let spec = kind.metric();
    let metric = spec.metric;
    let main = |j: &Judged| {
        j.verdicts
            .iter()
            .find(|v| v.metric == Some(metric))
            .cloned()
    };
    let attempts: Vec<Attempt> = judged
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let m = main(j);
            let worst = j
                .verdicts
                .iter()
                .map(|v| v.outcome)
                .max()
                .unwrap_or(Outcome::Fail);
            Attempt {
                attempt: u32::try_from(i + 1).unwrap_or(u32::MAX),
                measured: m.as_ref().and_then(|v| v.measured),
                outcome: m.as_ref().map_or(worst, |v| v.outcome),
                detail: j
                    .verdicts
                    .iter()
                    .find(|v| v.outcome != Outcome::Ok)
                    .map(|v| v.detail.clone())
                    .unwrap_or_default(),
            }
        })
        .collect();
    let values: Vec<Option<f64>> = attempts.iter().map(|a| a.measured).collect();
    let mut merged = plan.gate(spec).judge_attempts(gate, &values, expected);
    if merged.outcome != Outcome::Ok
        && let Some(bad) = judged.iter().flat_map(|j| j.verdicts.iter()).find(|v| {
            v.outcome != Outcome::Ok && (v.metric == Some(metric) || v.measured.is_none())
        })
    {
        merged.trap = bad.trap;
        merged.trap_name = bad.trap_name.clone();
        merged.fix = bad.fix.clone();
        if !bad.detail.is_empty() {
            merged.detail = format!("{}; {}", merged.detail, bad.detail);
        }
    }
    let mut verdicts = vec![merged];
    // the other gates (transport, counters, congestion) from the last attempt that measured
    if let Some(last) = judged.iter().rev().find(|j| !j.failed) {
        verdicts.extend(
            last.verdicts
                .iter()
                .filter(|v| v.metric != Some(metric))
                .cloned(),
        );
    }
    (verdicts, attempts)
}

/// The job's result from its attempts (one unless its gate repeats): counters, outputs read by
/// its kind's parser, verdicts.
pub fn judge(plan: &Plan, round: &Round, job: &Job, attempts: Vec<Collected<'_>>) -> JobResult {
    let Some(kind) = kinds::get(job.kind) else {
        return skipped(plan, round, job, format!("no test kind `{}`", job.kind));
    };
    let gate = gate_name(plan, round, job);
    let expected = attempts.first().and_then(|c| c.expected);
    let judged: Vec<Judged> = attempts
        .iter()
        .map(|c| judge_attempt(plan, round, kind, c))
        .collect();
    let (verdicts, attempt_list) = if judged.len() > 1 {
        merge_attempts(plan, kind, &gate, expected, &judged)
    } else {
        (
            judged
                .first()
                .map(|j| j.verdicts.clone())
                .unwrap_or_default(),
            Vec::new(),
        )
    };
    let measured = verdicts.iter().any(|v| v.measured.is_some())
        || judged.iter().any(|j| kind.measured(&j.parsed));
    let mut verdicts = verdicts;
    on_its_flow(plan, round, job, &mut verdicts);
    if let Some(last) = judged.last() {
        kinds::parts::attach(plan, job, &mut verdicts, measured, |v| {
            kind.parts(plan, job, v, &last.parsed)
        });
    }
    let last = attempts.last();
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
        expected_gbps: expected,
        status: if measured {
            JobStatus::Measured
        } else {
            JobStatus::Failed
        },
        reason: last
            .and_then(|c| c.failure.as_ref())
            .map(|f| f.detail.clone()),
        parsed: judged.last().map(|j| j.parsed.clone()),
        tool_seconds: attempts
            .iter()
            .filter_map(|c| c.tool_seconds)
            .reduce(f64::max),
        counters: attempts.iter().flat_map(|c| c.counters.clone()).collect(),
        steps: attempts.into_iter().flat_map(|c| c.steps).collect(),
        verdicts,
        attempts: attempt_list,
        digests: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
