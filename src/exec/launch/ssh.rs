//! The SSH launcher: every command runs on its node under `/bin/sh -c`, carried by a transport
//! (SSH, or the local, simulated and fake transports that answer the same scripts). Servers are
//! started detached under `setsid` with their process group written beside their log, made
//! ready by polling their port, and stopped by killing exactly that group; clients are staged
//! and released together; NCCL runs as `mpirun` from the first rank over the fabric subnets.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::{Launcher, Readiness, ServerHandle, ServerMarks, Stopped};
use crate::exec::transport::{BoxFuture, Output, Transport, TransportError};
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
}

impl SshLauncher {
    pub fn new(transport: Arc<dyn Transport>) -> SshLauncher {
        SshLauncher { transport }
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
            let ServerHandle::ProcessGroup(pgid) = handle else {
                return Stopped::foreign(node, "SSH", handle);
            };
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
                Err(e) => Stopped {
                    log,
                    survived: false,
                    error: Some(e),
                },
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.transport.close()
    }
}
