//! The compact answer (the default): one line per node for discovery on a small fabric (one
//! line for all of them on a big one), one line for preflight and one per test with its worst
//! value, then every gate that is not OK, each once: a finding's first evidence marked with its
//! number, the gates that follow from it counted after a few.

use std::collections::BTreeMap;
use std::io;

use super::Page;
use crate::discover::HalfResolution;
use crate::discover::resolve::HalfIssue;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::{JobResult, RunResults, Tally};
use crate::text::inert;
use crate::text::width::pad;

/// Up to this many nodes, discovery gets a line each.
const NODE_LINES_UP_TO: usize = 16;
/// Gates that follow from one finding shown before the rest are counted.
const FOLLOWERS_SHOWN: usize = 3;

/// The answer below the findings.
pub(super) fn answer(p: &mut Page, r: &RunResults) -> io::Result<()> {
    let tests = per_test(r);
    let w = tests
        .iter()
        .map(|(k, _)| k.len())
        .chain(["discovery".len(), "preflight".len()])
        .max()
        .unwrap_or(9)
        + 2;
    p.line("")?;
    discovery(p, r, w)?;
    preflight(p, r, w)?;
    for (kind, jobs) in &tests {
        test_line(p, kind, jobs, w)?;
    }
    p.wrapped(&pad("gates", w), &Tally::of_run(r).words(", "), w)?;
    not_ok(p, r)
}

fn discovery(p: &mut Page, r: &RunResults, w: usize) -> io::Result<()> {
    let lead = pad("discovery", w);
    if r.discovery.is_empty() {
        return p.line(&format!("{lead}nothing discovered"));
    }
    if r.discovery.len() > NODE_LINES_UP_TO {
        let reached = r.discovery.iter().filter(|d| d.reachable).count();
        let halves: usize = r.discovery.iter().map(|d| d.halves.len()).sum();
        let live = r
            .discovery
            .iter()
            .flat_map(|d| &d.halves)
            .filter(|h| h.problems.is_empty() && h.device.is_some())
            .count();
        let text = format!(
            "{reached} of {} nodes reached, {live} of {halves} planned halves live (device, netdev, RoCE v2 GID)",
            r.discovery.len()
        );
        return p.wrapped(&lead, &text, w);
    }
    let name_w = r.discovery.iter().map(|d| d.node.len()).max().unwrap_or(0) + 2;
    for (i, d) in r.discovery.iter().enumerate() {
        let lead = if i == 0 { lead.clone() } else { " ".repeat(w) };
        let room = p.width.saturating_sub(w + name_w);
        let text = format!("{}{}", pad(&d.node, name_w), node_line(d, room));
        p.line(format!("{lead}{}", inert(&text)).trim_end())?;
    }
    Ok(())
}

/// One node's discovery in at most `room` columns, never wrapped: `4/4 halves live, GID 3,
/// MTU 9000`, then each half that differs from the rest (`f1.b MTU 1500`, `f0.b no device`)
/// while they fit, and how many more did not (every half is in --verbose and the report).
fn node_line(d: &crate::results::NodeDiscovery, room: usize) -> String {
    if !d.reachable {
        return "UNREACHABLE".into();
    }
    let live = |h: &&HalfResolution| h.device.is_some() && h.problems.is_empty();
    let common = |f: &dyn Fn(&HalfResolution) -> Option<u32>| {
        let mut n: BTreeMap<u32, usize> = BTreeMap::new();
        for v in d.halves.iter().filter(live).filter_map(f) {
            *n.entry(v).or_default() += 1;
        }
        n.into_iter()
            .max_by_key(|(v, c)| (*c, std::cmp::Reverse(*v)))
            .map(|(v, _)| v)
    };
    let (gid, mtu) = (common(&|h| h.gid_index), common(&|h| h.mtu));
    let n_live = d.halves.iter().filter(live).count();
    let mut head = format!("{n_live}/{} halves live", d.halves.len());
    if let Some(g) = gid {
        head.push_str(&format!(", GID {g}"));
    }
    if let Some(m) = mtu {
        head.push_str(&format!(", MTU {m}"));
    }
    let odd: Vec<String> = d
        .halves
        .iter()
        .filter_map(|h| odd_half(h, &d.node, gid, mtu))
        .collect();
    let mut line = head;
    for (k, o) in odd.iter().enumerate() {
        let left = odd.len() - k - 1;
        let more = if left > 0 {
            format!("; and {left} more")
        } else {
            String::new()
        };
        if line.len() + 2 + o.len() + more.len() > room {
            let n = odd.len() - k;
            line.push_str(&match k {
                0 if n == 1 => "; 1 half differs (--verbose)".to_string(),
                0 => format!("; {n} halves differ (--verbose)"),
                _ => format!("; and {n} more"),
            });
            return line;
        }
        line.push_str(&format!("; {o}"));
    }
    line
}

/// A half as it differs from its node's others: `f1.b MTU 1500`, `f0.b no device`, `f0.a
/// device down` (`None` when it is like them).
fn odd_half(h: &HalfResolution, node: &str, gid: Option<u32>, mtu: Option<u32>) -> Option<String> {
    let name = h
        .name
        .strip_prefix(&format!("{node}."))
        .unwrap_or(&h.name)
        .to_string();
    let mut what: Vec<String> = Vec::new();
    if h.device.is_none() {
        what.push("no device".into());
    } else if let Some(i) = h.issue {
        what.push(issue_words(i).into());
    } else if !h.problems.is_empty() {
        what.push("not live".into());
    }
    if h.device.is_some() {
        if h.gid_index.is_none() && h.issue.is_none() {
            what.push("no GID".into());
        } else if h.gid_index.is_some() && h.gid_index != gid {
            what.push(format!("GID {}", h.gid_index.unwrap_or_default()));
        }
        if h.mtu.is_some() && h.mtu != mtu {
            what.push(format!("MTU {}", h.mtu.unwrap_or_default()));
        }
    }
    (!what.is_empty()).then(|| format!("{name} {}", what.join(", ")))
}

fn issue_words(i: HalfIssue) -> &'static str {
    match i {
        HalfIssue::PinnedNetdevElsewhere => "pinned netdev elsewhere",
        HalfIssue::PinnedDeviceNotLive => "pinned device not live",
        HalfIssue::DeviceMissing => "no device",
        HalfIssue::DeviceDown => "port down",
        HalfIssue::AddressMissing => "no address",
        HalfIssue::GidPinWrong => "GID pin wrong",
        HalfIssue::NoGid => "no RoCE v2 GID",
    }
}

fn preflight(p: &mut Page, r: &RunResults, w: usize) -> io::Result<()> {
    if r.preflight.is_empty() {
        return Ok(());
    }
    let t = Tally::of_verdicts(&r.preflight);
    let head = p.paint(&format!("{}/{} OK", t.ok, t.total()), Some(t.worst()));
    p.wrapped(
        &pad("preflight", w),
        &format!(
            "{head}{}   devices, MTU, cabling, routes, pings, launch",
            t.not_ok_words()
        ),
        w,
    )
}

/// The jobs of each test kind, in the order the kinds ran.
fn per_test(r: &RunResults) -> Vec<(String, Vec<&JobResult>)> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, Vec<&JobResult>> = BTreeMap::new();
    for j in &r.jobs {
        if !by.contains_key(&j.kind) {
            order.push(j.kind.clone());
        }
        by.entry(j.kind.clone()).or_default().push(j);
    }
    order
        .into_iter()
        .map(|k| {
            let jobs = by.remove(&k).unwrap_or_default();
            (k, jobs)
        })
        .collect()
}

/// `rdma-bw  48/48 OK   min 110.70 Gb/s (99% of expected)`: its gates counted as every output
/// counts them ([`Tally`]).
fn test_line(p: &mut Page, kind: &str, jobs: &[&JobResult], w: usize) -> io::Result<()> {
    let t = Tally::of_jobs(jobs.iter().copied());
    let mut text = p.paint(&format!("{}/{} OK", t.ok, t.total()), Some(t.worst()));
    text.push_str(&t.not_ok_words());
    if let Some(x) = extreme(jobs) {
        text.push_str("   ");
        text.push_str(&x);
    }
    p.wrapped(&pad(&inert(kind), w), &text, w)
}

/// The worst main value of the jobs: the lowest where higher is better, else the highest, and
/// how it compares with what was expected of it.
fn extreme(jobs: &[&JobResult]) -> Option<String> {
    let mains: Vec<&Verdict> = jobs
        .iter()
        .filter_map(|j| {
            j.verdicts
                .iter()
                .find(|v| v.metric.is_some() && v.measured.is_some())
        })
        .collect();
    // the unit says which way is better (a bandwidth up, a time down)
    let higher = crate::gate::threshold::Unit::parse(&mains.first()?.unit)?.higher_is_better();
    let worst = mains.iter().copied().reduce(|a, b| {
        let (x, y) = (a.measured.unwrap_or(0.0), b.measured.unwrap_or(0.0));
        if (higher && y < x) || (!higher && y > x) {
            b
        } else {
            a
        }
    })?;
    let m = worst.measured?;
    let pct = worst
        .expected
        .filter(|e| *e > 0.0)
        .map(|e| format!(" ({:.0}% of {e:.1} expected)", m / e * 100.0))
        .unwrap_or_default();
    Some(format!(
        "{} {m:.2} {}{pct}",
        if higher { "min" } else { "max" },
        worst.unit
    ))
}

/// A job's gate as the terminal names it: with its round (`R3 rdma-bw a -> b`), unless the
/// gate already names its declared round (`rdma-bw R2a a -> b`).
fn label(j: Option<&JobResult>, v: &Verdict) -> String {
    match j {
        Some(j)
            if !v.gate.contains(&format!(" {} ", j.round_name))
                && !v.gate.starts_with(&format!("{} ", j.round_name)) =>
        {
            format!("R{} {}", j.round + 1, v.gate)
        }
        _ => v.gate.clone(),
    }
}

/// Every gate that is not OK, by finding: its first evidence with its number, then the gates
/// that follow from it (a few, then counted); then any other, as it is.
fn not_ok(p: &mut Page, r: &RunResults) -> io::Result<()> {
    let pre = r.preflight.iter().map(|v| (None, v));
    let jobs = r
        .jobs
        .iter()
        .flat_map(|j| j.verdicts.iter().map(move |v| (Some(j), v)));
    let sus = r.suspects.iter().map(|s| (None, &s.verdict));
    let bad: Vec<(Option<&JobResult>, &Verdict)> = pre
        .chain(jobs)
        .chain(sus)
        .filter(|(_, v)| v.outcome != Outcome::Ok)
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    p.line("")?;
    p.line("not OK:")?;
    let mut told = vec![false; bad.len()];
    for (i, f) in r.findings.iter().enumerate() {
        let n = i + 1;
        let head = bad
            .iter()
            .position(|(_, v)| v.follows.is_none() && f.evidence.first() == Some(&v.gate));
        if let Some(h) = head {
            told[h] = true;
            gate_line(p, &label(bad[h].0, bad[h].1), bad[h].1, Some(n))?;
        }
        let part = f.part.name();
        let followers: Vec<usize> = (0..bad.len())
            .filter(|k| !told[*k] && bad[*k].1.follows.as_deref() == Some(part.as_str()))
            .collect();
        for k in &followers {
            told[*k] = true;
        }
        for &k in followers.iter().take(FOLLOWERS_SHOWN) {
            gate_line(p, &label(bad[k].0, bad[k].1), bad[k].1, Some(n))?;
        }
        if followers.len() > FOLLOWERS_SHOWN {
            let more = followers.len() - FOLLOWERS_SHOWN;
            p.wrapped(
                "         ",
                &format!(
                    "and {more} more gate{} that follow{} from finding {n} (--verbose lists them)",
                    if more == 1 { "" } else { "s" },
                    if more == 1 { "s" } else { "" }
                ),
                9,
            )?;
        }
    }
    for (k, (j, v)) in bad.iter().enumerate() {
        if !told[k] {
            gate_line(p, &label(*j, v), v, None)?;
        }
    }
    Ok(())
}

/// `  FAIL   mtu spark-b.f0.b: enP2p1s0f0np0 mtu 1500 [1]`, or `(FAIL)` and `(follows 1)` for a
/// gate that follows from a finding.
fn gate_line(p: &mut Page, label: &str, v: &Verdict, n: Option<usize>) -> io::Result<()> {
    let following = v.follows.is_some();
    let word = if following {
        format!("({})", v.outcome.as_str())
    } else {
        v.outcome.as_str().to_string()
    };
    let seen = match v.measured {
        Some(m) => format!("{m:.2} {}", v.unit),
        None => v.detail.clone(),
    };
    let tag = match (n, following) {
        (Some(n), false) => format!(" [{n}]"),
        (Some(n), true) => format!(" (follows {n})"),
        (None, _) => String::new(),
    };
    let lead = format!("  {} ", p.paint(&pad(&word, 6), Some(v.outcome)));
    p.wrapped(&lead, &inert(&format!("{label}: {seen}{tag}")), 9)
}
