//! The SSH launcher: every command runs on its node as a POSIX sh script, carried by a
//! transport (SSH, where each node's commands are jobs of its one session for the run; or the
//! local, simulated and fake transports that answer the same scripts). Servers are started
//! detached under `setsid` with their process group written beside their log, made ready by
//! polling their port, and stopped by killing exactly that group; clients are staged and
//! released together; NCCL runs as `mpirun` from the first rank over the fabric subnets. A
//! server whose stop could not be carried out (its node's session ended) is stopped once the
//! node is reached again, and at the end of the run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::{oneshot, watch};

use super::{Launcher, Opening, Readiness, ServerHandle, ServerMarks, Stopped, Unavailable};
use crate::exec::transport::{BoxFuture, Output, Reopened, Transport, TransportError};
use crate::gate::part::{Part, Reach, Software};
use crate::gate::trap::Trap;
use crate::plan::Node;
use crate::render::launch::remote_dir;
use crate::render::launch::{LaunchStyle, SshStyle};
use crate::render::wrap;

/// How long a server has to listen on its port.
pub const READY_LIMIT_S: u32 = 15;
/// One-shot helpers (reading a log, a kill) get this long.
const SHORT: Duration = Duration::from_secs(20);

/// The SSH launcher over a transport.
pub struct SshLauncher {
    transport: Arc<dyn Transport>,
    /// Servers whose stop could not be carried out: their node and process group.
    unstopped: Mutex<Vec<(Node, u32)>>,
}

/// The parts a node that cannot be reached implicates, most specific first.
fn parts_of(node: &str, e: &TransportError) -> Vec<Part> {
    match e {
        TransportError::HostKey { .. } => vec![Part::Reach { reach: Reach::Ssh }],
        TransportError::Timeout { .. } => vec![Part::node(node)],
        _ => vec![Part::software(node, Software::Sshd), Part::node(node)],
    }
}

impl SshLauncher {
    pub fn new(transport: Arc<dyn Transport>) -> SshLauncher {
        SshLauncher {
            transport,
            unstopped: Mutex::new(Vec::new()),
        }
    }

    /// Stop, by their recorded process groups, the servers whose stop failed before, where
    /// their node answers now; those it still cannot reach are kept for later.
    async fn stop_left(&self) {
        let left: Vec<(Node, u32)> = std::mem::take(&mut *self.unstopped());
        let tried = join_all(left.into_iter().map(|(node, pgid)| async move {
            let done = self
                .transport
                .exec(&node, &wrap::kill_group(pgid), SHORT)
                .await
                .is_ok();
            (node, pgid, done)
        }))
        .await;
        let mut still = self.unstopped();
        still.extend(tried.into_iter().filter(|t| !t.2).map(|t| (t.0, t.1)));
    }

    fn unstopped(&self) -> std::sync::MutexGuard<'_, Vec<(Node, u32)>> {
        self.unstopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn read(&self, node: &Node, run_id: &str, file: &str) -> Option<String> {
        self.transport
            .exec(node, &wrap::cat(&remote_dir(run_id), file), SHORT)
            .await
            .ok()
            .map(|o| o.stdout)
    }
}

impl Launcher for SshLauncher {
    fn style(&self) -> &dyn LaunchStyle {
        &SshStyle
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
                    parts: parts_of(&n.name, &e),
                })
                .collect();
            Opening {
                verdicts: Vec::new(),
                unavailable,
            }
        })
    }

    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        Box::pin(async move {
            let r = self.transport.reopen().await;
            self.stop_left().await;
            r
        })
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
        _job: &'a str,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        // the detached start returns once `setsid` is in the background
        self.transport.exec(node, script, timeout)
    }

    fn ready<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        port: u16,
        run_id: &'a str,
    ) -> BoxFuture<'a, Readiness> {
        Box::pin(async move {
            let dir = remote_dir(run_id);
            let poll = self
                .transport
                .exec(
                    node,
                    &wrap::ready(&dir, job, port, READY_LIMIT_S),
                    Duration::from_secs(u64::from(READY_LIMIT_S) + 10),
                )
                .await;
            if let Ok(o) = &poll
                && o.status == 0
            {
                let (pgid, marks) = wrap::take_ready_mark(&o.stdout);
                if let Ok(pgid) = pgid.trim().parse() {
                    let marks = marks.map(|(started, listening)| ServerMarks {
                        started_unix_ms: started,
                        listening_unix_ms: listening,
                    });
                    return Readiness::Ready(ServerHandle::ProcessGroup(pgid), marks);
                }
            }
            // not ready: its log says why, and its group (if it wrote one) must still be stopped
            let (log_file, pgid_file) = (format!("{job}.log"), format!("{job}.pgid"));
            let (log, pgid) = tokio::join!(
                self.read(node, run_id, &log_file),
                self.read(node, run_id, &pgid_file)
            );
            let why = match poll {
                Ok(o) if o.status == 3 => "the server exited before listening".to_string(),
                Ok(o) if o.status == 0 => {
                    "the server listens but wrote no process group to stop it by".to_string()
                }
                Ok(o) => format!(
                    "the server did not listen on port {port} (poll exit {})",
                    o.status
                ),
                Err(e) => e.to_string(),
            };
            Readiness::NotReady {
                why,
                log: log.unwrap_or_default(),
                handle: pgid
                    .and_then(|p| p.trim().parse().ok())
                    .map(ServerHandle::ProcessGroup),
                trap: None,
            }
        })
    }

    fn stop<'a>(
        &'a self,
        node: &'a Node,
        handle: &'a ServerHandle,
        job: &'a str,
        run_id: &'a str,
        have_log: bool,
    ) -> BoxFuture<'a, Stopped> {
        Box::pin(async move {
            let ServerHandle::ProcessGroup(pgid) = handle;
            // the log is a file: the kill does not take it, so both go at once
            let log_file = format!("{job}.log");
            let log = async {
                if have_log {
                    None
                } else {
                    self.read(node, run_id, &log_file).await
                }
            };
            let kill_script = wrap::kill_group(*pgid);
            let kill = self.transport.exec(node, &kill_script, SHORT);
            let (log, kill) = tokio::join!(log, kill);
            match kill {
                Ok(o) => Stopped {
                    log,
                    survived: o.status != 0,
                    error: None,
                },
                Err(e) => {
                    // stopped once its node answers again (its session re-opened), or at the end
                    self.unstopped().push((node.clone(), *pgid));
                    Stopped {
                        log,
                        survived: false,
                        error: Some(e),
                    }
                }
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.stop_left().await;
            self.transport.close().await
        })
    }
}
