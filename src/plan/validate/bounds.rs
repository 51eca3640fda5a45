//! What a plan's tests would run, bounded: a plan that cannot finish is refused at once, and a
//! plan that runs no test is said to (a run of it only discovers and checks the fabric).
//!
//! The tests' rounds and jobs are counted from the kinds' stages without building a round
//! ([`Catalog::sizes`]), so a plan of millions of jobs is refused in milliseconds. The
//! full-rate, re-test and loopback rounds a run may add (log2 of a sampled test's nodes + 2,
//! `crate::localise::extra_round_budget`, and one loopback per test) are not counted: they are
//! bounded on their own.

use std::ops::Range;

use toml::Spanned;

use super::sections::duration;
use super::{Ctx, span};
use crate::plan::diag::Problem;
use crate::plan::model::Plan;
use crate::plan::section::{Catalog, TestSize};
use crate::text::thousands;

/// The most rounds a plan's tests may run. Rounds run one after another, and the shortest
/// measures for 6 s (perftest's default duration here) plus about 1 s to start its server, wait
/// until it listens and collect: 5,000 rounds are about ten hours, a night of measuring. A plan
/// past that has not finished by the next working day, on hardware or anywhere else, and a
/// bigger fabric is measured with rounds that do not grow with it (`schedule = "sampled"`).
pub const MAX_ROUNDS: usize = 5_000;

/// The most jobs a plan's tests may run. Each job's result is kept in memory and written to
/// the run directory (about 6 KB of results.json and results.jsonl each), and the simulator
/// (`run --sim`) answers two to five thousand jobs a second on a 2-core machine: 50,000 jobs
/// are well under a minute simulated (all-pairs on 224 nodes, 49,953 jobs: 11 s and 300 MB;
/// 4,096 nodes sampled 12 times each way, 49,153: 29 s). The largest documented fabric run,
/// 4,096 nodes sampled 8 times each way, is 32,769 jobs.
pub const MAX_JOBS: usize = 50_000;

/// Seconds the shortest round takes (see [`MAX_ROUNDS`]), for the time a refused plan would run.
const ROUND_S: usize = 7;

/// Refuse a plan whose tests run more than [`MAX_ROUNDS`] rounds or [`MAX_JOBS`] jobs; warn
/// when they run nothing. `name` is the plan's name, where a plan-wide problem points.
pub(super) fn bounds(ctx: &mut Ctx, plan: &Plan, name: &Spanned<String>, catalog: &dyn Catalog) {
    let sizes = catalog.sizes(plan);
    let sum = |f: fn(&TestSize) -> usize| sizes.iter().map(f).fold(0usize, usize::saturating_add);
    let (rounds, jobs) = (sum(|s| s.rounds), sum(|s| s.jobs));
    if rounds == 0 {
        ctx.push(no_tests(plan, name));
        return;
    }
    if rounds <= MAX_ROUNDS && jobs <= MAX_JOBS {
        return;
    }
    let over = match (rounds > MAX_ROUNDS, jobs > MAX_JOBS) {
        (true, true) => format!(
            "the {} rounds and {} jobs",
            thousands(MAX_ROUNDS as u64),
            thousands(MAX_JOBS as u64)
        ),
        (true, false) => format!("the {} rounds", thousands(MAX_ROUNDS as u64)),
        _ => format!("the {} jobs", thousands(MAX_JOBS as u64)),
    };
    let mut p = Problem::error(
        "plan::too-large",
        format!(
            "the plan's tests run {} in {}, about {} of measuring: more than {over} a run may take",
            counted(jobs, "job"),
            counted(rounds, "round"),
            duration(rounds.saturating_mul(ROUND_S)),
        ),
    )
    .help(format!(
        "a run does at most {} rounds and {} jobs: measure a switched fabric with `schedule = \"sampled\"` (rounds that do not grow with it), name fewer `halves`, drop repeated tests, or split the plan",
        thousands(MAX_ROUNDS as u64),
        thousands(MAX_JOBS as u64)
    ));
    let mut biggest: Vec<&TestSize> = sizes.iter().collect();
    biggest.sort_by_key(|s| std::cmp::Reverse(s.rounds.max(s.jobs)));
    for (i, s) in biggest.iter().enumerate() {
        let Some(at) = first_section(plan, s.key) else {
            continue;
        };
        let label = format!(
            "`{}`: {} in {}",
            s.key,
            counted(s.jobs, "job"),
            counted(s.rounds, "round")
        );
        p = if i == 0 {
            p.at(at, label)
        } else {
            p.also(at, label)
        };
    }
    if p.primary.is_none() {
        p = p.at(span(name), "this plan");
    }
    ctx.push(p);
}

/// `1 job`, `5,001 jobs`.
fn counted(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{} {what}s", thousands(n as u64)),
    }
}

/// Where the first section of `key` is.
fn first_section(plan: &Plan, key: &str) -> Option<Range<usize>> {
    plan.tests
        .sections
        .iter()
        .find(|s| s.key == key)
        .map(|s| s.at.clone())
}

/// The warning for a plan whose tests run nothing.
fn no_tests(plan: &Plan, name: &Spanned<String>) -> Problem {
    let what = if plan.tests.preflight {
        "discovery and preflight only"
    } else {
        "discovery only (`preflight = false`)"
    };
    Problem::warning(
        "plan::no-tests",
        format!("the plan runs no test: a run of it does {what}"),
    )
    .at(span(name), "no test in this plan")
    .help("add what to measure, e.g. `[tests.rdma-bw]` (bandwidth of every link) or `[[tests.nccl]]` with a `collective`")
}
