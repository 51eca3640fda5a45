//! How commands reach hosts. One trait, several transports: local processes, SSH, a recording
//! fake for tests, the simulated fabric. The runner only ever sees this trait.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::plan::Node;

/// What a remote command left behind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// The exit status; a command killed by signal n reports 128 + n, like a shell.
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    /// Bytes of stdout and stderr left out of the text (their middle, past what is kept:
    /// [`crate::exec::session::KEPT`]); 0 when both are whole.
    pub omitted_bytes: u64,
    /// One of its streams reached the host's output bound: the tool was stopped there (SIGXFSZ),
    /// or went on without being able to write.
    pub bound_reached: bool,
    /// Processes the command left running when it ended, each `PID NAME`, stopped since.
    pub left: Vec<String>,
}

impl Output {
    pub fn ok(stdout: impl Into<String>) -> Output {
        Output {
            status: 0,
            stdout: stdout.into(),
            ..Output::default()
        }
    }

    /// An output with this status, stdout and stderr, whole, and nothing left running.
    pub fn new(status: i32, stdout: impl Into<String>, stderr: impl Into<String>) -> Output {
        Output {
            status,
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..Output::default()
        }
    }

    pub fn success(&self) -> bool {
        self.status == 0
    }
}

/// Why a command could not be run at all (as opposed to running and failing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The host cannot be reached or refused us (connect, auth).
    #[error("{host}: unreachable: {reason}")]
    Unreachable { host: String, reason: String },
    /// The host key is unknown or changed: refused.
    #[error("{host}: {reason}")]
    HostKey { host: String, reason: String },
    /// No answer within the time given.
    #[error("{host}: no answer within {secs} s")]
    Timeout { host: String, secs: u64 },
    /// The connection broke while the command ran.
    #[error("{host}: connection lost: {reason}")]
    Lost { host: String, reason: String },
    /// A staged command was withdrawn before its release: it never ran.
    #[error("{host}: withdrawn before it ran")]
    Withdrawn { host: String },
    /// The launcher could not run it there, for a reason it names with its trap (Slurm: the
    /// node is down or drained, the step could not be launched, the time limit ended it).
    #[error("{host}: {reason}")]
    Launch {
        host: String,
        reason: String,
        trap: crate::gate::trap::Trap,
    },
}

impl TransportError {
    pub fn host(&self) -> &str {
        match self {
            TransportError::Unreachable { host, .. }
            | TransportError::HostKey { host, .. }
            | TransportError::Timeout { host, .. }
            | TransportError::Lost { host, .. }
            | TransportError::Withdrawn { host }
            | TransportError::Launch { host, .. } => host,
        }
    }

    /// The trap the launcher named, when it named one.
    pub fn trap(&self) -> Option<crate::gate::trap::Trap> {
        match self {
            TransportError::Launch { trap, .. } => Some(*trap),
            _ => None,
        }
    }
}

/// A job started to run until stopped (a server): the id its session knows it by, the process
/// group the session recorded when it started it, and when it started by its host's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spawned {
    pub id: u64,
    pub pgid: u32,
    pub started_unix_ms: Option<f64>,
}

/// A session (a node's one long-lived command stream, [`crate::exec::session`]) that ended
/// during the run, and the one attempt made to open it again.
#[derive(Debug, Clone)]
pub struct Reopened {
    /// The node (plan name).
    pub host: String,
    /// Why it ended, in words.
    pub why: String,
    /// The part at fault: the node's sshd (the session over SSH), its slurmd (a Slurm step).
    pub part: crate::gate::part::Part,
    /// The trap it is: the host unreachable (SSH), Slurm's step or node failing.
    pub trap: crate::gate::trap::Trap,
    /// The new session, or why there is none (the node is then out of the run).
    pub again: Result<(), TransportError>,
}

/// Waits until `go` turns true: `true`. `false` when its sender is dropped without: the staged
/// command is withdrawn and must not run (its server never came up).
pub async fn released(mut go: tokio::sync::watch::Receiver<bool>) -> bool {
    go.wait_for(|g| *g).await.is_ok()
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs shell scripts on plan nodes.
pub trait Transport: Send + Sync {
    /// Run `script` (POSIX sh) on `node`; give up after `timeout`.
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>>;

    /// Run `script` on `node` once `go` turns true, like [`Transport::exec`], and signal
    /// `armed` once ready to. A transport that can stage the command does: it opens the channel
    /// and starts the remote shell, which then waits for one line on stdin, so releasing it costs
    /// one packet instead of a channel open, a session and a shell spawn. That spawn under load
    /// is what a round's launch skew is made of. Dropping `armed` unsent also counts as armed
    /// (the command failed before it could be staged). Dropping `go`'s sender without setting
    /// it withdraws the command: it never runs and the answer is [`TransportError::Withdrawn`].
    /// `timeout` counts from the release. Default: armed at once, run on release.
    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: tokio::sync::oneshot::Sender<()>,
        go: tokio::sync::watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
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

    /// Start `script` on `node` as a job that runs until stopped (the server of `job`):
    /// answers once it started. Default: this transport cannot.
    fn spawn<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<Spawned, TransportError>> {
        let _ = (job, script);
        Box::pin(async move {
            Err(TransportError::Launch {
                host: node.name.clone(),
                reason: format!("the {} transport cannot run a server", self.name()),
                trap: crate::gate::trap::Trap::ToolError,
            })
        })
    }

    /// Stop a job [`Transport::spawn`] started, exactly it (by what its session recorded, never
    /// a number read back from the host), and take its end: what it wrote and how it ended.
    fn stop_spawned<'a>(
        &'a self,
        node: &'a Node,
        job: &'a Spawned,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        let _ = job;
        Box::pin(async move {
            Err(TransportError::Launch {
                host: node.name.clone(),
                reason: format!("the {} transport cannot run a server", self.name()),
                trap: crate::gate::trap::Trap::ToolError,
            })
        })
    }

    /// A short name for reports (`ssh`, `local`, `sim`, `fake`).
    fn name(&self) -> &'static str;

    /// Before any command: reach `nodes`, all at once (SSH: each node's session), and say for
    /// each, in order, whether it was reached. Default: nothing to do.
    fn open<'a>(&'a self, nodes: &'a [&'a Node]) -> BoxFuture<'a, Vec<Result<(), TransportError>>> {
        Box::pin(async move { nodes.iter().map(|_| Ok(())).collect() })
    }

    /// The sessions that ended since the last call (not closed on purpose), each opened again
    /// once. Default: none (a transport without sessions).
    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        Box::pin(async { Vec::new() })
    }

    /// True when the transport answers from a model rather than real hosts.
    fn simulated(&self) -> bool {
        false
    }

    /// The runner is about to run `round`. A transport that answers from a model of the
    /// fabric (the simulated one) learns which flows run together, including rounds built
    /// during the run (localisation re-tests); a real one has nothing to do.
    fn expect_round(&self, _round: &crate::schedule::Round) {}

    /// Close connections (best effort).
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
