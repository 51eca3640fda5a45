//! `fabricplan check`: a node checks itself against the plan, read-only, in about a second
//! (Slurm's health check, a prolog or epilog, a timer). What the discovery probe reads on the
//! node is judged with the run's own checks (device, state, address, GID, MTU, routes, cabling,
//! PCIe, firmware), plus what a node alone can say: its carrier now, the OS rate against the
//! plan's, each cable's far end answering (ping, jumbo ping, the MAC recorded, LLDP), and what
//! changed since the last check (a flap is a carrier count that grew; [`state`]). The verdicts
//! are diagnosed as a run's are: one finding per broken part. Pure: the executor reads the
//! node ([`Reading`]) and keeps the state file.

pub mod far;
pub mod output;
pub mod state;

use std::collections::HashMap;

use serde::Serialize;

use crate::discover::changes::{self, Span};
use crate::discover::{HalfResolution, Probe, checks, hardware};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::kinds::preflight::Ping;
use crate::parse::neigh::NeighReport;
use crate::plan::{NodeId, Plan};
use crate::results::{Finding, NodeDiscovery, RunResults};
use state::{STATE_VERSION, State, utc};

/// The run id a check gives its findings (and Slurm's drain reason: `fabricplan check: ...`).
pub const RUN_ID: &str = "check";

/// The deadline when none is given: inside Slurm's 60 s health-check limit.
pub const DEFAULT_DEADLINE_S: f64 = 50.0;

/// What the executor read on the node.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// What the probe printed (to its end, or until the deadline).
    pub probe_text: String,
    /// The probe could not be run at all (why).
    pub probe_error: Option<String>,
    /// The pings sent and their outputs, in order (a ping the deadline cut has none).
    pub pings: Vec<(Ping, Option<Result<String, String>>)>,
    /// The neighbour table after the pings.
    pub neighbours: Option<NeighReport>,
    /// When the node was read (Unix ms).
    pub unix_ms: u64,
    /// What the deadline cut, in words (empty when everything finished).
    pub cut: Vec<String>,
    /// The deadline, seconds.
    pub deadline_s: f64,
}

/// Which parts of the probe's output arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// The RDMA devices in sysfs (state, firmware, PCIe).
    pub sysfs: bool,
    /// Addresses, links and routes: everything.
    pub complete: bool,
}

impl Reached {
    pub fn of(text: &str) -> Reached {
        let has = |m: &str| text.starts_with(m) || text.contains(&format!("\n{m}"));
        Reached {
            sysfs: has("@carrier"),
            complete: has("@end"),
        }
    }
}

/// A check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub plan: String,
    pub node: String,
    /// `OK`, `WARN` or `FAIL`.
    pub outcome: Outcome,
    /// The one-line verdict.
    pub verdict: String,
    pub findings: Vec<Finding>,
    /// Every verdict, passing ones too.
    pub verdicts: Vec<Verdict>,
    /// What was checked, and what the deadline cut.
    pub checked: Vec<String>,
    pub not_checked: Vec<String>,
    pub halves: Vec<HalfResolution>,
    /// The last check compared against (Unix ms), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_unix_ms: Option<u64>,
    pub unix_ms: u64,
    /// Set by the executor once it is done.
    pub took_s: f64,
    /// What was done with Slurm (`--drain`, `--resume`), a line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub service: Vec<String>,
    /// What the next check compares against (`None`: the probe did not finish, the last
    /// state stays).
    #[serde(skip)]
    pub next: Option<State>,
}

impl Checked {
    /// 0 OK or WARN, 1 FAIL or cut by the deadline.
    pub fn exit_code(&self) -> i32 {
        if self.outcome == Outcome::Fail || !self.not_checked.is_empty() {
            crate::exit::FAIL
        } else {
            crate::exit::OK
        }
    }
}

/// The plan node this machine is: `forced` (`--node`), else Slurm's name for it
/// (`SLURMD_NODENAME`), else its hostname; a name matches a node's name, or its first label
/// (`spark-1` for `spark-1.example.org`).
pub fn find_node(
    plan: &Plan,
    forced: Option<&str>,
    slurm: Option<&str>,
    hostname: &str,
) -> Result<NodeId, String> {
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    let find = |name: &str| {
        plan.nodes
            .iter()
            .find(|n| n.name == name)
            .or_else(|| plan.nodes.iter().find(|n| short(&n.name) == short(name)))
            .map(|n| n.id)
    };
    let names: Vec<&str> = plan.nodes.iter().map(|n| n.name.as_str()).collect();
    let known = || format!("the plan's nodes: {}", names.join(", "));
    if let Some(f) = forced {
        return find(f)
            .ok_or_else(|| format!("--node {f} is not a node of the plan ({})", known()));
    }
    let tried: Vec<&str> = [slurm, Some(hostname)]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    tried.iter().find_map(|n| find(n)).ok_or_else(|| {
        format!(
            "this machine ({}) is not a node of the plan ({}): give --node NAME",
            tried.join(", "),
            known()
        )
    })
}

/// The halves of `node` as the probe resolves them.
pub fn resolve(plan: &Plan, node: NodeId, probe: &Probe) -> Vec<HalfResolution> {
    crate::discover::resolve_node(plan, node, probe)
}

/// Judge the node's reading against the plan and the last check's state.
pub fn judge(plan: &Plan, node: NodeId, reading: &Reading, previous: Option<&State>) -> Checked {
    let probe = crate::discover::probe::parse(&reading.probe_text);
    let reached = Reached::of(&reading.probe_text);
    let halves = resolve(plan, node, &probe);
    let name = plan.node(node).name.clone();
    let mut verdicts = node_verdicts(plan, node, &probe, &halves, reached);
    let mut checked = checked_words(plan, &halves, reached, reading);
    let mut next = None;
    if reached.complete {
        let then = previous.map(|p| utc(p.unix_ms));
        if let (Some(p), Some(t)) = (previous, &then) {
            verdicts.extend(since_last(plan, node, p, &halves, (t, reading.unix_ms)));
            checked.push(format!("what changed since the last check ({t})"));
        } else {
            checked.push(
                "no change since a last check: this is the first (its reading is kept for the next)".into(),
            );
        }
        let recorded = previous.map(|p| p.far_macs.clone()).unwrap_or_default();
        let (sent, outs): (Vec<Ping>, Vec<Result<String, String>>) = reading
            .pings
            .iter()
            .filter_map(|(p, o)| Some((p.clone(), o.clone()?)))
            .unzip();
        let far = far::judge(
            plan,
            &halves,
            (&sent, &outs, reading.neighbours.as_ref(), &probe),
            (
                &recorded,
                &format!("at the last check ({})", then.unwrap_or_default()),
            ),
        );
        verdicts.extend(far.verdicts);
        let mut far_macs = recorded;
        far_macs.extend(far.macs);
        next = Some(State {
            format_version: STATE_VERSION,
            plan: plan.name.clone(),
            node: name.clone(),
            unix_ms: reading.unix_ms,
            halves: halves.clone(),
            far_macs,
        });
    }
    let mut not_checked = reading.cut.clone();
    if let Some(e) = &reading.probe_error {
        not_checked.insert(0, format!("the node (the probe could not run: {e})"));
    }
    if !not_checked.is_empty() {
        verdicts.push(deadline_verdict(&name, reading, &not_checked));
    }
    finish(
        plan,
        node,
        (verdicts, halves, probe),
        (checked, not_checked),
        (reading, previous, next),
    )
}

/// The verdicts from the probe alone: the run's own discovery checks, the carrier, the rate,
/// PCIe and firmware. With only sysfs read (the deadline cut the rest), the device checks.
fn node_verdicts(
    plan: &Plan,
    node: NodeId,
    probe: &Probe,
    halves: &[HalfResolution],
    reached: Reached,
) -> Vec<Verdict> {
    let mut out: Vec<Verdict> = Vec::new();
    if reached.complete {
        out.extend(
            checks::half_checks(plan, node, halves)
                .into_iter()
                .map(|c| c.0),
        );
        out.extend(
            checks::cabling_checks(plan, node, probe, halves)
                .into_iter()
                .map(|c| c.0),
        );
        out.extend(
            checks::routing_checks(plan, node, probe, halves)
                .into_iter()
                .map(|c| c.0),
        );
        out.extend(carrier_verdicts(plan, probe, halves));
        out.extend(rate_verdicts(plan, halves));
    } else if reached.sysfs {
        // the devices were read, the addresses were not: only what sysfs says
        out.extend(
            checks::half_checks(plan, node, halves)
                .into_iter()
                .map(|c| c.0)
                .filter(|v| matches!(v.trap, Some(Trap::NoDevice | Trap::PortDown)))
                .filter(|v| v.gate.starts_with("discover ") && v.outcome == Outcome::Fail),
        );
    }
    if reached.sysfs {
        let all = HashMap::from([(node, halves.to_vec())]);
        out.extend(pcie_verdicts(plan, halves, &all));
        out.extend(
            hardware::firmware_checks(plan, &all)
                .into_iter()
                .map(|c| c.0),
        );
    }
    out
}

/// A planned half whose device is up but whose netdev has no carrier now: the link is down.
fn carrier_verdicts(plan: &Plan, probe: &Probe, halves: &[HalfResolution]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for h in halves.iter().filter(|h| h.active && h.address_found) {
        let Some(nd) = h.netdev.as_deref() else {
            continue;
        };
        let Some(i) = probe.interface(nd) else {
            continue;
        };
        let mut parts = vec![plan.half_part(&h.endpoint)];
        parts.extend(plan.cable_part(&h.endpoint));
        let (outcome, detail) = if i.up {
            (Outcome::Ok, format!("{nd} has carrier"))
        } else {
            (
                Outcome::Fail,
                format!("{nd} has no carrier: the link of {} is down", h.name),
            )
        };
        out.push(
            Verdict::check(
                format!("carrier {}", h.name),
                outcome,
                detail,
                Some(Trap::PortDown),
            )
            .about(parts),
        );
    }
    out
}

/// The OS rate (`200 Gb/sec (4X HDR)`) below the plan's port rate (else half rate): the link
/// trained at a lower speed.
fn rate_verdicts(plan: &Plan, halves: &[HalfResolution]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for h in halves.iter().filter(|h| h.active) {
        let prof = plan.profile_of(h.endpoint.node);
        let (Some(floor), Some(hint)) = (
            prof.port_rate_gbps.or(prof.half_rate_gbps),
            h.rate_hint.as_deref(),
        ) else {
            continue;
        };
        let Some(rate) = hint
            .split_whitespace()
            .next()
            .and_then(|r| r.parse::<f64>().ok())
        else {
            continue;
        };
        if rate < floor {
            let mut parts = vec![plan.half_part(&h.endpoint)];
            parts.extend(plan.cable_part(&h.endpoint));
            out.push(
                Verdict::check(
                    format!("rate {}", h.name),
                    Outcome::Fail,
                    format!(
                        "{} reports {hint}; the plan's {} carries {floor} Gb/s: the link trained at a lower speed",
                        h.device.clone().unwrap_or_default(),
                        if prof.port_rate_gbps.is_some() { "port" } else { "half" }
                    ),
                    Some(Trap::BelowLineRate),
                )
                .about(parts),
            );
        }
    }
    out
}

/// The run's PCIe checks; a link that no longer carries its half's rate is a FAIL here (a check
/// measures no bandwidth to show it).
fn pcie_verdicts(
    plan: &Plan,
    halves: &[HalfResolution],
    all: &HashMap<NodeId, Vec<HalfResolution>>,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (mut v, _) in hardware::pcie_checks(plan, all) {
        let h = halves.iter().find(|h| v.gate == format!("pcie {}", h.name));
        let rate = h.and_then(|h| plan.profile_of(h.endpoint.node).half_rate_gbps);
        let carries = h
            .and_then(|h| h.hardware.as_ref())
            .and_then(|hw| hw.pcie.as_ref())
            .and_then(|l| l.carries_gbps());
        if let (Some(r), Some(c)) = (rate.or(Some(crate::capacity::DEFAULT_HALF_GBPS)), carries)
            && c < r
        {
            v.outcome = Outcome::Fail;
        }
        out.push(v);
    }
    out
}

/// What changed since the last check: the run's change gate over the interval, and firmware
/// that changed on a profile that pins none (a FAIL: an update landed on one box; a pinned
/// profile is judged against its pin).
fn since_last(
    plan: &Plan,
    node: NodeId,
    previous: &State,
    halves: &[HalfResolution],
    (then, now_ms): (&str, u64),
) -> Vec<Verdict> {
    let span = Span {
        seconds: Some(now_ms.saturating_sub(previous.unix_ms) as f64 / 1000.0),
        then: format!("at the last check ({then})"),
        now: "now".into(),
        end: "now".into(),
        during: format!("since the last check ({then})"),
        far_ends_read: false,
        retransmits: true,
    };
    let now = HashMap::from([(node, halves.to_vec())]);
    let mut out = changes::verdicts_over(plan, &previous.by_node(node), &now, &span);
    if plan.profile_of(node).firmware.is_none() {
        let fw = |hs: &[HalfResolution]| -> Vec<String> {
            let mut v: Vec<String> = hs
                .iter()
                .filter_map(|h| h.hardware.as_ref()?.firmware.clone())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let (a, b) = (fw(&previous.halves), fw(halves));
        if !a.is_empty() && !b.is_empty() && a != b {
            let name = &plan.node(node).name;
            out.push(
                Verdict::check(
                    format!("firmware {name}"),
                    Outcome::Fail,
                    format!(
                        "{name}'s NIC firmware was {} at the last check ({then}) and is {} now: an update landed on this node (if it was meant, pin the version in the profile's `firmware`; the next check takes it as known)",
                        a.join("+"),
                        b.join("+")
                    ),
                    Some(Trap::FirmwareDrift),
                )
                .about(vec![Part::node(name)]),
            );
        }
    }
    out
}

/// The deadline cut the check (or the probe could not run): one FAIL about the node, naming
/// what was not checked.
fn deadline_verdict(node: &str, reading: &Reading, not_checked: &[String]) -> Verdict {
    let why = if reading.probe_error.is_some() && reading.cut.is_empty() {
        "the check could not read the node".to_string()
    } else {
        format!(
            "the check stopped at its deadline of {} s",
            reading.deadline_s
        )
    };
    Verdict::check(
        format!("deadline {node}"),
        Outcome::Fail,
        format!("{why}: not checked: {}", not_checked.join("; ")),
        Some(Trap::Timeout),
    )
    .about(vec![Part::node(node)])
}

/// What the check covered, in words.
fn checked_words(
    plan: &Plan,
    halves: &[HalfResolution],
    reached: Reached,
    reading: &Reading,
) -> Vec<String> {
    let mut out = Vec::new();
    let n = halves.len();
    if reached.complete {
        out.push(format!(
            "{n} planned half(s): device, ACTIVE, rate, carrier, address, GID, MTU, routes, cabling"
        ));
    } else if reached.sysfs {
        out.push(format!(
            "{n} planned half(s): device and ACTIVE (sysfs only)"
        ));
    }
    if reached.sysfs {
        out.push("PCIe link and firmware".into());
    }
    let answered = reading.pings.iter().filter(|(_, o)| o.is_some()).count();
    if !reading.pings.is_empty() {
        let far: Vec<String> = halves
            .iter()
            .filter_map(|h| far::far_end(plan, &h.endpoint))
            .map(|(e, _)| plan.endpoint_name(&e))
            .collect();
        out.push(format!(
            "{} far end(s) ({}): {answered} of {} pings run, the MAC that answered, LLDP",
            far.len(),
            far.join(", "),
            reading.pings.len()
        ));
    }
    out
}

type Judged = (Vec<Verdict>, Vec<HalfResolution>, Probe);

/// A fix to run on this node is said as run here: `sudo ip link set ...`, not `ssh NODE sudo
/// ip link set ...` (a compound one, `ssh NODE 'A && B'`, keeps its form).
fn on_this_node(plan: &Plan, node: &str, findings: &mut [Finding]) {
    let prefix = format!("{} ", crate::diagnose::fix::ssh_to(plan, node));
    for f in findings.iter_mut() {
        if let Some(c) = &f.fix_command
            && let Some(rest) = c.strip_prefix(&prefix)
            && !rest.starts_with('\'')
        {
            f.fix_command = Some(rest.to_string());
        }
    }
}

/// Diagnose the verdicts as a run's: one finding per broken part, the verdict line.
fn finish(
    plan: &Plan,
    node: NodeId,
    (verdicts, halves, probe): Judged,
    (checked, not_checked): (Vec<String>, Vec<String>),
    (reading, previous, next): (&Reading, Option<&State>, Option<State>),
) -> Checked {
    let name = plan.node(node).name.clone();
    let mut r = RunResults {
        plan: plan.name.clone(),
        run_id: RUN_ID.into(),
        preflight: verdicts,
        discovery: vec![NodeDiscovery {
            node: name.clone(),
            reachable: true,
            error: None,
            hostname: Some(probe.hostname.clone()).filter(|h| !h.is_empty()),
            halves: halves.clone(),
            kernel: probe.kernel.clone(),
        }],
        ..RunResults::default()
    };
    crate::diagnose::diagnose(plan, &mut r);
    on_this_node(plan, &name, &mut r.findings);
    let fails = r
        .findings
        .iter()
        .filter(|f| f.outcome == Outcome::Fail)
        .count();
    let warns = r
        .findings
        .iter()
        .filter(|f| f.outcome == Outcome::Warn)
        .count();
    let outcome = if fails > 0 || !not_checked.is_empty() {
        Outcome::Fail
    } else if warns > 0 {
        Outcome::Warn
    } else {
        Outcome::Ok
    };
    let verdict = output::verdict_line(&name, outcome, &r.findings, halves.len(), &not_checked);
    Checked {
        plan: plan.name.clone(),
        node: name,
        outcome,
        verdict,
        findings: r.findings,
        verdicts: r.preflight,
        checked,
        not_checked,
        halves,
        since_unix_ms: previous.map(|p| p.unix_ms),
        unix_ms: reading.unix_ms,
        took_s: 0.0,
        service: Vec::new(),
        next,
    }
}
