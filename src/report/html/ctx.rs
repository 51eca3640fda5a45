//! What every section of the page looks up: node order, the baseline's values by gate, the
//! plan's endpoints and paths, the bandwidth verdicts with their flows.

use std::collections::HashMap;

use serde::Serialize;

use super::Inputs;
use crate::compare::{self, Flow, baseline as base};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::Metric;
use crate::kinds;
use crate::plan::{Endpoint, Plan};
use crate::results::{JobResult, RunResults};
use crate::topology::Fabric;

/// Shared lookups: node order, baseline values by gate, the plan's endpoints and paths.
pub(super) struct Ctx<'a> {
    pub(super) r: &'a RunResults,
    pub(super) plan: Option<&'a Plan>,
    pub(super) plan_note: Option<String>,
    pub(super) fabric: Option<Fabric>,
    pub(super) baseline: Option<&'a RunResults>,
    pub(super) nodes: Vec<String>,
    /// A node's place in `nodes` (the first).
    order: HashMap<String, usize>,
    /// The plan's segment members' endpoints by name (the first of a name).
    endpoints: HashMap<String, Endpoint>,
    /// Original gate -> the baseline's value.
    pub(super) was: HashMap<String, f64>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(i: &Inputs<'a>) -> Ctx<'a> {
        let r = i.results;
        let mut nodes: Vec<String> = match i.plan {
            Some(p) => p.nodes.iter().map(|n| n.name.clone()).collect(),
            None => Vec::new(),
        };
        let mut seen: std::collections::HashSet<String> = nodes.iter().cloned().collect();
        for n in compare::node_names(r) {
            if seen.insert(n.clone()) {
                nodes.push(n);
            }
        }
        let mut order = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            order.entry(n.clone()).or_insert(i);
        }
        let mut endpoints = HashMap::new();
        if let Some(p) = i.plan {
            for m in p.segments.iter().flat_map(|s| s.members.iter()) {
                endpoints
                    .entry(p.endpoint_name(&m.endpoint))
                    .or_insert_with(|| m.endpoint.clone());
            }
        }
        let was = base::of(r)
            .into_iter()
            .filter_map(|(_, v)| {
                let g = v.gate.strip_suffix(base::SUFFIX)?;
                Some((g.to_string(), v.expected?))
            })
            .collect();
        Ctx {
            r,
            plan: i.plan,
            plan_note: i.plan_note.clone(),
            fabric: i.plan.map(Fabric::build),
            baseline: i.baseline,
            nodes,
            order,
            endpoints,
            was,
        }
    }

    pub(super) fn endpoint(&self, name: &str) -> Option<Endpoint> {
        self.endpoints.get(name).cloned()
    }

    /// The ISLs a flow crosses, each with the switch it left and the one it reached; `None`
    /// without a plan.
    pub(super) fn isls(&self, f: &Flow) -> Option<Vec<IslHop>> {
        let (p, fab) = (self.plan?, self.fabric.as_ref()?);
        let halves: Vec<String> = if f.half == "both" {
            ["a", "b"]
                .iter()
                .map(|x| x.to_string())
                .filter(|x| {
                    self.endpoint(&format!("{}.{}.{x}", f.src, f.src_port))
                        .is_some()
                })
                .collect()
        } else {
            vec![f.half.clone()]
        };
        let mut out = Vec::new();
        for half in halves {
            let c = self.endpoint(&format!("{}.{}.{half}", f.src, f.src_port))?;
            let s = self.endpoint(&format!("{}.{}.{half}", f.dst, f.dst_port))?;
            let path = fab.path(p, &c, &s)?;
            for (isl, from) in path.isl_hops() {
                let i = &p.isls[isl.0];
                let to = if i.a == from { i.b } else { i.a };
                let w = IslHop {
                    name: i.name.clone(),
                    from: p.switches[from.0].name.clone(),
                    to: p.switches[to.0].name.clone(),
                };
                if !out.contains(&w) {
                    out.push(w);
                }
            }
        }
        Some(out)
    }

    /// The pass bound of `metric` for a value expected at `expected`.
    pub(super) fn pass_bound(&self, metric: Metric, expected: Option<f64>) -> Option<f64> {
        self.plan?
            .gate(kinds::metric(metric)?)
            .pass?
            .resolve(expected)
    }

    pub(super) fn node_order(&self, n: &str) -> usize {
        self.order.get(n).copied().unwrap_or(usize::MAX)
    }
}

/// An ISL a flow crossed: its name, the switch it left, the switch it reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct IslHop {
    pub(super) name: String,
    pub(super) from: String,
    pub(super) to: String,
}

/// One measured bandwidth verdict with its flow.
pub(super) struct BwItem<'a> {
    pub(super) job: &'a JobResult,
    pub(super) v: &'a Verdict,
    pub(super) flow: Flow,
}

pub(super) fn bw_items<'a>(ctx: &Ctx<'a>) -> Vec<BwItem<'a>> {
    let mut out = Vec::new();
    for j in &ctx.r.jobs {
        // the kinds whose pairs are in the node x node matrix
        if kinds::of(j).and_then(|k| k.matrix()).is_none() {
            continue;
        }
        for v in &j.verdicts {
            // a bandwidth gate, or the pair that could not be measured at all
            let unmeasured = v.metric.is_none()
                && v.measured.is_none()
                && v.outcome == Outcome::Fail
                && !base::is_baseline_verdict(v);
            if v.metric.is_none() && !unmeasured {
                continue;
            }
            if let Some(flow) = compare::flow_of_verdict(v, &ctx.nodes) {
                out.push(BwItem { job: j, v, flow });
            }
        }
    }
    out
}
