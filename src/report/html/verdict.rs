//! The top of the page: the verdict and its counts, then what to fix (FAIL and WARN verdicts
//! grouped by trap, worst first, with the fix; jobs that measured nothing).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::format::{class, esc, fmt_val, utc};
use crate::compare::baseline as base;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::{JobResult, JobStatus, RunResults};

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

fn run_class(r: &RunResults) -> &'static str {
    if r.summary.fail > 0 || r.summary.exit_code != 0 {
        "fail"
    } else if r.summary.warn > 0 {
        "warn"
    } else {
        "ok"
    }
}

pub(super) fn header(h: &mut String, r: &RunResults) {
    let dur = r.finished_unix_ms.saturating_sub(r.started_unix_ms) as f64 / 1000.0;
    let s = &r.summary;
    let _ = write!(
        h,
        "<header class=\"top\"><div class=\"id\"><h1>fabricplan &#183; {}</h1>\
         <div class=\"meta\">run {} &#183; {} &#183; over {} &#183; {:.1} s</div></div>\
         <div id=\"verdict\" class=\"{}\">{}</div>\
         <div class=\"counts\"><b class=\"ok\">{} OK</b> &#183; <b class=\"warn\">{} WARN</b> &#183; <b class=\"fail\">{} FAIL</b><br>{} job(s), {} not measured</div>",
        esc(&r.plan),
        esc(&r.run_id),
        utc(r.started_unix_ms),
        esc(&r.transport),
        dur,
        run_class(r),
        esc(&verdict_line(r)),
        s.ok,
        s.warn,
        s.fail,
        s.jobs,
        s.jobs_not_measured,
    );
    h.push_str("</header>\n");
    if r.simulated {
        h.push_str("<div class=\"sim\">SIMULATED FABRIC: a model of the plan, not a measurement of hardware</div>\n");
    }
}

/// FAIL and WARN verdicts grouped by trap, worst first; skipped jobs with their reason.
pub(super) fn fix_list(h: &mut String, r: &RunResults) {
    h.push_str("<section id=\"fix\"><h2>What to fix</h2>\n");
    let groups = trap_groups(r);
    let skipped: Vec<&JobResult> = r
        .jobs
        .iter()
        .filter(|j| j.status != JobStatus::Measured && j.verdicts.is_empty())
        .collect();
    if groups.is_empty() && skipped.is_empty() {
        h.push_str("<div class=\"good\">Nothing to fix: every gate passed.</div>\n");
    }
    // a big run lists the first of each group's gates and counts the rest
    let cap = if super::big(r) {
        MAX_FIX_ITEMS
    } else {
        usize::MAX
    };
    for g in &groups {
        fix_group(h, g, cap);
    }
    if !skipped.is_empty() {
        skipped_jobs(h, &skipped);
    }
    h.push_str("</section>\n");
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

/// One trap's group: its badge and name, the fix once when its verdicts share one, then
/// every verdict (with its own fix when they differ).
fn fix_group(h: &mut String, g: &Group<'_>, cap: usize) {
    let fixes: BTreeSet<&str> = if g.trap == base::TRAP_NAME {
        // each baseline fix repeats its own numbers: one fix for the group, numbers per item
        BTreeSet::from([BASELINE_FIX])
    } else {
        g.items.iter().filter_map(|v| v.fix.as_deref()).collect()
    };
    let _ = write!(
        h,
        "<div class=\"fix-group {}\"><div><span class=\"badge {}\">{}</span> <span class=\"trap\">{}</span> <span class=\"note\">{} gate(s)</span></div>",
        class(g.worst),
        class(g.worst),
        g.worst.as_str(),
        esc(&g.trap),
        g.items.len()
    );
    let one_fix = fixes.len() == 1;
    if let (true, Some(f)) = (one_fix, fixes.iter().next()) {
        let _ = write!(h, "<div class=\"fixtext\"><b>Fix:</b> {}</div>", esc(f));
    }
    h.push_str("<ul>");
    for v in g.items.iter().take(cap) {
        let measured = v
            .measured
            .map(|m| format!(" &#8212; {} {}", fmt_val(m), esc(&v.unit)))
            .unwrap_or_default();
        let threshold = if v.threshold.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"note\">(gate {})</span>", esc(&v.threshold))
        };
        let detail = if v.detail.is_empty() {
            String::new()
        } else {
            format!("<br><span class=\"note\">{}</span>", esc(&v.detail))
        };
        let fix = match (&v.fix, one_fix) {
            (Some(f), false) => format!("<br><b>Fix:</b> {}", esc(f)),
            _ => String::new(),
        };
        let _ = write!(
            h,
            "<li><span class=\"badge {}\">{}</span> <b>{}</b>{measured}{threshold}{detail}{fix}</li>",
            class(v.outcome),
            v.outcome.as_str(),
            esc(&v.gate)
        );
    }
    if g.items.len() > cap {
        let _ = write!(
            h,
            "<li class=\"note\">and {} more (every gate below, and in results.json)</li>",
            g.items.len() - cap
        );
    }
    if !g.following.is_empty() {
        let n = g.following.len();
        // other tests' gates first (a collective held down by the cause), then the rest in
        // order; which cause each follows is said only when the group has several
        let kind = |gate: &str| gate.split(' ').next().unwrap_or("").to_string();
        let kinds: BTreeSet<String> = g.items.iter().map(|c| kind(&c.gate)).collect();
        let mut following = g.following.clone();
        following.sort_by_key(|v| kinds.contains(&kind(&v.gate)));
        let mut names: Vec<String> = following
            .iter()
            .take(FOLLOWERS_NAMED)
            .map(|v| match g.items.len() {
                1 => esc(&v.gate),
                _ => format!(
                    "{} (follows <i>{}</i>)",
                    esc(&v.gate),
                    esc(v.follows.as_deref().unwrap_or(""))
                ),
            })
            .collect();
        if n > FOLLOWERS_NAMED {
            names.push(format!("and {} more", n - FOLLOWERS_NAMED));
        }
        let _ = write!(
            h,
            "<li class=\"note following\">and {n} more gate{} that follow from {} (the same cause \
             seen again, not counted): {}</li>",
            if n == 1 { "" } else { "s" },
            if g.items.len() == 1 { "it" } else { "these" },
            names.join("; ")
        );
    }
    h.push_str("</ul></div>\n");
}

/// The gates a big run's what-to-fix group lists (the rest are counted).
const MAX_FIX_ITEMS: usize = 50;

/// The gates that follow from a group's causes named in it (the rest are counted).
const FOLLOWERS_NAMED: usize = 5;

/// The jobs that measured nothing and judged nothing, with their reason.
fn skipped_jobs(h: &mut String, skipped: &[&JobResult]) {
    let _ = write!(
        h,
        "<div class=\"fix-group fail\"><div><span class=\"badge fail\">SKIP</span> <span class=\"trap\">not measured</span> <span class=\"note\">{} job(s)</span></div><ul>",
        skipped.len()
    );
    for j in skipped {
        let _ = write!(
            h,
            "<li><b>{} {}</b><br><span class=\"note\">{}</span></li>",
            esc(&j.kind),
            esc(&j.label),
            esc(j.reason.as_deref().unwrap_or("no reason recorded"))
        );
    }
    h.push_str("</ul></div>\n");
}

/// The fix of the baseline group in the report (each verdict's own fix repeats its numbers).
const BASELINE_FIX: &str = "find what changed since the baseline run (firmware, driver, NCCL version and settings, cabling, switch configuration, other traffic); `fabricplan compare BASELINE RUN` lists every change";
