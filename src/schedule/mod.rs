//! Jobs and rounds: the plan's tests expanded into rounds of concurrent jobs.
//!
//! A round's jobs run together (servers first, clients released at once); rounds run one after
//! another. Every job knows its kind, its ends, a TCP port unique in its round and the resources
//! it occupies. Expansion is lazy per round: an all-pairs plan of 4096 nodes has 4095 rounds of
//! 2048 jobs, and only the round being looked at is built.
//!
//! This module knows no test kind: each kind (in `crate::kinds`) says which [`Stage`]s its plan
//! sections expand to, with the builders in [`stages`]; a [`Schedule`] is their concatenation.

mod roundrobin;
pub mod sampled;
pub mod stages;

use serde::Serialize;

use crate::plan::{Endpoint, NodeId, Plan, SegmentId};
use crate::topology::{Fabric, Hop, Path};

pub use roundrobin::{round_count, round_pairs};
pub use sampled::Coverage;
pub use stages::{PairSpec, Stage, pair_round};

/// The first TCP port given to a round's jobs (perftest's default).
pub const BASE_PORT: u16 = 18515;

/// Which test kind a job belongs to: the kind's name (`rdma-bw`), as the registry in
/// `crate::kinds` knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct KindId(pub &'static str);

impl KindId {
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for KindId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// A client/server pair over one segment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub client: Endpoint,
    pub server: Endpoint,
    pub segment: SegmentId,
    pub path: Path,
    /// Both ways at once (perftest's `-b`): the client's reading is the sum of both directions.
    pub bidirectional: bool,
}

/// A job over a set of nodes launched together (an NCCL test): which test of its kind, its
/// name, its label and its nodes in rank order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranks {
    /// Index of the test among its kind's sections.
    pub test: usize,
    pub name: String,
    pub label: String,
    pub nodes: Vec<NodeId>,
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// Unique in the run, safe as a file name: `rdma-bw-r003-j01`.
    pub id: String,
    pub kind: KindId,
    pub round: usize,
    /// TCP port, unique within the round.
    pub port: u16,
    pub pair: Option<Pair>,
    pub ranks: Option<Ranks>,
    /// Node halves this job occupies (exclusive within a round).
    pub resources: Vec<Endpoint>,
    /// Jobs with the same group are judged together (both halves of one cable).
    pub group: Option<String>,
}

impl Job {
    /// The flow its pair measures (client to server; an end alone to itself), when it has one
    /// (both ways at once, perftest's `-b`, is no one flow).
    pub fn flow(&self, plan: &Plan) -> Option<crate::gate::flow::Flow> {
        let p = self.pair.as_ref().filter(|p| !p.bidirectional)?;
        Some(plan.flow_between(&p.client, &p.server))
    }

    /// `gb10-02.f0.a -> gb10-01.f0.a` or the NCCL test's label.
    pub fn label(&self, plan: &Plan) -> String {
        if let Some(p) = self.pair.as_ref().filter(|p| p.client == p.server) {
            format!("{} loopback", plan.endpoint_name(&p.client))
        } else if let Some(p) = &self.pair {
            format!(
                "{} {} {}",
                plan.endpoint_name(&p.client),
                if p.bidirectional { "<->" } else { "->" },
                plan.endpoint_name(&p.server)
            )
        } else if let Some(r) = &self.ranks {
            r.label.clone()
        } else {
            self.id.clone()
        }
    }

    /// The nodes the job runs on.
    pub fn nodes(&self) -> Vec<NodeId> {
        if let Some(p) = &self.pair {
            vec![p.server.node, p.client.node]
        } else if let Some(r) = &self.ranks {
            r.nodes.clone()
        } else {
            Vec::new()
        }
    }

    /// Does `--only`/`--skip` selector `sel` name this job (test kind, node, link, cable, round
    /// or NCCL test name)?
    pub fn matches(&self, plan: &Plan, round_name: &str, sel: &str) -> bool {
        if sel == self.kind.name() || sel == round_name || sel == self.id {
            return true;
        }
        if self.nodes().iter().any(|n| plan.node(*n).name == sel) {
            return true;
        }
        if let Some(p) = &self.pair {
            let seg = plan.segment(p.segment);
            if seg.name == sel || plan.cables[seg.cable].name == sel {
                return true;
            }
        }
        if let Some(r) = &self.ranks {
            return r.name == sel;
        }
        false
    }
}

/// Jobs that start together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round {
    pub index: usize,
    pub name: String,
    pub kind: KindId,
    pub jobs: Vec<Job>,
}

/// The words after the kind in a sampled round's name (`rdma-bw sampled 3/8`).
pub const SAMPLED: &str = "sampled";
/// The words after the kind in a re-test round's name (`rdma-bw re-test 1/2`).
pub const RETEST: &str = "re-test";
/// The words after the kind in a full-rate round's name (`rdma-bw full-rate 1/1`): halves the
/// sampled rounds measured only at shares too small to show a fault, measured where they can.
pub const FULL_RATE: &str = "full-rate";

impl Round {
    /// A sampled, full-rate or re-test round, whose flows may have run in another round of the
    /// run.
    pub fn repeats_flows(&self) -> bool {
        self.name
            .strip_prefix(self.kind.name())
            .map(str::trim_start)
            .is_some_and(|rest| {
                [SAMPLED, FULL_RATE, RETEST]
                    .iter()
                    .any(|w| rest.starts_with(w))
            })
    }
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
    /// The schedule made of `stages`, in order.
    pub fn new(stages: Vec<Stage>) -> Schedule {
        let mut offsets = Vec::with_capacity(stages.len());
        let mut total = 0;
        for s in &stages {
            offsets.push(total);
            total += s.rounds();
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
        self.stages[si].round(plan, fabric, index, index - self.offsets[si])
    }

    /// The stage round `index` is part of, and the schedule's indices of its rounds.
    pub fn stage_of(&self, index: usize) -> Option<(&Stage, std::ops::Range<usize>)> {
        if index >= self.total {
            return None;
        }
        let si = self.offsets.partition_point(|o| *o <= index) - 1;
        let start = self.offsets[si];
        Some((&self.stages[si], start..start + self.stages[si].rounds()))
    }

    /// What each sampled stage's rounds cover: ports in each role, node pairs, ISL directions.
    /// Builds every round of those stages (K of them, O(members) each).
    pub fn coverage(&self, plan: &Plan, fabric: &Fabric) -> Vec<Coverage> {
        use std::collections::HashSet;
        let mut out = Vec::new();
        for (si, stage) in self.stages.iter().enumerate() {
            let Stage::Sampled {
                kind,
                segments,
                sampling,
                ..
            } = stage
            else {
                continue;
            };
            let (mut client, mut server) = (HashSet::new(), HashSet::new());
            let mut pairs: HashSet<(NodeId, NodeId)> = HashSet::new();
            let mut isl = HashSet::new();
            for local in 0..stage.rounds() {
                let index = self.offsets[si] + local;
                let Some(round) = stage.round(plan, fabric, index, local) else {
                    continue;
                };
                for p in round.jobs.iter().filter_map(|j| j.pair.as_ref()) {
                    client.insert(p.client.clone());
                    server.insert(p.server.clone());
                    if p.bidirectional {
                        client.insert(p.server.clone());
                        server.insert(p.client.clone());
                    }
                    let (a, b) = (p.client.node, p.server.node);
                    pairs.insert((a.min(b), a.max(b)));
                    for h in p.path.isl_hops() {
                        isl.insert(h);
                        if p.bidirectional {
                            let i = &plan.isls[h.0.0];
                            isl.insert((h.0, if i.a == h.1 { i.b } else { i.a }));
                        }
                    }
                }
            }
            let mut ports: HashSet<&Endpoint> = HashSet::new();
            let mut nodes: HashSet<NodeId> = HashSet::new();
            let mut directions = HashSet::new();
            for seg in segments {
                for m in &plan.segment(*seg).members {
                    ports.insert(&m.endpoint);
                    nodes.insert(m.endpoint.node);
                }
                directions.extend(
                    sampled::Layout::new(plan, fabric, *seg)
                        .directions()
                        .iter()
                        .copied(),
                );
            }
            let n = nodes.len();
            out.push(Coverage {
                kind: kind.name(),
                pairings: sampling.rounds,
                seed: sampling.seed,
                rounds: stage.rounds(),
                ports: ports.len(),
                ports_as_client: client.len(),
                ports_as_server: server.len(),
                ports_both_roles: client.intersection(&server).count(),
                node_pairs: pairs.len(),
                node_pairs_total: n * n.saturating_sub(1) / 2,
                isl_directions: isl.len(),
                isl_directions_total: directions.len(),
            });
        }
        out
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
