//! From what a round's jobs left behind to their results: counter deltas, the tool's output read
//! by its kind's parser, the verdicts of its kind's classifier. Synchronous and pure: tested
//! without a runtime.

use std::collections::{BTreeMap, HashMap};

use crate::capacity;
use crate::exec::transport::Output;
use crate::gate::classify::{self, Context};
use crate::gate::judge::Verdict;
use crate::gate::trap::Trap;
use crate::kinds;
use crate::parse::{self, Status};
use crate::plan::{Endpoint, NodeId, Plan};
use crate::render::job::{JobCommands, Resolution};
use crate::results::{CounterDelta, JobResult, JobStatus, RESULTS_FORMAT_VERSION, StepRecord};
use crate::schedule::{Job, Round};

/// Counters per (node, device), as a snapshot read them.
pub type Counters = HashMap<(NodeId, String), BTreeMap<String, u64>>;

/// Everything a job left behind once its round is over.
#[derive(Debug)]
pub struct Collected<'j> {
    pub job: &'j Job,
    pub cmds: JobCommands,
    /// The capacity model's expected value in its round.
    pub expected: Option<f64>,
    pub steps: Vec<StepRecord>,
    /// Why it could not measure (set by the first phase that failed).
    pub failure: Option<Verdict>,
    pub client_out: Option<Output>,
    pub server_log: Option<String>,
    /// Wall time of the measurement itself, seconds.
    pub tool_seconds: Option<f64>,
}

/// The name a job's verdicts carry: kind, the declared round when there is one (the same flow
/// runs in several rounds of a matrix), and the job's label.
pub fn gate_name(plan: &Plan, round: &Round, job: &Job) -> String {
    if round.name.starts_with(job.kind.name()) {
        format!("{} {}", job.kind.name(), job.label(plan))
    } else {
        format!("{} {} {}", job.kind.name(), round.name, job.label(plan))
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
    r
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
fn counter_deltas(
    plan: &Plan,
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
                    host: plan.node(*node).name.clone(),
                    device: dev.clone(),
                    counter: k.clone(),
                    before: *bv,
                    after: *av,
                    delta: i64::try_from(*av)
                        .unwrap_or(i64::MAX)
                        .saturating_sub(i64::try_from(*bv).unwrap_or(i64::MAX)),
                });
            }
        }
    }
    counters
}

/// The job's result: its counters, its output read by its kind's parser, its verdicts.
pub fn judge(
    plan: &Plan,
    res: &Resolution,
    round: &Round,
    c: Collected<'_>,
    before: &Counters,
    after: &Counters,
) -> JobResult {
    let job = c.job;
    let gate = gate_name(plan, round, job);
    let Some(kind) = kinds::get(job.kind) else {
        return skipped(plan, round, job, format!("no test kind `{}`", job.kind));
    };
    let counters = counter_deltas(plan, &job_devices(res, job, &c.cmds), before, after);
    let seq: i64 = counters
        .iter()
        .filter(|c| c.counter == "packet_seq_err")
        .map(|c| c.delta)
        .sum();
    let seq_known = counters.iter().any(|c| c.counter == "packet_seq_err");
    let client_text = c
        .client_out
        .as_ref()
        .map(|o| format!("{}{}", o.stdout, o.stderr))
        .unwrap_or_default();
    let tool = kind.tool();
    let mut parsed = parse::parse(tool, &client_text);
    // a client that never got a result may still say why on the server side
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
                let moved: Vec<i64> = counters
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
    let mut verdicts = Vec::new();
    match &c.failure {
        Some(f) => match classify::error_verdict(&gate, parsed.error()) {
            // the tool's own error is more specific than "server did not listen"
            Some(mut v) => {
                if f.trap == Some(Trap::ServerGoneOrFirewall) && v.trap == Some(Trap::ToolError) {
                    v = v.with_trap(Trap::ServerGoneOrFirewall);
                }
                verdicts.push(v);
            }
            None => verdicts.push(f.clone()),
        },
        None => verdicts.extend(kind.judge(plan, job, &parsed, &cctx)),
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
        expected_gbps: c.expected,
        status: if measured {
            JobStatus::Measured
        } else {
            JobStatus::Failed
        },
        reason: c.failure.as_ref().map(|f| f.detail.clone()),
        steps: c.steps,
        parsed: Some(parsed.to_json(tool)),
        counters,
        verdicts,
        tool_seconds: c.tool_seconds,
    }
}
