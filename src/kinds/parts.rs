//! Which parts a job's verdict is about: what a failing verdict implicates and a passing one
//! clears. The default for every kind ([`super::TestKind::parts`]); a kind whose tool says more
//! (NCCL's log names the host that fell back) refines it.

use crate::gate::judge::Verdict;
use crate::gate::part::{Part, Software};
use crate::gate::trap::Trap;
use crate::plan::{NodeId, Plan};
use crate::schedule::{Job, Pair};

/// What a failure to run on a node implicates, for each node (sshd or slurmd by the trap).
fn reach(plan: &Plan, nodes: &[NodeId], trap: Trap) -> Vec<Part> {
    nodes
        .iter()
        .map(|n| Part::reach_of(&plan.node(*n).name, trap))
        .collect()
}

fn software(plan: &Plan, nodes: &[NodeId], s: Software) -> Vec<Part> {
    nodes
        .iter()
        .map(|n| Part::software(&plan.node(*n).name, s))
        .collect()
}

fn push_new(v: &mut Vec<Part>, p: Part) {
    if !v.contains(&p) {
        v.push(p);
    }
}

/// A pair's path: its two halves (the client sending first), the cables into them, its ISLs.
pub fn pair_path(plan: &Plan, p: &Pair) -> (Vec<Part>, Vec<Part>, Vec<Part>) {
    if p.client == p.server {
        // a loopback: the half alone, inside its NIC
        return (vec![plan.half_part(&p.client)], Vec::new(), Vec::new());
    }
    let halves = vec![plan.half_part(&p.client), plan.half_part(&p.server)];
    let mut cables = Vec::new();
    for e in [&p.client, &p.server] {
        if let Some(c) = plan.cable_part(e) {
            push_new(&mut cables, c);
        }
    }
    let mut isls = Vec::new();
    for (i, _) in p.path.isl_hops() {
        push_new(&mut isls, plan.isl_part(i));
    }
    (halves, cables, isls)
}

fn pair_parts(plan: &Plan, p: &Pair, trap: Option<Trap>) -> Vec<Part> {
    let (halves, cables, isls) = pair_path(plan, p);
    let nodes = [p.client.node, p.server.node];
    match trap {
        // the path between the ends: its ISLs first (a blocked or crowded ISL), else the cable
        Some(Trap::IslBlockedRstp | Trap::SoftwareForwarding | Trap::CongestionControl) => {
            isls.into_iter().chain(cables).chain(halves).collect()
        }
        Some(Trap::ServerGoneOrFirewall) => software(plan, &[p.server.node], Software::Tools),
        Some(
            t @ (Trap::Unreachable
            | Trap::SlurmNodeUnavailable
            | Trap::SlurmStepLaunch
            | Trap::SlurmAllocationRefused
            | Trap::SlurmTimeLimit),
        ) => reach(plan, &nodes, t),
        Some(Trap::ToolError | Trap::ExecutableMissing | Trap::Unparseable) => {
            software(plan, &nodes, Software::Tools)
        }
        Some(Trap::MemoryRegistration) => nodes.iter().map(|n| plan.node_part(*n)).collect(),
        _ => halves.into_iter().chain(cables).chain(isls).collect(),
    }
}

fn ranks_parts(plan: &Plan, job: &Job, nodes: &[NodeId], trap: Option<Trap>) -> Vec<Part> {
    match trap {
        Some(Trap::TcpFallback | Trap::FabricNotUsed | Trap::HalfMissingFromHca | Trap::GdrOff) => {
            software(plan, nodes, Software::Nccl)
        }
        Some(Trap::MpiLaunch | Trap::Docker0Subnet | Trap::MpiRunAsRoot) => {
            software(plan, nodes, Software::Mpi)
        }
        Some(
            t @ (Trap::Unreachable
            | Trap::SlurmNodeUnavailable
            | Trap::SlurmStepLaunch
            | Trap::SlurmAllocationRefused
            | Trap::SlurmTimeLimit),
        ) => reach(plan, nodes, t),
        Some(Trap::ExecutableMissing | Trap::ToolError | Trap::Unparseable) => {
            software(plan, nodes, Software::Tools)
        }
        // performance and correctness: every half the ranks use, the cables into them, the
        // ISLs between their switches, then each rank's NCCL
        _ => {
            let mut v: Vec<Part> = job.resources.iter().map(|e| plan.half_part(e)).collect();
            let mut switches = std::collections::BTreeSet::new();
            for e in &job.resources {
                if let Some(c) = plan.cable_part(e) {
                    push_new(&mut v, c);
                }
                if let Some(sw) = plan.member_of(e).and_then(|(_, m)| m.switch) {
                    switches.insert(sw);
                }
            }
            if switches.len() > 1 {
                for i in &plan.isls {
                    if switches.contains(&i.a) || switches.contains(&i.b) {
                        push_new(&mut v, plan.isl_part(i.id));
                    }
                }
            }
            v.extend(software(plan, nodes, Software::Nccl));
            v
        }
    }
}

/// A tool that refused its own command line (`invalid option`) ran what the plan's own template
/// of this kind rendered: that template is the part, when the plan overrides one.
fn refused_template(plan: &Plan, job: &Job, v: &Verdict) -> Option<Part> {
    let words = [
        "invalid option",
        "unrecognized option",
        "requires an argument",
    ];
    if !words.iter().any(|w| v.detail.contains(w)) {
        return None;
    }
    let kind = super::get(job.kind)?;
    let mut own: Vec<&str> = kind
        .templates()
        .iter()
        .map(|t| t.name)
        .filter(|n| plan.templates.contains_key(*n))
        .collect();
    own.dedup();
    (!own.is_empty()).then(|| Part::Plan {
        what: format!("template {}", own.join(", ")),
    })
}

/// The parts a verdict of `job` is about, by its trap: a flow's halves, cables and ISLs; an
/// NCCL test's halves and each rank's NCCL; the software or reach a failure to run names.
pub fn job_parts(plan: &Plan, job: &Job, v: &Verdict) -> Vec<Part> {
    if let Some(p) = refused_template(plan, job, v) {
        return vec![p];
    }
    match (&job.pair, &job.ranks) {
        (Some(p), _) => pair_parts(plan, p, v.trap),
        (None, Some(r)) => ranks_parts(plan, job, &r.nodes, v.trap),
        _ => Vec::new(),
    }
}

/// What a job that ran vouches for beyond its verdicts' parts: each of its nodes was reached
/// (its sshd, its slurmd).
pub fn reached(plan: &Plan, job: &Job) -> Vec<Part> {
    job.nodes()
        .iter()
        .flat_map(|n| {
            let name = &plan.node(*n).name;
            [
                Part::software(name, Software::Sshd),
                Part::software(name, Software::Slurmd),
            ]
        })
        .collect()
}

/// Whether passing verdict `v` of `job` could not have shown a throttled half: a bandwidth per
/// half (whose miss reads as the firmware throttle) expected, in its round, a share whose pass
/// mark lies below the throttle band (a flow's share of a crowded ISL). A throttled half would
/// have passed it too: it clears neither end.
pub fn blind_to_a_throttle(plan: &Plan, job: &Job, v: &Verdict) -> bool {
    let Some(spec) = v.metric.and_then(super::metric) else {
        return false;
    };
    v.outcome == crate::gate::judge::Outcome::Ok
        && spec.trap == Trap::FirmwareThrottle
        && job.pair.is_some()
        && !crate::gate::classify::shows_throttle(
            &plan.gate(spec),
            v.expected,
            crate::capacity::standalone(plan, job),
        )
}

/// Say which parts each of `verdicts` is about where it does not say yet: `parts` gives them
/// (a kind's [`super::TestKind::parts`]), less the halves a pass too small to show a throttle
/// cannot clear ([`blind_to_a_throttle`]); a passing verdict of a job that ran also clears its
/// nodes' reach.
pub fn attach(
    plan: &Plan,
    job: &Job,
    verdicts: &mut [Verdict],
    ran: bool,
    parts: impl Fn(&Verdict) -> Vec<Part>,
) {
    for v in verdicts.iter_mut() {
        if v.implicates.is_empty() && v.clears.is_empty() {
            let mut p = parts(v);
            if blind_to_a_throttle(plan, job, v) {
                p.retain(|x| !matches!(x, Part::Half { .. }));
            }
            v.set_about(p);
        }
        if ran && v.outcome == crate::gate::judge::Outcome::Ok {
            for p in reached(plan, job) {
                push_new(&mut v.clears, p);
            }
        }
    }
}
