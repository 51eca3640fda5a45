//! The local transport: every node's commands run on this machine, each node's as jobs of its
//! own session ([`crate::exec::session`]) carried by a `/bin/sh` process started here: the
//! same loop, private directory, bounded outputs and cleanup as on a remote host. For
//! single-box checks and tests with real processes.

use std::collections::HashMap;
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::{Mutex, oneshot, watch};

use super::session::{Session, process, wire};
use super::transport::{BoxFuture, Output, Spawned, Transport, TransportError};
use crate::plan::Node;

/// How long a local session has to say it is up.
const START_LIMIT: Duration = Duration::from_secs(20);
/// How long a loop has to exit once its session was closed, before it is ended.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// A node's session on this machine and the process carrying it.
struct Local {
    session: Session,
    child: process::Child,
}

#[derive(Default)]
pub struct LocalTransport {
    open: Mutex<HashMap<String, Local>>,
}

impl LocalTransport {
    pub fn new() -> LocalTransport {
        LocalTransport::default()
    }

    /// The node's session, started when the node is first used.
    async fn session(&self, node: &Node) -> Result<Session, TransportError> {
        let mut open = self.open.lock().await;
        if let Some(l) = open.get(&node.name) {
            return Ok(l.session.clone());
        }
        let unreachable = |reason: String| TransportError::Unreachable {
            host: node.name.clone(),
            reason,
        };
        let token = wire::random_word();
        let (sink, source, child) =
            process::spawn(&wire::argv(&token), &[]).map_err(unreachable)?;
        let session = match Session::attach(&node.name, &token, sink, source, START_LIMIT).await {
            Ok(s) => s,
            Err(e) => {
                child.end(EXIT_GRACE).await;
                return Err(e.into_transport(&node.name));
            }
        };
        open.insert(
            node.name.clone(),
            Local {
                session: session.clone(),
                child,
            },
        );
        Ok(session)
    }
}

impl Transport for LocalTransport {
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
        "local"
    }

    /// Every session told to end (each stops what still runs in it), and its loop waited for.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let open: Vec<Local> = self.open.lock().await.drain().map(|(_, l)| l).collect();
            join_all(open.iter().map(|l| async move {
                l.session.close().await;
                if l.child.exited_within(EXIT_GRACE).await.is_none() {
                    l.child.end(EXIT_GRACE).await;
                }
            }))
            .await;
        })
    }
}
