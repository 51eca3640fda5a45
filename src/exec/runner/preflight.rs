//! Preflight: read-only checks before any measurement. Per planned half: the live device,
//! its RoCE v2 GID, MTU 9000; per link: a small ping and a jumbo do-not-fragment ping out of the
//! planned netdev. A FAIL blocks the measurements that depend on it, with the reason.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;

use super::ctx::{Ctx, Event, SHORT};
use crate::discover::checks;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::parse::{self, Tool};
use crate::plan::{Endpoint, NodeId};
use crate::results::RunResults;

use crate::kinds::LaunchCheck;

/// The launch checks of the NCCL tests whose hosts are all needed. They depend on the plan alone,
/// not on discovery, so the runner starts them together with the discovery probes.
pub(crate) fn launch_checks(ctx: &Ctx<'_>, needed: &[NodeId]) -> Vec<LaunchCheck> {
    (0..ctx.plan.tests.nccl.len())
        .filter(|i| {
            ctx.plan.tests.nccl[*i]
                .nodes
                .iter()
                .all(|n| needed.contains(n))
        })
        .filter_map(|i| {
            crate::kinds::launch_check(
                ctx.plan,
                &ctx.renderer,
                ctx.launcher.style(),
                i,
                &ctx.opts.run_id,
            )
            .ok()
        })
        .collect()
}

/// What the launch checks answered, in their order.
pub(crate) type LaunchAnswers =
    tokio::task::JoinHandle<Vec<Result<crate::exec::Output, crate::exec::TransportError>>>;

/// Start the launch checks, all at once, on their own task: they run while the hosts are probed
/// and then pinged (an mpirun start takes longer than both), and [`preflight`] collects them.
/// A handful of commands, one per NCCL test: outside the run's command cap.
pub(crate) fn start_launch_checks(ctx: &Ctx<'_>, checks: &[LaunchCheck]) -> LaunchAnswers {
    let launcher = ctx.launcher.clone();
    let work: Vec<(crate::plan::Node, String, std::time::Duration)> = checks
        .iter()
        .map(|c| {
            (
                ctx.plan.node(c.step.node).clone(),
                c.step.script.clone(),
                std::time::Duration::from_secs(u64::from(c.step.timeout_s) + 10),
            )
        })
        .collect();
    tokio::spawn(async move {
        join_all(
            work.iter()
                .map(|(node, script, timeout)| launcher.exec(node, script, *timeout)),
        )
        .await
    })
}

/// Read-only checks before any measurement. A FAIL blocks the measurements that depend on it.
/// `checks` are the launch checks started with discovery, `answers` where they answer.
pub(crate) async fn preflight(
    ctx: &mut Ctx<'_>,
    needed: &[NodeId],
    results: &mut RunResults,
    checks: Vec<LaunchCheck>,
    answers: LaunchAnswers,
) {
    let mut verdicts: Vec<(Verdict, Vec<Endpoint>)> = Vec::new();
    for n in needed {
        let (Some(halves), Some(probe)) = (ctx.resolutions.get(n), ctx.probes.get(n)) else {
            continue;
        };
        verdicts.extend(checks::half_checks(ctx.plan, *n, halves));
        verdicts.extend(checks::cabling_checks(ctx.plan, *n, probe, halves));
        verdicts.extend(checks::routing_checks(ctx.plan, *n, probe, halves));
        verdicts.extend(checks::nccl_env_checks(ctx.plan, *n, halves));
    }
    verdicts.extend(checks::link_mtu_checks(ctx.plan, &ctx.resolutions));
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
    // the pings run while the launch checks finish
    let (outs, answers) = tokio::join!(
        join_all(
            pings
                .iter()
                .map(|(n, _, _, _, cmd)| ctx.exec(*n, cmd, SHORT)),
        ),
        answers
    );
    let answers = answers.unwrap_or_else(|e| {
        checks
            .iter()
            .map(|c| {
                Err(crate::exec::TransportError::Lost {
                    host: c.step.host.clone(),
                    reason: format!("the launch check did not finish: {e}"),
                })
            })
            .collect()
    });
    let launches = checks.into_iter().zip(answers);
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
                let (received, mtu_err) = match parse::parse(Tool::Ping, &text) {
                    parse::Parsed::Ping(p) => (p.received.unwrap_or(0), p.mtu_error.is_some()),
                    _ => (0, false),
                };
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
                        format!(
                            "no reply: {}",
                            text.lines()
                                .rev()
                                .map(str::trim)
                                .find(|l| !l.is_empty())
                                .unwrap_or("no output")
                        ),
                        Some(Trap::CrossedCable),
                    )
                }
            }
        };
        verdicts.push((v, vec![from.clone(), to.clone()]));
    }
    for (check, out) in launches {
        let (s, n) = (&check.step, check.ranks);
        let t = &ctx.plan.tests.nccl[check.test];
        if t.nodes.iter().any(|n| ctx.unreachable.contains_key(n)) {
            // its host is reported unreachable already, and the test is skipped for it
            continue;
        }
        let gate = format!("mpirun launch {}", t.name);
        let v = match out {
            Err(e) => Verdict::check(gate, Outcome::Fail, e.to_string(), Some(Trap::Unreachable)),
            Ok(o) => {
                let text = format!("{}{}", o.stdout, o.stderr);
                let lines = o.stdout.lines().filter(|l| !l.trim().is_empty()).count();
                match parse::parse(Tool::Mpirun, &text).error() {
                    Some(e) => {
                        let trap = match crate::gate::classify::trap_of_error(e.kind) {
                            Trap::ToolError => Trap::MpiLaunch,
                            t => t,
                        };
                        Verdict::check(
                            gate,
                            Outcome::Fail,
                            format!(
                                "{}: {}",
                                e.kind.as_str(),
                                e.message.lines().next().unwrap_or("")
                            ),
                            Some(trap),
                        )
                    }
                    None if o.status == 0 && lines >= n => Verdict::check(
                        gate,
                        Outcome::Ok,
                        format!(
                            "{} started `hostname` on {n} rank(s): {}",
                            s.host,
                            o.stdout.split_whitespace().collect::<Vec<_>>().join(", ")
                        ),
                        None,
                    ),
                    None => Verdict::check(
                        gate,
                        Outcome::Fail,
                        format!(
                            "mpirun exit {}, {lines} of {n} ranks answered: {}",
                            o.status,
                            text.lines().last().unwrap_or("").trim()
                        ),
                        Some(Trap::MpiLaunch),
                    ),
                }
            }
        };
        if v.outcome == Outcome::Fail {
            ctx.blocked_tests
                .insert(t.name.clone(), format!("preflight `{}` failed", v.gate));
        }
        verdicts.push((v, Vec::new()));
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
