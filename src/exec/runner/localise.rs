//! After a sampled test's last round: the re-test rounds `crate::localise` plans, run like any
//! round, then its decision applied: the suspects into the results, the FAILs they explain
//! following them.

use std::collections::{HashMap, HashSet};

use super::Books;
use super::ctx::Ctx;
use crate::exec::evidence::Evidence;
use crate::kinds;
use crate::localise::{self, Observed};
use crate::results::Event;
use crate::results::RunResults;
use crate::schedule::{Job, KindId, Round};

/// A sampled test's jobs as they ran: the rounds' jobs, in order.
#[derive(Default)]
pub(super) struct Sampled {
    pub(super) kind: Option<KindId>,
    pub(super) jobs: Vec<Job>,
}

/// What `jobs` showed, from their results in `results`.
fn observed(results: &RunResults, jobs: &[Job], kind: KindId) -> Vec<Observed> {
    let Some(k) = kinds::get(kind) else {
        return Vec::new();
    };
    let by_id: HashMap<&str, usize> = results
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.job.as_str(), i))
        .collect();
    jobs.iter()
        .filter_map(|j| {
            let r = &results.jobs[*by_id.get(j.id.as_str())?];
            Observed::from_result(j, r, k.metric().metric)
        })
        .collect()
}

/// After a bandwidth test with one peer per half: each end of its failing flows that no passing
/// flow cleared, measured against itself through its own NIC (see [`localise::loopbacks`]).
/// The round is numbered `*next`, which moves past it.
pub(super) async fn loopback(
    ctx: &mut Ctx<'_>,
    kind: KindId,
    jobs: &[Job],
    results: &mut RunResults,
    evidence: &Evidence,
    books: &mut Books,
    next: &mut usize,
) {
    if ctx.cancelled() {
        return;
    }
    let seen = observed(results, jobs, kind);
    let Some(round) = localise::loopbacks(ctx.plan, ctx.fabric, kind, *next, &seen) else {
        return;
    };
    *next += 1;
    super::measure(ctx, &round, *next, |_| true, results, evidence, books).await;
}

/// Run `rounds` (numbered up to `next`) and add what their jobs showed to `seen`; false when
/// the run was interrupted first (an interrupted run decides nothing from half its evidence).
async fn run_extra(
    ctx: &mut Ctx<'_>,
    kind: KindId,
    rounds: &[Round],
    seen: &mut Vec<Observed>,
    (results, evidence, books): (&mut RunResults, &Evidence, &mut Books),
    next: usize,
) -> bool {
    for r in rounds {
        if ctx.cancelled() {
            return false;
        }
        super::measure(ctx, r, next, |_| true, results, evidence, books).await;
        seen.extend(observed(results, &r.jobs, kind));
    }
    true
}

/// Measure again, where a throttle would show, the halves the rounds of `sampled` measured
/// only at shares below its band; re-test the failing flows; name what is at fault. The extra
/// rounds, [`localise::extra_round_budget`] at most, are numbered from `*next` on (after the
/// schedule's), which moves past them.
pub(super) async fn localise(
    ctx: &mut Ctx<'_>,
    sampled: Sampled,
    results: &mut RunResults,
    evidence: &Evidence,
    books: &mut Books,
    next: &mut usize,
) {
    let Some(kind) = sampled.kind else { return };
    let Some(k) = kinds::get(kind) else { return };
    let (plan, fabric, metric) = (ctx.plan, ctx.fabric, k.metric());
    let mut seen = observed(results, &sampled.jobs, kind);
    let budget = localise::extra_round_budget(localise::nodes_of(plan, &seen));
    // most of the budget is left to the re-tests: a full-rate round sees every half it can
    let full = localise::full_rate(plan, fabric, kind, metric, *next, &seen, budget / 2);
    *next += full.rounds.len();
    if !run_extra(
        ctx,
        kind,
        &full.rounds,
        &mut seen,
        (results, evidence, books),
        *next,
    )
    .await
    {
        return;
    }
    let left = budget.saturating_sub(full.rounds.len());
    let rounds = localise::retests(plan, fabric, kind, metric, *next, &seen, left);
    *next += rounds.len();
    if !run_extra(
        ctx,
        kind,
        &rounds,
        &mut seen,
        (results, evidence, books),
        *next,
    )
    .await
    {
        return;
    }
    let retests: HashSet<String> = rounds
        .iter()
        .flat_map(|r| r.jobs.iter().map(|j| j.id.clone()))
        .collect();
    let decision = localise::decide(plan, kind, metric, &seen, &retests);
    let mut follow: HashMap<&str, &str> = HashMap::new();
    for (s, ids) in decision.suspects.iter().zip(&decision.explains) {
        for id in ids {
            follow.insert(id.as_str(), s.verdict.gate.as_str());
        }
    }
    // the failures counted at the flows' gates are the suspect's from now on: a collective
    // over the suspect's node follows the suspect, not one of its flows
    let mut explained: HashMap<String, String> = HashMap::new();
    for j in &mut results.jobs {
        if let Some(gate) = follow.get(j.job.as_str()) {
            for v in j
                .verdicts
                .iter_mut()
                .filter(|v| v.outcome != crate::gate::judge::Outcome::Ok)
            {
                v.follows = Some(gate.to_string());
                explained.insert(v.gate.clone(), gate.to_string());
            }
        }
    }
    books.causes.explained_by(&explained);
    for (s, explains) in decision.suspects.into_iter().zip(decision.explains) {
        ctx.emit(Event::Suspect(Box::new(s.clone()), explains));
        results.suspects.push(s);
    }
}
