//! Jobs and rounds: the plan's tests expanded into rounds of concurrent jobs.
//!
//! A round's jobs run together (servers first, clients released at once); rounds run one after
//! another. Every job knows its kind, its ends, a TCP port unique in its round and the resources
//! it occupies. Expansion is lazy per round: an all-pairs plan of 4096 nodes has 4095 rounds of
//! 2048 jobs, and only the round being looked at is built.

mod roundrobin;

use serde::Serialize;

use crate::plan::{Endpoint, NodeId, Plan, ScheduleKind, SegmentId};
use crate::topology::{Fabric, Hop, Path};

pub use roundrobin::{round_count, round_pairs};

/// The first TCP port given to a round's jobs (perftest's default).
pub const BASE_PORT: u16 = 18515;

/// What a job measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    RdmaBw,
    RdmaBwBoth,
    RdmaLat,
    Iperf3,
    Nccl,
}

impl TestKind {
    pub fn name(self) -> &'static str {
        match self {
            TestKind::RdmaBw => "rdma-bw",
            TestKind::RdmaBwBoth => "rdma-bw-both",
            TestKind::RdmaLat => "rdma-lat",
            TestKind::Iperf3 => "iperf3",
            TestKind::Nccl => "nccl",
        }
    }
}

/// A client/server pair over one segment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub client: Endpoint,
    pub server: Endpoint,
    pub segment: SegmentId,
    pub path: Path,
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// Unique in the run, safe as a file name: `rdma-bw-r003-j01`.
    pub id: String,
    pub kind: TestKind,
    pub round: usize,
    /// TCP port, unique within the round.
    pub port: u16,
    pub pair: Option<Pair>,
    /// Index into `plan.tests.nccl`.
    pub nccl: Option<usize>,
    /// Node halves this job occupies (exclusive within a round).
    pub resources: Vec<Endpoint>,
    /// Jobs with the same group are judged together (both halves of one cable).
    pub group: Option<String>,
}

impl Job {
    /// `gb10-02.f0.a -> gb10-01.f0.a` or the NCCL test name.
    pub fn label(&self, plan: &Plan) -> String {
        if let Some(p) = &self.pair {
            format!(
                "{} -> {}",
                plan.endpoint_name(&p.client),
                plan.endpoint_name(&p.server)
            )
        } else if let Some(i) = self.nccl {
            let t = &plan.tests.nccl[i];
            format!(
                "{} ({}, {} ranks)",
                t.name,
                t.collective.binary(),
                t.nodes.len()
            )
        } else {
            self.id.clone()
        }
    }

    /// The nodes the job runs on.
    pub fn nodes(&self, plan: &Plan) -> Vec<NodeId> {
        if let Some(p) = &self.pair {
            vec![p.server.node, p.client.node]
        } else if let Some(i) = self.nccl {
            plan.tests.nccl[i].nodes.clone()
        } else {
            Vec::new()
        }
    }

    /// Does `--only`/`--skip` selector `sel` name this job (test kind, node, link, round or
    /// NCCL test name)?
    pub fn matches(&self, plan: &Plan, round_name: &str, sel: &str) -> bool {
        if sel == self.kind.name() || sel == round_name || sel == self.id {
            return true;
        }
        if self.nodes(plan).iter().any(|n| plan.node(*n).name == sel) {
            return true;
        }
        if let Some(p) = &self.pair {
            let seg = plan.segment(p.segment);
            if seg.name == sel || plan.cables[seg.cable].name == sel {
                return true;
            }
        }
        if let Some(i) = self.nccl {
            return plan.tests.nccl[i].name == sel;
        }
        false
    }
}

/// Jobs that start together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round {
    pub index: usize,
    pub name: String,
    pub kind: TestKind,
    pub jobs: Vec<Job>,
}

/// One stage of the schedule: a list of rounds, materialised or generated on demand.
#[derive(Debug)]
enum Stage {
    /// Rounds given as (name, pairs): small, materialised.
    Pairs {
        kind: TestKind,
        rounds: Vec<(String, Vec<PairSpec>)>,
    },
    /// All pairs of each segment's members, round robin, generated per round.
    AllPairs {
        kind: TestKind,
        segments: Vec<SegmentId>,
        rounds: usize,
    },
    /// One NCCL test.
    Nccl { test: usize },
}

#[derive(Debug, Clone)]
struct PairSpec {
    client: Endpoint,
    server: Endpoint,
    segment: SegmentId,
    group: Option<String>,
}

/// The expanded schedule of a plan.
#[derive(Debug)]
pub struct Schedule {
    stages: Vec<Stage>,
    /// Cumulative round count at the start of each stage.
    offsets: Vec<usize>,
    total: usize,
}

impl Schedule {
    /// Expand a plan's tests into rounds. Order: bandwidth per half (always first: a throttled
    /// link makes every later number meaningless), both halves, latency, iperf3, NCCL.
    pub fn expand(plan: &Plan) -> Schedule {
        let mut stages = Vec::new();
        if let Some(t) = &plan.tests.rdma_bw {
            let segs = selected_segments(plan, &t.halves);
            match t.schedule {
                ScheduleKind::PerLink => stages.push(per_link(plan, TestKind::RdmaBw, &segs)),
                ScheduleKind::Rounds => stages.push(Stage::Pairs {
                    kind: TestKind::RdmaBw,
                    rounds: t
                        .rounds
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
                }),
                ScheduleKind::AllPairs => {
                    let rounds = segs
                        .iter()
                        .map(|s| round_count(plan.segment(*s).members.len()))
                        .max()
                        .unwrap_or(0);
                    stages.push(Stage::AllPairs {
                        kind: TestKind::RdmaBw,
                        segments: segs,
                        rounds,
                    });
                }
            }
        }
        if let Some(t) = &plan.tests.rdma_bw_both {
            stages.push(both_halves(plan, &t.halves));
        }
        if let Some(t) = &plan.tests.rdma_lat {
            stages.push(per_link(
                plan,
                TestKind::RdmaLat,
                &selected_segments(plan, &t.halves),
            ));
        }
        if let Some(t) = &plan.tests.iperf3 {
            stages.push(per_link(
                plan,
                TestKind::Iperf3,
                &selected_segments(plan, &t.halves),
            ));
        }
        for i in 0..plan.tests.nccl.len() {
            stages.push(Stage::Nccl { test: i });
        }
        let mut offsets = Vec::new();
        let mut total = 0;
        for s in &stages {
            offsets.push(total);
            total += match s {
                Stage::Pairs { rounds, .. } => rounds.len(),
                Stage::AllPairs { rounds, .. } => *rounds,
                Stage::Nccl { .. } => 1,
            };
        }
        Schedule {
            stages,
            offsets,
            total,
        }
    }

    /// Number of rounds.
    pub fn len(&self) -> usize {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Build round `index` (0-based).
    pub fn round(&self, plan: &Plan, fabric: &Fabric, index: usize) -> Option<Round> {
        if index >= self.total {
            return None;
        }
        let si = self.offsets.partition_point(|o| *o <= index) - 1;
        let local = index - self.offsets[si];
        let (name, kind, specs, nccl) = match &self.stages[si] {
            Stage::Pairs { kind, rounds } => {
                let (name, specs) = &rounds[local];
                (name.clone(), *kind, specs.clone(), None)
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
                    None,
                )
            }
            Stage::Nccl { test } => (
                format!("nccl {}", plan.tests.nccl[*test].name),
                TestKind::Nccl,
                Vec::new(),
                Some(*test),
            ),
        };
        let mut jobs = Vec::new();
        for (j, spec) in specs.into_iter().enumerate() {
            let path = fabric
                .path(plan, &spec.client, &spec.server)
                .unwrap_or(Path {
                    hops: Vec::new(),
                    switches: Vec::new(),
                });
            jobs.push(Job {
                id: format!("{}-r{:03}-j{:02}", kind.name(), index + 1, j + 1),
                kind,
                round: index,
                port: BASE_PORT + j as u16,
                resources: vec![spec.client.clone(), spec.server.clone()],
                pair: Some(Pair {
                    client: spec.client,
                    server: spec.server,
                    segment: spec.segment,
                    path,
                }),
                nccl: None,
                group: spec.group,
            });
        }
        if let Some(test) = nccl {
            let t = &plan.tests.nccl[test];
            let mut is_rank = vec![false; plan.nodes.len()];
            for n in &t.nodes {
                if let Some(x) = is_rank.get_mut(n.0) {
                    *x = true;
                }
            }
            let resources = plan
                .segments
                .iter()
                .filter(|s| t.halves.is_empty() || t.halves.contains(&s.half))
                .flat_map(|s| s.members.iter())
                .filter(|m| is_rank.get(m.endpoint.node.0).copied().unwrap_or(false))
                .map(|m| m.endpoint.clone())
                .collect();
            jobs.push(Job {
                id: format!("nccl-r{:03}-{}", index + 1, t.name),
                kind: TestKind::Nccl,
                round: index,
                port: BASE_PORT,
                pair: None,
                nccl: Some(test),
                resources,
                group: None,
            });
        }
        Some(Round {
            index,
            name,
            kind,
            jobs,
        })
    }

    /// Every round in order (built one at a time).
    pub fn rounds<'a>(
        &'a self,
        plan: &'a Plan,
        fabric: &'a Fabric,
    ) -> impl Iterator<Item = Round> + 'a {
        (0..self.total).filter_map(move |i| self.round(plan, fabric, i))
    }
}

fn selected_segments(plan: &Plan, halves: &[String]) -> Vec<SegmentId> {
    plan.segments
        .iter()
        .filter(|s| halves.is_empty() || halves.contains(&s.half))
        .map(|s| s.id)
        .collect()
}

/// One job per link alone. A switched segment's "links" are its member pairs, one at a time.
fn per_link(plan: &Plan, kind: TestKind, segs: &[SegmentId]) -> Stage {
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

/// Both halves of each cable at once: one round per node pair, one job per half.
fn both_halves(plan: &Plan, halves: &[String]) -> Stage {
    // group 2-member segments by their (node, port) ends; switched segments pair members
    // (0,1), (2,3), ...
    let mut groups: Vec<(String, Vec<PairSpec>)> = Vec::new();
    let mut add = |key: String, name: String, spec: PairSpec| {
        if let Some((_, v)) = groups.iter_mut().find(|(k, _)| *k == key) {
            v.push(spec);
        } else {
            let _ = name;
            groups.push((key, vec![spec]));
        }
    };
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
            add(
                key.clone(),
                key.clone(),
                PairSpec {
                    client: m[c].endpoint.clone(),
                    server: m[s].endpoint.clone(),
                    segment: seg.id,
                    group: Some(key),
                },
            );
        }
    }
    Stage::Pairs {
        kind: TestKind::RdmaBwBoth,
        rounds: groups
            .into_iter()
            .map(|(k, v)| (format!("rdma-bw-both {k}"), v))
            .collect(),
    }
}

/// ISL directions a round loads, with the flows on each: for `plan` output and the model.
pub fn isl_load(round: &Round) -> Vec<((crate::plan::IslId, crate::plan::SwitchId), usize)> {
    let mut load: Vec<((crate::plan::IslId, crate::plan::SwitchId), usize)> = Vec::new();
    for j in &round.jobs {
        if let Some(p) = &j.pair {
            for h in &p.path.hops {
                if let Hop::Isl { isl, from } = h {
                    match load.iter_mut().find(|(k, _)| *k == (*isl, *from)) {
                        Some((_, n)) => *n += 1,
                        None => load.push(((*isl, *from), 1)),
                    }
                }
            }
        }
    }
    load
}
