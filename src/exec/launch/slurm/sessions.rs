//! One long-lived job step per node, carrying that node's session ([`crate::exec::session`]):
//! `srun --overlap --jobid=J -w NODE -N1 -n1 /bin/sh -c LOOP fabricplan-session TOKEN`, started
//! from this machine once the allocation is known, its stdin and stdout the session's. Every
//! command on the node is a job of it, so a round launches no step (NCCL's own step over the
//! ranks aside). A step that ends during the run (its slurmd gone, the step cancelled) is that
//! node's finding and is started again once when the runner asks; every `srun` is waited for
//! before the run ends.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::{Mutex, oneshot, watch};

use crate::exec::session::{Session, process, wire};
use crate::exec::transport::{BoxFuture, Output, Reopened, Spawned, Transport, TransportError};
use crate::gate::classify::trap_of_slurm;
use crate::gate::part::{Part, Reach, Software};
use crate::gate::trap::Trap;
use crate::parse::slurm::{self as said, SlurmFailureKind};
use crate::plan::Node;
use crate::render::launch::SlurmStyle;

/// How long a node's step has to start its session: a step launch takes ~0.1 s, and srun gives
/// up on a node whose slurmd does not answer after Slurm's `MessageTimeout` (10 s by default).
const START_LIMIT: Duration = Duration::from_secs(45);
/// How long `srun` has to exit once its session ended, before it is ended itself.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// A node's step: its `srun` on this machine and the session it carries.
struct Step {
    node: Node,
    session: Session,
    srun: process::Child,
}

/// Every node's step of one allocation.
pub(super) struct StepSessions {
    env: Vec<(String, String)>,
    /// How steps are written once the allocation is known.
    style: OnceLock<SlurmStyle>,
    open: Mutex<HashMap<String, Arc<Step>>>,
    /// Nodes whose step ended and could not be started again: why.
    gone: std::sync::Mutex<HashMap<String, String>>,
    /// `srun`s of ended steps, still to be waited for at the end.
    ended: std::sync::Mutex<Vec<process::Child>>,
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

impl StepSessions {
    pub(super) fn new(env: Vec<(String, String)>) -> StepSessions {
        StepSessions {
            env,
            style: OnceLock::new(),
            open: Mutex::new(HashMap::new()),
            gone: std::sync::Mutex::new(HashMap::new()),
            ended: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The allocation is known: steps are started in it from now on.
    pub(super) fn set_style(&self, style: SlurmStyle) {
        let _ = self.style.set(style);
    }

    /// Start `node`'s step and its session; a step that does not come up is ended, with
    /// Slurm's reason and trap.
    async fn start(&self, node: &Node) -> Result<Arc<Step>, TransportError> {
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
            Ok(session) => Ok(Arc::new(Step {
                node: node.clone(),
                session,
                srun,
            })),
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

    /// The node's session: its step's, started when the node was never reached.
    async fn session(&self, node: &Node) -> Result<Session, TransportError> {
        if let Some(why) = self
            .gone
            .lock()
            .ok()
            .and_then(|g| g.get(&node.name).cloned())
        {
            return Err(TransportError::Lost {
                host: node.name.clone(),
                reason: why,
            });
        }
        let mut open = self.open.lock().await;
        if let Some(s) = open.get(&node.name) {
            return Ok(s.session.clone());
        }
        // steps are started all at once by `open`; one started here is a node used late
        let s = self.start(node).await?;
        let session = s.session.clone();
        open.insert(node.name.clone(), s);
        Ok(session)
    }

    /// Start the step of a node whose step ended, once; what its old session left running is
    /// the old loop's to stop (or Slurm's, ending the step), and a loop killed before it could
    /// is cleaned up by the new one as it starts.
    async fn restart(&self, old: Arc<Step>) -> Reopened {
        let why = old.session.ended().unwrap_or_default();
        old.srun.end(EXIT_GRACE).await;
        let said = old.srun.stderr();
        let node = old.node.clone();
        let again = match self.start(&node).await {
            Ok(s) => {
                self.open.lock().await.insert(node.name.clone(), s);
                Ok(())
            }
            Err(e) => {
                if let Ok(mut g) = self.gone.lock() {
                    g.insert(
                        node.name.clone(),
                        format!(
                            "its session's step ended ({why}) and could not be started again: {e}"
                        ),
                    );
                }
                Err(e)
            }
        };
        if let Ok(mut e) = self.ended.lock() {
            e.push(old.srun.clone());
        }
        Reopened {
            host: node.name.clone(),
            why: format!("fabricplan's session step on {} ended: {why}", node.name),
            part: part_of(&node.name, &said),
            trap: said::failure(&said)
                .map(|f| trap_of_slurm(f.kind))
                .unwrap_or(Trap::SlurmStepLaunch),
            again,
        }
    }
}

impl Transport for StepSessions {
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move { self.session(node).await?.run(script, timeout).await })
    }

    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            self.session(node)
                .await?
                .run_released(script, timeout, armed, go)
                .await
        })
    }

    fn spawn<'a>(
        &'a self,
        node: &'a Node,
        _job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<Spawned, TransportError>> {
        Box::pin(async move { self.session(node).await?.spawn(script).await })
    }

    fn stop_spawned<'a>(
        &'a self,
        node: &'a Node,
        job: &'a Spawned,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move { self.session(node).await?.stop_spawned(job.id).await })
    }

    fn name(&self) -> &'static str {
        "slurm"
    }

    /// Every node's step, all at once.
    fn open<'a>(&'a self, nodes: &'a [&'a Node]) -> BoxFuture<'a, Vec<Result<(), TransportError>>> {
        Box::pin(async move {
            let started = join_all(nodes.iter().map(|n| self.start(n))).await;
            let mut open = self.open.lock().await;
            nodes
                .iter()
                .zip(started)
                .map(|(n, s)| {
                    s.map(|s| {
                        open.insert(n.name.clone(), s);
                    })
                })
                .collect()
        })
    }

    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        Box::pin(async move {
            let ended =
                crate::exec::session::take_ended(&mut *self.open.lock().await, |s| &s.session);
            join_all(ended.into_iter().map(|s| self.restart(s))).await
        })
    }

    /// Every session told to end (each stops what still runs in it), then every `srun` of the
    /// run waited for: it exits with its step; one that does not is ended (TERM, then KILL).
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let steps: Vec<Arc<Step>> = self.open.lock().await.drain().map(|(_, s)| s).collect();
            join_all(steps.iter().map(|s| async move {
                s.session.close().await;
                if s.srun.exited_within(EXIT_GRACE).await.is_none() {
                    s.srun.end(EXIT_GRACE).await;
                }
            }))
            .await;
            let ended: Vec<process::Child> = self
                .ended
                .lock()
                .map(|mut e| std::mem::take(&mut *e))
                .unwrap_or_default();
            join_all(ended.iter().map(|c| c.end(EXIT_GRACE))).await;
        })
    }
}
