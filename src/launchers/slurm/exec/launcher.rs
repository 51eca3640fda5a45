//! [`SlurmLauncher`]: the [`Launcher`] whose commands run in job steps (see the module above).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::sessions::{StepCarrier, StepSessions};
use super::step::{self, Finished, Proc};
use crate::exec::launch::{Launcher, Opening, Readiness, ServerHandle, Stopped, Unavailable};
use crate::exec::transport::{BoxFuture, Output, Reopened, Transport, TransportError, released};
use crate::gate::part::{Part, Software};
use crate::gate::trap::Trap;
use crate::launchers::slurm::gate::trap_of as trap_of_slurm;
use crate::launchers::slurm::parse::{self as said, SlurmFailureKind};
use crate::launchers::slurm::plan::SlurmConfig;
use crate::launchers::slurm::render::{SlurmStyle, is_step_id, take_step_mark};
use crate::launchers::ssh::exec::launcher::SshLauncher;
use crate::plan::Node;
use crate::render::launch::LaunchStyle;

pub use crate::launchers::slurm::render::ALLOCATION_WAIT_S;

/// Slurm's own clients (`sinfo`, `squeue`, `scontrol`, `scancel`) get this long.
pub(super) const CLIENT: Duration = Duration::from_secs(30);
/// After a step is cancelled, how long its `srun` has to exit: Slurm's default `KillWait` (30 s)
/// and srun's own 2 s, with room.
const STOP_WAIT: Duration = Duration::from_secs(45);
/// After SIGKILL, how long srun has to be reaped.
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
}

/// Runs every node's commands in that node's one step of an allocation; NCCL's ranks as one
/// step of their own, from this machine.
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
    /// Every node's session step.
    steps: Arc<StepSessions>,
    /// A node's commands (the SSH launcher's scripts: servers its session stops by their
    /// process group, staged clients) carried by its step.
    nodes: SshLauncher,
}

impl SlurmLauncher {
    /// A launcher for the plan `plan_name` with `cfg`, its clients given `slurm_conf`.
    pub fn new(cfg: &SlurmConfig, plan_name: &str, slurm_conf: PathBuf) -> SlurmLauncher {
        let env = vec![("SLURM_CONF".to_string(), slurm_conf.display().to_string())];
        let steps = Arc::new(StepCarrier::sessions(env.clone()));
        SlurmLauncher {
            cfg: cfg.clone(),
            name: format!("fabricplan-{plan_name}"),
            env,
            pending: SlurmStyle::new(cfg.allocation, cfg.mpi),
            style: OnceLock::new(),
            state: Mutex::new(State::default()),
            opened: tokio::sync::Mutex::new(None),
            nodes: SshLauncher::new(steps.clone()),
            steps,
        }
    }

    /// The allocation is known: commands and steps name it from now on.
    pub(super) fn set_job(&self, job: u32) {
        let style = SlurmStyle::new(Some(job), self.cfg.mpi);
        let _ = self.style.set(style);
        self.steps.carrier().set_style(style);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start a line this launcher's style wrote for this machine (NCCL's step).
    fn spawn(&self, node: &Node, line: &str) -> Result<Proc, TransportError> {
        let argv = shlex::split(line)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| TransportError::Launch {
                host: node.name.clone(),
                reason: "the command is not one line of words (it was not written for Slurm)"
                    .into(),
                trap: Trap::ToolError,
            })?;
        step::spawn(&argv, &self.env).map_err(|reason| TransportError::Unreachable {
            host: node.name.clone(),
            reason,
        })
    }

    /// Run one of Slurm's own clients to its end.
    pub(super) async fn client(&self, argv: &[String]) -> Result<Finished, String> {
        let mut p = step::spawn(argv, &self.env)?;
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
                omitted_bytes: f.omitted_bytes,
                // a step's output goes through srun, not a file: no bound on the node
                bound_reached: false,
                left: Vec::new(),
            });
        }
        let (reason, trap) = match &failure {
            Some(x) => (x.message.clone(), trap_of_slurm(x.kind)),
            None => (
                last_words(&stderr).unwrap_or_else(|| format!("srun exited {}", f.status)),
                Trap::SlurmStepLaunch,
            ),
        };
        // the node Slurm's own words name (`... failed on node spark-2`), not the node the
        // step was started for (a multi-node step's first rank): that one is no evidence
        let host = failure
            .as_ref()
            .and_then(|x| x.node.clone())
            .unwrap_or_else(|| node.name.clone());
        let mut reason = format!("the step did not run: {reason}");
        if matches!(trap, Trap::SlurmStepLaunch | Trap::SlurmNodeUnavailable)
            && let Some(state) = self.node_state(&host).await
        {
            reason.push_str(&format!("; Slurm reports node `{host}` {state}"));
        }
        Err(TransportError::Launch { host, reason, trap })
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

    /// Open the run: the allocation, then every usable node's session step, all at once; a
    /// node whose step does not start is unavailable, with Slurm's reason.
    async fn open_all(&self, nodes: &[&Node], cancel: watch::Receiver<bool>) -> Opening {
        let mut o = self.open_now(nodes, cancel).await;
        let usable: Vec<&Node> = nodes
            .iter()
            .copied()
            .filter(|n| !o.unavailable.iter().any(|u| u.node == n.name))
            .collect();
        if usable.is_empty() || self.style.get().is_none() {
            return o;
        }
        let started = self.steps.open(&usable).await;
        for (n, r) in usable.iter().zip(started) {
            if let Err(e) = r {
                o.unavailable.push(Unavailable {
                    node: n.name.clone(),
                    reason: e.to_string(),
                    trap: e.trap().unwrap_or(Trap::SlurmStepLaunch),
                    follows: None,
                    parts: vec![
                        Part::software(&n.name, Software::Slurmd),
                        Part::node(&n.name),
                    ],
                });
            }
        }
        o
    }
}

/// A line of this launcher's own, run on this machine (NCCL's step over the ranks): anything
/// else is a node's script, run in its session step.
fn is_launch_line(script: &str) -> bool {
    script.starts_with("srun ")
}

/// The last line that says something, for a failure without a recognised reason.
fn last_words(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("srun: error: ").to_string())
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

    fn nodes_are_scheduled(&self) -> bool {
        true
    }

    /// Every command on a node rides its session step: a host lost is its slurmd's.
    fn reach_part(&self, host: &str, trap: crate::gate::trap::Trap) -> Part {
        match trap {
            crate::gate::trap::Trap::Unreachable => Part::software(host, Software::Slurmd),
            t => Part::reach_of(host, t),
        }
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
            let o = self.open_all(nodes, cancel).await;
            *opened = Some(o.clone());
            o
        })
    }

    /// NCCL's step is started here; anything else runs in the node's session step.
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        if !is_launch_line(script) {
            return self.nodes.exec(node, script, timeout);
        }
        Box::pin(async move {
            let p = self.spawn(node, script)?;
            self.finish(node, p, timeout).await
        })
    }

    /// A node's client is staged in its session step (one line releases it); NCCL's step is
    /// armed at once and started on release.
    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        if !is_launch_line(script) {
            return self.nodes.exec_released(node, script, timeout, armed, go);
        }
        Box::pin(async move {
            let _ = armed.send(());
            if !released(go).await {
                return Err(TransportError::Withdrawn {
                    host: node.name.clone(),
                });
            }
            self.exec(node, script, timeout).await
        })
    }

    fn start<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<ServerHandle, TransportError>> {
        self.nodes.start(node, job, script)
    }

    fn ready<'a>(
        &'a self,
        node: &'a Node,
        handle: &'a ServerHandle,
        port: u16,
    ) -> BoxFuture<'a, Readiness> {
        self.nodes.ready(node, handle, port)
    }

    fn stop<'a>(&'a self, node: &'a Node, handle: &'a ServerHandle) -> BoxFuture<'a, Stopped> {
        self.nodes.stop(node, handle)
    }

    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        self.nodes.reopen()
    }

    /// Every node's session step ended (each stops what still runs in it, its `srun` waited
    /// for), then the allocation fabricplan made released (`scancel JOB`); a given allocation
    /// is left as it was.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.nodes.close().await;
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
