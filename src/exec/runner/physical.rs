//! The physical layer's evidence in a run. Cables proven by who answered: after the pings, each
//! pinging node's neighbour table (one read-only command per node), then
//! [`crate::discover::proof`]'s verdict per cable; a cable that lands elsewhere blocks the
//! measurements over it, and the preflight failures it explains (its pings, its ends without
//! carrier, the older per-half cabling checks) follow from it. A bandwidth shortfall on a half
//! whose PCIe link carries less than its rate, and that matches what the link carries, follows
//! from that link's WARN.

use std::collections::HashMap;

use futures::future::join_all;

use super::ctx::{Ctx, SHORT};
use crate::discover::proof::{self, Evidence};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::kinds::preflight::{Blocks, Ping};
use crate::parse::neigh::NeighReport;
use crate::parse::{self, Tool};
use crate::plan::{Endpoint, NodeId};

/// The neighbour table, as JSON where iproute2 can (4.13 and later), else as lines.
pub(crate) const NEIGH_SCRIPT: &str = "ip -j neigh show 2>/dev/null || ip neigh show";

/// Each pinging node's neighbour table, read once its pings are done.
pub(crate) async fn neighbours(ctx: &Ctx<'_>, pings: &[Ping]) -> HashMap<NodeId, NeighReport> {
    let mut nodes: Vec<NodeId> = pings.iter().map(Ping::node).collect();
    nodes.sort();
    nodes.dedup();
    let tables = join_all(
        nodes
            .iter()
            .map(|n| async { ctx.exec_oneshot(*n, NEIGH_SCRIPT, SHORT).await }),
    )
    .await;
    nodes
        .into_iter()
        .zip(tables)
        .filter_map(|(n, out)| Some((n, parse::neigh::parse(&out.ok()?.stdout))))
        .collect()
}

/// The cables' verdicts, added to `verdicts`; the failures a wrong cable explains follow it.
pub(crate) fn prove(
    ctx: &Ctx<'_>,
    pings: &[Ping],
    texts: &[Result<String, String>],
    neighbours: &HashMap<NodeId, NeighReport>,
    verdicts: &mut Vec<(Verdict, Blocks)>,
) {
    let answered: Vec<(Endpoint, Endpoint, bool)> = pings
        .iter()
        .zip(texts)
        .filter(|(p, _)| !p.jumbo)
        .map(|(p, t)| {
            let ok = t.as_ref().is_ok_and(|t| {
                let parsed = parse::parse(Tool::PING, t);
                parsed
                    .get::<crate::tools::ping::parse::PingReport>()
                    .is_some_and(|r| r.received.unwrap_or(0) > 0 && r.mtu_error.is_none())
            });
            (p.from.clone(), p.to.clone(), ok)
        })
        .collect();
    let ev = Evidence {
        probes: &ctx.probes,
        resolutions: &ctx.resolutions,
        neighbours,
        pings: &answered,
    };
    for (v, ends) in proof::cable_checks(ctx.plan, &ev) {
        if v.outcome == Outcome::Fail {
            for (other, blocks) in verdicts.iter_mut() {
                if explained(other, blocks, &ends) {
                    *other = other.clone().following(v.gate.clone());
                }
            }
        }
        let blocks = if ends.is_empty() {
            Blocks::Nothing
        } else {
            Blocks::Endpoints(ends)
        };
        verdicts.push((v, blocks));
    }
}

/// A failure a wrong cable explains: about its ends only, and a ping, an end without carrier
/// or an earlier cabling check.
fn explained(v: &Verdict, blocks: &Blocks, ends: &[Endpoint]) -> bool {
    let Blocks::Endpoints(eps) = blocks else {
        return false;
    };
    let kind = v.gate.starts_with("ping ")
        || v.gate.starts_with("jumbo ping ")
        || matches!(v.trap, Some(Trap::CrossedCable | Trap::PortDown));
    v.outcome == Outcome::Fail
        && v.follows.is_none()
        && kind
        && !eps.is_empty()
        && eps.iter().all(|e| ends.contains(e))
}

/// A measurement counts as matching its capped expectation from this share of it on.
const MATCHES_CAP: f64 = 0.85;

/// Bandwidth verdicts that did not pass on a flow through a half whose PCIe link carries less
/// than its rate, and that measured what the link carries (their expectation was capped there):
/// they follow from the link (`pcie HALF`), not from the cable.
pub(crate) fn follow_pcie(
    ctx: &Ctx<'_>,
    round: &crate::schedule::Round,
    done: &mut [crate::results::JobResult],
) {
    let caps = &ctx.pcie_caps;
    if caps.is_empty() {
        return;
    }
    for jr in done.iter_mut() {
        let Some(pair) = round
            .jobs
            .iter()
            .find(|j| j.id == jr.job)
            .and_then(|j| j.pair.as_ref())
        else {
            continue;
        };
        let capped = [&pair.client, &pair.server]
            .into_iter()
            .filter(|e| caps.contains_key(*e))
            .min_by(|a, b| caps[*a].total_cmp(&caps[*b]));
        let Some(half) = capped else { continue };
        let gate = format!("pcie {}", ctx.plan.endpoint_name(half));
        for v in jr.verdicts.iter_mut() {
            let matches =
                matches!((v.measured, v.expected), (Some(m), Some(e)) if m >= MATCHES_CAP * e);
            if v.outcome != Outcome::Ok && v.follows.is_none() && v.unit == "Gb/s" && matches {
                v.detail = format!(
                    "{}; what the half's PCIe link carries ({:.1} Gb/s, `{gate}`)",
                    v.detail, caps[half]
                );
                *v = v.clone().following(gate.clone());
            }
        }
    }
}
