//! The re-test rounds after a sampled schedule: each end of a failing flow against peers that
//! passed, and each ISL direction a failing flow crossed between peers that passed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::evidence::{Element, Observed, Seen, elements};
use super::full_rate::seen_at_full_rate;
use crate::gate::threshold::MetricSpec;
use crate::plan::{Endpoint, IslId, Member, Plan, SegmentId, SwitchId};
use crate::schedule::{KindId, PairSpec, Round, pair_round};
use crate::topology::Fabric;

/// Re-test rounds at most, whatever the fabric's size: each end is re-tested once per role it
/// failed in, and peers are spread so that each carries few re-tests, so the rounds needed do
/// not grow with the node count. Past the budget the least telling re-tests (ends a passing
/// flow already vouched for) are the ones left out.
pub const MAX_RETEST_ROUNDS: usize = 8;

/// The flows to re-test, in the order they are packed: ISL probes, then ends no passing flow
/// vouched for in that role, then the others.
struct Wanted {
    probes: Vec<PairSpec>,
    unvouched: Vec<PairSpec>,
    vouched: Vec<PairSpec>,
}

/// Who may serve as a peer, and how often each has.
struct Peers<'p> {
    plan: &'p Plan,
    cleared: &'p HashSet<Element>,
    /// Of those, the parts a pass cleared where a throttle would have shown: a peer that
    /// passed only at a share below the band may be throttled itself.
    full_rate: &'p HashSet<Element>,
    /// Ends of failing flows: a peer outside them is better evidence.
    in_failing: &'p HashSet<Endpoint>,
    uses: HashMap<Endpoint, usize>,
}

impl Peers<'_> {
    fn vouched(&self, e: &Endpoint, sending: bool) -> bool {
        self.cleared.contains(&Element::End {
            endpoint: e.clone(),
            sending,
        })
    }

    fn vouched_at_full_rate(&self, e: &Endpoint, sending: bool) -> bool {
        self.full_rate.contains(&Element::End {
            endpoint: e.clone(),
            sending,
        })
    }

    /// The peer for `e` (`sending` is e's role): another node's half of the same segment that
    /// passed in the other role; on e's own switch first, then one that passed where a
    /// throttle would have shown, not `avoid` (e's peer in its other role), the least used,
    /// outside failing flows, in member order.
    fn pick(
        &mut self,
        seg: SegmentId,
        e: &Endpoint,
        switch: Option<SwitchId>,
        sending: bool,
        avoid: Option<&Endpoint>,
    ) -> Option<Endpoint> {
        let members = &self.plan.segment(seg).members;
        let best = members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.endpoint.node != e.node && self.vouched(&m.endpoint, !sending))
            .min_by_key(|(i, m)| {
                (
                    m.switch != switch,
                    !self.vouched_at_full_rate(&m.endpoint, !sending),
                    avoid == Some(&m.endpoint),
                    self.uses.get(&m.endpoint).copied().unwrap_or(0),
                    self.in_failing.contains(&m.endpoint),
                    *i,
                )
            })
            .map(|(_, m)| m.endpoint.clone())?;
        *self.uses.entry(best.clone()).or_default() += 1;
        Some(best)
    }

    /// A client and a server that passed in those roles, on switches whose route crosses
    /// `isl` from `from`: the shortest such route, the least used pair.
    fn across(
        &mut self,
        fabric: &Fabric,
        seg: SegmentId,
        isl: IslId,
        from: SwitchId,
    ) -> Option<(Endpoint, Endpoint)> {
        let members = &self.plan.segment(seg).members;
        let on = |sending: bool| -> BTreeMap<SwitchId, Vec<&Member>> {
            let mut by: BTreeMap<SwitchId, Vec<&Member>> = BTreeMap::new();
            for m in members
                .iter()
                .filter(|m| self.vouched(&m.endpoint, sending))
            {
                if let Some(s) = m.switch {
                    by.entry(s).or_default().push(m);
                }
            }
            by
        };
        let (senders, receivers) = (on(true), on(false));
        let mut best: Option<(usize, SwitchId, SwitchId)> = None;
        for a in senders.keys() {
            for b in receivers.keys() {
                let Some(route) = fabric.switch_route(*a, *b) else {
                    continue;
                };
                if route.contains(&(isl, from)) && best.is_none_or(|(l, ..)| route.len() < l) {
                    best = Some((route.len(), *a, *b));
                }
            }
        }
        let (_, a, b) = best?;
        let uses = |m: &Member| self.uses.get(&m.endpoint).copied().unwrap_or(0);
        let c = senders[&a].iter().min_by_key(|m| uses(m))?;
        let s = receivers[&b]
            .iter()
            .filter(|m| m.endpoint.node != c.endpoint.node)
            .min_by_key(|m| uses(m))?;
        let (c, s) = (c.endpoint.clone(), s.endpoint.clone());
        *self.uses.entry(c.clone()).or_default() += 1;
        *self.uses.entry(s.clone()).or_default() += 1;
        Some((c, s))
    }
}

fn spec(client: Endpoint, server: Endpoint, segment: SegmentId) -> PairSpec {
    PairSpec {
        client,
        server,
        segment,
        group: None,
        bidirectional: false,
    }
}

/// The flows worth re-testing, from what the sampled rounds showed (judged by `metric`).
fn wanted(plan: &Plan, fabric: &Fabric, metric: &MetricSpec, observed: &[Observed]) -> Wanted {
    let mut cleared: HashSet<Element> = HashSet::new();
    let mut full_rate: HashSet<Element> = HashSet::new();
    let mut in_failing: HashSet<Endpoint> = HashSet::new();
    // (segment, end, sending) of failing flows; ISL directions with a segment crossing them
    let mut ends: BTreeSet<(SegmentId, Endpoint, bool)> = BTreeSet::new();
    let mut dirs: BTreeMap<(IslId, SwitchId), SegmentId> = BTreeMap::new();
    for o in observed {
        let Some(pair) = &o.job.pair else { continue };
        let els = elements(plan, pair);
        match o.seen {
            Seen::Passed => {
                if seen_at_full_rate(plan, metric, o) {
                    full_rate.extend(els.iter().cloned());
                }
                cleared.extend(els);
            }
            Seen::Warned => {}
            Seen::Failed => {
                in_failing.insert(pair.client.clone());
                in_failing.insert(pair.server.clone());
                for el in els {
                    match el {
                        Element::End { endpoint, sending } => {
                            ends.insert((pair.segment, endpoint, sending));
                        }
                        Element::Isl { isl, from } => {
                            dirs.entry((isl, from)).or_insert(pair.segment);
                        }
                    }
                }
            }
        }
    }
    let mut peers = Peers {
        plan,
        cleared: &cleared,
        full_rate: &full_rate,
        in_failing: &in_failing,
        uses: HashMap::new(),
    };
    let mut out = Wanted {
        probes: Vec::new(),
        unvouched: Vec::new(),
        vouched: Vec::new(),
    };
    for ((isl, from), seg) in dirs {
        if let Some((c, s)) = peers.across(fabric, seg, isl, from) {
            out.probes.push(spec(c, s, seg));
        }
    }
    // each end in each role it failed in; its peer in the other role another one if it can
    let mut last: HashMap<Endpoint, Endpoint> = HashMap::new();
    for (seg, e, sending) in ends {
        let switch = fabric.member_of(plan, &e).and_then(|(_, m)| m.switch);
        let Some(p) = peers.pick(seg, &e, switch, sending, last.get(&e)) else {
            // no peer passed in that role: nothing to re-test against
            continue;
        };
        last.insert(e.clone(), p.clone());
        let vouched = peers.vouched(&e, sending);
        let s = if sending {
            spec(e, p, seg)
        } else {
            spec(p, e, seg)
        };
        if vouched {
            out.vouched.push(s);
        } else {
            out.unvouched.push(s);
        }
    }
    out
}

/// The re-test rounds of kind `kind` (judged by `metric`) for what `observed` showed, numbered
/// from `first_index`, `max_rounds` at most (and never more than [`MAX_RETEST_ROUNDS`]): none
/// when nothing failed. Each node half is in one flow of a round at most.
pub fn retests(
    plan: &Plan,
    fabric: &Fabric,
    kind: KindId,
    metric: &MetricSpec,
    first_index: usize,
    observed: &[Observed],
    max_rounds: usize,
) -> Vec<Round> {
    if !observed.iter().any(|o| o.seen == Seen::Failed) {
        return Vec::new();
    }
    let max_rounds = max_rounds.min(MAX_RETEST_ROUNDS);
    let w = wanted(plan, fabric, metric, observed);
    let mut rounds: Vec<(Vec<PairSpec>, HashSet<Endpoint>)> = Vec::new();
    for s in w.probes.into_iter().chain(w.unvouched).chain(w.vouched) {
        let free =
            |busy: &HashSet<Endpoint>| !busy.contains(&s.client) && !busy.contains(&s.server);
        let at = match rounds.iter().position(|(_, busy)| free(busy)) {
            Some(i) => i,
            None if rounds.len() < max_rounds => {
                rounds.push((Vec::new(), HashSet::new()));
                rounds.len() - 1
            }
            None => continue,
        };
        let (specs, busy) = &mut rounds[at];
        busy.insert(s.client.clone());
        busy.insert(s.server.clone());
        specs.push(s);
    }
    let n = rounds.len();
    rounds
        .into_iter()
        .enumerate()
        .map(|(i, (specs, _))| {
            pair_round(
                plan,
                fabric,
                kind,
                first_index + i,
                format!("{} {} {}/{n}", kind.name(), crate::schedule::RETEST, i + 1),
                specs,
            )
        })
        .collect()
}
