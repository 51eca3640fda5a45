//! What the runner asks of a launcher: how a job's processes are started on nodes, made ready,
//! released together, stopped and collected. The runner speaks only to [`Launcher`]; a launcher
//! writes commands through its [`LaunchStyle`] and carries them with a transport (SSH, local,
//! the simulated fabric, a test fake). The launchers themselves are folders of
//! `crate::launchers`, each registered there once.

use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::transport::{BoxFuture, Output, Reopened, TransportError};
use crate::gate::judge::Verdict;
use crate::gate::trap::Trap;
use crate::plan::Node;
use crate::render::launch::LaunchStyle;

/// What a launcher found when it opened the run, before any command: for the preflight.
#[derive(Debug, Clone, Default)]
pub struct Opening {
    /// What it did (Slurm: the allocation granted, or refused), as verdicts.
    pub verdicts: Vec<Verdict>,
    /// Nodes it will run nothing on, each one FAIL (`reach NODE`) with its trap.
    pub unavailable: Vec<Unavailable>,
}

/// A node a launcher will run nothing on.
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub node: String,
    pub reason: String,
    pub trap: Trap,
    /// The gate of an earlier failure this one follows from (`slurm allocation`).
    pub follows: Option<String>,
    /// The parts it implicates, most specific first (the node's sshd, its slurmd, SSH or the
    /// Slurm controller as fabricplan reaches them).
    pub parts: Vec<crate::gate::part::Part>,
}

/// What identifies a started server, so exactly it can be stopped: the job its session
/// started, by the process group the session recorded (never a name, never a number read back
/// from the host).
pub type ServerHandle = super::transport::Spawned;

/// When a server really started (its shell about to exec the tool) and when it was first seen
/// listening, Unix ms by its host's clock: the server tool's own start-up lies between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerMarks {
    pub started_unix_ms: f64,
    pub listening_unix_ms: f64,
}

/// Whether a started server listens.
#[derive(Debug, Clone)]
pub enum Readiness {
    /// It listens on its port; when it was started and seen listening, when the launcher knows.
    Ready(Option<ServerMarks>),
    /// It is not ready: why, and the trap when the launcher knows a more specific one than a
    /// server gone or firewalled. It is stopped like any other, which gives its log.
    NotReady { why: String, trap: Option<Trap> },
}

/// What stopping a server found.
#[derive(Debug, Clone, Default)]
pub struct Stopped {
    /// What it wrote (stdout and stderr together: its log), how it ended and what it left
    /// running; `None` when the stop could not be carried out.
    pub output: Option<Output>,
    /// The stop could not be carried out (its node's session ended: the session's loop stops
    /// it on the host).
    pub error: Option<TransportError>,
}

/// Starts, readies, releases, stops and collects a job's processes.
pub trait Launcher: Send + Sync {
    /// How this launcher writes commands.
    fn style(&self) -> &dyn LaunchStyle;

    /// `ssh`, `local`, `sim`, `fake`: what carries the commands, for reports.
    fn transport_name(&self) -> &'static str;

    /// True when the commands are answered by a model rather than real hosts.
    fn simulated(&self) -> bool;

    /// True when the nodes are a scheduler's (Slurm's): taking a blamed node out of service is
    /// the scheduler's drain, said after every run that blames one even when not asked.
    fn nodes_are_scheduled(&self) -> bool {
        false
    }

    /// The part a failure to reach `host` with `trap` is about: over SSH its sshd (or what the
    /// trap names); a launcher whose commands ride something else says so.
    fn reach_part(&self, host: &str, trap: crate::gate::trap::Trap) -> crate::gate::part::Part {
        crate::gate::part::Part::reach_of(host, trap)
    }

    /// Before any command: make `nodes` reachable (Slurm: allocate them, or check the given
    /// allocation) and say which of them are not. Called again, it answers what it found the
    /// first time. `cancel` turning true gives up a wait (an allocation pending). Default:
    /// nothing to do.
    fn open<'a>(
        &'a self,
        nodes: &'a [&'a Node],
        cancel: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Opening> {
        let _ = (nodes, cancel);
        Box::pin(async { Opening::default() })
    }

    /// Run a one-shot script on a node (probes, counter snapshots, pings).
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>>;

    /// Run `script` once `go` turns true, staged beforehand where the carrier can (see
    /// [`crate::exec::Transport::exec_released`]).
    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>>;

    /// Start the server of `job` written by [`LaunchStyle::server`]; answers once it is
    /// started, with what identifies it.
    fn start<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<ServerHandle, TransportError>>;

    /// Wait until the server `handle` names listens on `port`, or say why it does not.
    fn ready<'a>(
        &'a self,
        node: &'a Node,
        handle: &'a ServerHandle,
        port: u16,
    ) -> BoxFuture<'a, Readiness>;

    /// Stop exactly the server `handle` names and collect what it wrote.
    fn stop<'a>(&'a self, node: &'a Node, handle: &'a ServerHandle) -> BoxFuture<'a, Stopped>;

    /// The runner is about to run `round` (see [`crate::exec::Transport::expect_round`]).
    fn expect_round(&self, _round: &crate::schedule::Round) {}

    /// The nodes' sessions that ended since the last call, each opened again once (see
    /// [`crate::exec::Transport::reopen`]); what the ended ones left running is stopped once
    /// their node is reached again. Default: none.
    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        Box::pin(async { Vec::new() })
    }

    /// Close connections, release what the launcher holds (best effort).
    fn close(&self) -> BoxFuture<'_, ()>;
}
