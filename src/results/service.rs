//! Bad nodes out of service, on request: which nodes the run's findings blame (each FAIL
//! finding whose part lies on a node: a half, a port, the node, its software), the reason Slurm
//! is given (`fabricplan RUN-ID: TRAP PART`), the `scontrol` lines, and which nodes fabricplan
//! drained earlier and this run found healthy. A node that only follows a finding is never
//! blamed: the diagnosis names the broken part, and its followers name none. Pure: the
//! executor reads Slurm's states and runs the commands; the reporters show [`Service`].

use serde::{Deserialize, Serialize};

use super::RunResults;
use crate::gate::judge::Outcome;
use crate::gate::part::Part;
use crate::launchers::slurm::parse::NodeState;

/// Every reason fabricplan gives Slurm starts with this: `--resume-passed` resumes only nodes
/// drained with it.
pub const REASON_PREFIX: &str = "fabricplan ";

/// The longest reason given to Slurm (its reasons are short lines in `sinfo -R`).
const REASON_MAX: usize = 200;

/// What is done to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Drained: a finding blames it.
    Drain,
    /// Resumed: fabricplan drained it and this run found it healthy.
    Resume,
    /// Left as it is: blamed but already drained or down, or healthy but drained by someone
    /// else.
    Leave,
}

/// Whether it was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Done {
    /// Slurm accepted the command.
    Done,
    /// Not asked for (`--drain` / `--resume-passed` not given): the command is what to do.
    Printed,
    /// Slurm refused or could not be asked (`error` says why).
    Failed,
    /// Nothing to do (a node left as it is).
    Nothing,
}

/// One node's action, with the reason and the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeAction {
    pub node: String,
    pub action: Action,
    /// A drain: the reason given to Slurm. A resume or a node left alone: Slurm's reason of
    /// the node as it was.
    pub reason: String,
    /// The `scontrol` line (none for a node left alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub done: Done,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the run did (or says to do) with blamed and healthy nodes (results.json `service`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Service {
    pub actions: Vec<NodeAction>,
    /// The blamed nodes as one Slurm hostlist expression (`spark-[2,5]`); empty when none.
    pub hostlist: String,
    /// Where `--exclude-file` wrote them (one per line; the hostlist beside it, `.hostlist`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_file: Option<String>,
}

/// Whether the run cleared `node`: every job it took part in passed every gate, and no failing
/// verdict anywhere in the run names a part on it. Such a node is never blamed, whatever a
/// finding says (a finding about it would rest on no evidence of its own).
pub fn cleared(r: &RunResults, node: &str) -> bool {
    let mut jobs = r.jobs.iter().filter(|j| j.hosts.iter().any(|h| h == node));
    let mut any = false;
    let all_passed = jobs.all(|j| {
        any = true;
        !j.verdicts.is_empty() && j.verdicts.iter().all(|v| v.outcome == Outcome::Ok)
    });
    let named = r
        .verdicts()
        .filter(|v| v.outcome == Outcome::Fail)
        .any(|v| v.implicates.iter().any(|p| nodes_of(p).contains(&node)));
    any && all_passed && !named
}

/// A node a finding blames and the reason Slurm is given: one per node, the worst finding's
/// (findings come worst first), with how many more there are. Only a FAIL finding about the
/// node or one of its parts blames it, and never a node the run cleared ([`cleared`]).
pub fn blamed(r: &RunResults) -> Vec<(String, String)> {
    let mut out: Vec<(String, String, usize)> = Vec::new();
    // a finding whose evidence could not tell its part from others proves none of them
    for f in r
        .findings
        .iter()
        .filter(|f| f.outcome == Outcome::Fail && f.among.is_empty())
    {
        let Some(node) = f.part.node_name() else {
            continue;
        };
        if cleared(r, node) {
            continue;
        }
        match out.iter_mut().find(|(n, _, _)| n == node) {
            Some((_, _, more)) => *more += 1,
            None => {
                let reason = format!("{REASON_PREFIX}{}: {} {}", r.run_id, f.trap_name, f.part);
                out.push((node.to_string(), reason, 0));
            }
        }
    }
    out.into_iter()
        .map(|(n, reason, more)| {
            let reason = if more > 0 {
                format!("{reason} (and {more} more)")
            } else {
                reason
            };
            (n, clip(&reason))
        })
        .collect()
}

/// One line of printable text within [`REASON_MAX`] characters.
pub fn clip(s: &str) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one.chars().count() <= REASON_MAX {
        return one;
    }
    let mut cut: String = one.chars().take(REASON_MAX - 3).collect();
    cut.push_str("...");
    cut
}

/// The nodes a part lies on or ends at: a cable's planned ends' nodes too (`spark-1.f0`).
fn nodes_of(part: &Part) -> Vec<&str> {
    match part {
        Part::Cable { a, b } => [a, b]
            .into_iter()
            .filter_map(|e| e.rsplit_once('.').map(|(n, _)| n))
            .collect(),
        p => p.node_name().into_iter().collect(),
    }
}

/// The nodes this run found healthy: not interrupted, reached by discovery, measured by a job
/// that ran, and named by no finding (FAIL or WARN, on the node or a cable of it).
pub fn healthy(r: &RunResults) -> Vec<String> {
    if r.interrupted {
        return Vec::new();
    }
    let named: Vec<&str> = r.findings.iter().flat_map(|f| nodes_of(&f.part)).collect();
    r.discovery
        .iter()
        .filter(|d| d.reachable && !named.iter().any(|n| *n == d.node))
        .filter(|d| {
            r.jobs
                .iter()
                .any(|j| !j.verdicts.is_empty() && j.hosts.contains(&d.node))
        })
        .map(|d| d.node.clone())
        .collect()
}

/// `scontrol update nodename=N state=drain reason='...'`, quoted for a shell.
pub fn drain_line(node: &str, reason: &str) -> String {
    crate::render::display(&drain_argv(node, reason))
}

pub fn drain_argv(node: &str, reason: &str) -> Vec<String> {
    vec![
        "scontrol".into(),
        "update".into(),
        format!("nodename={node}"),
        "state=drain".into(),
        format!("reason={reason}"),
    ]
}

pub fn resume_argv(node: &str) -> Vec<String> {
    vec![
        "scontrol".into(),
        "update".into(),
        format!("nodename={node}"),
        "state=resume".into(),
    ]
}

/// What to ask for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked {
    pub drain: bool,
    pub resume_passed: bool,
}

/// The actions, from the findings, the healthy nodes and Slurm's states of them (`states`:
/// empty when Slurm was not asked, i.e. nothing but printing was asked for). A blamed node
/// already drained or down is left as it is: someone else's reason is not ours to replace, and
/// an earlier run's says why it was taken out. Only nodes drained with fabricplan's reason are
/// resumed.
pub fn plan(r: &RunResults, asked: Asked, states: &[NodeState]) -> Service {
    let state = |n: &str| states.iter().find(|s| s.node == n);
    let theirs = |s: &NodeState| {
        !s.usable()
            && !s
                .reason
                .as_deref()
                .is_some_and(|x| x.starts_with(REASON_PREFIX))
    };
    let blamed = blamed(r);
    let mut actions = Vec::new();
    for (node, reason) in &blamed {
        let action = match state(node) {
            // already out of service (by someone else, or by an earlier run of ours): its
            // reason stays
            Some(s) if asked.drain && !s.usable() => NodeAction {
                node: node.clone(),
                action: Action::Leave,
                reason: s.describe(),
                command: None,
                done: Done::Nothing,
                error: None,
            },
            _ => NodeAction {
                node: node.clone(),
                action: Action::Drain,
                reason: reason.clone(),
                command: Some(drain_line(node, reason)),
                done: Done::Printed,
                error: None,
            },
        };
        actions.push(action);
    }
    if asked.resume_passed {
        for node in healthy(r) {
            let Some(s) = state(&node).filter(|s| s.drained()) else {
                continue;
            };
            let ours = !theirs(s);
            actions.push(NodeAction {
                node: node.clone(),
                action: if ours { Action::Resume } else { Action::Leave },
                reason: if ours {
                    s.reason.clone().unwrap_or_default()
                } else {
                    s.describe()
                },
                command: ours.then(|| crate::render::display(&resume_argv(&node))),
                done: if ours { Done::Printed } else { Done::Nothing },
                error: None,
            });
        }
    }
    let names: Vec<&str> = blamed.iter().map(|(n, _)| n.as_str()).collect();
    Service {
        actions,
        hostlist: crate::text::hostlist::compress(&names),
        exclude_file: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::part::Software;
    use crate::results::{Finding, JobResult, NodeDiscovery};

    fn finding(part: Part, outcome: Outcome, trap: &str) -> Finding {
        Finding {
            name: part.name(),
            among: Vec::new(),
            part,
            label: String::new(),
            outcome,
            trap: None,
            trap_name: trap.into(),
            seen: String::new(),
            evidence: Vec::new(),
            follows: Vec::new(),
            skipped: Vec::new(),
            host: None,
            fix_command: None,
            fix: String::new(),
        }
    }

    fn run() -> RunResults {
        let mut r = RunResults {
            run_id: "ring-20261203T101500Z".into(),
            ..RunResults::default()
        };
        for n in ["spark-1", "spark-2", "spark-3", "spark-4", "spark-5"] {
            r.discovery.push(NodeDiscovery {
                node: n.into(),
                reachable: true,
                ..NodeDiscovery::default()
            });
        }
        for pair in [
            ["spark-1", "spark-2"],
            ["spark-3", "spark-4"],
            ["spark-5", "spark-1"],
        ] {
            let mut j = JobResult {
                hosts: pair.iter().map(|s| s.to_string()).collect(),
                ..JobResult::default()
            };
            j.verdicts.push(crate::gate::judge::Verdict::check(
                "rdma-bw",
                Outcome::Ok,
                "",
                None,
            ));
            r.jobs.push(j);
        }
        r
    }

    /// Each finding's evidence: a failing verdict naming its part (a finding rests on one).
    fn evidenced(r: &mut RunResults) {
        let evidence: Vec<crate::gate::judge::Verdict> = r
            .findings
            .iter()
            .map(|f| {
                crate::gate::judge::Verdict::check(f.name.clone(), f.outcome, "", None)
                    .about(vec![f.part.clone()])
            })
            .collect();
        r.preflight.extend(evidence);
    }

    fn state(node: &str, state: &str, reason: Option<&str>) -> NodeState {
        NodeState {
            node: node.into(),
            state: state.into(),
            reason: reason.map(str::to_string),
        }
    }

    #[test]
    fn each_fail_finding_on_a_node_blames_it_once_and_nothing_else_does() {
        let mut r = run();
        r.findings = vec![
            finding(
                Part::half("spark-2", "f0", "b"),
                Outcome::Fail,
                "firmware throttle",
            ),
            finding(Part::node("spark-2"), Outcome::Fail, "other"),
            finding(
                Part::cable("spark-3.f0", "spark-4.f1"),
                Outcome::Fail,
                "crossed cable",
            ),
            finding(Part::isl("sw-a-sw-b"), Outcome::Fail, "ISL"),
            finding(
                Part::half("spark-5", "f0", "a"),
                Outcome::Warn,
                "PCIe link degraded",
            ),
            finding(
                Part::software("spark-1", Software::Slurmd),
                Outcome::Fail,
                "slurmd down",
            ),
        ];
        evidenced(&mut r);
        assert_eq!(
            blamed(&r),
            [
                (
                    "spark-2".to_string(),
                    "fabricplan ring-20261203T101500Z: firmware throttle spark-2.f0.b (and 1 more)"
                        .to_string()
                ),
                (
                    "spark-1".to_string(),
                    "fabricplan ring-20261203T101500Z: slurmd down slurmd on spark-1".to_string()
                ),
            ]
        );
        let s = plan(&r, Asked::default(), &[]);
        assert_eq!(s.hostlist, "spark-[1-2]");
        assert!(s.actions.iter().all(|a| a.done == Done::Printed));
        assert_eq!(
            s.actions[0].command.as_deref(),
            Some(
                "scontrol update nodename=spark-2 state=drain 'reason=fabricplan ring-20261203T101500Z: firmware throttle spark-2.f0.b (and 1 more)'"
            )
        );
        // healthy: measured, and named by no finding (a cable's ends and a WARN count)
        assert_eq!(healthy(&r), Vec::<String>::new());
        r.findings.truncate(2);
        r.preflight.clear();
        assert_eq!(healthy(&r), ["spark-1", "spark-3", "spark-4", "spark-5"]);
        r.interrupted = true;
        assert!(healthy(&r).is_empty());
    }

    /// A finding about a node that passed every job it took part in, and that no failing
    /// verdict names (the first rank of a step some other node failed), blames nothing.
    #[test]
    fn a_node_the_run_cleared_is_never_blamed() {
        let mut r = run();
        r.findings = vec![finding(
            Part::software("spark-1", Software::Slurmd),
            Outcome::Fail,
            "Slurm could not launch the step",
        )];
        assert!(cleared(&r, "spark-1"));
        assert!(blamed(&r).is_empty());
        assert!(plan(&r, Asked::default(), &[]).actions.is_empty());
        // with evidence of its own it is blamed
        evidenced(&mut r);
        assert!(!cleared(&r, "spark-1"));
        assert_eq!(blamed(&r).len(), 1);
        // a node with a failing job is not cleared
        let mut r = run();
        r.jobs[1].verdicts[0].outcome = Outcome::Fail;
        assert!(!cleared(&r, "spark-3") && cleared(&r, "spark-2"));
    }

    #[test]
    fn only_our_drains_are_resumed_and_theirs_are_never_replaced() {
        let mut r = run();
        r.findings = vec![
            finding(Part::half("spark-2", "f0", "b"), Outcome::Fail, "throttle"),
            finding(Part::node("spark-4"), Outcome::Fail, "gone"),
        ];
        evidenced(&mut r);
        let states = [
            state(
                "spark-1",
                "drained",
                Some("fabricplan ring-1: throttle spark-1.f0.a"),
            ),
            state("spark-2", "idle", None),
            state("spark-3", "drained", Some("PSU swap")),
            state("spark-4", "drained", Some("disk")),
            state("spark-5", "idle", None),
        ];
        let asked = Asked {
            drain: true,
            resume_passed: true,
        };
        let s = plan(&r, asked, &states);
        let got: Vec<(&str, Action)> = s
            .actions
            .iter()
            .map(|a| (a.node.as_str(), a.action))
            .collect();
        assert_eq!(
            got,
            [
                ("spark-2", Action::Drain),
                ("spark-4", Action::Leave),
                ("spark-1", Action::Resume),
                ("spark-3", Action::Leave),
            ]
        );
        assert_eq!(
            s.actions[2].command.as_deref(),
            Some("scontrol update nodename=spark-1 state=resume")
        );
        assert_eq!(s.actions[3].reason, "`drained` (Slurm's reason: PSU swap)");
        assert_eq!(s.actions[1].reason, "`drained` (Slurm's reason: disk)");
        // without --resume-passed nothing is resumed
        let s = plan(
            &r,
            Asked {
                drain: true,
                resume_passed: false,
            },
            &states,
        );
        assert!(s.actions.iter().all(|a| a.action != Action::Resume));
    }

    #[test]
    fn a_reason_is_one_short_line() {
        let long = format!("a\nb{}", "x".repeat(300));
        let c = clip(&long);
        assert_eq!(c.chars().count(), REASON_MAX);
        assert!(c.starts_with("a b") && c.ends_with("..."));
    }
}
