//! The capacity model: each flow's expected bandwidth in its round, as its max-min fair share
//! along its path. Pure.
//!
//! Resources: each node half sends and receives at the profile's half rate (less a small
//! penalty per switch crossed); both halves of one port share the port rate, per direction;
//! each ISL direction has its capacity (full duplex). An ISL direction oversubscribed by two or
//! more flows delivers only `efficiency` of its capacity: congestion control costs something
//! (the six-node report measured 163.8 of 200 Gb/s for two flows, efficiency 0.82).

use std::collections::HashMap;

use crate::plan::{IslId, NodeId, Plan, SwitchId};
use crate::schedule::{Job, Round, TestKind};
use crate::topology::Hop;

/// A GB10 half's ib_write_bw on a healthy direct cable, when a profile gives no rate.
pub const DEFAULT_HALF_GBPS: f64 = 111.9;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Res {
    /// (node, port, half, transmit?)
    Half(NodeId, String, String, bool),
    /// (node, port, transmit?)
    Port(NodeId, String, bool),
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
    let switched = plan
        .member_of(&pair.client)
        .is_some_and(|(_, m)| m.switch.is_some());
    Some(if switched {
        half * (1.0 - plan.capacity.switch_penalty_pct / 100.0)
    } else {
        half
    })
}

/// Expected Gb/s of each job of a round (None for jobs the model does not cover: NCCL).
pub fn expected(plan: &Plan, round: &Round) -> Vec<Option<f64>> {
    if round.kind == TestKind::Nccl || round.kind == TestKind::RdmaLat {
        return vec![None; round.jobs.len()];
    }
    // flows and the resources each crosses
    let mut caps: HashMap<Res, f64> = HashMap::new();
    let mut flows: Vec<(usize, f64, Vec<Res>)> = Vec::new();
    for (i, job) in round.jobs.iter().enumerate() {
        let (Some(pair), Some(rate)) = (&job.pair, standalone(plan, job)) else {
            continue;
        };
        let mut res = Vec::new();
        for h in &pair.path.hops {
            match h {
                Hop::Tx { endpoint } | Hop::Rx { endpoint } => {
                    let tx = matches!(h, Hop::Tx { .. });
                    let hr = Res::Half(
                        endpoint.node,
                        endpoint.port.clone(),
                        endpoint.half.clone(),
                        tx,
                    );
                    caps.entry(hr.clone()).or_insert(rate);
                    res.push(hr);
                    if let Some(port_rate) = plan.profile_of(endpoint.node).port_rate_gbps {
                        let pr = Res::Port(endpoint.node, endpoint.port.clone(), tx);
                        caps.entry(pr.clone()).or_insert(port_rate);
                        res.push(pr);
                    }
                }
                Hop::Isl { isl, from } => {
                    let r = Res::Isl(*isl, *from);
                    caps.entry(r.clone())
                        .or_insert(plan.isls[isl.0].capacity_gbps);
                    res.push(r);
                }
            }
        }
        flows.push((i, rate, res));
    }
    // ISL directions oversubscribed by two or more flows lose to congestion control
    for (r, cap) in caps.iter_mut() {
        if let Res::Isl(..) = r {
            let crossing: Vec<f64> = flows
                .iter()
                .filter(|f| f.2.contains(r))
                .map(|f| f.1)
                .collect();
            if crossing.len() >= 2 && crossing.iter().sum::<f64>() > *cap {
                *cap *= plan.capacity.efficiency;
            }
        }
    }
    let rates = max_min(&flows, &caps);
    let mut out = vec![None; round.jobs.len()];
    for ((i, _, _), r) in flows.iter().zip(rates) {
        out[*i] = Some(r);
    }
    out
}

/// Progressive filling: raise every unfrozen flow together until a resource (or the flow's
/// own standalone rate) saturates; freeze the flows on it; repeat.
fn max_min(flows: &[(usize, f64, Vec<Res>)], caps: &HashMap<Res, f64>) -> Vec<f64> {
    let n = flows.len();
    let mut rate = vec![0.0f64; n];
    let mut frozen = vec![false; n];
    let mut left: HashMap<&Res, f64> = caps.iter().map(|(k, v)| (k, *v)).collect();
    for _ in 0..=n + caps.len() {
        let active: Vec<usize> = (0..n).filter(|i| !frozen[*i]).collect();
        if active.is_empty() {
            break;
        }
        // the smallest increment that saturates something
        let mut inc = f64::INFINITY;
        for &i in &active {
            inc = inc.min(flows[i].1 - rate[i]);
        }
        for (r, l) in &left {
            let users = active.iter().filter(|i| flows[**i].2.contains(r)).count();
            if users > 0 {
                inc = inc.min(*l / users as f64);
            }
        }
        let inc = inc.max(0.0);
        for &i in &active {
            rate[i] += inc;
            for r in &flows[i].2 {
                if let Some(l) = left.get_mut(r) {
                    *l -= inc;
                }
            }
        }
        for &i in &active {
            let at_own = rate[i] >= flows[i].1 - 1e-9;
            let at_res = flows[i]
                .2
                .iter()
                .any(|r| left.get(r).is_some_and(|l| *l <= 1e-9));
            if at_own || at_res {
                frozen[i] = true;
            }
        }
    }
    rate
}

/// Expected sum of a group (both halves of one cable, per node).
pub fn expected_group(plan: &Plan, round: &Round, group: &str) -> Option<f64> {
    let e = expected(plan, round);
    let v: Vec<f64> = round
        .jobs
        .iter()
        .zip(e)
        .filter(|(j, _)| j.group.as_deref() == Some(group))
        .filter_map(|(_, e)| e)
        .collect();
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum())
    }
}
