//! [`SlurmLauncher`]: the [`Launcher`] whose commands are job steps (see the module above).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::{oneshot, watch};

use super::step::{self, Finished, Proc, armed_or_done, launched_or_done};
use crate::exec::launch::{Launcher, Opening, Readiness, ServerHandle, Stopped};
use crate::exec::transport::{BoxFuture, Output, TransportError, released};
use crate::gate::classify::trap_of_slurm;
use crate::gate::trap::Trap;
use crate::parse::slurm::{self as said, SlurmFailureKind};
use crate::plan::{Node, SlurmConfig};
use crate::render::launch::{LaunchStyle, SlurmStyle, is_step_id, take_step_mark};
use crate::render::wrap;

/// How long a server has to listen on its port (as over SSH).
pub const READY_LIMIT_S: u32 = super::super::ssh::READY_LIMIT_S;
/// How long `salloc` may wait for busy nodes before the allocation counts as refused.
pub const ALLOCATION_WAIT_S: u32 = 60;
/// Slurm's own clients (`sinfo`, `squeue`, `scontrol`, `scancel`) get this long.
pub(super) const CLIENT: Duration = Duration::from_secs(30);
/// After a step is cancelled, how long its `srun` has to exit: Slurm's default `KillWait` (30 s)
/// and srun's own 2 s, with room.
const STOP_WAIT: Duration = Duration::from_secs(45);
/// A one-shot helper step (readiness, a withdrawn client's exit) gets this long beyond its own.
const SHORT: Duration = Duration::from_secs(20);

/// The Slurm configuration its clients are given. `SLURM_CONF` when set (it must name a file),
/// else the standard `/etc/slurm/slurm.conf` (or the `/run/slurm/conf` copy a configless
/// node's slurmd keeps). Never none: without a configuration Slurm's clients ask DNS for an SRV
/// record of the controller, and fabricplan resolves no name through DNS.
pub fn slurm_conf() -> Result<PathBuf, String> {
    if let Some(v) = std::env::var_os("SLURM_CONF").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "SLURM_CONF names `{}`, which is not a file",
                p.display()
            ))
        };
    }
    ["/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "no Slurm configuration: set SLURM_CONF to the cluster's slurm.conf (without one, \
             Slurm's clients ask DNS for the controller, and fabricplan resolves no name through DNS)"
                .to_string()
        })
}

/// What the launcher holds while a run goes on.
#[derive(Default)]
pub(super) struct State {
    /// The allocation fabricplan made, to release when the run ends.
    pub owned: Option<u32>,
    /// Servers started and not stopped yet, by (node, job).
    servers: HashMap<(String, String), Proc>,
}

/// Runs every command as a job step of one allocation, from this machine.
pub struct SlurmLauncher {
    pub(super) cfg: SlurmConfig,
    /// The allocation's job name (`fabricplan-PLAN`).
    pub(super) name: String,
    /// The environment of Slurm's clients: `SLURM_CONF`.
    pub(super) env: Vec<(String, String)>,
    /// How commands are written before the allocation is known (`--jobid=<allocation>`).
    pending: SlurmStyle,
    /// How they are written once it is.
    style: OnceLock<SlurmStyle>,
    pub(super) state: Mutex<State>,
    /// What opening the run found (it is opened once).
    pub(super) opened: tokio::sync::Mutex<Option<Opening>>,
}

impl SlurmLauncher {
    /// A launcher for the plan `plan_name` with `cfg`, its clients given `slurm_conf`.
    pub fn new(cfg: &SlurmConfig, plan_name: &str, slurm_conf: PathBuf) -> SlurmLauncher {
        SlurmLauncher {
            cfg: cfg.clone(),
            name: format!("fabricplan-{plan_name}"),
            env: vec![("SLURM_CONF".to_string(), slurm_conf.display().to_string())],
            pending: SlurmStyle::new(cfg.allocation, cfg.mpi),
            style: OnceLock::new(),
            state: Mutex::new(State::default()),
            opened: tokio::sync::Mutex::new(None),
        }
    }

    /// The allocation is known: commands name it from now on.
    pub(super) fn set_job(&self, job: u32) {
        let _ = self.style.set(SlurmStyle::new(Some(job), self.cfg.mpi));
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start a line this launcher's style wrote.
    fn spawn(&self, node: &Node, line: &str, stdin: bool) -> Result<Proc, TransportError> {
        let argv = shlex::split(line)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| TransportError::Launch {
                host: node.name.clone(),
                reason: "the command is not one line of words (it was not written for Slurm)"
                    .into(),
                trap: Trap::ToolError,
            })?;
        step::spawn(&argv, &self.env, stdin).map_err(|reason| TransportError::Unreachable {
            host: node.name.clone(),
            reason,
        })
    }

    /// Run one of Slurm's own clients to its end.
    pub(super) async fn client(&self, argv: &[String]) -> Result<Finished, String> {
        let mut p = step::spawn(argv, &self.env, false)?;
        match p.finished_within(CLIENT).await {
            Some(f) => Ok((*f).clone()),
            None => {
                p.kill();
                Err(format!(
                    "`{}` did not answer within {} s",
                    argv.join(" "),
                    CLIENT.as_secs()
                ))
            }
        }
    }

    /// `sinfo`'s state of one node, in words (for a failure that may be the node's).
    async fn node_state(&self, node: &str) -> Option<String> {
        let argv: Vec<String> = ["sinfo", "-h", "-N", "-n", node, "-o", "%N|%T|%E"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = self.client(&argv).await.ok()?;
        said::node_states(&f.stdout)
            .into_iter()
            .find(|s| s.node == node)
            .map(|s| s.describe())
    }

    /// A step's output as the runner takes it: its step and armed marks taken off stderr.
    /// A step whose task never started (no step mark), or that Slurm ended (its time limit, a
    /// rank it could not launch), is an error naming Slurm's reason and trap.
    async fn output(&self, node: &Node, f: &Finished) -> Result<Output, TransportError> {
        let (step, stderr) = take_step_mark(&f.stderr);
        let stderr = wrap::take_armed_mark(&stderr).1;
        let failure = (f.status != 0).then(|| said::failure(&stderr)).flatten();
        let slurm_ended = failure.as_ref().is_some_and(|x| {
            matches!(
                x.kind,
                SlurmFailureKind::TimeLimit
                    | SlurmFailureKind::StepLaunch
                    | SlurmFailureKind::NodeUnavailable
                    | SlurmFailureKind::JobGone
            )
        });
        if step.is_some() && !slurm_ended {
            if let Some(x) = failure.filter(|x| x.kind == SlurmFailureKind::Cancelled) {
                return Err(TransportError::Lost {
                    host: node.name.clone(),
                    reason: format!("Slurm cancelled the step: {}", x.message),
                });
            }
            return Ok(Output {
                status: f.status,
                stdout: f.stdout.clone(),
                stderr,
            });
        }
        let (reason, trap) = match &failure {
            Some(x) => (x.message.clone(), trap_of_slurm(x.kind)),
            None => (
                last_words(&stderr).unwrap_or_else(|| format!("srun exited {}", f.status)),
                Trap::SlurmStepLaunch,
            ),
        };
        let mut reason = format!("the step did not run: {reason}");
        if matches!(trap, Trap::SlurmStepLaunch | Trap::SlurmNodeUnavailable)
            && let Some(state) = self.node_state(&node.name).await
        {
            reason.push_str(&format!("; Slurm reports node `{}` {state}", node.name));
        }
        Err(TransportError::Launch {
            host: node.name.clone(),
            reason,
            trap,
        })
    }

    /// Run `p` to its end within `timeout`; past it, end its step and say so.
    async fn finish(
        &self,
        node: &Node,
        mut p: Proc,
        timeout: Duration,
    ) -> Result<Output, TransportError> {
        match p.finished_within(timeout).await {
            Some(f) => self.output(node, &f).await,
            None => {
                self.end(&mut p).await;
                Err(TransportError::Timeout {
                    host: node.name.clone(),
                    secs: timeout.as_secs(),
                })
            }
        }
    }

    /// End a running step: cancel exactly its step when it said its id (else srun ends it on
    /// SIGTERM), wait for srun to exit, and kill srun alone as the last resort. Returns what it
    /// printed, unless it never exited.
    async fn end(&self, p: &mut Proc) -> Option<std::sync::Arc<Finished>> {
        if p.is_done() {
            return p.finished_within(Duration::ZERO).await;
        }
        match p.step_id() {
            Some(id) if is_step_id(&id) => {
                let _ = self.client(&["scancel".to_string(), id]).await;
            }
            _ => p.terminate(),
        }
        match p.finished_within(STOP_WAIT).await {
            Some(f) => Some(f),
            None => {
                p.kill();
                p.finished_within(SHORT).await;
                None
            }
        }
    }

    fn take_server(&self, node: &Node, job: &str) -> Option<Proc> {
        self.state()
            .servers
            .remove(&(node.name.clone(), job.to_string()))
    }

    /// End a server that will not be stopped by the runner (it has no handle to stop it by).
    async fn drop_server(&self, node: &Node, job: &str) -> Option<String> {
        let mut p = self.take_server(node, job)?;
        let f = self.end(&mut p).await?;
        Some(server_log(&f, p.step_id().as_deref()))
    }
}

/// The last line that says something, for a failure without a recognised reason.
fn last_words(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("srun: error: ").to_string())
}

/// A server's output as its log: without the step mark and without the lines its own
/// cancellation made (`Job step aborted`, `STEP J.S ... CANCELLED AT` unless for its time
/// limit, `task 0: Killed`).
fn server_log(f: &Finished, step: Option<&str>) -> String {
    let (_, stderr) = take_step_mark(&f.stderr);
    let cancelled_here = |l: &str| {
        l.contains("Job step aborted: Waiting up to")
            || l.contains("srun: forcing job termination")
            || (l.contains("CANCELLED AT")
                && !l.contains("DUE TO TIME LIMIT")
                && step.is_some_and(|s| l.contains(&format!("STEP {s} "))))
            || (l.starts_with("srun: error: ")
                && (l.ends_with(": Killed") || l.ends_with(": Terminated")))
    };
    let kept: String = stderr
        .split_inclusive('\n')
        .filter(|l| !cancelled_here(l.trim_end()))
        .collect();
    format!("{}{kept}", f.stdout)
}

impl Launcher for SlurmLauncher {
    fn style(&self) -> &dyn LaunchStyle {
        match self.style.get() {
            Some(s) => s,
            None => &self.pending,
        }
    }

    fn transport_name(&self) -> &'static str {
        "slurm"
    }

    fn simulated(&self) -> bool {
        false
    }

    fn open<'a>(
        &'a self,
        nodes: &'a [&'a Node],
        cancel: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Opening> {
        Box::pin(async move {
            let mut opened = self.opened.lock().await;
            if let Some(o) = opened.as_ref() {
                return o.clone();
            }
            let o = self.open_now(nodes, cancel).await;
            *opened = Some(o.clone());
            o
        })
    }

    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            // a client's step waits for its release: run at once, it is released at once
            let gated = script.contains(wrap::ARMED_MARK);
            let mut p = self.spawn(node, script, gated)?;
            if gated {
                p.release().await;
            }
            self.finish(node, p, timeout).await
        })
    }

    /// A client's step is launched and waits (its script says it is armed); the release is one
    /// line on its stdin. Other lines (an MPI launch) are armed at once and run on release.
    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            if !script.contains(wrap::ARMED_MARK) {
                let _ = armed.send(());
                if !released(go).await {
                    return Err(TransportError::Withdrawn {
                        host: node.name.clone(),
                    });
                }
                return self.exec(node, script, timeout).await;
            }
            let mut p = self.spawn(node, script, true)?;
            match tokio::time::timeout(timeout, armed_or_done(&mut p)).await {
                Err(_) => {
                    self.end(&mut p).await;
                    return Err(TransportError::Timeout {
                        host: node.name.clone(),
                        secs: timeout.as_secs(),
                    });
                }
                // it ended before it could wait (its step was not launched): its answer
                Ok(false) => return self.finish(node, p, timeout).await,
                Ok(true) => {}
            }
            let _ = armed.send(());
            if !released(go).await {
                // end of input before its line: the script stops unrun
                p.withdraw();
                if p.finished_within(SHORT).await.is_none() {
                    self.end(&mut p).await;
                }
                return Err(TransportError::Withdrawn {
                    host: node.name.clone(),
                });
            }
            p.release().await;
            self.finish(node, p, timeout).await
        })
    }

    /// Starts the server's step and answers once its script said its step id (it is launched),
    /// or with Slurm's reason when it could not be.
    fn start<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            let mut p = self.spawn(node, script, false)?;
            match tokio::time::timeout(timeout, launched_or_done(&mut p)).await {
                Err(_) => {
                    self.end(&mut p).await;
                    return Err(TransportError::Timeout {
                        host: node.name.clone(),
                        secs: timeout.as_secs(),
                    });
                }
                Ok(false) => {
                    let f = p.finished().await;
                    return match self.output(node, &f).await {
                        Err(e) => Err(e),
                        Ok(o) => Err(TransportError::Launch {
                            host: node.name.clone(),
                            reason: format!(
                                "the server's step ended before it started (exit {})",
                                o.status
                            ),
                            trap: Trap::SlurmStepLaunch,
                        }),
                    };
                }
                Ok(true) => {}
            }
            let old = self
                .state()
                .servers
                .insert((node.name.clone(), job.to_string()), p);
            if let Some(mut old) = old {
                self.end(&mut old).await;
            }
            Ok(Output::ok(""))
        })
    }

    /// A step on the server's node polls its port; the server's own step ending first means it
    /// died. Ready: its step id is the handle.
    fn ready<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        port: u16,
        _run_id: &'a str,
    ) -> BoxFuture<'a, Readiness> {
        Box::pin(async move {
            let key = (node.name.clone(), job.to_string());
            let watched = self
                .state()
                .servers
                .get(&key)
                .map(|p| (p.step.clone(), p.done.clone()));
            let Some((step, mut server_done)) = watched else {
                return Readiness::NotReady {
                    why: format!("no server of `{job}` was started on {}", node.name),
                    log: String::new(),
                    handle: None,
                    trap: None,
                };
            };
            let handle = || step.borrow().clone().map(ServerHandle::Step);
            let line = match self.style.get() {
                Some(s) => s.listening(&node.name, port, READY_LIMIT_S),
                None => self.pending.listening(&node.name, port, READY_LIMIT_S),
            };
            let mut poll = match self.spawn(node, &line, false) {
                Ok(p) => p,
                Err(e) => {
                    return Readiness::NotReady {
                        why: e.to_string(),
                        log: String::new(),
                        handle: handle(),
                        trap: e.trap(),
                    };
                }
            };
            let limit = Duration::from_secs(u64::from(READY_LIMIT_S)) + SHORT;
            let polled = tokio::select! {
                f = poll.finished_within(limit) => Some(f),
                _ = server_done.wait_for(Option::is_some) => None,
            };
            let Some(polled) = polled else {
                // the server's step ended before its port listened
                self.end(&mut poll).await;
                let mut p = self.take_server(node, job);
                let f = match p.as_mut() {
                    Some(p) => p.finished().await,
                    None => return not_ready("the server's step was lost", String::new(), None),
                };
                let log = server_log(&f, step.borrow().as_deref());
                return match self.output(node, &f).await {
                    Err(e) => not_ready(&e.to_string(), log, e.trap()),
                    Ok(o) => not_ready(
                        &format!("the server exited before listening (exit {})", o.status),
                        log,
                        None,
                    ),
                };
            };
            let answer = match polled {
                Some(f) => self.output(node, &f).await,
                None => {
                    self.end(&mut poll).await;
                    Err(TransportError::Timeout {
                        host: node.name.clone(),
                        secs: limit.as_secs(),
                    })
                }
            };
            match answer {
                Ok(o) if o.status == 0 => match handle() {
                    Some(h) => Readiness::Ready(h, None),
                    None => {
                        let log = self.drop_server(node, job).await.unwrap_or_default();
                        not_ready(
                            "the server listens but its step never said its id",
                            log,
                            None,
                        )
                    }
                },
                other => {
                    let (why, trap) = match other {
                        Ok(o) => (
                            format!(
                                "the server did not listen on port {port} (poll exit {})",
                                o.status
                            ),
                            None,
                        ),
                        Err(e) => (e.to_string(), e.trap()),
                    };
                    match handle() {
                        Some(h) => Readiness::NotReady {
                            why,
                            log: String::new(),
                            handle: Some(h),
                            trap,
                        },
                        None => {
                            let log = self.drop_server(node, job).await.unwrap_or_default();
                            not_ready(&why, log, trap)
                        }
                    }
                }
            }
        })
    }

    /// `scancel JOB.STEP` of exactly the server's step, then its srun's exit and output.
    fn stop<'a>(
        &'a self,
        node: &'a Node,
        handle: &'a ServerHandle,
        job: &'a str,
        _run_id: &'a str,
        _have_log: bool,
    ) -> BoxFuture<'a, Stopped> {
        Box::pin(async move {
            let ServerHandle::Step(id) = handle else {
                return Stopped::foreign(node, "Slurm", handle);
            };
            if !is_step_id(id) {
                return Stopped {
                    error: Some(TransportError::Lost {
                        host: node.name.clone(),
                        reason: format!("`{id}` is not a step id"),
                    }),
                    ..Stopped::default()
                };
            }
            let mut p = self.take_server(node, job);
            if let Some(done) = p.as_mut().filter(|p| p.is_done()) {
                // it ended by itself (its remote timeout): nothing to cancel
                let f = done.finished().await;
                return Stopped {
                    log: Some(server_log(&f, Some(id))),
                    ..Stopped::default()
                };
            }
            let cancel = self.client(&["scancel".to_string(), id.clone()]).await;
            let Some(mut p) = p else {
                return Stopped {
                    error: cancel.err().map(|reason| TransportError::Lost {
                        host: node.name.clone(),
                        reason,
                    }),
                    ..Stopped::default()
                };
            };
            match p.finished_within(STOP_WAIT).await {
                Some(f) => Stopped {
                    log: Some(server_log(&f, Some(id))),
                    survived: false,
                    error: None,
                },
                None => {
                    p.kill();
                    Stopped {
                        log: None,
                        survived: true,
                        error: cancel.err().map(|reason| TransportError::Lost {
                            host: node.name.clone(),
                            reason,
                        }),
                    }
                }
            }
        })
    }

    /// Ends what is still running (servers nobody stopped), then releases the allocation
    /// fabricplan made (`scancel JOB`); a given allocation is left as it was.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let servers: Vec<Proc> = self.state().servers.drain().map(|(_, p)| p).collect();
            join_all(servers.into_iter().map(|mut p| async move {
                self.end(&mut p).await;
            }))
            .await;
            let owned = self.state().owned;
            if let Some(job) = owned {
                let released = self
                    .client(&["scancel".to_string(), job.to_string()])
                    .await
                    .is_ok_and(|f| f.status == 0);
                if released {
                    self.state().owned = None;
                }
            }
        })
    }
}

fn not_ready(why: &str, log: String, trap: Option<Trap>) -> Readiness {
    Readiness::NotReady {
        why: why.to_string(),
        log,
        handle: None,
        trap,
    }
}

impl Drop for SlurmLauncher {
    /// The last resort (a panic before `close`): the allocation fabricplan made is released.
    fn drop(&mut self) {
        let owned = self.state().owned.take();
        if let Some(job) = owned {
            let _ = std::process::Command::new("scancel")
                .arg(job.to_string())
                .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}
