//! The top of the page: the verdict and its counts, then what to fix (FAIL and WARN verdicts
//! grouped by trap, worst first, with the fix; jobs that measured nothing).

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::format::utc;
use crate::compare::baseline as base;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::{Finding, JobStatus, RunResults, Tally};

pub(super) fn verdict_line(r: &RunResults) -> String {
    let v = if r.summary.verdict.is_empty() {
        "NO VERDICT".to_string()
    } else {
        r.summary.verdict.clone()
    };
    let v = if r.interrupted {
        format!("INTERRUPTED: {v}")
    } else {
        v
    };
    if r.simulated {
        format!("{v} (simulated)")
    } else {
        v
    }
}

/// The top of the page: the run, its verdict and its counts.
#[derive(Serialize)]
pub(super) struct Head {
    plan: String,
    run_id: String,
    started: String,
    transport: String,
    seconds: f64,
    /// The verdict's colour: the worst outcome (FAIL too when a job could not measure).
    worst: Outcome,
    verdict: String,
    /// Every gate counted once, as every output counts them ([`Tally`]).
    counts: Vec<Count>,
    jobs: usize,
    simulated: bool,
}

#[derive(Serialize)]
struct Count {
    n: usize,
    word: &'static str,
    /// Its colour: `ok`, `warn`, `fail`, `follow` or `notrun`.
    class: &'static str,
}

pub(super) fn head(r: &RunResults) -> Head {
    let s = &r.summary;
    let worst = if s.fail > 0 || s.exit_code != 0 {
        Outcome::Fail
    } else if s.warn > 0 {
        Outcome::Warn
    } else {
        Outcome::Ok
    };
    Head {
        plan: r.plan.clone(),
        run_id: r.run_id.clone(),
        started: utc(r.started_unix_ms),
        transport: r.transport.clone(),
        seconds: r.finished_unix_ms.saturating_sub(r.started_unix_ms) as f64 / 1000.0,
        worst,
        verdict: verdict_line(r),
        counts: Tally::of_run(r)
            .counts()
            .into_iter()
            .zip(["ok", "warn", "fail", "follow", "notrun"])
            .map(|((n, word), class)| Count { n, word, class })
            .collect(),
        jobs: s.jobs,
        simulated: r.simulated,
    }
}

/// What to fix: the groups of FAIL and WARN verdicts, worst first; the jobs that measured
/// nothing.
#[derive(Serialize)]
pub(super) struct Fix {
    groups: Vec<FixGroup>,
    skipped: Vec<Skipped>,
}

/// One trap's group: the fix once when its verdicts share one, then every verdict (a big
/// run's first ones, the rest counted), then what follows from them.
#[derive(Serialize)]
struct FixGroup {
    worst: Outcome,
    /// The broken part a diagnosed run's finding names (`spark-b.f0.b (enP2p1s0f0np0 on
    /// spark-b)`), with what was seen.
    part: Option<String>,
    seen: Option<String>,
    /// The command that fixes it on its host, or the host (or switches) its words apply to.
    command: Option<String>,
    host: Option<String>,
    /// The jobs not run because they need it.
    skipped: Vec<String>,
    trap: String,
    count: usize,
    fix: Option<String>,
    items: Vec<FixItem>,
    more: usize,
    following: Option<Following>,
}

#[derive(Serialize)]
struct FixItem {
    outcome: Outcome,
    gate: String,
    measured: Option<f64>,
    unit: String,
    threshold: String,
    detail: String,
    /// Its own fix, when the group's verdicts do not share one.
    fix: Option<String>,
}

/// The gates that follow from a group's causes: counted, the first named (with the cause each
/// follows when the group has several).
#[derive(Serialize)]
struct Following {
    count: usize,
    several: bool,
    named: Vec<Named>,
    more: usize,
}

#[derive(Serialize)]
struct Named {
    gate: String,
    follows: Option<String>,
}

/// A job that measured nothing and judged nothing, with its reason.
#[derive(Serialize)]
struct Skipped {
    /// FAIL (it ran and could not measure) or `not run`, as it is counted.
    word: &'static str,
    kind: String,
    label: String,
    reason: String,
}

/// FAIL and WARN verdicts grouped by trap, worst first; skipped jobs with their reason.
pub(super) fn fix(r: &RunResults) -> Fix {
    // a big run lists the first of each group's gates and counts the rest
    let cap = if super::big(r) {
        MAX_FIX_ITEMS
    } else {
        usize::MAX
    };
    let skipped = r
        .jobs
        .iter()
        .filter(|j| j.status != JobStatus::Measured && j.verdicts.is_empty())
        .map(|j| Skipped {
            word: crate::results::tally::job_word(j),
            kind: j.kind.clone(),
            label: j.label.clone(),
            reason: j
                .reason
                .clone()
                .unwrap_or_else(|| "no reason recorded".into()),
        })
        .collect();
    Fix {
        groups: if r.findings.is_empty() {
            // a run read back from before diagnosis by part: by trap
            trap_groups(r).iter().map(|g| fix_group(g, cap)).collect()
        } else {
            r.findings
                .iter()
                .map(|f| finding_group(r, f, cap))
                .collect()
        },
        skipped,
    }
}

/// One finding as the page shows it: its part, what was seen, its fix command, the gates that
/// are its evidence, then those that follow from it.
fn finding_group(r: &RunResults, f: &Finding, cap: usize) -> FixGroup {
    let pick = |names: &[String]| -> Vec<&Verdict> {
        let names: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        r.verdicts()
            .filter(|v| v.outcome != Outcome::Ok && names.contains(v.gate.as_str()))
            .collect()
    };
    let g = Group {
        trap: f.trap_name.clone(),
        worst: f.outcome,
        items: pick(&f.evidence),
        following: pick(&f.follows),
    };
    let mut out = fix_group(&g, cap);
    out.count = out.count.max(1);
    out.part = Some(f.label.clone());
    out.seen = Some(f.seen.clone());
    out.command = f.fix_command.clone();
    out.host = f.host.clone();
    out.fix = Some(f.fix.clone());
    out.skipped = f.skipped.clone();
    // the finding's fix is the one that matters; its gates' trap texts would only repeat it
    for i in &mut out.items {
        i.fix = None;
    }
    out
}

/// The verdicts of one trap, and the worst of them.
struct Group<'a> {
    trap: String,
    worst: Outcome,
    items: Vec<&'a Verdict>,
    /// Verdicts that follow from one of `items` (the same cause seen again): named under it,
    /// not counted as causes of their own.
    following: Vec<&'a Verdict>,
}

/// The verdicts that did not pass, grouped by trap (in order of appearance), worst first,
/// then the largest. A verdict that follows from another listed one goes under it; one whose
/// cause is not listed stays in its own trap's group, so nothing is left out.
fn trap_groups(r: &RunResults) -> Vec<Group<'_>> {
    let failed: Vec<&Verdict> = r.verdicts().filter(|v| v.outcome != Outcome::Ok).collect();
    let causes: BTreeSet<&str> = failed
        .iter()
        .filter(|v| v.follows.is_none())
        .map(|v| v.gate.as_str())
        .collect();
    let follows_listed = |v: &Verdict| v.follows.as_deref().is_some_and(|g| causes.contains(g));
    let mut groups: Vec<Group<'_>> = Vec::new();
    for v in failed.iter().copied().filter(|v| !follows_listed(v)) {
        let trap = v
            .trap_name
            .clone()
            .unwrap_or_else(|| "no trap named".to_string());
        match groups.iter_mut().find(|g| g.trap == trap) {
            Some(g) => {
                g.worst = g.worst.max(v.outcome);
                g.items.push(v);
            }
            None => groups.push(Group {
                trap,
                worst: v.outcome,
                items: vec![v],
                following: Vec::new(),
            }),
        }
    }
    // each cause's group, then each follower under its cause's
    let group_of: HashMap<&str, usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.items.iter().map(move |c| (c.gate.as_str(), i)))
        .collect();
    for v in failed.iter().copied().filter(|v| follows_listed(v)) {
        if let Some(&i) = v.follows.as_deref().and_then(|c| group_of.get(c)) {
            groups[i].following.push(v);
        }
    }
    groups.sort_by(|a, b| {
        b.worst
            .cmp(&a.worst)
            .then(b.items.len().cmp(&a.items.len()))
    });
    groups
}

/// One trap's group as the page shows it.
fn fix_group(g: &Group<'_>, cap: usize) -> FixGroup {
    let fixes: BTreeSet<&str> = if g.trap == base::TRAP_NAME {
        // each baseline fix repeats its own numbers: one fix for the group, numbers per item
        BTreeSet::from([BASELINE_FIX])
    } else {
        g.items.iter().filter_map(|v| v.fix.as_deref()).collect()
    };
    let one_fix = fixes.len() == 1;
    let items = g
        .items
        .iter()
        .take(cap)
        .map(|v| FixItem {
            outcome: v.outcome,
            gate: v.gate.clone(),
            measured: v.measured,
            unit: v.unit.clone(),
            threshold: v.threshold.clone(),
            detail: v.detail.clone(),
            fix: v.fix.clone().filter(|_| !one_fix),
        })
        .collect();
    FixGroup {
        worst: g.worst,
        part: None,
        seen: None,
        command: None,
        host: None,
        skipped: Vec::new(),
        trap: g.trap.clone(),
        count: g.items.len(),
        fix: fixes
            .iter()
            .next()
            .filter(|_| one_fix)
            .map(|f| f.to_string()),
        items,
        more: g.items.len().saturating_sub(cap),
        following: following(g),
    }
}

/// What follows from a group's causes: other tests' gates first (a collective held down by
/// the cause), then the rest in order; which cause each follows only when there are several.
fn following(g: &Group<'_>) -> Option<Following> {
    if g.following.is_empty() {
        return None;
    }
    let kind = |gate: &str| gate.split(' ').next().unwrap_or("").to_string();
    let kinds: BTreeSet<String> = g.items.iter().map(|c| kind(&c.gate)).collect();
    let mut following = g.following.clone();
    following.sort_by_key(|v| kinds.contains(&kind(&v.gate)));
    let several = g.items.len() > 1;
    Some(Following {
        count: following.len(),
        several,
        named: following
            .iter()
            .take(FOLLOWERS_NAMED)
            .map(|v| Named {
                gate: v.gate.clone(),
                follows: v.follows.clone().filter(|_| several),
            })
            .collect(),
        more: following.len().saturating_sub(FOLLOWERS_NAMED),
    })
}

/// The gates a big run's what-to-fix group lists (the rest are counted).
const MAX_FIX_ITEMS: usize = 50;

/// The gates that follow from a group's causes named in it (the rest are counted).
const FOLLOWERS_NAMED: usize = 5;

/// The fix of the baseline group in the report (each verdict's own fix repeats its numbers).
const BASELINE_FIX: &str = "find what changed since the baseline run (firmware, driver, NCCL version and settings, cabling, switch configuration, other traffic); `fabricplan compare BASELINE RUN` lists every change";
