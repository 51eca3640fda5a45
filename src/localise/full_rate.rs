//! Full-rate rounds after a sampled schedule's: at scale, most flows of a sampled round cross a
//! crowded ISL, and each is expected a share of it (2.4 Gb/s for 1,024 nodes on four switches)
//! below the bands of the faults the rounds exist to catch (a firmware throttle, 8-25 Gb/s): a
//! throttled half passes every such flow. A half is seen when a flow measured it where a
//! throttle would show ([`crate::gate::classify::shows_throttle`]); a pass anywhere else clears
//! it of nothing. Every half the sampled rounds did not see is measured again where it can be:
//! against a peer on its own switch (no ISL in the way), one seen passing first, another unseen
//! half next; a switch's lone member across the fewest ISL directions, one flow per direction in
//! a round. Each round is checked against the capacity model before it is run: a flow it gives
//! a share too small to show a throttle is left out, and its half is left to the next round, or
//! said unseen (results `coverage.below_band`).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::evidence::{Observed, Seen};
use crate::capacity;
use crate::gate::GateSpec;
use crate::gate::classify;
use crate::gate::threshold::MetricSpec;
use crate::plan::{Endpoint, IslId, Member, Plan, SegmentId, SwitchId};
use crate::schedule::{FULL_RATE, Job, KindId, PairSpec, Round, pair_round};
use crate::topology::Fabric;

/// The rounds a sampled test may add beyond its planned ones, full-rate and re-test rounds
/// together, for a fabric of `nodes` nodes: log2(nodes) + 2 (12 for 1,024 nodes).
pub fn extra_round_budget(nodes: usize) -> usize {
    nodes.max(1).ilog2() as usize + 2
}

/// The nodes of the segments `observed`'s flows ran over: what [`extra_round_budget`] counts.
pub fn nodes_of(plan: &Plan, observed: &[Observed]) -> usize {
    let segments: BTreeSet<SegmentId> = observed
        .iter()
        .filter_map(|o| o.job.pair.as_ref().map(|p| p.segment))
        .collect();
    segments
        .iter()
        .flat_map(|s| plan.segment(*s).members.iter().map(|m| m.endpoint.node))
        .collect::<BTreeSet<_>>()
        .len()
}

/// Whether `job`, expected `expected` in its round and judged by `gate`, would show a
/// throttled half at either end.
fn shows(plan: &Plan, gate: &GateSpec, job: &Job, expected: Option<f64>) -> bool {
    classify::shows_throttle(gate, expected, capacity::standalone(plan, job))
}

/// Whether what `o` measured would have shown a throttled half at either end of it, under
/// the plan's gate of `metric`.
pub fn seen_at_full_rate(plan: &Plan, metric: &MetricSpec, o: &Observed) -> bool {
    o.measured.is_some() && shows(plan, &plan.gate(metric), &o.job, o.expected)
}

/// What `observed` says of the halves at the ends of its flows.
struct Sight {
    /// Those some flow measured (a value, passing or not), but none where a throttle would
    /// show, in order: a half no flow measured at all is a failure of its own, not this.
    unseen: Vec<Endpoint>,
    /// Those that passed in a flow that would have shown a throttle: the best peers.
    passed: HashSet<Endpoint>,
    /// Every end of a flow: the halves the test's selected jobs use, the only peers.
    ends: HashSet<Endpoint>,
}

fn sight(plan: &Plan, metric: &MetricSpec, observed: &[Observed]) -> Sight {
    let gate = plan.gate(metric);
    let mut measured: BTreeSet<Endpoint> = BTreeSet::new();
    let mut seen: HashSet<Endpoint> = HashSet::new();
    let mut passed: HashSet<Endpoint> = HashSet::new();
    let mut ends: HashSet<Endpoint> = HashSet::new();
    for o in observed {
        let Some(p) = &o.job.pair else { continue };
        let both = [p.client.clone(), p.server.clone()];
        ends.extend(both.iter().cloned());
        if o.measured.is_none() {
            continue;
        }
        measured.extend(both.iter().cloned());
        if shows(plan, &gate, &o.job, o.expected) {
            if o.seen == Seen::Passed {
                passed.extend(both.iter().cloned());
            }
            seen.extend(both);
        }
    }
    let unseen = measured.into_iter().filter(|e| !seen.contains(e)).collect();
    Sight {
        unseen,
        passed,
        ends,
    }
}

/// The halves `observed`'s flows measured that none measured where a throttle would show, in
/// order.
pub fn unseen(plan: &Plan, metric: &MetricSpec, observed: &[Observed]) -> Vec<Endpoint> {
    sight(plan, metric, observed).unseen
}

/// The full-rate rounds planned, and the halves they cannot show.
#[derive(Debug, Clone, Default)]
pub struct FullRate {
    pub rounds: Vec<Round>,
    /// Halves no round can measure where a throttle would show: no peer, or no flow the
    /// capacity model gives a share that shows it within the rounds allowed.
    pub left: Vec<Endpoint>,
}

/// The full-rate rounds of kind `kind` (judged by `metric`) for the halves `observed` did not
/// see, numbered from `first_index`, `max_rounds` at most: each unseen half the client of one
/// flow its round expects above the throttle band, its peer another end of `observed`'s flows.
/// None when every half was seen.
pub fn full_rate(
    plan: &Plan,
    fabric: &Fabric,
    kind: KindId,
    metric: &MetricSpec,
    first_index: usize,
    observed: &[Observed],
    max_rounds: usize,
) -> FullRate {
    let gate = plan.gate(metric);
    let sight = sight(plan, metric, observed);
    let mut todo = sight.unseen.clone();
    let mut rounds: Vec<Round> = Vec::new();
    while !todo.is_empty() && rounds.len() < max_rounds {
        let specs = pairs(plan, fabric, &todo, &sight);
        let round = checked(plan, fabric, kind, &gate, first_index + rounds.len(), specs);
        if round.jobs.is_empty() {
            break;
        }
        let seen: HashSet<&Endpoint> = round
            .jobs
            .iter()
            .filter_map(|j| j.pair.as_ref())
            .flat_map(|p| [&p.client, &p.server])
            .collect();
        todo.retain(|e| !seen.contains(e));
        rounds.push(round);
    }
    let n = rounds.len();
    for (i, r) in rounds.iter_mut().enumerate() {
        r.name = format!("{} {FULL_RATE} {}/{n}", kind.name(), i + 1);
    }
    FullRate { rounds, left: todo }
}

/// Round `index` of `specs` as the capacity model sees it, less every flow whose share would
/// not show a throttle (the rest checked again without them).
fn checked(
    plan: &Plan,
    fabric: &Fabric,
    kind: KindId,
    gate: &GateSpec,
    index: usize,
    mut specs: Vec<PairSpec>,
) -> Round {
    loop {
        let round = pair_round(plan, fabric, kind, index, String::new(), specs.clone());
        let expected = capacity::expected(plan, &round);
        let blind: HashSet<usize> = round
            .jobs
            .iter()
            .zip(&expected)
            .enumerate()
            .filter(|(_, (j, e))| !shows(plan, gate, j, **e))
            .map(|(i, _)| i)
            .collect();
        if blind.is_empty() {
            return round;
        }
        specs = specs
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !blind.contains(i))
            .map(|(_, s)| s)
            .collect();
    }
}

/// The members of each (segment, switch) that may be peers (ends of the test's flows), the
/// best first: seen passing at full rate and not to be seen, then the others not to be seen,
/// then those to be seen.
type Groups<'p> = HashMap<(SegmentId, Option<SwitchId>), Vec<&'p Member>>;

fn groups<'p>(
    plan: &'p Plan,
    todo: &HashSet<&Endpoint>,
    sight: &Sight,
    segments: &BTreeSet<SegmentId>,
) -> Groups<'p> {
    let mut out: Groups<'p> = HashMap::new();
    for seg in segments {
        for m in &plan.segment(*seg).members {
            if sight.ends.contains(&m.endpoint) {
                out.entry((*seg, m.switch)).or_default().push(m);
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|m| {
            let wanted = todo.contains(&m.endpoint);
            (wanted, !sight.passed.contains(&m.endpoint))
        });
    }
    out
}

/// One round's flows: each half of `todo` not yet in a flow, the client of one to a free
/// partner on its own switch, else across the fewest ISL directions none of the round's flows
/// loads yet.
fn pairs(plan: &Plan, fabric: &Fabric, todo: &[Endpoint], sight: &Sight) -> Vec<PairSpec> {
    let wanted: HashSet<&Endpoint> = todo.iter().collect();
    let segments: BTreeSet<SegmentId> = todo
        .iter()
        .filter_map(|e| fabric.member_of(plan, e).map(|(s, _)| s.id))
        .collect();
    let groups = groups(plan, &wanted, sight, &segments);
    let mut busy: HashSet<Endpoint> = HashSet::new();
    let mut loaded: HashSet<(IslId, SwitchId)> = HashSet::new();
    let mut out = Vec::new();
    for e in todo {
        if busy.contains(e) {
            continue;
        }
        let Some((seg, m)) = fabric.member_of(plan, e) else {
            continue;
        };
        let free = |p: &Member| p.endpoint.node != e.node && !busy.contains(&p.endpoint);
        let near = groups
            .get(&(seg.id, m.switch))
            .and_then(|g| g.iter().copied().find(|p| free(p)))
            .map(|p| p.endpoint.clone());
        let partner = near.or_else(|| {
            let (p, route) = across(fabric, &groups, seg.id, m.switch?, &loaded, free)?;
            loaded.extend(route);
            Some(p)
        });
        let Some(partner) = partner else { continue };
        busy.insert(e.clone());
        busy.insert(partner.clone());
        out.push(PairSpec {
            client: e.clone(),
            server: partner,
            segment: seg.id,
            group: None,
            bidirectional: false,
        });
    }
    out
}

/// A free partner on another switch of segment `seg` for a member on `from`: on the switch
/// whose route loads the fewest ISL directions, none of them `loaded`; with that route.
fn across(
    fabric: &Fabric,
    groups: &Groups<'_>,
    seg: SegmentId,
    from: SwitchId,
    loaded: &HashSet<(IslId, SwitchId)>,
    free: impl Fn(&Member) -> bool,
) -> Option<(Endpoint, Vec<(IslId, SwitchId)>)> {
    let mut best: Option<(usize, SwitchId, Endpoint)> = None;
    for ((s, sw), members) in groups {
        let Some(to) = sw.filter(|to| *s == seg && *to != from) else {
            continue;
        };
        let Some(route) = fabric.switch_route(from, to) else {
            continue;
        };
        if route.iter().any(|d| loaded.contains(d)) {
            continue;
        }
        let better = best
            .as_ref()
            .is_none_or(|(l, b, _)| (route.len(), to) < (*l, *b));
        if better && let Some(p) = members.iter().copied().find(|p| free(p)) {
            best = Some((route.len(), to, p.endpoint.clone()));
        }
    }
    let (_, to, p) = best?;
    Some((p, fabric.switch_route(from, to)?.to_vec()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::gate::test_metrics::BW;
    use crate::plan::NoKinds;

    /// Three switches in a chain: four nodes on the first, one alone on each of the others.
    const PLAN: &str = r#"
format-version = 1
name = "lone"
[[node]]
name = "n1"
[[node]]
name = "n2"
[[node]]
name = "n3"
[[node]]
name = "n4"
[[node]]
name = "n5"
[[node]]
name = "n6"
[[switch]]
name = "s0"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[isl]]
ends = ["s0", "s1"]
capacity-gbps = 400
[[isl]]
ends = ["s1", "s2"]
capacity-gbps = 400
[[cable]]
kind = "switched"
name = "fab"
subnets = { a = "198.18.0.0/24", b = "198.18.1.0/24" }
[cable.attach]
"n1.f0" = "s0"
"n2.f0" = "s0"
"n3.f0" = "s0"
"n4.f0" = "s0"
"n5.f0" = "s1"
"n6.f0" = "s2"
"#;

    fn plan() -> Plan {
        crate::plan::load_str(Path::new("lone.toml"), PLAN, Path::new("."), &NoKinds)
            .unwrap()
            .plan
    }

    /// Every flow of `round` as having passed, carrying `expected` (the model's when `None`).
    fn passed(plan: &Plan, round: &Round, expected: Option<f64>) -> Vec<Observed> {
        let model = capacity::expected(plan, round);
        round
            .jobs
            .iter()
            .zip(model)
            .map(|(j, m)| Observed {
                job: j.clone(),
                seen: Seen::Passed,
                trap: None,
                measured: expected.or(m),
                expected: expected.or(m),
            })
            .collect()
    }

    fn half(plan: &Plan, node: &str) -> Endpoint {
        let seg = &plan.segments[0];
        seg.members
            .iter()
            .find(|m| plan.node(m.endpoint.node).name == node)
            .unwrap()
            .endpoint
            .clone()
    }

    #[test]
    fn the_budget_is_log2_of_the_nodes_plus_two() {
        assert_eq!(extra_round_budget(1024), 12);
        assert_eq!(extra_round_budget(4096), 14);
        assert_eq!(extra_round_budget(64), 8);
        assert_eq!(extra_round_budget(1000), 11);
        assert_eq!(extra_round_budget(0), 2);
    }

    /// Halves measured only at a crowded share get a flow each where a throttle shows: on
    /// their own switch when it has a free peer (one seen passing first), a switch's lone
    /// member across the fewest ISL directions no other flow of the round loads.
    #[test]
    fn every_half_seen_only_below_the_band_is_measured_where_it_shows() {
        let plan = plan();
        let fabric = Fabric::build(&plan);
        let seg = plan.segments[0].id;
        let spec = |c: &str, s: &str| PairSpec {
            client: half(&plan, c),
            server: half(&plan, s),
            segment: seg,
            group: None,
            bidirectional: false,
        };
        let kind = KindId("rdma-bw");
        // n1 -> n2 at full rate; everyone else only at 2 Gb/s
        let full = pair_round(&plan, &fabric, kind, 0, "r1".into(), vec![spec("n1", "n2")]);
        let low = pair_round(
            &plan,
            &fabric,
            kind,
            1,
            "r2".into(),
            vec![spec("n3", "n5"), spec("n4", "n6")],
        );
        let mut seen = passed(&plan, &full, None);
        seen.extend(passed(&plan, &low, Some(2.0)));
        let names =
            |v: &[Endpoint]| -> Vec<String> { v.iter().map(|e| plan.endpoint_name(e)).collect() };
        let unseen_now = unseen(&plan, &BW, &seen);
        assert_eq!(
            names(&unseen_now),
            ["n3.f0.a", "n4.f0.a", "n5.f0.a", "n6.f0.a"]
        );
        let f = full_rate(&plan, &fabric, kind, &BW, 7, &seen, 4);
        assert!(f.left.is_empty(), "{:?}", names(&f.left));
        assert_eq!(f.rounds.len(), 1);
        let r = &f.rounds[0];
        assert_eq!(r.name, "rdma-bw full-rate 1/1");
        assert_eq!(r.index, 7);
        let flows: Vec<(String, String)> = r
            .jobs
            .iter()
            .map(|j| {
                let p = j.pair.as_ref().unwrap();
                (plan.endpoint_name(&p.client), plan.endpoint_name(&p.server))
            })
            .collect();
        // n3 and n4 against the two seen passing on their switch; n5 (alone on s1) across
        // one ISL direction to the nearest free member, n6 (alone on s2): both seen by it
        let want = [
            ("n3.f0.a", "n1.f0.a"),
            ("n4.f0.a", "n2.f0.a"),
            ("n5.f0.a", "n6.f0.a"),
        ];
        assert_eq!(flows, want.map(|(a, b)| (a.to_string(), b.to_string())));
        let gate = plan.gate(&BW);
        for (j, e) in r.jobs.iter().zip(capacity::expected(&plan, r)) {
            assert!(shows(&plan, &gate, j, e), "{j:?} {e:?}");
        }
        // measured there, nothing is left unseen
        seen.extend(passed(&plan, r, None));
        assert!(unseen(&plan, &BW, &seen).is_empty());
        assert!(
            full_rate(&plan, &fabric, kind, &BW, 8, &seen, 4)
                .rounds
                .is_empty()
        );
    }

    /// A half no flow measured at all (its host dead, its flows failing without a value) is a
    /// failure of its own, not unseen; and a peer is only ever an end of the test's own flows
    /// (`--skip n1` leaves n1 out of every round).
    #[test]
    fn unmeasured_halves_are_not_unseen_and_peers_are_the_tests_own() {
        let plan = plan();
        let fabric = Fabric::build(&plan);
        let seg = plan.segments[0].id;
        let kind = KindId("rdma-bw");
        let spec = |c: &str, s: &str| PairSpec {
            client: half(&plan, c),
            server: half(&plan, s),
            segment: seg,
            group: None,
            bidirectional: false,
        };
        let r = pair_round(
            &plan,
            &fabric,
            kind,
            0,
            "r".into(),
            vec![spec("n3", "n4"), spec("n5", "n6")],
        );
        let mut seen = passed(&plan, &r, Some(2.0));
        seen[1].seen = Seen::Failed;
        seen[1].measured = None;
        let f = full_rate(&plan, &fabric, kind, &BW, 1, &seen, 4);
        let flows: Vec<String> = f.rounds[0].jobs.iter().map(|j| j.label(&plan)).collect();
        assert_eq!(flows, ["n3.f0.a -> n4.f0.a"]);
        assert!(f.left.is_empty());
    }

    /// A round the capacity model gives too small a share leaves its flows out: with a 20 Gb/s
    /// ISL, nothing across it shows a throttle, and the lone members are said unseen.
    #[test]
    fn halves_no_flow_can_show_are_left() {
        let text = PLAN.replace("capacity-gbps = 400", "capacity-gbps = 20");
        let plan = crate::plan::load_str(Path::new("lone.toml"), &text, Path::new("."), &NoKinds)
            .unwrap()
            .plan;
        let fabric = Fabric::build(&plan);
        let seg = plan.segments[0].id;
        let kind = KindId("rdma-bw");
        let low = pair_round(
            &plan,
            &fabric,
            kind,
            0,
            "r".into(),
            vec![PairSpec {
                client: half(&plan, "n5"),
                server: half(&plan, "n6"),
                segment: seg,
                group: None,
                bidirectional: false,
            }],
        );
        let seen = passed(&plan, &low, Some(2.0));
        let f = full_rate(&plan, &fabric, kind, &BW, 1, &seen, 4);
        assert!(f.rounds.is_empty());
        let left: Vec<String> = f.left.iter().map(|e| plan.endpoint_name(e)).collect();
        assert_eq!(left, ["n5.f0.a", "n6.f0.a"]);
    }
}
