//! Preflight: read-only checks before any measurement. Per planned half: the live device,
//! its RoCE v2 GID, MTU 9000; per link: a small ping and a jumbo do-not-fragment ping out of the
//! planned netdev. A FAIL blocks the measurements that depend on it, with the reason.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;

use super::runner::{Ctx, Event, SHORT};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::parse::{self, Tool};
use crate::plan::{Endpoint, NodeId};
use crate::results::RunResults;

/// Read-only checks before any measurement. A FAIL blocks the measurements that depend on it.
pub(crate) async fn preflight(ctx: &mut Ctx<'_>, needed: &[NodeId], results: &mut RunResults) {
    let mut verdicts: Vec<(Verdict, Vec<Endpoint>)> = Vec::new();
    for n in needed {
        let Some(halves) = ctx.resolutions.get(n) else {
            continue;
        };
        for h in halves {
            let mut problems = h.problems.clone();
            if let Some(fix) = &h.fix_command {
                problems.push(format!("run on {}: {fix}", ctx.plan.node(*n).name));
            }
            let trap = if !h.address_found {
                Trap::NoGid
            } else if h.device.is_none() || !h.active {
                Trap::PortDown
            } else if h.gid_index.is_none() {
                Trap::NoGid
            } else {
                Trap::NoDevice
            };
            let outcome = if problems.is_empty() {
                Outcome::Ok
            } else {
                Outcome::Fail
            };
            let detail = if problems.is_empty() {
                format!(
                    "{} / {} / GID {} / {} (OS reports {}: a hint only)",
                    h.device.clone().unwrap_or_default(),
                    h.netdev.clone().unwrap_or_default(),
                    h.gid_index.map(|g| g.to_string()).unwrap_or_default(),
                    h.address,
                    h.rate_hint.clone().unwrap_or_else(|| "no rate".into())
                )
            } else {
                problems.join("; ")
            };
            verdicts.push((
                Verdict::check(format!("discover {}", h.name), outcome, detail, Some(trap)),
                vec![h.endpoint.clone()],
            ));
            if h.address_found {
                let mtu_ok = h.mtu == Some(9000);
                verdicts.push((
                    Verdict::check(
                        format!("mtu {}", h.name),
                        if mtu_ok { Outcome::Ok } else { Outcome::Fail },
                        format!(
                            "{} mtu {}",
                            h.netdev.clone().unwrap_or_default(),
                            h.mtu
                                .map(|m| m.to_string())
                                .unwrap_or_else(|| "unknown".into())
                        ),
                        Some(Trap::MtuMismatch),
                    ),
                    vec![h.endpoint.clone()],
                ));
            }
        }
    }
    // per link: a small ping and a jumbo do-not-fragment ping out of the planned netdev
    let mut pings: Vec<(NodeId, Endpoint, Endpoint, bool, String)> = Vec::new();
    let mut seen = HashSet::new();
    for seg in &ctx.plan.segments {
        let members: Vec<_> = seg
            .members
            .iter()
            .filter(|m| needed.contains(&m.endpoint.node))
            .collect();
        if members.len() < 2 {
            continue;
        }
        for m in members.iter().skip(1) {
            let (from, to) = (&m.endpoint, &members[0].endpoint);
            if !seen.insert((from.clone(), to.clone())) || ctx.unreachable.contains_key(&from.node)
            {
                continue;
            }
            let Some(netdev) = ctx.res.halves.get(from).and_then(|f| f.netdev.clone()) else {
                continue;
            };
            let peer = members[0].address;
            for jumbo in [false, true] {
                let cmd = ctx.renderer.render(
                    "ping",
                    minijinja::context! { count => 3, netdev => netdev.clone(), jumbo => jumbo, peer_ip => peer.to_string(), local_ip => m.address.to_string(), node => ctx.plan.node(from.node).name.clone() },
                );
                if let Ok(cmd) = cmd {
                    pings.push((from.node, from.clone(), to.clone(), jumbo, cmd));
                }
            }
        }
    }
    let outs = join_all(
        pings
            .iter()
            .map(|(n, _, _, _, cmd)| ctx.exec(*n, cmd, SHORT)),
    )
    .await;
    let mut small_ok: HashMap<(Endpoint, Endpoint), bool> = HashMap::new();
    for ((_, from, to, jumbo, _), out) in pings.iter().zip(outs) {
        let gate = format!(
            "{} {} -> {}",
            if *jumbo { "jumbo ping" } else { "ping" },
            ctx.plan.endpoint_name(from),
            ctx.plan.endpoint_name(to)
        );
        let v = match out {
            Err(e) => Verdict::check(gate, Outcome::Fail, e.to_string(), Some(Trap::Unreachable)),
            Ok(o) => {
                let text = format!("{}{}", o.stdout, o.stderr);
                let parsed = parse::parse(Tool::Ping, &text).to_json(Tool::Ping);
                let received = parsed.get("received").and_then(|v| v.as_u64()).unwrap_or(0);
                let mtu_err = parsed.get("mtu_error").filter(|v| !v.is_null()).is_some();
                if received > 0 && !mtu_err {
                    if !*jumbo {
                        small_ok.insert((from.clone(), to.clone()), true);
                    }
                    Verdict::check(gate, Outcome::Ok, format!("{received} replies"), None)
                } else if *jumbo
                    && small_ok
                        .get(&(from.clone(), to.clone()))
                        .copied()
                        .unwrap_or(false)
                {
                    Verdict::check(
                        gate,
                        Outcome::Fail,
                        format!(
                            "small ping answers, 8972-byte do-not-fragment ping does not: {}",
                            text.lines()
                                .find(|l| l.contains("mtu")
                                    || l.contains("too long")
                                    || l.contains("Frag"))
                                .unwrap_or("no reply")
                                .trim()
                        ),
                        Some(Trap::MtuMismatch),
                    )
                } else {
                    Verdict::check(
                        gate,
                        Outcome::Fail,
                        format!("no reply: {}", text.lines().last().unwrap_or("").trim()),
                        Some(Trap::CrossedCable),
                    )
                }
            }
        };
        verdicts.push((v, vec![from.clone(), to.clone()]));
    }
    for (v, eps) in verdicts {
        if v.outcome == Outcome::Fail {
            for e in eps {
                ctx.blocked
                    .entry(e)
                    .or_insert_with(|| format!("preflight `{}` failed", v.gate));
            }
        }
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
    }
}
