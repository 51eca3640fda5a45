//! Diagnosis: from every failing gate to the broken parts, one finding each.
//!
//! A gate is evidence; a part is what a person fixes. Every verdict says which parts its
//! evidence implicates (see [`crate::gate::part`]); the diagnosis chooses the fewest parts that
//! explain every FAIL and WARN ([`cover`]), and each becomes one [`Finding`]: the part as a
//! person reads it, the trap, what was seen, the gates that follow from it, the jobs not run
//! because of it, and the fix: a command for that part on that host where one exists ([`fix`]).
//! Every other failing verdict is marked as following from its finding's part, so it is shown
//! but never counted again.
//!
//! The same step for every launcher, test kind and schedule: it reads results, nothing else.
//! Pure and synchronous; idempotent (a second diagnosis of the same results changes nothing).

pub mod congestion;
pub mod cover;
pub mod fix;
pub mod label;
mod merge;

use std::collections::BTreeSet;

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::plan::Plan;
use crate::results::{Finding, JobStatus, RunResults};

/// Verdicts marked as following this are not evidence of a broken part: the run was interrupted
/// before they could be judged.
pub const INTERRUPT: &str = "interrupt";

/// Where a verdict sits in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Preflight(usize),
    Job(usize, usize),
    Suspect(usize),
}

fn get(r: &RunResults, at: At) -> &Verdict {
    match at {
        At::Preflight(i) => &r.preflight[i],
        At::Job(j, v) => &r.jobs[j].verdicts[v],
        At::Suspect(s) => &r.suspects[s].verdict,
    }
}

fn get_mut(r: &mut RunResults, at: At) -> &mut Verdict {
    match at {
        At::Preflight(i) => &mut r.preflight[i],
        At::Job(j, v) => &mut r.jobs[j].verdicts[v],
        At::Suspect(s) => &mut r.suspects[s].verdict,
    }
}

/// Every verdict's place, in the order [`RunResults::verdicts`] gives them.
fn places(r: &RunResults) -> Vec<At> {
    let pre = (0..r.preflight.len()).map(At::Preflight);
    let jobs = r
        .jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| (0..job.verdicts.len()).map(move |v| At::Job(j, v)));
    let sus = (0..r.suspects.len()).map(At::Suspect);
    pre.chain(jobs).chain(sus).collect()
}

/// A failing verdict's parts: what it implicates, or for a job's verdict that names none, the
/// job's nodes (a verdict always points somewhere).
fn parts_of(r: &RunResults, at: At) -> Vec<Part> {
    let v = get(r, at);
    if !v.implicates.is_empty() {
        return v.implicates.clone();
    }
    match at {
        At::Job(j, _) => r.jobs[j].hosts.iter().map(|h| Part::node(h)).collect(),
        _ => Vec::new(),
    }
}

fn failing(v: &Verdict) -> bool {
    v.outcome != Outcome::Ok && v.follows.as_deref() != Some(INTERRUPT)
}

/// Diagnose `r`: fill `r.findings`, mark every failing verdict that is not a finding's first
/// evidence as following its finding's part, and count the summary again.
pub fn diagnose(plan: &Plan, r: &mut RunResults) {
    congestion::judge(plan, r);
    let all = places(r);
    // a fresh start: what an earlier diagnosis (or the rounds' running count) marked is redone
    for at in &all {
        let v = get_mut(r, *at);
        if v.follows.as_deref() != Some(INTERRUPT) {
            v.follows = None;
        }
    }
    let bad: Vec<At> = all
        .iter()
        .copied()
        .filter(|a| failing(get(r, *a)))
        .collect();
    let lists: Vec<Vec<Part>> = bad.iter().map(|a| parts_of(r, *a)).collect();
    let cleared: BTreeSet<Part> = all
        .iter()
        .map(|a| get(r, *a))
        .filter(|v| v.outcome == Outcome::Ok)
        .flat_map(|v| v.clears.iter().cloned())
        .collect();
    let evidence: Vec<cover::Evidence<'_>> =
        lists.iter().map(|l| cover::Evidence { parts: l }).collect();
    let mut chosen = cover::cover(&evidence, &cleared);
    // a verdict that names no part is a finding of its own, named by its gate
    for (i, l) in lists.iter().enumerate() {
        if l.is_empty() {
            chosen.push(cover::Chosen {
                part: Part::Plan {
                    what: get(r, bad[i]).gate.clone(),
                },
                explains: vec![i],
            });
        }
    }
    let chosen = merge::merge(plan, chosen, &lists, &cleared, |i| get(r, bad[i]));
    let found = label::Found::of(r);
    let mut findings: Vec<(Finding, Vec<At>, At)> = chosen
        .iter()
        .map(|c| {
            let ats: Vec<At> = c.explains.iter().map(|i| bad[*i]).collect();
            let head = head_of(&ats, &lists, &bad, &c.part, |a| get(r, a).outcome);
            (finding(plan, &found, r, c, &ats, head), ats, head)
        })
        .collect();
    findings.sort_by(|a, b| {
        b.0.outcome
            .cmp(&a.0.outcome)
            .then(b.1.len().cmp(&a.1.len()))
    });
    for (f, ats, head) in &findings {
        let name = f.part.name();
        for at in ats.iter().filter(|a| *a != head) {
            get_mut(r, *at).follows = Some(name.clone());
        }
    }
    r.findings = findings.into_iter().map(|(f, _, _)| f).collect();
    skipped_jobs(r);
    r.coverage = Some(crate::results::coverage::of(plan, r));
    r.summarize();
}

/// The verdict a finding is first evidence of: of its worst verdicts (a FAIL heads a finding
/// its WARNs also explain, so the finding is named for what failed), the first that names its
/// part alone (a half slow against its own loopback), else the first that names it first,
/// else the first.
fn head_of(
    ats: &[At],
    lists: &[Vec<Part>],
    bad: &[At],
    part: &Part,
    outcome: impl Fn(At) -> Outcome,
) -> At {
    let list = |at: &At| bad.iter().position(|b| b == at).map(|i| &lists[i]);
    let is = |p: &Part| p == part || p.within(part);
    let worst = ats.iter().map(|a| outcome(*a)).max();
    let worst: Vec<At> = ats
        .iter()
        .copied()
        .filter(|a| Some(outcome(*a)) == worst)
        .collect();
    let alone = worst
        .iter()
        .copied()
        .find(|at| list(at).is_some_and(|l| !l.is_empty() && l.iter().all(is)));
    let first = || {
        worst
            .iter()
            .copied()
            .find(|at| list(at).and_then(|l| l.first()).is_some_and(is))
    };
    alone
        .or_else(first)
        .or_else(|| worst.first().copied())
        .unwrap_or(ats[0])
}

/// One finding from a chosen part and the verdicts it explains.
fn finding(
    plan: &Plan,
    found: &label::Found<'_>,
    r: &RunResults,
    c: &merge::Merged,
    ats: &[At],
    head: At,
) -> Finding {
    let h = get(r, head);
    let outcome = ats
        .iter()
        .map(|a| get(r, *a).outcome)
        .max()
        .unwrap_or(Outcome::Warn);
    let mut fix = fix::fix(plan, found, &c.part, h.trap, h);
    if !c.among.is_empty() {
        // the evidence does not tell which of them: the fix is for every one, never a command
        // on the first
        let nodes: Vec<&str> = std::iter::once(&c.part)
            .chain(&c.among)
            .filter_map(Part::node_name)
            .collect();
        fix.command = None;
        fix.host = (!nodes.is_empty()).then(|| crate::text::hostlist::spoken(&nodes));
    }
    let evidence = vec![h.gate.clone()];
    let follows: Vec<String> = ats
        .iter()
        .filter(|a| **a != head)
        .map(|a| get(r, *a).gate.clone())
        .collect();
    Finding {
        part: c.part.clone(),
        among: c.among.clone(),
        name: c.name.clone().unwrap_or_else(|| c.part.name()),
        label: c
            .label
            .clone()
            .unwrap_or_else(|| label::label(plan, found, &c.part)),
        outcome,
        trap: h.trap,
        trap_name: h
            .trap_name
            .clone()
            .unwrap_or_else(|| "at fault".to_string()),
        seen: seen(h),
        evidence,
        follows,
        skipped: Vec::new(),
        host: fix.host,
        fix_command: fix.command,
        fix: fix.text,
    }
}

/// What was seen, with the number: `12.66 Gb/s: ...`.
fn seen(v: &Verdict) -> String {
    match v.measured {
        Some(m) if !v.detail.contains(&format!("{m:.2}")) => {
            format!("{m:.2} {} ({}): {}", v.unit, v.threshold, v.detail)
        }
        _ => v.detail.clone(),
    }
}

/// The jobs not run because of a finding: their reason names one of its gates.
fn skipped_jobs(r: &mut RunResults) {
    for f in &mut r.findings {
        let gates: Vec<String> = f
            .evidence
            .iter()
            .chain(f.follows.iter())
            .map(|g| format!("`{g}`"))
            .collect();
        f.skipped = r
            .jobs
            .iter()
            .filter(|j| j.status == JobStatus::Skipped)
            .filter(|j| {
                j.reason
                    .as_deref()
                    .is_some_and(|why| gates.iter().any(|g| why.contains(g.as_str())))
            })
            .map(|j| j.job.clone())
            .collect();
    }
}
