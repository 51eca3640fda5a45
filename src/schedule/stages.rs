//! The shapes a test kind's rounds come in, and their builders: one pair per link at a time,
//! declared concurrent rounds, all pairs round robin, both halves of each cable at once, and one
//! job over a set of ranks. A kind picks its shapes; a stage turns into rounds on demand.

#[cfg(test)]
use super::Schedule;
use crate::plan::{Direction, Endpoint, Plan, Sampling, SegmentId};
use crate::topology::{Fabric, Path};

use super::{BASE_PORT, Job, KindId, Pair, Ranks, Round, round_count, round_pairs};

/// A client/server pair before its path is known.
#[derive(Debug, Clone)]
pub struct PairSpec {
    pub client: Endpoint,
    pub server: Endpoint,
    pub segment: SegmentId,
    /// Jobs with the same group are judged together.
    pub group: Option<String>,
    /// Both ways at once.
    pub bidirectional: bool,
}

impl PairSpec {
    /// The flow between members `(client, server)` (indices) of segment `seg`, the other way
    /// when `back`.
    fn of_members(
        plan: &Plan,
        seg: SegmentId,
        (c, s): (usize, usize),
        back: bool,
        direction: Direction,
    ) -> PairSpec {
        let members = &plan.segment(seg).members;
        let (c, s) = if back { (s, c) } else { (c, s) };
        PairSpec {
            client: members[c].endpoint.clone(),
            server: members[s].endpoint.clone(),
            segment: seg,
            group: None,
            bidirectional: direction == Direction::Bidirectional,
        }
    }

    /// The same flow the other way.
    fn reversed(&self) -> PairSpec {
        PairSpec {
            client: self.server.clone(),
            server: self.client.clone(),
            ..self.clone()
        }
    }
}

/// Rounds the other way, after the rounds as given, when `direction` is `both`; every flow
/// both ways at once when it is `bidirectional`.
fn with_direction(
    rounds: Vec<(String, Vec<PairSpec>)>,
    direction: Direction,
) -> Vec<(String, Vec<PairSpec>)> {
    match direction {
        Direction::One => rounds,
        Direction::Bidirectional => rounds
            .into_iter()
            .map(|(n, specs)| {
                (
                    n,
                    specs
                        .into_iter()
                        .map(|s| PairSpec {
                            bidirectional: true,
                            ..s
                        })
                        .collect(),
                )
            })
            .collect(),
        Direction::Both => {
            let mut out = Vec::with_capacity(rounds.len() * 2);
            for (n, specs) in rounds {
                let back: Vec<PairSpec> = specs.iter().map(PairSpec::reversed).collect();
                out.push((n.clone(), specs));
                out.push((format!("{n} reverse"), back));
            }
            out
        }
    }
}

/// One stage of a schedule: a list of rounds, materialised or generated on demand.
#[derive(Debug)]
pub enum Stage {
    /// Rounds given as (name, pairs): small, materialised.
    Pairs {
        kind: KindId,
        rounds: Vec<(String, Vec<PairSpec>)>,
    },
    /// Every member pair of each segment alone, one round each, generated per round (a switched
    /// segment of n members has n(n-1)/2 pairs); with `both`, each pair's reverse right after it.
    PerLink {
        kind: KindId,
        segments: Vec<SegmentId>,
        /// Cumulative pair count at the start of each segment, and the total last.
        offsets: Vec<usize>,
        direction: Direction,
    },
    /// All pairs of each segment's members, round robin, generated per round; with `both`,
    /// the same rounds again the other way.
    AllPairs {
        kind: KindId,
        segments: Vec<SegmentId>,
        /// Round-robin rounds (one way).
        rounds: usize,
        direction: Direction,
    },
    /// `pairings` seeded random perfect matchings of each segment's members (see
    /// [`super::sampled`]), generated per round; with `both`, each round followed by its
    /// reverse. Its failing flows are re-tested to name the end at fault (`crate::localise`).
    Sampled {
        kind: KindId,
        segments: Vec<SegmentId>,
        sampling: Sampling,
        direction: Direction,
    },
    /// One job over a set of ranks (one round).
    Ranks {
        kind: KindId,
        round_name: String,
        job: Ranks,
        resources: Vec<Endpoint>,
    },
}

impl Stage {
    /// How many rounds the stage has.
    pub fn rounds(&self) -> usize {
        match self {
            Stage::Pairs { rounds, .. } => rounds.len(),
            Stage::PerLink {
                offsets, direction, ..
            } => {
                let pairs = offsets.last().copied().unwrap_or(0);
                if *direction == Direction::Both {
                    pairs.saturating_mul(2)
                } else {
                    pairs
                }
            }
            Stage::AllPairs {
                rounds, direction, ..
            } => {
                if *direction == Direction::Both {
                    rounds * 2
                } else {
                    *rounds
                }
            }
            Stage::Sampled {
                sampling,
                direction,
                ..
            } => {
                let k = sampling.rounds as usize;
                if *direction == Direction::Both {
                    k * 2
                } else {
                    k
                }
            }
            Stage::Ranks { .. } => 1,
        }
    }

    /// How many jobs the stage's rounds hold, counted without building a round: every pair of
    /// each segment for per-link and all-pairs (twice with `both`), a perfect matching of each
    /// segment per sampled round (at most: with an odd count one member sits out), one job per
    /// declared flow, one for a set of ranks. What validation bounds a plan by.
    pub fn jobs(&self, plan: &Plan) -> usize {
        let both = |n: usize, d: Direction| {
            if d == Direction::Both {
                n.saturating_mul(2)
            } else {
                n
            }
        };
        let members = |s: &SegmentId| plan.segments.get(s.0).map_or(0, |s| s.members.len());
        match self {
            Stage::Pairs { rounds, .. } => rounds
                .iter()
                .fold(0usize, |n, (_, specs)| n.saturating_add(specs.len())),
            Stage::PerLink { .. } => self.rounds(),
            Stage::AllPairs {
                segments,
                direction,
                ..
            } => {
                let pairs = segments.iter().map(members).fold(0usize, |n, m| {
                    n.saturating_add(m.saturating_mul(m.saturating_sub(1)) / 2)
                });
                both(pairs, *direction)
            }
            Stage::Sampled { segments, .. } => {
                let per_round = segments
                    .iter()
                    .map(members)
                    .fold(0usize, |n, m| n.saturating_add(m / 2));
                per_round.saturating_mul(self.rounds())
            }
            Stage::Ranks { .. } => 1,
        }
    }

    /// The test kind whose rounds these are.
    pub fn kind(&self) -> KindId {
        match self {
            Stage::Pairs { kind, .. }
            | Stage::PerLink { kind, .. }
            | Stage::AllPairs { kind, .. }
            | Stage::Sampled { kind, .. }
            | Stage::Ranks { kind, .. } => *kind,
        }
    }

    /// Round `local` of this stage, numbered `index` in the schedule.
    pub(super) fn round(
        &self,
        plan: &Plan,
        fabric: &Fabric,
        index: usize,
        local: usize,
    ) -> Option<Round> {
        let (name, kind, specs) = match self {
            Stage::Pairs { kind, rounds } => {
                let (name, specs) = rounds.get(local)?;
                (name.clone(), *kind, specs.clone())
            }
            Stage::PerLink {
                kind,
                segments,
                offsets,
                direction,
            } => {
                let (name, spec) =
                    per_link_round(plan, *kind, segments, offsets, *direction, local)?;
                (name, *kind, vec![spec])
            }
            Stage::AllPairs {
                kind,
                segments,
                rounds,
                direction,
            } => {
                let (name, specs) =
                    all_pairs_round(plan, *kind, segments, *rounds, *direction, local);
                (name, *kind, specs)
            }
            Stage::Sampled {
                kind,
                segments,
                sampling,
                direction,
            } => {
                let (name, specs) =
                    sampled_round(plan, fabric, *kind, segments, sampling, *direction, local)?;
                (name, *kind, specs)
            }
            Stage::Ranks {
                kind,
                round_name,
                job,
                resources,
            } => {
                return Some(Round {
                    index,
                    name: round_name.clone(),
                    kind: *kind,
                    jobs: vec![Job {
                        id: format!("{}-r{:03}-{}", kind.name(), index + 1, job.name),
                        kind: *kind,
                        round: index,
                        port: BASE_PORT,
                        pair: None,
                        ranks: Some(job.clone()),
                        resources: resources.clone(),
                        group: None,
                    }],
                });
            }
        };
        Some(pair_round(plan, fabric, kind, index, name, specs))
    }
}

/// Round `index` named `name`: one job per pair, each with its path, a TCP port unique in the
/// round and an id naming the round (`rdma-bw-r003-j01`).
pub fn pair_round(
    plan: &Plan,
    fabric: &Fabric,
    kind: KindId,
    index: usize,
    name: String,
    specs: Vec<PairSpec>,
) -> Round {
    let jobs = specs
        .into_iter()
        .enumerate()
        .map(|(j, spec)| {
            let path = fabric
                .path(plan, &spec.client, &spec.server)
                .unwrap_or(Path {
                    hops: Vec::new(),
                    switches: Vec::new(),
                });
            Job {
                id: format!("{}-r{:03}-j{:02}", kind.name(), index + 1, j + 1),
                kind,
                round: index,
                port: BASE_PORT.saturating_add(u16::try_from(j).unwrap_or(u16::MAX)),
                resources: vec![spec.client.clone(), spec.server.clone()],
                pair: Some(Pair {
                    client: spec.client,
                    server: spec.server,
                    segment: spec.segment,
                    path,
                    bidirectional: spec.bidirectional,
                }),
                ranks: None,
                group: spec.group,
            }
        })
        .collect();
    Round {
        index,
        name,
        kind,
        jobs,
    }
}

/// The segments of the selected halves (all when `halves` is empty).
pub fn selected_segments(plan: &Plan, halves: &[String]) -> Vec<SegmentId> {
    plan.segments
        .iter()
        .filter(|s| halves.is_empty() || halves.contains(&s.half))
        .map(|s| s.id)
        .collect()
}

/// One job per link alone. A switched segment's "links" are its member pairs, one at a time;
/// `direction` runs each the other way too, or both ways at once. Rounds are generated when
/// asked for: 5,000 members are 12.5 million pairs, counted here, never listed.
/// The per-link stage of a kind that measures each link one way over the plan's `halves` (a
/// ping-pong or a latency exchange covers both directions at once; an informational TCP stream
/// needs only one).
pub fn one_way_per_link(plan: &Plan, kind: KindId, halves: &[String]) -> Stage {
    per_link(plan, kind, &selected_segments(plan, halves), Direction::One)
}

pub fn per_link(plan: &Plan, kind: KindId, segs: &[SegmentId], direction: Direction) -> Stage {
    let mut offsets = Vec::with_capacity(segs.len() + 1);
    let mut total = 0usize;
    for s in segs {
        offsets.push(total);
        let m = plan.segment(*s).members.len();
        total = total.saturating_add(m.saturating_mul(m.saturating_sub(1)) / 2);
    }
    offsets.push(total);
    Stage::PerLink {
        kind,
        segments: segs.to_vec(),
        offsets,
        direction,
    }
}

/// Pair `k` of `m` members, in the order `(0,1), (0,2) .. (0,m-1), (1,2) ..`: `(i, j)`, i < j.
fn nth_pair(m: usize, k: usize) -> (usize, usize) {
    // pairs before row i: i*(m-1) - i*(i-1)/2; the last row whose start is <= k
    let start = |i: usize| i * (m - 1) - i * i.saturating_sub(1) / 2;
    let (mut lo, mut hi) = (0usize, m - 1);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if start(mid) <= k {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, lo + 1 + (k - start(lo)))
}

/// Round `local` of an all-pairs stage: round robin round `local` of every segment, the other
/// way in the second pass when `direction` is `both`.
fn all_pairs_round(
    plan: &Plan,
    kind: KindId,
    segments: &[SegmentId],
    rounds: usize,
    direction: Direction,
    local: usize,
) -> (String, Vec<PairSpec>) {
    // with `both`, the second pass runs every pair of the first the other way
    let back = local >= rounds;
    let r = local % rounds.max(1);
    let mut specs = Vec::new();
    for seg in segments {
        let members = &plan.segment(*seg).members;
        for pair in round_pairs(members.len(), r) {
            specs.push(PairSpec::of_members(plan, *seg, pair, back, direction));
        }
    }
    let total = if back || direction == Direction::Both {
        rounds * 2
    } else {
        rounds
    };
    (
        format!("{} all-pairs {}/{}", kind.name(), local + 1, total),
        specs,
    )
}

/// Round `local` of a sampled stage: the seeded pairing of that round in every segment, each
/// followed by its reverse when `direction` is `both`; `None` past the last round.
fn sampled_round(
    plan: &Plan,
    fabric: &Fabric,
    kind: KindId,
    segments: &[SegmentId],
    sampling: &Sampling,
    direction: Direction,
    local: usize,
) -> Option<(String, Vec<PairSpec>)> {
    let k = sampling.rounds as usize;
    let (r, back) = match direction {
        Direction::Both => (local / 2, local % 2 == 1),
        _ => (local, false),
    };
    if r >= k {
        return None;
    }
    let mut specs = Vec::new();
    for seg in segments {
        let layout = super::sampled::Layout::new(plan, fabric, *seg);
        for pair in super::sampled::pairing(&layout, sampling.seed, seg.0 as u64, r) {
            specs.push(PairSpec::of_members(plan, *seg, pair, back, direction));
        }
    }
    let mut name = format!("{} {} {}/{}", kind.name(), super::SAMPLED, r + 1, k);
    if back {
        name.push_str(" reverse");
    }
    Some((name, specs))
}

/// Round `local` of a per-link stage: its name and its one pair.
fn per_link_round(
    plan: &Plan,
    kind: KindId,
    segments: &[SegmentId],
    offsets: &[usize],
    direction: Direction,
    local: usize,
) -> Option<(String, PairSpec)> {
    let (pair, back) = match direction {
        Direction::Both => (local / 2, local % 2 == 1),
        _ => (local, false),
    };
    if pair >= *offsets.last()? {
        return None;
    }
    let si = offsets.partition_point(|o| *o <= pair) - 1;
    let seg = plan.segment(segments[si]);
    let m = &seg.members;
    let (i, j) = nth_pair(m.len(), pair - offsets[si]);
    // the second end is the client: on a direct or ring link, node[i+1] sends to node[i]
    let mut name = if m.len() == 2 {
        format!("{} {}", kind.name(), seg.name)
    } else {
        format!(
            "{} {} {}-{}",
            kind.name(),
            seg.name,
            plan.node(m[j].endpoint.node).name,
            plan.node(m[i].endpoint.node).name
        )
    };
    let (client, server) = if back { (i, j) } else { (j, i) };
    if back {
        name.push_str(" reverse");
    }
    Some((
        name,
        PairSpec {
            client: m[client].endpoint.clone(),
            server: m[server].endpoint.clone(),
            segment: segments[si],
            group: None,
            bidirectional: direction == Direction::Bidirectional,
        },
    ))
}

/// All pairs of each segment, round robin: n-1 concurrent rounds for n members (twice that
/// with `both`).
pub fn all_pairs(plan: &Plan, kind: KindId, segs: Vec<SegmentId>, direction: Direction) -> Stage {
    let rounds = segs
        .iter()
        .map(|s| round_count(plan.segment(*s).members.len()))
        .max()
        .unwrap_or(0);
    Stage::AllPairs {
        kind,
        segments: segs,
        rounds,
        direction,
    }
}

/// `sampling.rounds` random pairings of each segment (switched ones; a two-member segment's
/// pairing is its one pair), each round followed by its reverse with `both`.
pub fn sampled(
    kind: KindId,
    segs: Vec<SegmentId>,
    sampling: Sampling,
    direction: Direction,
) -> Stage {
    Stage::Sampled {
        kind,
        segments: segs,
        sampling,
        direction,
    }
}

/// Rounds the plan declares, flow by flow (each mirrored after it with `both`).
pub fn declared(
    kind: KindId,
    rounds: &[crate::plan::DeclaredRound],
    direction: Direction,
) -> Stage {
    let rounds = rounds
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                r.flows
                    .iter()
                    .map(|f| PairSpec {
                        client: f.client.clone(),
                        server: f.server.clone(),
                        segment: f.segment,
                        group: None,
                        bidirectional: false,
                    })
                    .collect(),
            )
        })
        .collect();
    Stage::Pairs {
        kind,
        rounds: with_direction(rounds, direction),
    }
}

/// Both halves of each cable at once: one round per node pair, one job per half, the jobs of a
/// round grouped by their (node, port) ends; `direction` as for the other shapes.
pub fn both_halves(plan: &Plan, kind: KindId, halves: &[String], direction: Direction) -> Stage {
    // group 2-member segments by their (node, port) ends; switched segments pair members
    // (0,1), (2,3), ...
    let mut groups: Vec<(String, Vec<PairSpec>)> = Vec::new();
    for seg in plan
        .segments
        .iter()
        .filter(|s| halves.is_empty() || halves.contains(&s.half))
    {
        let m = &seg.members;
        let pairs: Vec<(usize, usize)> = if m.len() == 2 {
            vec![(1, 0)]
        } else {
            (0..m.len() / 2).map(|k| (2 * k + 1, 2 * k)).collect()
        };
        for (c, s) in pairs {
            let key = format!(
                "{}.{} -> {}.{}",
                plan.node(m[c].endpoint.node).name,
                m[c].endpoint.port,
                plan.node(m[s].endpoint.node).name,
                m[s].endpoint.port
            );
            let spec = PairSpec {
                client: m[c].endpoint.clone(),
                server: m[s].endpoint.clone(),
                segment: seg.id,
                group: Some(key.clone()),
                bidirectional: false,
            };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(spec),
                None => groups.push((key, vec![spec])),
            }
        }
    }
    let mut rounds: Vec<(String, Vec<PairSpec>)> = groups
        .into_iter()
        .map(|(k, v)| (format!("{} {k}", kind.name()), v))
        .collect();
    if direction == Direction::Both {
        // the other way: its own group, named the way it runs
        let mut out = Vec::with_capacity(rounds.len() * 2);
        for (n, specs) in rounds {
            let back: Vec<PairSpec> = specs
                .iter()
                .map(|s| {
                    let mut r = s.reversed();
                    r.group = s.group.as_ref().map(|g| reverse_group(g));
                    r
                })
                .collect();
            let back_name = back
                .first()
                .and_then(|s| s.group.clone())
                .map(|g| format!("{} {g}", kind.name()))
                .unwrap_or_else(|| format!("{n} reverse"));
            out.push((n, specs));
            out.push((back_name, back));
        }
        rounds = out;
    } else if direction == Direction::Bidirectional {
        rounds = with_direction(rounds, direction);
    }
    Stage::Pairs { kind, rounds }
}

/// `a.f0 -> b.f0` the other way: `b.f0 -> a.f0`.
fn reverse_group(g: &str) -> String {
    match g.split_once(" -> ") {
        Some((a, b)) => format!("{b} -> {a}"),
        None => format!("{g} reverse"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::NoKinds;

    /// Five nodes on one switch (two halves), and a direct pair.
    const PLAN: &str = r#"
format-version = 1
name = "five"
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
[[switch]]
name = "sw"
[[cable]]
kind = "switched"
name = "fab"
subnets = { a = "198.18.0.0/24", b = "198.18.1.0/24" }
[cable.attach]
"n1.f0" = "sw"
"n2.f0" = "sw"
"n3.f0" = "sw"
"n4.f0" = "sw"
"n5.f0" = "sw"
[[cable]]
kind = "direct"
name = "pair"
ends = ["n1.f1", "n2.f1"]
subnets = { a = "198.18.2.0/30", b = "198.18.2.4/30" }
"#;

    /// Generated on demand, the rounds are the pairs listed in order: (i, j) for i < j, the
    /// second member the client, each followed by its reverse with `both`.
    #[test]
    fn per_link_rounds_are_every_pair_in_order_each_way() {
        let plan = crate::plan::load_str(Path::new("five.toml"), PLAN, Path::new("."), &NoKinds)
            .unwrap()
            .plan;
        let fabric = Fabric::build(&plan);
        let segs: Vec<SegmentId> = plan.segments.iter().map(|s| s.id).collect();
        let kind = KindId("rdma-bw");
        let mut listed: Vec<(String, String, String)> = Vec::new();
        for s in &segs {
            let m = &plan.segment(*s).members;
            for i in 0..m.len() {
                for j in (i + 1)..m.len() {
                    let base = if m.len() == 2 {
                        format!("rdma-bw {}", plan.segment(*s).name)
                    } else {
                        let node = |k: usize| plan.node(m[k].endpoint.node).name.clone();
                        format!("rdma-bw {} {}-{}", plan.segment(*s).name, node(j), node(i))
                    };
                    let name = |k: usize| plan.endpoint_name(&m[k].endpoint);
                    listed.push((base.clone(), name(j), name(i)));
                    listed.push((format!("{base} reverse"), name(i), name(j)));
                }
            }
        }
        // 10 pairs per switched half, 1 per direct half
        assert_eq!(listed.len(), 2 * (10 + 10 + 1 + 1));
        let both = Schedule::new(vec![per_link(&plan, kind, &segs, Direction::Both)]);
        let got: Vec<(String, String, String)> = both
            .rounds(&plan, &fabric)
            .map(|r| {
                assert_eq!(r.jobs.len(), 1);
                let p = r.jobs[0].pair.as_ref().unwrap();
                (
                    r.name,
                    plan.endpoint_name(&p.client),
                    plan.endpoint_name(&p.server),
                )
            })
            .collect();
        assert_eq!(got, listed);
        let one = Schedule::new(vec![per_link(&plan, kind, &segs, Direction::One)]);
        assert_eq!(one.len(), listed.len() / 2);
        let forward: Vec<_> = listed.iter().step_by(2).cloned().collect();
        let got: Vec<_> = one
            .rounds(&plan, &fabric)
            .map(|r| {
                let p = r.jobs[0].pair.clone().unwrap();
                (
                    r.name,
                    plan.endpoint_name(&p.client),
                    plan.endpoint_name(&p.server),
                )
            })
            .collect();
        assert_eq!(got, forward);
        let bidi = per_link(&plan, kind, &segs, Direction::Bidirectional);
        let r = bidi.round(&plan, &fabric, 0, 0).unwrap();
        assert!(r.jobs[0].pair.as_ref().unwrap().bidirectional);
        assert!(bidi.round(&plan, &fabric, 22, 22).is_none());
    }

    #[test]
    fn nth_pair_walks_every_pair_once_in_order() {
        for m in 2..40 {
            let mut k = 0;
            for i in 0..m {
                for j in (i + 1)..m {
                    assert_eq!(nth_pair(m, k), (i, j), "m {m} k {k}");
                    k += 1;
                }
            }
        }
        // the last pair of 5,000 members, without listing 12.5 million
        assert_eq!(nth_pair(5000, 5000 * 4999 / 2 - 1), (4998, 4999));
    }
}
