//! The SSH launcher: every command runs on its node as a POSIX sh script, carried by a
//! transport (SSH, where each node's commands are jobs of its one session for the run; or the
//! local, simulated and fake transports that answer the same scripts). A server is a job of its
//! node's session that runs until stopped: made ready by polling its port (a listener of the
//! run's own user), stopped by the process group its session recorded when it started it, its
//! log what the session captured of its streams. Clients are staged and released together; NCCL
//! runs as `mpirun` from the first rank over the fabric subnets. A server whose stop could not
//! be carried out (its node's session ended) is its session loop's to stop on the host: the loop
//! stops every job it started when it ends, however it ends.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::exec::launch::{
    Launcher, Opening, Readiness, ServerHandle, ServerMarks, Stopped, Unavailable,
};
use crate::exec::transport::{BoxFuture, Output, Reopened, Transport, TransportError};
use crate::gate::part::{Part, Reach, Software};
use crate::gate::trap::Trap;
use crate::launchers::ssh::render::SshStyle;
use crate::plan::Node;
use crate::render::launch::LaunchStyle;
use crate::render::wrap;

/// How long a server has to listen on its port.
pub const READY_LIMIT_S: u32 = 15;

/// The SSH launcher over a transport (or another launcher's scripts over its own carrier, see
/// [`SshLauncher::over`]).
pub struct SshLauncher {
    transport: Arc<dyn Transport>,
    style: &'static dyn LaunchStyle,
    /// What reaches a node: its sshd, or nothing but this machine (the local launcher).
    reached_by: Option<Software>,
}

/// The parts a node that cannot be reached implicates, most specific first.
fn parts_of(node: &str, e: &TransportError, reached_by: Option<Software>) -> Vec<Part> {
    let Some(software) = reached_by else {
        return vec![Part::node(node)];
    };
    match e {
        TransportError::HostKey { .. } => vec![Part::Reach { reach: Reach::Ssh }],
        TransportError::Timeout { .. } => vec![Part::node(node)],
        TransportError::Launch {
            trap: Trap::HostScratch,
            ..
        } => vec![Part::node(node)],
        _ => vec![Part::software(node, software), Part::node(node)],
    }
}

impl SshLauncher {
    pub fn new(transport: Arc<dyn Transport>) -> SshLauncher {
        SshLauncher {
            transport,
            style: &SshStyle,
            reached_by: Some(Software::Sshd),
        }
    }

    /// The same scripts written by `style` over `transport`; `reached_by` is what reaches a
    /// node (`None`: nothing but this machine, so a node that cannot be reached is the node).
    pub fn over(
        transport: Arc<dyn Transport>,
        style: &'static dyn LaunchStyle,
        reached_by: Option<Software>,
    ) -> SshLauncher {
        SshLauncher {
            transport,
            style,
            reached_by,
        }
    }
}

impl Launcher for SshLauncher {
    fn style(&self) -> &dyn LaunchStyle {
        self.style
    }

    fn reach_part(&self, host: &str, trap: Trap) -> Part {
        match self.reached_by {
            Some(_) => Part::reach_of(host, trap),
            None => Part::node(host),
        }
    }

    fn transport_name(&self) -> &'static str {
        self.transport.name()
    }

    fn simulated(&self) -> bool {
        self.transport.simulated()
    }

    fn expect_round(&self, round: &crate::schedule::Round) {
        self.transport.expect_round(round);
    }

    /// Every node reached at once (over SSH: each node's session started); a node that cannot
    /// be is unavailable, with why.
    fn open<'a>(
        &'a self,
        nodes: &'a [&'a Node],
        _cancel: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Opening> {
        Box::pin(async move {
            let reached = self.transport.open(nodes).await;
            let unavailable = nodes
                .iter()
                .zip(reached)
                .filter_map(|(n, r)| r.err().map(|e| (n, e)))
                .map(|(n, e)| Unavailable {
                    node: n.name.clone(),
                    reason: e.to_string(),
                    trap: e.trap().unwrap_or(Trap::Unreachable),
                    follows: None,
                    parts: parts_of(&n.name, &e, self.reached_by),
                })
                .collect();
            Opening {
                verdicts: Vec::new(),
                unavailable,
            }
        })
    }

    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        self.transport.reopen()
    }

    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        self.transport.exec(node, script, timeout)
    }

    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        self.transport
            .exec_released(node, script, timeout, armed, go)
    }

    fn start<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<ServerHandle, TransportError>> {
        self.transport.spawn(node, job, script)
    }

    fn ready<'a>(
        &'a self,
        node: &'a Node,
        handle: &'a ServerHandle,
        port: u16,
    ) -> BoxFuture<'a, Readiness> {
        Box::pin(async move {
            let poll = self
                .transport
                .exec(
                    node,
                    &wrap::ready(handle.pgid, port, READY_LIMIT_S),
                    Duration::from_secs(u64::from(READY_LIMIT_S) + 10),
                )
                .await;
            match poll {
                Ok(o) if o.status == 0 => Readiness::Ready(
                    handle
                        .started_unix_ms
                        .zip(wrap::take_ready_mark(&o.stdout))
                        .map(|(started, listening)| ServerMarks {
                            started_unix_ms: started,
                            listening_unix_ms: listening,
                        }),
                ),
                Ok(o) => Readiness::NotReady {
                    why: match o.status {
                        3 => "the server exited before listening".to_string(),
                        4 => format!(
                            "the server did not listen on port {port} within {READY_LIMIT_S} s"
                        ),
                        s => format!("the readiness poll could not run (exit {s})"),
                    },
                    trap: None,
                },
                Err(e) => Readiness::NotReady {
                    why: e.to_string(),
                    trap: e.trap(),
                },
            }
        })
    }

    fn stop<'a>(&'a self, node: &'a Node, handle: &'a ServerHandle) -> BoxFuture<'a, Stopped> {
        Box::pin(async move {
            match self.transport.stop_spawned(node, handle).await {
                Ok(o) => Stopped {
                    output: Some(o),
                    error: None,
                },
                Err(e) => Stopped {
                    output: None,
                    error: Some(e),
                },
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.transport.close()
    }
}
