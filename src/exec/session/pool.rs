//! One session per node for the whole run, written once for every carrier: an SSH connection's
//! channel, a Slurm job step, a `/bin/sh` on this machine. The pool opens every node's session
//! (all at once, each node once even when asked from many tasks), runs every command of the
//! run as a job of it, opens once again a session that ended (a node that cannot be reached
//! again is out of the run, with why), and at the end tells every session to end and ends what
//! carried it. What differs between carriers is how a session is started and ended and which
//! part a lost one implicates: that is the carrier's ([`Carrier`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::{Mutex, oneshot, watch};

use super::Session;
use crate::exec::transport::{BoxFuture, Output, Reopened, Spawned, Transport, TransportError};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::Node;

/// What carries one node's session.
pub trait Carrier: Send + Sync + 'static {
    /// What is held beside the session while it runs (the connection, the child process).
    type Held: Send + Sync + 'static;

    /// The transport's name, for reports (`ssh`, `slurm`, `local`).
    fn name(&self) -> &'static str;

    /// What the session is called in what is said of it (`session`, `session step`).
    fn noun(&self) -> &'static str {
        "session"
    }

    /// Start `node`'s carrier and the session on it; a carrier that does not come up is ended
    /// before this answers, with why.
    fn start<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(Session, Self::Held), TransportError>>;

    /// End what carried a session: one told to end (`closing`: it exits by itself, given
    /// time) or one that ended under the run.
    fn end<'a>(&'a self, held: &'a Self::Held, closing: bool) -> BoxFuture<'a, ()>;

    /// The part and trap a node whose session ended implicates, from what its carrier said
    /// (read once it was ended).
    fn lost(&self, node: &Node, held: &Self::Held) -> (Part, Trap);
}

/// A node's session and what carries it.
struct Open<H> {
    node: Node,
    session: Session,
    held: H,
}

/// Every node's session over one carrier.
pub struct Pool<C: Carrier> {
    carrier: C,
    open: Mutex<HashMap<String, Arc<Open<C::Held>>>>,
    /// Nodes whose session ended and could not be opened again: why (nothing more is sent).
    gone: std::sync::Mutex<HashMap<String, String>>,
    /// Per node: a lock so that one node is started once.
    starting: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl<C: Carrier> Pool<C> {
    pub fn over(carrier: C) -> Pool<C> {
        Pool {
            carrier,
            open: Mutex::new(HashMap::new()),
            gone: std::sync::Mutex::new(HashMap::new()),
            starting: Mutex::new(HashMap::new()),
        }
    }

    pub fn carrier(&self) -> &C {
        &self.carrier
    }

    async fn start(&self, node: &Node) -> Result<Arc<Open<C::Held>>, TransportError> {
        let (session, held) = self.carrier.start(node).await?;
        Ok(Arc::new(Open {
            node: node.clone(),
            session,
            held,
        }))
    }

    /// The node's session: the one open (even if it ended: its commands then fail with why),
    /// or a new one when the node was never reached.
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
        let lock = {
            let mut m = self.starting.lock().await;
            m.entry(node.name.clone())
                .or_insert_with(|| Arc::new(Mutex::new(())))
                .clone()
        };
        let _guard = lock.lock().await;
        if let Some(o) = self.open.lock().await.get(&node.name) {
            return Ok(o.session.clone());
        }
        let o = self.start(node).await?;
        let session = o.session.clone();
        self.open.lock().await.insert(node.name.clone(), o);
        Ok(session)
    }

    /// The node's session within `limit` (a node first reached by this command must come up
    /// within the command's own time).
    async fn session_within(
        &self,
        node: &Node,
        limit: Duration,
    ) -> Result<Session, TransportError> {
        tokio::time::timeout(limit, self.session(node))
            .await
            .map_err(|_| TransportError::Timeout {
                host: node.name.clone(),
                secs: limit.as_secs(),
            })?
    }

    /// Open again the session of a node whose session ended: once. What still ran in the old
    /// one is the old loop's to stop: it does when its input ends or its controller falls
    /// silent, and a loop killed before it could is cleaned up by the new one as it starts.
    async fn reopen_one(&self, old: Arc<Open<C::Held>>) -> Reopened {
        let why = old.session.ended().unwrap_or_default();
        self.carrier.end(&old.held, false).await;
        let (part, trap) = self.carrier.lost(&old.node, &old.held);
        let node = &old.node;
        let noun = self.carrier.noun();
        let again = match self.start(node).await {
            Ok(o) => {
                self.open.lock().await.insert(node.name.clone(), o);
                Ok(())
            }
            Err(e) => {
                if let Ok(mut g) = self.gone.lock() {
                    g.insert(
                        node.name.clone(),
                        format!("its {noun} ended ({why}) and could not be opened again: {e}"),
                    );
                }
                Err(e)
            }
        };
        Reopened {
            host: node.name.clone(),
            why: format!("fabricplan's {noun} on {} ended: {why}", node.name),
            part,
            trap,
            again,
        }
    }
}

impl<C: Carrier> Transport for Pool<C> {
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            let session = self.session_within(node, timeout).await?;
            session.run(script, timeout).await
        })
    }

    /// Staged in the node's session: the job prepares and waits at its gate; its release is
    /// one line.
    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            let session = self.session_within(node, timeout).await?;
            session.run_released(script, timeout, armed, go).await
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
        self.carrier.name()
    }

    /// Every node's session, all at once.
    fn open<'a>(&'a self, nodes: &'a [&'a Node]) -> BoxFuture<'a, Vec<Result<(), TransportError>>> {
        Box::pin(async move {
            join_all(
                nodes
                    .iter()
                    .map(|n| async move { self.session(n).await.map(|_| ()) }),
            )
            .await
        })
    }

    fn reopen(&self) -> BoxFuture<'_, Vec<Reopened>> {
        Box::pin(async move {
            let ended = super::take_ended(&mut *self.open.lock().await, |o| &o.session);
            join_all(ended.into_iter().map(|o| self.reopen_one(o))).await
        })
    }

    /// Every session told to end (each stops what still runs in it), then what carried it
    /// ended.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let open: Vec<Arc<Open<C::Held>>> =
                self.open.lock().await.drain().map(|(_, o)| o).collect();
            join_all(open.iter().map(|o| async move {
                o.session.close().await;
                self.carrier.end(&o.held, true).await;
            }))
            .await;
        })
    }
}
