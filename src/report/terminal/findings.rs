//! What to fix: one finding per broken part, first in full (the part, the trap, what was seen,
//! the fix on its host, what follows from it), and again as the last lines, one each, so the
//! answer is both the first and the last thing on the screen.

use std::io;

use super::Page;
use crate::results::{Finding, RunResults};
use crate::text::inert;

/// Gates named after `follows from it:` before the rest are counted.
const FOLLOWERS_SHOWN: usize = 2;

/// `a; b and 3 more`.
fn some(names: &[String], shown: usize) -> String {
    let mut v: Vec<String> = names
        .iter()
        .take(shown)
        .map(|n| inert(n).into_owned())
        .collect();
    if names.len() > shown {
        v.push(format!("and {} more", names.len() - shown));
    }
    v.join("; ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The block at the top: every finding in full.
pub(super) fn block(p: &mut Page, r: &RunResults) -> io::Result<()> {
    if r.findings.is_empty() {
        return Ok(());
    }
    p.line("")?;
    p.line(&format!("what to fix ({}):", r.findings.len()))?;
    for (i, f) in r.findings.iter().enumerate() {
        finding(p, i + 1, f)?;
    }
    Ok(())
}

fn finding(p: &mut Page, n: usize, f: &Finding) -> io::Result<()> {
    let head = format!(
        "{n}. {} {}: {}",
        f.outcome.as_str(),
        inert(&f.label),
        inert(&f.trap_name)
    );
    let first = Page::cell(&head, p.width.saturating_sub(2));
    for (i, l) in first.iter().enumerate() {
        let l = if i == 0 {
            p.paint(l, Some(f.outcome))
        } else {
            format!("   {l}")
        };
        p.line(&format!("  {l}"))?;
    }
    let evidence = f
        .evidence
        .first()
        .map(|g| format!(" ({g})"))
        .unwrap_or_default();
    p.wrapped("     seen: ", &inert(&format!("{}{evidence}", f.seen)), 11)?;
    match &f.fix_command {
        Some(cmd) => {
            // a command is one line, never wrapped: it copies and pastes whole
            p.line(&format!("     fix:  {}", inert(cmd)))?;
            p.wrapped("           ", &inert(&f.fix), 11)?;
        }
        None => {
            let on = f
                .host
                .as_deref()
                .map(|h| format!("on {h}: "))
                .unwrap_or_default();
            p.wrapped("     fix:  ", &inert(&format!("{on}{}", f.fix)), 11)?;
        }
    }
    let mut follows = Vec::new();
    if !f.follows.is_empty() {
        follows.push(format!(
            "{} ({})",
            plural(f.follows.len(), "gate", "gates"),
            some(&f.follows, FOLLOWERS_SHOWN)
        ));
    }
    if !f.skipped.is_empty() {
        follows.push(plural(f.skipped.len(), "job not run", "jobs not run"));
    }
    if !follows.is_empty() {
        p.wrapped("     follows from it: ", &follows.join("; "), 11)?;
    }
    Ok(())
}

/// The last lines before the verdict: each finding on one line, with its command.
pub(super) fn last_lines(p: &mut Page, r: &RunResults) -> io::Result<()> {
    if r.findings.is_empty() {
        return Ok(());
    }
    p.line("")?;
    p.line("what to fix:")?;
    for (i, f) in r.findings.iter().enumerate() {
        let head = format!("{} {}: {}:", f.outcome.as_str(), f.name, f.trap_name);
        let lead = format!("  {}. ", i + 1);
        match &f.fix_command {
            // the command on one line of its own when the line cannot hold it whole
            Some(c) if lead.len() + head.len() + 1 + c.len() > p.width => {
                p.wrapped(&lead, &inert(&head), 5)?;
                p.line(&format!("     {}", inert(c)))?;
            }
            Some(c) => p.line(&format!("{lead}{} {}", inert(&head), inert(c)))?,
            None => {
                let what = match &f.host {
                    Some(h) => format!("on {h}: {}", f.fix),
                    None => f.fix.clone(),
                };
                p.wrapped(&lead, &inert(&format!("{head} {what}")), 5)?;
            }
        }
    }
    Ok(())
}
