//! What a run carries through its phases: the plan, the launcher under the run's command cap,
//! the renderer and what discovery resolved, what is blocked and why, and the event channel the
//! reporters listen on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use crate::discover::{HalfResolution, Probe};
use crate::exec::launch::{Launcher, Readiness, ServerHandle, Stopped};
use crate::exec::transport::{Output, TransportError, released};
use crate::plan::{Endpoint, IslId, NodeId, Plan};
use crate::render::Renderer;
use crate::render::job::Resolution;
use crate::results::{Event, KeepEvidence};
use crate::topology::Fabric;

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub run_id: String,
    /// Only jobs matching one of these selectors (empty: all).
    pub only: Vec<String>,
    /// Skip jobs matching any of these.
    pub skip: Vec<String>,
    /// At most this many commands in flight at once.
    pub max_parallel: usize,
    /// Which outputs to keep as files; `None` decides by the run's size
    /// ([`KeepEvidence::default_for`]).
    pub keep_evidence: Option<KeepEvidence>,
}

/// One-shot helpers (snapshots, logs) get this long.
pub(crate) const SHORT: Duration = Duration::from_secs(20);

pub(crate) struct Ctx<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) fabric: &'a Fabric,
    pub(crate) launcher: Arc<dyn Launcher>,
    pub(crate) renderer: Renderer,
    pub(crate) res: Resolution,
    pub(crate) opts: &'a RunOptions,
    pub(crate) sem: Semaphore,
    pub(crate) events: mpsc::UnboundedSender<Event>,
    pub(crate) cancel: watch::Receiver<bool>,
    pub(crate) unreachable: HashMap<NodeId, String>,
    /// endpoint -> why its measurements are skipped
    pub(crate) blocked: HashMap<Endpoint, String>,
    /// ISL -> why measurements crossing it are skipped
    pub(crate) blocked_isls: HashMap<IslId, String>,
    /// NCCL test name -> why it is skipped (its launch check failed)
    pub(crate) blocked_tests: HashMap<String, String>,
    pub(crate) probes: HashMap<NodeId, Probe>,
    pub(crate) resolutions: HashMap<NodeId, Vec<HalfResolution>>,
    /// The halves whose PCIe link carries less than their rate, with what it carries: read
    /// from `resolutions` once discovery is over, not again for every round (a scan of every
    /// half of the plan per round made a 1,000-node ring's run quadratic).
    pub(crate) pcie_caps: crate::capacity::HalfCaps,
    /// node -> the gate whose FAIL put it out of the run during it (`session NODE`); a node
    /// unreachable from the start is out by `reach NODE`
    pub(crate) out_by: HashMap<NodeId, String>,
}

impl<'a> Ctx<'a> {
    /// A run's context before anything ran.
    pub(crate) fn new(
        plan: &'a Plan,
        fabric: &'a Fabric,
        launcher: Arc<dyn Launcher>,
        opts: &'a RunOptions,
        events: mpsc::UnboundedSender<Event>,
        cancel: watch::Receiver<bool>,
    ) -> Ctx<'a> {
        Ctx {
            plan,
            fabric,
            launcher,
            renderer: crate::kinds::renderer(plan),
            res: Resolution::from_plan(plan),
            opts,
            sem: Semaphore::new(opts.max_parallel.max(1)),
            events,
            cancel,
            unreachable: HashMap::new(),
            blocked: HashMap::new(),
            blocked_isls: HashMap::new(),
            blocked_tests: HashMap::new(),
            probes: HashMap::new(),
            resolutions: HashMap::new(),
            pcie_caps: crate::capacity::HalfCaps::new(),
            out_by: HashMap::new(),
        }
    }
}

impl Ctx<'_> {
    /// A one-shot script on a node, under the run's command cap.
    pub(crate) async fn exec(
        &self,
        node: NodeId,
        script: &str,
        timeout: Duration,
    ) -> Result<Output, TransportError> {
        let _permit = self.sem.acquire().await;
        self.launcher
            .exec(self.plan.node(node), script, timeout)
            .await
    }

    /// A one-shot script on a node (probe, snapshot, ping) as the launcher writes it, under the
    /// cap.
    pub(crate) async fn exec_oneshot(
        &self,
        node: NodeId,
        script: &str,
        timeout: Duration,
    ) -> Result<Output, TransportError> {
        let n = self.plan.node(node);
        let written = self.launcher.style().oneshot(n, script);
        self.exec(node, &written, timeout).await
    }

    /// Start the server of `job`, under the cap.
    pub(crate) async fn start(
        &self,
        node: NodeId,
        job: &str,
        script: &str,
    ) -> Result<ServerHandle, TransportError> {
        let _permit = self.sem.acquire().await;
        self.launcher.start(self.plan.node(node), job, script).await
    }

    /// Wait for a server to listen, under the cap.
    pub(crate) async fn ready(&self, node: NodeId, handle: &ServerHandle, port: u16) -> Readiness {
        let _permit = self.sem.acquire().await;
        self.launcher
            .ready(self.plan.node(node), handle, port)
            .await
    }

    /// Stop a server and collect what it wrote, under the cap.
    pub(crate) async fn stop(&self, node: NodeId, handle: &ServerHandle) -> Stopped {
        let _permit = self.sem.acquire().await;
        self.launcher.stop(self.plan.node(node), handle).await
    }

    /// [`Launcher::exec_released`] under the same limit as [`Ctx::exec`]. A staged command
    /// holds its slot while it waits, and the round's setup (snapshots, server starts, readiness)
    /// runs meanwhile and needs slots too: so a command is staged only while a slot stays free
    /// for the setup. Otherwise it is armed at once and takes a slot only once released: staging
    /// never waits on itself nor starves the setup it waits for.
    pub(crate) async fn exec_released(
        &self,
        node: NodeId,
        script: &str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> Result<Output, TransportError> {
        let node = self.plan.node(node);
        if let Ok(permit) = self.sem.try_acquire()
            && self.sem.available_permits() > 0
        {
            let _permit = permit;
            return self
                .launcher
                .exec_released(node, script, timeout, armed, go)
                .await;
        }
        let _ = armed.send(());
        if !released(go).await {
            return Err(TransportError::Withdrawn {
                host: node.name.clone(),
            });
        }
        let _permit = self.sem.acquire().await;
        self.launcher.exec(node, script, timeout).await
    }

    /// Do the fabric paths between `nodes` cross `isl`? (Any two of them on the two sides.)
    pub(crate) fn ranks_cross(&self, nodes: &[NodeId], isl: IslId) -> bool {
        let mut per_switch: Vec<(crate::plan::SwitchId, &Endpoint)> = Vec::new();
        for seg in &self.plan.segments {
            for m in seg
                .members
                .iter()
                .filter(|m| nodes.contains(&m.endpoint.node))
            {
                if let Some(s) = m.switch
                    && !per_switch.iter().any(|(x, _)| *x == s)
                {
                    per_switch.push((s, &m.endpoint));
                }
            }
        }
        per_switch.iter().enumerate().any(|(i, (_, a))| {
            per_switch.iter().skip(i + 1).any(|(_, b)| {
                self.fabric
                    .path(self.plan, a, b)
                    .is_some_and(|p| p.isl_hops().any(|(x, _)| x == isl))
            })
        })
    }

    pub(crate) fn cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    pub(crate) fn emit(&self, e: Event) {
        let _ = self.events.send(e);
    }
}
