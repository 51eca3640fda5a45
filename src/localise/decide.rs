//! From every flow of a sampled test and its re-tests to the parts at fault: a part is named
//! when some failing flow has it as the only part no passing flow vouched for. A passing flow
//! vouches for a part up to what it carried: clear of a failing flow only when it carried well
//! more than that flow measured (see [`VOUCH_MARGIN`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::evidence::{Element, Observed, Seen, elements};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::MetricSpec;
use crate::gate::trap::Trap;
use crate::plan::{Endpoint, IslId, Plan};
use crate::results::{Suspect, SuspectKind};
use crate::schedule::KindId;

/// What localisation decided.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// The parts named at fault, the one with the most flows proving it first.
    pub suspects: Vec<Suspect>,
    /// For each suspect, the failing (and warning) flows (job ids) it explains: their FAILs
    /// and WARNs follow it.
    pub explains: Vec<Vec<String>>,
}

/// What a suspect is named by: a node half, or an ISL (both its directions together).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    End(Endpoint),
    Isl(IslId),
}

fn part(e: &Element) -> Part {
    match e {
        Element::End { endpoint, .. } => Part::End(endpoint.clone()),
        Element::Isl { isl, .. } => Part::Isl(*isl),
    }
}

/// The middle value (the lower of the two middle ones).
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// The trap most of `traps` name (the first among equals).
fn most_common(traps: impl Iterator<Item = Trap>) -> Option<Trap> {
    let mut counts: Vec<(Trap, usize)> = Vec::new();
    for t in traps {
        match counts.iter_mut().find(|(x, _)| *x == t) {
            Some((_, n)) => *n += 1,
            None => counts.push((t, 1)),
        }
    }
    let most = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == most).map(|(t, _)| t)
}

/// `a, b, c and 4 more`.
fn some(ids: &[String], shown: usize) -> String {
    let mut s = ids
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > shown {
        s.push_str(&format!(" and {} more", ids.len() - shown));
    }
    s
}

/// How much more than a failing flow measured a part must have carried in a passing flow to
/// be cleared of it: a part that carried no more than the failing flow got (a throttled half
/// passes a flow whose share of a crowded ISL is below its throttle) may be what held it down.
const VOUCH_MARGIN: f64 = 1.25;

/// Whether a part whose passing flows carried at most `carried` is cleared of a flow that
/// measured `measured` (a flow without a measurement clears on any pass).
fn vouches(carried: Option<f64>, measured: Option<f64>) -> bool {
    match (carried, measured) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(c), Some(m)) => c >= VOUCH_MARGIN * m,
    }
}

/// The parts at fault among `observed` (a sampled test's flows and their re-tests, `retests`
/// naming the latter), for kind `kind` judged on `metric`.
pub fn decide(
    plan: &Plan,
    kind: KindId,
    metric: &MetricSpec,
    observed: &[Observed],
    retests: &HashSet<String>,
) -> Decision {
    // each part a passing flow used, with the most a passing flow through it carried
    let mut cleared: HashMap<Element, f64> = HashMap::new();
    for o in observed.iter().filter(|o| o.seen == Seen::Passed) {
        if let Some(p) = &o.job.pair {
            let carried = o.measured.unwrap_or(f64::INFINITY);
            for e in elements(plan, p) {
                let best = cleared.entry(e).or_insert(carried);
                *best = best.max(carried);
            }
        }
    }
    // each failing or warning flow with the parts no passing flow vouched for
    let open = |o: &Observed| -> BTreeSet<Element> {
        o.job
            .pair
            .as_ref()
            .map(|p| elements(plan, p))
            .unwrap_or_default()
            .into_iter()
            .filter(|e| !vouches(cleared.get(e).copied(), o.measured))
            .collect()
    };
    let failing: Vec<(&Observed, BTreeSet<Element>)> = observed
        .iter()
        .filter(|o| o.seen == Seen::Failed)
        .map(|o| (o, open(o)))
        .collect();
    let warning: Vec<(&Observed, BTreeSet<Element>)> = observed
        .iter()
        .filter(|o| o.seen == Seen::Warned)
        .map(|o| (o, open(o)))
        .collect();
    // a part is blamed when a failing flow leaves it alone unexplained
    let mut blamed: BTreeMap<Part, BTreeSet<Element>> = BTreeMap::new();
    for (_, open) in &failing {
        if let [only] = open.iter().collect::<Vec<_>>()[..] {
            blamed.entry(part(only)).or_default().insert(only.clone());
        }
    }
    // the flows proving each: failing, with nothing unexplained but this part
    let mut found: Vec<(Part, BTreeSet<Element>, Vec<&Observed>)> = blamed
        .into_iter()
        .map(|(p, els)| {
            let proving: Vec<&Observed> = failing
                .iter()
                .filter(|(_, open)| !open.is_empty() && open.iter().all(|e| part(e) == p))
                .map(|(o, _)| *o)
                .collect();
            (p, els, proving)
        })
        .collect();
    found.sort_by(|a, b| b.2.len().cmp(&a.2.len()).then(a.0.cmp(&b.0)));
    let mut explains: Vec<Vec<String>> = vec![Vec::new(); found.len()];
    for (o, open) in failing.iter().chain(&warning) {
        if let Some(i) = found
            .iter()
            .position(|(_, els, _)| open.iter().any(|e| els.contains(e)))
        {
            explains[i].push(o.job.id.clone());
        }
    }
    let suspects = found
        .iter()
        .map(|(p, els, proving)| suspect(plan, kind, metric, p, els, proving, retests))
        .collect();
    Decision { suspects, explains }
}

/// The suspect of part `p`, failing as `els`, proven by `proving`.
fn suspect(
    plan: &Plan,
    kind: KindId,
    metric: &MetricSpec,
    p: &Part,
    els: &BTreeSet<Element>,
    proving: &[&Observed],
    retests: &HashSet<String>,
) -> Suspect {
    let flows: Vec<String> = proving.iter().map(|o| o.job.id.clone()).collect();
    let re: Vec<String> = flows
        .iter()
        .filter(|f| retests.contains(*f))
        .cloned()
        .collect();
    let ways = ways(plan, els);
    let measured = median(proving.iter().filter_map(|o| o.measured).collect());
    let expected = median(proving.iter().filter_map(|o| o.expected).collect());
    let trap = most_common(proving.iter().filter_map(|o| o.trap));
    let unit = metric.unit.symbol();
    let seen = match (measured, expected) {
        (Some(m), Some(e)) => format!("; typically {m:.2} {unit} of {e:.1} expected"),
        (Some(m), None) => format!("; typically {m:.2} {unit}"),
        _ => String::new(),
    };
    let retested = if re.is_empty() {
        String::new()
    } else {
        format!(", re-tests included ({})", some(&re, 3))
    };
    let (what, name, node, port, half, isl, detail) = match p {
        Part::End(e) => {
            let name = plan.endpoint_name(e);
            let how = match ways.as_slice() {
                [w] if w == "send" => "sending",
                [w] if w == "receive" => "receiving",
                _ => "sending and receiving",
            };
            let detail = format!(
                "`{name}` fails {how}: {} flow(s) with {} peer(s) failed{retested}, and every one of those peers passed in other flows{seen}",
                flows.len(),
                peer_count(e, proving)
            );
            (
                SuspectKind::End,
                name,
                Some(plan.node(e.node).name.clone()),
                Some(e.port.clone()),
                Some(e.half.clone()),
                None,
                detail,
            )
        }
        Part::Isl(i) => {
            let name = plan.isls[i.0].name.clone();
            let detail = format!(
                "ISL `{name}` fails {}: {} flow(s) across it failed{retested}, and every end of theirs passed in other flows{seen}",
                ways.join(" and "),
                flows.len()
            );
            (
                SuspectKind::Isl,
                format!("ISL {name}"),
                None,
                None,
                None,
                Some(name),
                detail,
            )
        }
    };
    let mut verdict = Verdict::check(
        format!("{} suspect {name}", kind.name()),
        Outcome::Fail,
        detail,
        trap,
    );
    verdict.set_about(vec![diagnosis_part(plan, p, trap)]);
    verdict.measured = measured;
    verdict.expected = expected;
    verdict.unit = unit.to_string();
    verdict.threshold = format!(
        "the one part left unexplained in {} failing flow(s)",
        flows.len()
    );
    Suspect {
        kind: kind.name().to_string(),
        what,
        name,
        node,
        port,
        half,
        isl,
        ways,
        flows,
        retests: re,
        verdict,
    }
}

/// The ways the part fails, an end's as `send` then `receive`, an ISL's as its directions
/// (`sw1 -> sw2`).
fn ways(plan: &Plan, els: &BTreeSet<Element>) -> Vec<String> {
    let mut els: Vec<&Element> = els.iter().collect();
    els.sort_by_key(|e| !matches!(e, Element::End { sending: true, .. }));
    els.iter()
        .map(|e| match e {
            Element::End { sending: true, .. } => "send".to_string(),
            Element::End { sending: false, .. } => "receive".to_string(),
            Element::Isl { isl, from } => {
                let i = &plan.isls[isl.0];
                let to = if i.a == *from { i.b } else { i.a };
                format!(
                    "{} -> {}",
                    plan.switches[from.0].name, plan.switches[to.0].name
                )
            }
        })
        .collect()
}

/// How many different peers end `e` had in the flows `proving` it.
fn peer_count(e: &Endpoint, proving: &[&Observed]) -> usize {
    let peers: BTreeSet<&Endpoint> = proving
        .iter()
        .filter_map(|o| o.job.pair.as_ref())
        .map(|pair| {
            if &pair.client == e {
                &pair.server
            } else {
                &pair.client
            }
        })
        .collect();
    peers.len()
}

/// The suspect part in the diagnosis's terms: the half (or the software its failure names, when
/// the trap is a server that went away), the ISL.
fn diagnosis_part(plan: &Plan, p: &Part, trap: Option<Trap>) -> crate::gate::part::Part {
    match p {
        Part::End(e) if trap == Some(Trap::ServerGoneOrFirewall) => {
            crate::gate::part::Part::software(
                &plan.node(e.node).name,
                crate::gate::part::Software::Tools,
            )
        }
        Part::End(e) => plan.half_part(e),
        Part::Isl(i) => plan.isl_part(*i),
    }
}
