//! The local transport: every node's commands run on this machine, each node's as jobs of its
//! own session ([`crate::exec::session`]) carried by a `/bin/sh` process started here: the
//! same loop, private directory, bounded outputs and cleanup as on a remote host, in the same
//! pool ([`Pool`]). For one-box plans (the local launcher) and tests with real processes.

use std::sync::Arc;
use std::time::Duration;

use crate::exec::session::pool::{Carrier, Pool};
use crate::exec::session::{Session, process, wire};
use crate::exec::transport::{BoxFuture, TransportError};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::launchers::local::render::LocalStyle;
use crate::launchers::ssh::exec::launcher::SshLauncher;
use crate::plan::Node;

/// How long a local session has to say it is up.
const START_LIMIT: Duration = Duration::from_secs(20);
/// How long a loop has to exit once its session was closed, before it is ended.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// The local launcher: every node's session a `/bin/sh` on this machine running the SSH
/// launcher's scripts; a node that cannot be reached is this machine, not an sshd.
pub fn launcher() -> SshLauncher {
    SshLauncher::over(Arc::new(LocalTransport::default()), &LocalStyle, None)
}

/// Every node's session on this machine.
pub type LocalTransport = Pool<LocalCarrier>;

/// A `/bin/sh` here carries each node's session.
#[derive(Debug, Default)]
pub struct LocalCarrier;

impl Default for LocalTransport {
    fn default() -> LocalTransport {
        Pool::over(LocalCarrier)
    }
}

impl Carrier for LocalCarrier {
    type Held = process::Child;

    fn name(&self) -> &'static str {
        "local"
    }

    fn start<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(Session, process::Child), TransportError>> {
        Box::pin(async move {
            let token = wire::random_word();
            let (sink, source, child) =
                process::spawn(&wire::argv(&token), &[]).map_err(|reason| {
                    TransportError::Unreachable {
                        host: node.name.clone(),
                        reason,
                    }
                })?;
            match Session::attach(&node.name, &token, sink, source, START_LIMIT).await {
                Ok(s) => Ok((s, child)),
                Err(e) => {
                    child.end(EXIT_GRACE).await;
                    Err(e.into_transport(&node.name))
                }
            }
        })
    }

    fn end<'a>(&'a self, child: &'a process::Child, closing: bool) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if closing && child.exited_within(EXIT_GRACE).await.is_some() {
                return;
            }
            child.end(EXIT_GRACE).await;
        })
    }

    /// Nothing but this machine reaches the node.
    fn lost(&self, node: &Node, _child: &process::Child) -> (Part, Trap) {
        (Part::node(&node.name), Trap::Unreachable)
    }
}
