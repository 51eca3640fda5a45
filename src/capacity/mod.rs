//! The capacity model: each flow's expected bandwidth in its round, as its max-min fair share
//! along its path. Pure.
//!
//! Resources: each node half sends and receives at the profile's half rate (less a small
//! penalty per switch crossed); both halves of one port share the port rate, per direction;
//! each ISL direction has its capacity (full duplex). An ISL direction oversubscribed by two or
//! more flows delivers only `efficiency` of its capacity: congestion control costs something
//! (the six-node report measured 163.8 of 200 Gb/s for two flows, efficiency 0.82). A half whose
//! PCIe link carries less than its rate (discovery reads the link, [`pcie`] says what it
//! carries) is capped there: [`capped`].

use std::collections::HashMap;

pub mod pcie;

use crate::plan::{CableKind, Endpoint, IslId, NodeId, Plan, SwitchId};
use crate::schedule::{Job, Round};
use crate::topology::Hop;

/// A GB10 half's ib_write_bw on a healthy direct cable, when a profile gives no rate.
pub const DEFAULT_HALF_GBPS: f64 = 111.9;

/// What some halves can carry at most, Gb/s each way (their PCIe links), below their rate.
pub type HalfCaps = HashMap<Endpoint, f64>;

/// `kind_expected` (a round's expected values as its kind says them) with `caps` applied: each
/// job's value scaled by what the max-min model gives it with the capped halves over what it
/// gives it without them. A flow through a capped half is expected at the cap (less its share);
/// the others of the round get what the capped flows leave. Unchanged without caps that touch
/// the round.
pub fn capped(
    plan: &Plan,
    round: &Round,
    kind_expected: Vec<Option<f64>>,
    caps: &HalfCaps,
) -> Vec<Option<f64>> {
    let touched = round.jobs.iter().any(|j| {
        j.pair
            .as_ref()
            .is_some_and(|p| caps.contains_key(&p.client) || caps.contains_key(&p.server))
    });
    if !touched {
        return kind_expected;
    }
    let free = expected_with(plan, round, &HalfCaps::new());
    let held = expected_with(plan, round, caps);
    kind_expected
        .into_iter()
        .zip(free.into_iter().zip(held))
        .map(|(k, (f, h))| match (k, f, h) {
            (Some(k), Some(f), Some(h)) if f > 0.0 => Some(k * h / f),
            (k, _, _) => k,
        })
        .collect()
}

/// A resource flows share, borrowing its names from the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Res<'a> {
    /// (node, port, half, transmit?)
    Half(NodeId, &'a str, &'a str, bool),
    /// (node, port, transmit?)
    Port(NodeId, &'a str, bool),
    Isl(IslId, SwitchId),
}

/// The standalone rate of a flow on its own: its half rate less the switch penalty.
pub fn standalone(plan: &Plan, job: &Job) -> Option<f64> {
    let pair = job.pair.as_ref()?;
    let half = plan
        .profile_of(pair.client.node)
        .half_rate_gbps
        .unwrap_or(DEFAULT_HALF_GBPS)
        .min(
            plan.profile_of(pair.server.node)
                .half_rate_gbps
                .unwrap_or(DEFAULT_HALF_GBPS),
        );
    // the client is a member of the pair's segment; a switched cable lands every member of its
    // segments on a switch, direct and ring cables none (no scan of the segment's members)
    let switched = plan
        .segments
        .get(pair.segment.0)
        .is_some_and(|s| plan.cables[s.cable].kind == CableKind::Switched);
    Some(if switched {
        half * (1.0 - plan.capacity.switch_penalty_pct / 100.0)
    } else {
        half
    })
}

/// A flow of the model: its job, standalone rate and the resources (indices) it crosses, in
/// path order.
struct Flow {
    job: usize,
    rate: f64,
    res: Vec<usize>,
}

/// Expected Gb/s of each client/server job of a round, as bandwidth flows (None for jobs
/// without a pair). Which kinds have an expected bandwidth is theirs to say.
///
/// Linear in the round's jobs and hops per filling step: resources are numbered once, and each
/// keeps the flows crossing it.
pub fn expected(plan: &Plan, round: &Round) -> Vec<Option<f64>> {
    expected_with(plan, round, &HalfCaps::new())
}

/// [`expected`], each half in `caps` carrying at most its cap each way.
pub fn expected_with<'a>(plan: &Plan, round: &'a Round, half_caps: &HalfCaps) -> Vec<Option<f64>> {
    // flows and the resources each crosses
    let mut index: HashMap<Res<'a>, usize> = HashMap::new();
    let mut caps: Vec<f64> = Vec::new();
    let mut is_isl: Vec<bool> = Vec::new();
    let mut flows: Vec<Flow> = Vec::new();
    for (i, job) in round.jobs.iter().enumerate() {
        let (Some(pair), Some(rate)) = (&job.pair, standalone(plan, job)) else {
            continue;
        };
        let mut add = |r: Res<'a>, cap: f64| -> usize {
            *index.entry(r).or_insert_with(|| {
                caps.push(cap);
                is_isl.push(matches!(r, Res::Isl(..)));
                caps.len() - 1
            })
        };
        // a bidirectional job is two flows, one each way; its reading is their sum
        let ways: &[bool] = if pair.bidirectional {
            &[false, true]
        } else {
            &[false]
        };
        for &back in ways {
            let mut res = Vec::with_capacity(pair.path.hops.len() * 2);
            let hops: Box<dyn Iterator<Item = &'a Hop>> = if back {
                Box::new(pair.path.hops.iter().rev())
            } else {
                Box::new(pair.path.hops.iter())
            };
            for h in hops {
                match h {
                    Hop::Tx { endpoint } | Hop::Rx { endpoint } => {
                        // the other way, the receiving end sends
                        let tx = matches!(h, Hop::Tx { .. }) != back;
                        let hr = Res::Half(endpoint.node, &endpoint.port, &endpoint.half, tx);
                        let cap = half_caps.get(endpoint).map_or(rate, |c| rate.min(*c));
                        res.push(add(hr, cap));
                        if let Some(port_rate) = plan.profile_of(endpoint.node).port_rate_gbps {
                            res.push(add(Res::Port(endpoint.node, &endpoint.port, tx), port_rate));
                        }
                    }
                    Hop::Isl { isl, from } => {
                        let i = &plan.isls[isl.0];
                        let from = match (back, i.a == *from) {
                            (false, _) => *from,
                            (true, true) => i.b,
                            (true, false) => i.a,
                        };
                        res.push(add(Res::Isl(*isl, from), i.capacity_gbps));
                    }
                }
            }
            flows.push(Flow { job: i, rate, res });
        }
    }
    // the flows crossing each resource, each once, in flow order
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); caps.len()];
    for (fi, f) in flows.iter().enumerate() {
        for &r in &f.res {
            if users[r].last() != Some(&fi) {
                users[r].push(fi);
            }
        }
    }
    // ISL directions oversubscribed by two or more flows lose to congestion control
    for (r, cap) in caps.iter_mut().enumerate() {
        if is_isl[r] {
            let crossing: Vec<f64> = users[r].iter().map(|f| flows[*f].rate).collect();
            if crossing.len() >= 2 && crossing.iter().sum::<f64>() > *cap {
                *cap *= plan.capacity.efficiency;
            }
        }
    }
    let rates = max_min(&flows, &caps, &users);
    let mut out: Vec<Option<f64>> = vec![None; round.jobs.len()];
    for (f, r) in flows.iter().zip(rates) {
        out[f.job] = Some(out[f.job].unwrap_or(0.0) + r);
    }
    out
}
/// Progressive filling: raise every unfrozen flow together until a resource (or the flow's
/// own standalone rate) saturates; freeze the flows on it; repeat. Each step is linear in
/// flows, hops and resources: a resource's count of unfrozen users is kept, not recounted.
fn max_min(flows: &[Flow], caps: &[f64], users: &[Vec<usize>]) -> Vec<f64> {
    let n = flows.len();
    let mut rate = vec![0.0f64; n];
    let mut frozen = vec![false; n];
    let mut left: Vec<f64> = caps.to_vec();
    let mut active_users: Vec<usize> = users.iter().map(Vec::len).collect();
    let mut active: Vec<usize> = (0..n).collect();
    for _ in 0..=n + caps.len() {
        active.retain(|i| !frozen[*i]);
        if active.is_empty() {
            break;
        }
        // the smallest increment that saturates something
        let mut inc = f64::INFINITY;
        for &i in &active {
            inc = inc.min(flows[i].rate - rate[i]);
        }
        for (l, u) in left.iter().zip(&active_users) {
            if *u > 0 {
                inc = inc.min(*l / *u as f64);
            }
        }
        let inc = inc.max(0.0);
        for &i in &active {
            rate[i] += inc;
            for &r in &flows[i].res {
                left[r] -= inc;
            }
        }
        for &i in &active {
            let at_own = rate[i] >= flows[i].rate - 1e-9;
            let at_res = flows[i].res.iter().any(|r| left[*r] <= 1e-9);
            if at_own || at_res {
                frozen[i] = true;
                let res = &flows[i].res;
                for (k, r) in res.iter().enumerate() {
                    if !res[..k].contains(r) {
                        active_users[*r] -= 1;
                    }
                }
            }
        }
    }
    rate
}
