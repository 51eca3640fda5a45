//! Opening a run under Slurm: the nodes' states, then the allocation (made with `salloc`, or
//! the given one checked). What cannot be used is said per node, in Slurm's words.

use tokio::sync::watch;

use super::launcher::{ALLOCATION_WAIT_S, SlurmLauncher};
use super::step;
use crate::exec::launch::{Opening, Unavailable};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::{Part, Reach, Software};
use crate::gate::trap::Trap;
use crate::launchers::slurm::gate::trap_of as trap_of_slurm;
use crate::launchers::slurm::parse::{self as said, NodeState};
use crate::launchers::slurm::render::salloc;
use crate::plan::Node;
use crate::render::display;

/// The gate of the allocation's verdict.
pub const GATE: &str = "slurm allocation";

fn words(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| s.to_string()).collect()
}

impl SlurmLauncher {
    /// See [`crate::exec::launch::Launcher::open`].
    pub(super) async fn open_now(&self, nodes: &[&Node], cancel: watch::Receiver<bool>) -> Opening {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        let mut o = Opening::default();
        if names.is_empty() {
            return o;
        }
        let states = match self.states(&names).await {
            Ok(s) => s,
            Err(why) => {
                return refused(
                    &names,
                    format!("cannot read the nodes' states: {why}"),
                    Trap::SlurmAllocationRefused,
                );
            }
        };
        let mut usable: Vec<&str> = Vec::new();
        for name in &names {
            match states.iter().find(|s| s.node == *name) {
                None => o.unavailable.push(Unavailable {
                    node: name.to_string(),
                    reason: format!(
                        "Slurm knows no node `{name}` (node names are Slurm's: `sinfo -N` lists them)"
                    ),
                    trap: Trap::SlurmNodeUnavailable,
                    follows: None,
                    parts: vec![Part::Plan {
                        what: format!("node `{name}` is not a Slurm node name"),
                    }],
                }),
                Some(s) if !s.usable() => o.unavailable.push(Unavailable {
                    node: name.to_string(),
                    reason: format!("Slurm reports node `{name}` {}{}", s.describe(), ours(s)),
                    trap: Trap::SlurmNodeUnavailable,
                    follows: None,
                    parts: vec![Part::software(name, Software::Slurmd), Part::node(name)],
                }),
                Some(_) => usable.push(name),
            }
        }
        let given = match self.cfg.allocation {
            Some(job) => self.check_given(job, &usable).await,
            None if usable.is_empty() => return o,
            None => self.allocate(&usable, cancel).await,
        };
        o.verdicts.extend(given.verdicts);
        o.unavailable.extend(given.unavailable);
        o
    }

    /// `sinfo`'s states of `names`.
    async fn states(&self, names: &[&str]) -> Result<Vec<NodeState>, String> {
        let list = names.join(",");
        let f = self
            .client(&words(&[
                "sinfo", "-h", "-N", "-n", &list, "-o", "%N|%T|%E",
            ]))
            .await?;
        if f.status != 0 {
            return Err(said::failure(&f.stderr)
                .map(|x| x.message)
                .unwrap_or_else(|| f.stderr.trim().to_string()));
        }
        Ok(said::node_states(&f.stdout))
    }

    /// `salloc --no-shell ... -w NODES`: granted (the launcher now owns the job), refused (each
    /// node follows that one FAIL), or given up on an interrupt.
    async fn allocate(&self, usable: &[&str], mut cancel: watch::Receiver<bool>) -> Opening {
        let argv = salloc(&self.cfg, usable, &self.name, ALLOCATION_WAIT_S);
        let mut p = match step::spawn(&argv, &self.env) {
            Ok(p) => p,
            Err(why) => return refused(usable, why, Trap::SlurmAllocationRefused),
        };
        let interrupted = tokio::select! {
            _ = p.finished() => false,
            _ = cancel.wait_for(|c| *c) => true,
        };
        if interrupted {
            // salloc withdraws its request on SIGINT; a job it was granted meanwhile is ours
            p.interrupt();
            let f = match p.finished_within(super::launcher::CLIENT).await {
                Some(f) => f,
                None => {
                    p.kill();
                    p.finished().await
                }
            };
            if let Some(job) = said::granted(&f.stderr).or(said::pending(&f.stderr)) {
                let _ = self.client(&words(&["scancel", &job.to_string()])).await;
            }
            let mut o = Opening::default();
            for n in usable {
                o.unavailable.push(Unavailable {
                    node: n.to_string(),
                    reason: "interrupted while Slurm allocated the nodes".into(),
                    trap: Trap::SlurmAllocationRefused,
                    follows: Some("interrupt".into()),
                    parts: Vec::new(),
                });
            }
            return o;
        }
        let f = p.finished().await;
        match said::granted(&f.stderr) {
            Some(job) if f.status == 0 => {
                self.state.lock().unwrap_or_else(|e| e.into_inner()).owned = Some(job);
                self.set_job(job);
                Opening {
                    verdicts: vec![Verdict::check(
                        GATE,
                        Outcome::Ok,
                        format!(
                            "job {job} granted on {} node(s): {} (`{}`); released when the run ends",
                            usable.len(),
                            usable.join(","),
                            display(&argv)
                        ),
                        None,
                    )],
                    unavailable: Vec::new(),
                }
            }
            granted => {
                // a job granted or left pending is released whatever salloc said after
                if let Some(job) = granted.or(said::pending(&f.stderr)) {
                    let _ = self.client(&words(&["scancel", &job.to_string()])).await;
                }
                let (why, trap) = match said::failure(&f.stderr) {
                    Some(x) => (x.message, trap_of_slurm(x.kind)),
                    None => (
                        f.stderr
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("salloc said nothing")
                            .trim()
                            .to_string(),
                        Trap::SlurmAllocationRefused,
                    ),
                };
                let trap = match trap {
                    // a refusal for the nodes names them; anything else is the allocation's
                    Trap::SlurmNodeUnavailable => Trap::SlurmNodeUnavailable,
                    _ => Trap::SlurmAllocationRefused,
                };
                refused(
                    usable,
                    format!("salloc: {why} (`{}`, exit {})", display(&argv), f.status),
                    trap,
                )
            }
        }
    }

    /// An allocation given by its job id: it must be running and hold the nodes. It is never
    /// released by fabricplan.
    async fn check_given(&self, job: u32, usable: &[&str]) -> Opening {
        let id = job.to_string();
        let q = match self
            .client(&words(&["squeue", "-h", "-j", &id, "-o", "%T|%N"]))
            .await
        {
            Ok(f) => f,
            Err(why) => return refused(usable, why, Trap::SlurmAllocationRefused),
        };
        let line = q
            .stdout
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let (state, list) = line.split_once('|').unwrap_or((line, ""));
        let state = state.trim();
        if q.status != 0 || state.is_empty() {
            let why = said::failure(&q.stderr)
                .map(|x| x.message)
                .unwrap_or_else(|| "Slurm lists no such job (`squeue -j`)".into());
            return refused(
                usable,
                format!("allocation {job}: {why}"),
                Trap::SlurmAllocationRefused,
            );
        }
        if state != "RUNNING" {
            return refused(
                usable,
                format!("allocation {job} is {state}, not RUNNING: it holds no nodes to run on"),
                Trap::SlurmAllocationRefused,
            );
        }
        let held = match self
            .client(&words(&["scontrol", "show", "hostnames", list.trim()]))
            .await
        {
            Ok(f) if f.status == 0 => f
                .stdout
                .lines()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>(),
            Ok(f) => {
                return refused(
                    usable,
                    format!("scontrol show hostnames: {}", f.stderr.trim()),
                    Trap::SlurmAllocationRefused,
                );
            }
            Err(why) => return refused(usable, why, Trap::SlurmAllocationRefused),
        };
        self.set_job(job);
        let mut o = Opening::default();
        let mut inside = Vec::new();
        for n in usable {
            if held.iter().any(|h| h == n) {
                inside.push(*n);
            } else {
                o.unavailable.push(Unavailable {
                    node: n.to_string(),
                    reason: format!(
                        "node `{n}` is not in allocation {job} (it holds {})",
                        held.join(",")
                    ),
                    trap: Trap::SlurmNodeUnavailable,
                    follows: None,
                    parts: vec![Part::Plan {
                        what: format!("node `{n}` is outside allocation {job}"),
                    }],
                });
            }
        }
        o.verdicts.push(Verdict::check(
            GATE,
            Outcome::Ok,
            format!(
                "job {job} (given) is RUNNING on {}; the run uses {} of them; it is not released",
                held.join(","),
                inside.len()
            ),
            None,
        ));
        o
    }
}

/// No allocation: one FAIL, and every node it would have held follows it.
fn refused(nodes: &[&str], why: String, trap: Trap) -> Opening {
    Opening {
        verdicts: vec![
            Verdict::check(GATE, Outcome::Fail, why.clone(), Some(trap)).about(vec![Part::Reach {
                reach: Reach::SlurmController,
            }]),
        ],
        unavailable: nodes
            .iter()
            .map(|n| Unavailable {
                node: n.to_string(),
                reason: format!("no Slurm allocation holds it ({why})"),
                trap,
                follows: Some(GATE.into()),
                parts: vec![Part::Reach {
                    reach: Reach::SlurmController,
                }],
            })
            .collect(),
    }
}

/// What to do with a node fabricplan drained: Slurm allocates no drained node.
fn ours(s: &NodeState) -> &'static str {
    let drained_by_us = s.drained()
        && s.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(crate::results::service::REASON_PREFIX));
    if drained_by_us {
        ": drained by fabricplan; re-test it over SSH (`--launcher ssh --resume-passed`) to resume it when healthy"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_fabricplan_drained_says_how_to_bring_it_back() {
        let s = |reason: &str| NodeState {
            node: "spark-b".into(),
            state: "drained".into(),
            reason: Some(reason.into()),
        };
        assert!(
            ours(&s("fabricplan ring-1: firmware throttle spark-b.f0.a"))
                .contains("--launcher ssh --resume-passed")
        );
        assert_eq!(ours(&s("PSU swap")), "");
    }
}
