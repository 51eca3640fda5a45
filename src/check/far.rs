//! Each planned cable's far end, from the node alone: a small and a jumbo do-not-fragment ping
//! to the far end's planned address out of the half's netdev (judged as the run's preflight
//! judges them), the MAC that answered against the one recorded at the last check, and what
//! LLDP hears on the netdev against the plan's far node. Pure: the executor pings and reads
//! the neighbour table.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use minijinja::context;

use crate::discover::{HalfResolution, Probe};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::kinds::preflight::{self as pings, Ping};
use crate::parse::neigh::NeighReport;
use crate::plan::{Endpoint, Plan};
use crate::render::Renderer;

/// Replies each ping waits for.
const COUNT: u32 = 2;

/// The far end a half checks: a link's other end; on a switch, the first other member on the
/// same switch (else the segment's first other member), the address it answers on.
pub fn far_end(plan: &Plan, e: &Endpoint) -> Option<(Endpoint, Ipv4Addr)> {
    let (seg, me) = plan.member_of(e)?;
    let others = || seg.members.iter().filter(|m| &m.endpoint != e);
    others()
        .find(|m| me.switch.is_some() && m.switch == me.switch)
        .or_else(|| others().next())
        .map(|m| (m.endpoint.clone(), m.address))
}

/// Whether the half's far end is a node at the other end of a cable (no switch between).
fn direct(plan: &Plan, e: &Endpoint) -> bool {
    plan.member_of(e)
        .is_some_and(|(seg, me)| me.switch.is_none() && seg.members.len() == 2)
}

/// The pings: per half whose netdev is known and whose address is on it, small then jumbo.
pub fn plan_pings(plan: &Plan, renderer: &Renderer, halves: &[HalfResolution]) -> Vec<Ping> {
    let mut out = Vec::new();
    for h in halves.iter().filter(|h| h.address_found) {
        let (Some(netdev), Some((to, to_ip))) = (&h.netdev, far_end(plan, &h.endpoint)) else {
            continue;
        };
        for jumbo in [false, true] {
            let ctx = context! {
                count => COUNT, netdev => netdev.clone(), jumbo => jumbo,
                peer_ip => to_ip.to_string(), local_ip => h.address.to_string(),
                node => plan.node(h.endpoint.node).name.clone(),
            };
            if let Ok(command) = renderer.render("ping", ctx) {
                out.push(Ping {
                    from: h.endpoint.clone(),
                    to: to.clone(),
                    to_ip,
                    jumbo,
                    isls: Vec::new(),
                    command,
                });
            }
        }
    }
    out
}

/// What the far ends said: the pings' verdicts, then per direct link the MAC and LLDP verdicts.
pub struct FarEnds {
    pub verdicts: Vec<Verdict>,
    /// Per half: the MAC its far end answered with now (kept for the next check).
    pub macs: BTreeMap<String, String>,
}

/// What the node saw of its far ends: the pings sent, their outputs, the neighbour table, the
/// probe (LLDP).
pub type Seen<'a> = (
    &'a [Ping],
    &'a [Result<String, String>],
    Option<&'a NeighReport>,
    &'a Probe,
);

/// Judge the far ends of `node`'s halves. `outs` are the pings' outputs in order (`Err`: the
/// ping could not be run); `recorded` the MACs the last check kept, `then` when.
pub fn judge(
    plan: &Plan,
    halves: &[HalfResolution],
    seen: Seen<'_>,
    recorded: (&BTreeMap<String, String>, &str),
) -> FarEnds {
    let (sent, outs, neighbours, probe) = seen;
    let mut verdicts: Vec<Verdict> = pings::judge(plan, sent, outs, &|n| Part::node(n))
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    let mut macs = BTreeMap::new();
    for h in halves.iter().filter(|h| direct(plan, &h.endpoint)) {
        let (Some(netdev), Some((far, far_ip))) = (&h.netdev, far_end(plan, &h.endpoint)) else {
            continue;
        };
        let cable = plan.cable_part(&h.endpoint).into_iter().collect::<Vec<_>>();
        let mac = neighbours
            .and_then(|n| n.entry(&far_ip.to_string(), netdev))
            .and_then(|e| e.lladdr.clone());
        if let Some(m) = &mac {
            macs.insert(h.name.clone(), m.clone());
            if let Some(before) = recorded.0.get(&h.name).filter(|b| *b != m) {
                verdicts.push(
                    Verdict::check(
                        format!("far end {}", h.name),
                        Outcome::Warn,
                        format!(
                            "{}'s far end {far_ip} answers from MAC {m}; it answered from {before} {}: another port or NIC answers there now (a moved cable, or a replaced NIC: this check records the new MAC)",
                            h.name, recorded.1
                        ),
                        Some(Trap::CrossedCable),
                    )
                    .about(cable.clone()),
                );
            }
        }
        if let Some(v) = lldp_verdict(plan, h, netdev, &far, probe) {
            verdicts.push(v.about(cable));
        }
    }
    FarEnds { verdicts, macs }
}

/// What LLDP hears on `netdev`, against the plan's far node: a FAIL when it names another plan
/// node; nothing when it hears nothing or a chassis that is no plan node (a switch between, or
/// names that are not the plan's: it cannot tell).
fn lldp_verdict(
    plan: &Plan,
    h: &HalfResolution,
    netdev: &str,
    far: &Endpoint,
    probe: &Probe,
) -> Option<Verdict> {
    let heard = probe.lldp.as_ref()?.on(netdev).next()?;
    let chassis = heard.chassis_name.clone()?;
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    let named = plan
        .nodes
        .iter()
        .find(|n| n.name == chassis || short(&n.name) == short(&chassis))?;
    let port = heard
        .port_descr
        .clone()
        .or_else(|| heard.port_id.as_ref().map(|i| i.value.clone()))
        .unwrap_or_default();
    let planned = format!("{}.{}", plan.node(far.node).name, far.port);
    let gate = format!("lldp {}", h.name);
    if named.id == far.node {
        return Some(Verdict::check(
            gate,
            Outcome::Ok,
            format!("{netdev} hears {chassis} {port}, as planned ({planned})"),
            None,
        ));
    }
    Some(Verdict::check(
        gate,
        Outcome::Fail,
        format!(
            "{netdev} hears {chassis} {port} over LLDP; the plan puts {planned} at the far end of {}",
            h.name
        ),
        Some(Trap::CrossedCable),
    ))
}
