//! Discovery: the read-only probe on every node at once, and what it resolves for each planned
//! half (device, netdev, GID index). `fabricplan detect` and `fabricplan run` share it.

use futures::future::join_all;
use tokio::sync::Semaphore;

use super::ctx::Ctx;
use crate::discover::{self, Probe};
use crate::exec::launch::{Launcher, Opening};
use crate::exec::transport::TransportError;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::plan::{Node, NodeId};
use crate::results::Event;
use crate::results::{InventoryRow, NodeDiscovery, RunResults};

/// The discovery probe on each of `nodes`, all at once (at most `max_parallel` in flight).
pub async fn probe(
    launcher: &dyn Launcher,
    nodes: &[&Node],
    max_parallel: usize,
) -> Vec<Result<Probe, TransportError>> {
    let sem = Semaphore::new(max_parallel.max(1));
    join_all(nodes.iter().map(|n| {
        let sem = &sem;
        async move {
            let _permit = sem.acquire().await;
            let script = launcher.style().oneshot(n, discover::PROBE_SCRIPT);
            launcher
                .exec(n, &script, discover::PROBE_TIMEOUT)
                .await
                .map(|o| discover::probe::parse(&o.stdout))
        }
    }))
    .await
}

/// Open the run on `nodes` ([`Launcher::open`]: Slurm allocates them), once for the whole run.
pub(crate) async fn open(ctx: &Ctx<'_>, nodes: &[NodeId]) -> Opening {
    let nodes: Vec<&Node> = nodes.iter().map(|n| ctx.plan.node(*n)).collect();
    ctx.launcher.open(&nodes, ctx.cancel.clone()).await
}

/// Probe again, once the rounds are done, every node discovery reached and that is still
/// reachable, and record what changed on its planned halves meanwhile (a port down, a link that
/// flapped, an MTU, an address gone): one FAIL each ([`crate::discover::changes`]).
pub(crate) async fn changed(ctx: &mut Ctx<'_>, results: &mut RunResults) {
    let mut nodes: Vec<NodeId> = ctx
        .resolutions
        .keys()
        .copied()
        .filter(|n| !ctx.unreachable.contains_key(n))
        .collect();
    nodes.sort();
    if nodes.is_empty() {
        return;
    }
    let refs: Vec<&Node> = nodes.iter().map(|n| ctx.plan.node(*n)).collect();
    let found = probe(ctx.launcher.as_ref(), &refs, ctx.opts.max_parallel).await;
    let after: std::collections::HashMap<NodeId, Vec<crate::discover::HalfResolution>> = nodes
        .iter()
        .zip(found)
        .filter_map(|(n, p)| {
            let p = p.ok().filter(|p| p.complete)?;
            Some((*n, discover::resolve_node(ctx.plan, *n, &p)))
        })
        .collect();
    // the port counters' rates are over the run: from its start (discovery) to now
    let seconds = crate::results::now_ms().saturating_sub(results.started_unix_ms) as f64 / 1000.0;
    let span = crate::discover::changes::Span::run_of(seconds);
    let (before, plan) = (&ctx.resolutions, ctx.plan);
    results.port_counters =
        crate::results::counters::over_run(plan, before, &after, seconds, &results.jobs);
    let mut changed = crate::discover::changes::verdicts_over(plan, before, &after, &span);
    crate::results::counters::place(&mut changed, &results.port_counters);
    for v in changed {
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
    }
}

/// Record what the launcher found when it opened the run: its verdicts, and each needed node
/// it will run nothing on as one FAIL (`reach NODE`, with the launcher's trap). Returns the
/// needed nodes left to probe.
pub(crate) fn opened(
    ctx: &mut Ctx<'_>,
    needed: &[NodeId],
    opening: Opening,
    results: &mut RunResults,
) -> Vec<NodeId> {
    for v in opening.verdicts {
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
    }
    let mut left = needed.to_vec();
    for u in opening.unavailable {
        let Some(pos) = left.iter().position(|n| ctx.plan.node(*n).name == u.node) else {
            continue;
        };
        let n = left.remove(pos);
        ctx.emit(Event::Discovered {
            node: u.node.clone(),
            ok: false,
            detail: u.reason.clone(),
        });
        let mut v = Verdict::check(
            format!("reach {}", u.node),
            Outcome::Fail,
            u.reason.clone(),
            Some(u.trap),
        )
        .about(vec![ctx.launcher.reach_part(&u.node, u.trap)]);
        if let Some(f) = u.follows {
            v = v.following(f);
        }
        v = v.about(u.parts);
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
        results.discovery.push(NodeDiscovery {
            node: u.node,
            reachable: false,
            error: Some(u.reason.clone()),
            hostname: None,
            halves: Vec::new(),
            kernel: None,
        });
        ctx.unreachable.insert(n, u.reason);
    }
    left
}

/// Probe the needed nodes and record what was found: each planned half's device, netdev and
/// GID, or the node unreachable (one FAIL, `reach NODE`).
pub(crate) async fn discover_needed(
    ctx: &mut Ctx<'_>,
    needed: &[NodeId],
    results: &mut RunResults,
) {
    let nodes: Vec<&Node> = needed.iter().map(|n| ctx.plan.node(*n)).collect();
    let found = probe(ctx.launcher.as_ref(), &nodes, ctx.opts.max_parallel).await;
    for (n, out) in needed.iter().copied().zip(found) {
        let name = ctx.plan.node(n).name.clone();
        match out {
            Ok(probe) => {
                let halves = discover::resolve_node(ctx.plan, n, &probe);
                for h in &halves {
                    if let Some(f) = ctx.res.halves.get_mut(&h.endpoint) {
                        let facts = h.facts();
                        f.device = f.device.clone().or(facts.device);
                        f.netdev = f.netdev.clone().or(facts.netdev);
                        f.gid_index = f.gid_index.or(facts.gid_index);
                    }
                }
                ctx.emit(Event::Discovered {
                    node: name.clone(),
                    ok: true,
                    detail: format!("{} RDMA device(s)", probe.devices.len()),
                });
                results.discovery.push(NodeDiscovery {
                    node: name,
                    reachable: true,
                    error: None,
                    hostname: Some(probe.hostname.clone()),
                    halves: halves.clone(),
                    kernel: probe.kernel.clone(),
                });
                ctx.resolutions.insert(n, halves);
                ctx.probes.insert(n, probe);
            }
            Err(e) => {
                ctx.emit(Event::Discovered {
                    node: name.clone(),
                    ok: false,
                    detail: e.to_string(),
                });
                let trap = e.trap().unwrap_or(Trap::Unreachable);
                let v = Verdict::check(
                    format!("reach {name}"),
                    Outcome::Fail,
                    e.to_string(),
                    Some(trap),
                )
                .about(vec![ctx.launcher.reach_part(&name, trap)]);
                ctx.emit(Event::Preflight(v.clone()));
                results.preflight.push(v);
                results.discovery.push(NodeDiscovery {
                    node: name,
                    reachable: false,
                    error: Some(e.to_string()),
                    hostname: None,
                    halves: Vec::new(),
                    kernel: None,
                });
                ctx.unreachable.insert(n, e.to_string());
            }
        }
    }
    results.inventory = results
        .discovery
        .iter()
        .filter(|n| n.reachable)
        .flat_map(|n| InventoryRow::of_node(&n.node, n.kernel.as_deref(), &n.halves))
        .collect();
    ctx.pcie_caps = crate::discover::hardware::pcie_caps(ctx.plan, &ctx.resolutions);
}
