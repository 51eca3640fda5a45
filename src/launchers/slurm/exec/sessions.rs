//! One long-lived job step per node, carrying that node's session ([`crate::exec::session`]):
//! `srun --overlap --jobid=J -w NODE -N1 -n1 /bin/sh -c LOOP fabricplan-session TOKEN`, started
//! from this machine once the allocation is known, its stdin and stdout the session's. Every
//! command on the node is a job of it, so a round launches no step (NCCL's own step over the
//! ranks aside). A step that ends during the run (its slurmd gone, the step cancelled) is that
//! node's finding and is started again once when the runner asks; every `srun` is waited for
//! before the run ends. The sessions are the pool's ([`Pool`]); the step is the carrier.

use std::sync::OnceLock;
use std::time::Duration;

use crate::exec::session::pool::{Carrier, Pool};
use crate::exec::session::{Session, process, wire};
use crate::exec::transport::{BoxFuture, TransportError};
use crate::gate::part::{Part, Reach, Software};
use crate::gate::trap::Trap;
use crate::launchers::slurm::gate::trap_of as trap_of_slurm;
use crate::launchers::slurm::parse::{self as said, SlurmFailureKind};
use crate::launchers::slurm::render::SlurmStyle;
use crate::plan::Node;

/// How long a node's step has to start its session: a step launch takes ~0.1 s, and srun gives
/// up on a node whose slurmd does not answer after Slurm's `MessageTimeout` (10 s by default).
const START_LIMIT: Duration = Duration::from_secs(45);
/// How long `srun` has to exit once its session ended, before it is ended itself.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// Every node's step of one allocation.
pub(super) type StepSessions = Pool<StepCarrier>;

/// A job step of the allocation carries each node's session.
pub(super) struct StepCarrier {
    env: Vec<(String, String)>,
    /// How steps are written once the allocation is known.
    style: OnceLock<SlurmStyle>,
}

/// The part a node's step that ended or could not start implicates, from what `srun` said.
fn part_of(node: &str, srun_said: &str) -> Part {
    match said::failure(srun_said).map(|f| f.kind) {
        Some(SlurmFailureKind::AllocationRefused | SlurmFailureKind::JobGone) => Part::Reach {
            reach: Reach::SlurmController,
        },
        _ => Part::software(node, Software::Slurmd),
    }
}

impl StepCarrier {
    pub(super) fn sessions(env: Vec<(String, String)>) -> StepSessions {
        Pool::over(StepCarrier {
            env,
            style: OnceLock::new(),
        })
    }

    /// The allocation is known: steps are started in it from now on.
    pub(super) fn set_style(&self, style: SlurmStyle) {
        let _ = self.style.set(style);
    }

    /// Start `node`'s step and its session; a step that does not come up is ended, with
    /// Slurm's reason and trap.
    async fn start_step(&self, node: &Node) -> Result<(Session, process::Child), TransportError> {
        let Some(style) = self.style.get() else {
            return Err(TransportError::Launch {
                host: node.name.clone(),
                reason: "no Slurm allocation holds it".into(),
                trap: Trap::SlurmAllocationRefused,
            });
        };
        let token = wire::random_word();
        let mut argv = style.task_argv(&node.name);
        argv.extend(wire::argv(&token));
        let (sink, source, srun) =
            process::spawn(&argv, &self.env).map_err(|reason| TransportError::Unreachable {
                host: node.name.clone(),
                reason,
            })?;
        match Session::attach(&node.name, &token, sink, source, START_LIMIT).await {
            Ok(session) => Ok((session, srun)),
            Err(e @ crate::exec::session::AttachError::Refused(_)) => {
                srun.end(EXIT_GRACE).await;
                Err(e.into_transport(&node.name))
            }
            Err(why) => {
                let why = why.to_string();
                srun.end(EXIT_GRACE).await;
                let stderr = srun.stderr();
                let (reason, trap) = match said::failure(&stderr) {
                    Some(f) => (f.message, trap_of_slurm(f.kind)),
                    None => (why, Trap::SlurmStepLaunch),
                };
                Err(TransportError::Launch {
                    host: node.name.clone(),
                    reason: format!("its session's step did not start: {reason}"),
                    trap,
                })
            }
        }
    }
}

impl Carrier for StepCarrier {
    type Held = process::Child;

    fn name(&self) -> &'static str {
        "slurm"
    }

    fn noun(&self) -> &'static str {
        "session step"
    }

    fn start<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(Session, process::Child), TransportError>> {
        Box::pin(self.start_step(node))
    }

    /// A step told to end exits with its session; one that does not (or one whose session
    /// ended under the run) is ended: TERM, then KILL.
    fn end<'a>(&'a self, srun: &'a process::Child, closing: bool) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if closing && srun.exited_within(EXIT_GRACE).await.is_some() {
                return;
            }
            srun.end(EXIT_GRACE).await;
        })
    }

    /// From what `srun` said as its step ended: the node's slurmd, or the controller.
    fn lost(&self, node: &Node, srun: &process::Child) -> (Part, Trap) {
        let said = srun.stderr();
        (
            part_of(&node.name, &said),
            said::failure(&said)
                .map(|f| trap_of_slurm(f.kind))
                .unwrap_or(Trap::SlurmStepLaunch),
        )
    }
}
