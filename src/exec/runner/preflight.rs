//! Preflight: read-only checks before any measurement. What discovery found, checked per half
//! (device, GID, MTU, cabling, routes, NCCL environment); the pings of
//! [`crate::kinds::preflight`]; and each selected NCCL test's launch check. A FAIL blocks only
//! the measurements whose path it affects; a failure that follows from an earlier one says so.

use futures::future::join_all;

use super::ctx::{Ctx, SHORT};
use crate::discover::{checks, hardware};
use crate::exec::transport::{Output, TransportError};
use crate::gate::judge::{Outcome, Verdict};
use crate::kinds::preflight::{self as pings, Blocks};
use crate::kinds::{Answer, LaunchCheck, LaunchFailed, judge_launch, launch_check};
use crate::plan::{Endpoint, NodeId};
use crate::results::Event;
use crate::results::RunResults;

/// One launch check's answer, and when it arrived (Unix ms, the controller's clock).
pub(crate) struct LaunchAnswer {
    out: Result<Output, TransportError>,
    answered_unix_ms: f64,
}

/// What the launch checks answered, in their order, and how long they took together.
pub(crate) type LaunchAnswers = tokio::task::JoinHandle<(Vec<LaunchAnswer>, std::time::Duration)>;

/// How long preflight's parts took, for the run's [`crate::results::StartPhases`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PreflightTimes {
    /// The pings, start to last answer.
    pub(crate) pings_ms: f64,
    /// The launch checks, their start to the last answer.
    pub(crate) launch_checks_ms: Option<f64>,
    /// The longest launch check's own run: its start mark to its answer.
    pub(crate) launch_check_tool_ms: Option<f64>,
}

/// The launch checks of the NCCL tests that have a selected job and can all be reached (none of
/// their ranks is one the launcher said it cannot reach). They depend on the plan alone, not on
/// discovery, so the runner starts them together with the discovery probes.
pub(crate) fn launch_checks(ctx: &Ctx<'_>, tests: &[usize]) -> Vec<LaunchCheck> {
    let all = crate::kinds::nccl_tests(ctx.plan);
    tests
        .iter()
        .filter(|i| {
            all.get(**i)
                .is_none_or(|t| !t.nodes.iter().any(|n| ctx.unreachable.contains_key(n)))
        })
        .filter_map(|i| launch_check(ctx.plan, &ctx.renderer, ctx.launcher.style(), *i).ok())
        .collect()
}

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
        let started = std::time::Instant::now();
        let answers = join_all(work.iter().map(|(node, script, timeout)| async {
            let out = launcher.exec(node, script, *timeout).await;
            LaunchAnswer {
                out,
                answered_unix_ms: crate::results::now_ms() as f64,
            }
        }))
        .await;
        (answers, started.elapsed())
    })
}

/// The checks that need nothing but what discovery found.
fn discovery_checks(ctx: &Ctx<'_>, needed: &[NodeId]) -> Vec<(Verdict, Blocks)> {
    let mut out: Vec<(Verdict, Vec<Endpoint>)> = Vec::new();
    for n in needed {
        let (Some(halves), Some(probe)) = (ctx.resolutions.get(n), ctx.probes.get(n)) else {
            continue;
        };
        out.extend(checks::half_checks(ctx.plan, *n, halves));
        out.extend(checks::cabling_checks(ctx.plan, *n, probe, halves));
        out.extend(checks::routing_checks(ctx.plan, *n, probe, halves));
        out.extend(checks::nccl_env_checks(ctx.plan, *n, halves));
    }
    out.extend(checks::link_mtu_checks(ctx.plan, &ctx.resolutions));
    out.extend(hardware::pcie_checks(ctx.plan, &ctx.resolutions));
    out.extend(hardware::firmware_checks(ctx.plan, &ctx.resolutions));
    out.into_iter()
        .map(|(v, eps)| {
            let b = if eps.is_empty() {
                Blocks::Nothing
            } else {
                Blocks::Endpoints(eps)
            };
            (v, b)
        })
        .collect()
}

/// The first failed check whose block touches NCCL test `test`'s ranks or the ISLs between them.
fn failure_on_path<'v>(
    ctx: &Ctx<'_>,
    test: usize,
    verdicts: &'v [(Verdict, Blocks)],
) -> Option<&'v Verdict> {
    let t = crate::kinds::nccl_tests(ctx.plan).get(test).copied()?;
    let touches = |b: &Blocks| match b {
        Blocks::Endpoints(eps) => eps.iter().any(|e| t.nodes.contains(&e.node)),
        Blocks::Isl(isl) => ctx.ranks_cross(&t.nodes, *isl),
        Blocks::Test(_) | Blocks::Nothing => false,
    };
    verdicts
        .iter()
        .find(|(v, b)| v.outcome == Outcome::Fail && v.follows.is_none() && touches(b))
        .map(|(v, _)| v)
}

/// The launch checks' answers, each beside its check, and how long they took together; a check
/// whose task did not finish is answered as lost.
async fn collect_launches(
    launches: Option<(Vec<LaunchCheck>, LaunchAnswers)>,
) -> (
    Vec<(LaunchCheck, LaunchAnswer)>,
    Option<std::time::Duration>,
) {
    let Some((checks, answers)) = launches else {
        return (Vec::new(), None);
    };
    // a task that did not finish took no time that can be said
    let (got, took) = answers
        .await
        .map(|(a, t)| (a, Some(t)))
        .unwrap_or_else(|e| {
            let lost = checks
                .iter()
                .map(|c| LaunchAnswer {
                    out: Err(TransportError::Lost {
                        host: c.step.host.clone(),
                        reason: format!("the launch check did not finish: {e}"),
                    }),
                    answered_unix_ms: crate::results::now_ms() as f64,
                })
                .collect();
            (lost, None)
        });
    (checks.into_iter().zip(got).collect(), took)
}

/// Judge each launch check's answer into `verdicts` (after what it follows from on its path),
/// and note the longest launch check's own run in `times`. A test with an unreachable rank is
/// skipped: its host is reported already.
fn judge_launches(
    ctx: &Ctx<'_>,
    answers: Vec<(LaunchCheck, LaunchAnswer)>,
    verdicts: &mut Vec<(Verdict, Blocks)>,
    times: &mut PreflightTimes,
) {
    for (check, answered) in answers {
        let mut out = answered.out;
        // the start mark is fabricplan's, not mpirun's: split off before the answer is read
        if let Ok(o) = out.as_mut() {
            let (mark, rest) = crate::render::wrap::take_start_mark(&o.stderr);
            o.stderr = rest;
            if let Some(m) = mark {
                let own = (answered.answered_unix_ms - m).max(0.0);
                times.launch_check_tool_ms =
                    Some(times.launch_check_tool_ms.map_or(own, |t| t.max(own)));
            }
        }
        let Some(t) = crate::kinds::nccl_tests(ctx.plan).get(check.test).copied() else {
            continue;
        };
        if t.nodes.iter().any(|n| ctx.unreachable.contains_key(n)) {
            // its host is reported unreachable already, and the test is skipped for it
            continue;
        }
        let answer = match &out {
            Ok(o) => Ok(Answer {
                status: o.status,
                stdout: &o.stdout,
                stderr: &o.stderr,
            }),
            Err(e) => Err(LaunchFailed {
                why: e.to_string(),
                trap: e.trap(),
                host: Some(e.host().to_string()),
            }),
        };
        let earlier = failure_on_path(ctx, check.test, verdicts).cloned();
        let v = judge_launch(ctx.plan, &check, answer, earlier.as_ref());
        verdicts.push((v, Blocks::Test(t.name.clone())));
    }
}

/// Block what a failed preflight verdict's block names (halves, an ISL, a test), with the
/// reason: the gate it follows from, or its own.
fn block(ctx: &mut Ctx<'_>, v: &Verdict, blocks: Blocks) {
    let why = match &v.follows {
        Some(g) => format!("preflight `{g}` failed"),
        None => format!("preflight `{}` failed", v.gate),
    };
    match blocks {
        Blocks::Endpoints(eps) => {
            for e in eps {
                ctx.blocked.entry(e).or_insert_with(|| why.clone());
            }
        }
        Blocks::Isl(isl) => {
            ctx.blocked_isls.entry(isl).or_insert(why);
        }
        Blocks::Test(name) => {
            ctx.blocked_tests.entry(name).or_insert(why);
        }
        Blocks::Nothing => {}
    }
}

/// Read-only checks before any measurement; what fails is blocked with the reason.
pub(crate) async fn preflight(
    ctx: &mut Ctx<'_>,
    needed: &[NodeId],
    results: &mut RunResults,
    launches: Option<(Vec<LaunchCheck>, LaunchAnswers)>,
) -> PreflightTimes {
    let mut times = PreflightTimes::default();
    let mut verdicts = discovery_checks(ctx, needed);
    let unreachable = |n: NodeId| ctx.unreachable.contains_key(&n);
    let list = pings::pings(
        ctx.plan,
        ctx.fabric,
        &ctx.renderer,
        &ctx.res,
        needed,
        &unreachable,
    );
    // the pings run while the launch checks finish
    let pinging = std::time::Instant::now();
    let ((outs, neighbours), (answers, took)) = tokio::join!(
        async {
            let outs = join_all(
                list.iter()
                    .map(|p| async { ctx.exec_oneshot(p.node(), &p.command, SHORT).await }),
            )
            .await;
            times.pings_ms = pinging.elapsed().as_secs_f64() * 1000.0;
            // the neighbour entries the pings left: who answered
            (outs, super::physical::neighbours(ctx, &list).await)
        },
        collect_launches(launches)
    );
    times.launch_checks_ms = took.map(|t| t.as_secs_f64() * 1000.0);
    let texts: Vec<Result<String, String>> = outs
        .into_iter()
        .map(|o| {
            o.map(|o| format!("{}{}", o.stdout, o.stderr))
                .map_err(|e| e.to_string())
        })
        .collect();
    let reach = |host: &str| {
        ctx.launcher
            .reach_part(host, crate::gate::trap::Trap::Unreachable)
    };
    verdicts.extend(pings::judge(ctx.plan, &list, &texts, &reach));
    super::physical::prove(ctx, &list, &texts, &neighbours, &mut verdicts);
    judge_launches(ctx, answers, &mut verdicts, &mut times);
    for (v, blocks) in verdicts {
        if v.outcome == Outcome::Fail {
            block(ctx, &v, blocks);
        }
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
    }
    times
}
