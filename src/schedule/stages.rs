//! The shapes a test kind's rounds come in, and their builders: one pair per link at a time,
//! declared concurrent rounds, all pairs round robin, both halves of each cable at once, and one
//! job over a set of ranks. A kind picks its shapes; a stage turns into rounds on demand.

use crate::plan::{Endpoint, Plan, SegmentId};
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
}

/// One stage of a schedule: a list of rounds, materialised or generated on demand.
#[derive(Debug)]
pub enum Stage {
    /// Rounds given as (name, pairs): small, materialised.
    Pairs {
        kind: KindId,
        rounds: Vec<(String, Vec<PairSpec>)>,
    },
    /// All pairs of each segment's members, round robin, generated per round.
    AllPairs {
        kind: KindId,
        segments: Vec<SegmentId>,
        rounds: usize,
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
            Stage::AllPairs { rounds, .. } => *rounds,
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
            } => {
                let mut specs = Vec::new();
                for seg in segments {
                    let members = &plan.segment(*seg).members;
                    for (c, s) in round_pairs(members.len(), local) {
                        specs.push(PairSpec {
                            client: members[c].endpoint.clone(),
                            server: members[s].endpoint.clone(),
                            segment: *seg,
                            group: None,
                        });
                    }
                }
                (
                    format!("{} all-pairs {}/{}", kind.name(), local + 1, rounds),
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

/// One job per link alone. A switched segment's "links" are its member pairs, one at a time.
pub fn per_link(plan: &Plan, kind: KindId, segs: &[SegmentId]) -> Stage {
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
                    }],
                ));
            }
        }
    }
    Stage::Pairs { kind, rounds }
}

/// All pairs of each segment, round robin: n-1 concurrent rounds for n members.
pub fn all_pairs(plan: &Plan, kind: KindId, segs: Vec<SegmentId>) -> Stage {
    let rounds = segs
        .iter()
        .map(|s| round_count(plan.segment(*s).members.len()))
        .max()
        .unwrap_or(0);
    Stage::AllPairs {
        kind,
        segments: segs,
        rounds,
    }
}

/// Rounds the plan declares, flow by flow.
pub fn declared(kind: KindId, rounds: &[crate::plan::DeclaredRound]) -> Stage {
    Stage::Pairs {
        kind,
        rounds: rounds
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
                        })
                        .collect(),
                )
            })
            .collect(),
    }
}

/// Both halves of each cable at once: one round per node pair, one job per half, the jobs of a
/// round grouped by their (node, port) ends.
pub fn both_halves(plan: &Plan, kind: KindId, halves: &[String]) -> Stage {
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
            };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(spec),
                None => groups.push((key, vec![spec])),
            }
        }
    }
    Stage::Pairs {
        kind,
        rounds: groups
            .into_iter()
            .map(|(k, v)| (format!("{} {k}", kind.name()), v))
            .collect(),
    }
}
