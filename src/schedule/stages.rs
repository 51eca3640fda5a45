//! The shapes a test kind's rounds come in, and their builders: one pair per link at a time,
//! declared concurrent rounds, all pairs round robin, both halves of each cable at once, and one
//! job over a set of ranks. A kind picks its shapes; a stage turns into rounds on demand.

use crate::plan::{Direction, Endpoint, Plan, SegmentId};
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
    /// All pairs of each segment's members, round robin, generated per round; with `both`,
    /// the same rounds again the other way.
    AllPairs {
        kind: KindId,
        segments: Vec<SegmentId>,
        /// Round-robin rounds (one way).
        rounds: usize,
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
            Stage::AllPairs {
                rounds, direction, ..
            } => {
                if *direction == Direction::Both {
                    rounds * 2
                } else {
                    *rounds
                }
            }
            Stage::Ranks { .. } => 1,
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
            Stage::AllPairs {
                kind,
                segments,
                rounds,
                direction,
            } => {
                // with `both`, the second pass runs every pair of the first the other way
                let back = local >= *rounds;
                let r = local % (*rounds).max(1);
                let mut specs = Vec::new();
                for seg in segments {
                    let members = &plan.segment(*seg).members;
                    for (c, s) in round_pairs(members.len(), r) {
                        let (c, s) = if back { (s, c) } else { (c, s) };
                        specs.push(PairSpec {
                            client: members[c].endpoint.clone(),
                            server: members[s].endpoint.clone(),
                            segment: *seg,
                            group: None,
                            bidirectional: *direction == Direction::Bidirectional,
                        });
                    }
                }
                let total = if back || *direction == Direction::Both {
                    rounds * 2
                } else {
                    *rounds
                };
                (
                    format!("{} all-pairs {}/{}", kind.name(), local + 1, total),
                    *kind,
                    specs,
                )
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
        Some(Round {
            index,
            name,
            kind,
            jobs,
        })
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
/// `direction` runs each the other way too, or both ways at once.
pub fn per_link(plan: &Plan, kind: KindId, segs: &[SegmentId], direction: Direction) -> Stage {
    let mut rounds = Vec::new();
    for s in segs {
        let seg = plan.segment(*s);
        let m = &seg.members;
        for i in 0..m.len() {
            for j in (i + 1)..m.len() {
                // the second end is the client: on a direct or ring link, node[i+1] sends to node[i]
                let name = if m.len() == 2 {
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
                rounds.push((
                    name,
                    vec![PairSpec {
                        client: m[j].endpoint.clone(),
                        server: m[i].endpoint.clone(),
                        segment: *s,
                        group: None,
                        bidirectional: false,
                    }],
                ));
            }
        }
    }
    Stage::Pairs {
        kind,
        rounds: with_direction(rounds, direction),
    }
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
