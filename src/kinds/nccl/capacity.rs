//! What an NCCL collective should reach on a healthy fabric: its bus bandwidth at each message
//! size and its small-message time, from the ring over the test's ranks, the halves each hop
//! rides, the ISLs it crosses and the rank count. Pure.
//!
//! The model: `time(S) = t0 + S * F / B`, so `busbw(S) = B * S F / (S F + t0 B)`, where `F` is the
//! collective's bus factor (all_reduce `2(n-1)/n`, all_gather `(n-1)/n`, sendrecv 1), `B` the
//! ring's bottleneck hop (the sum of its lanes, each half at NCCL's share of its perftest rate,
//! an ISL direction shared fairly and losing to congestion control) times the collective's
//! efficiency, and `t0` the small-message latency, which grows with the ranks (a ring of n
//! steps). Calibrated on the field figures (DOMAIN.md):
//!
//! | figure | measured | model |
//! |---|---|---|
//! | NCCL over one GB10 half / both halves | 98 / 161-190 Gb/s | 95 Gb/s a lane (85% of 111.9) |
//! | two GB10 boxes, all_gather busbw at large sizes | 23.74 GB/s | 23.75 (two lanes) |
//! | two boxes, one half listed, all_reduce averaged over 8 MiB..4 GiB | ~10.2 GB/s | 10.1 (efficiency 0.85) |
//! | two boxes, one half listed, sendrecv 8 MiB..4 GiB | ~9 GB/s | 9.0 (efficiency 0.76) |
//! | three boxes in a ring, all_gather at 16 GiB | 20.95-22.19 GB/s | 21.4 (efficiency 0.9) |
//! | three-box ring, all_gather averaged over 1 MiB..1 GiB | 15.49 GB/s | ~19.6: the model ramps up faster than NCCL does; only the largest sizes are gated |
//! | 16 KiB all_reduce, two boxes | ~30 us | 29.7 us |
//! | TCP fallback (NET/Socket) | 1-3 GB/s | FAILs the default gate (40% of expected) |

use super::section::{Collective, NcclTest};
use crate::plan::{Endpoint, IslId, NodeId, Plan, SwitchId};
use crate::topology::Fabric;

/// NCCL's usable share of a RoCE half's perftest rate: 95 of 111.9 Gb/s (98 seen with one half,
/// 190 with two).
pub const HALF_SHARE: f64 = 95.0 / 111.9;

/// The bus factor of a collective over `n` ranks: bus bandwidth = algorithm bandwidth x factor.
pub fn bus_factor(c: Collective, n: usize) -> f64 {
    let nf = n.max(1) as f64;
    match c {
        Collective::AllReduce => 2.0 * (nf - 1.0) / nf,
        Collective::AllGather => (nf - 1.0) / nf,
        Collective::Sendrecv => 1.0,
    }
}

/// The small-message latency of a collective over `n` ranks, us: a ring of n steps.
pub fn base_latency_us(c: Collective, n: usize) -> f64 {
    let nf = n.max(1) as f64;
    match c {
        Collective::AllReduce => 22.0 + 3.5 * nf,
        Collective::AllGather => 18.0 + 3.0 * nf,
        Collective::Sendrecv => 20.0,
    }
}

/// The share of the ring's bottleneck a collective reaches at large sizes, from the field: a
/// GB10 pair's all_reduce reaches ~10.2 of 11.9 GB/s on one half (161 of 190 Gb/s on two),
/// sendrecv ~9 of 11.9, all_gather 23.74 of 23.75 on two halves, and a switchless ring of three
/// 21.5 of 23.75.
pub fn efficiency(c: Collective, n: usize) -> f64 {
    match c {
        Collective::AllReduce => 0.85,
        Collective::Sendrecv => 0.76,
        Collective::AllGather if n > 2 => 0.9,
        Collective::AllGather => 1.0,
    }
}

/// What the model expects of one NCCL test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclExpected {
    /// The bottleneck bus bandwidth at large sizes, GB/s.
    pub peak_gbs: f64,
    /// The small-message latency, us.
    pub t0_us: f64,
    /// The collective's bus factor.
    pub factor: f64,
}

impl NcclExpected {
    /// Time of one operation on `bytes`, us.
    pub fn time_us(&self, bytes: u64) -> f64 {
        let wire = bytes as f64 * self.factor;
        self.t0_us + wire / (self.peak_gbs.max(1e-9) * 1e3)
    }

    /// Bus bandwidth at `bytes`, GB/s.
    pub fn busbw_gbs(&self, bytes: u64) -> f64 {
        let t = self.time_us(bytes);
        if t <= 0.0 {
            return 0.0;
        }
        bytes as f64 / t / 1e3 * self.factor
    }
}

/// The halves of `node` on the test's segments, with their switch.
fn halves_of<'p>(
    plan: &'p Plan,
    t: &NcclTest,
    node: NodeId,
) -> Vec<(&'p Endpoint, Option<SwitchId>)> {
    plan.segments
        .iter()
        .filter(|s| t.halves.is_empty() || t.halves.contains(&s.half))
        .flat_map(|s| s.members.iter())
        .filter(|m| m.endpoint.node == node)
        .map(|m| (&m.endpoint, m.switch))
        .collect()
}

/// The expectation of NCCL test `t` on a healthy fabric: its ring (ranks in order, the last back
/// to the first), each hop the lanes (halves) the two ranks share a segment on.
pub fn expected(plan: &Plan, fabric: &Fabric, t: &NcclTest) -> NcclExpected {
    let n = t.nodes.len();
    let factor = bus_factor(t.collective, n);
    let t0_us = base_latency_us(t.collective, n);
    let half_rate = |e: &Endpoint| {
        plan.profile_of(e.node)
            .half_rate_gbps
            .unwrap_or(crate::capacity::DEFAULT_HALF_GBPS)
    };
    // per hop: its lanes (Gb/s) and the ISL directions each lane crosses
    type Lane = (f64, Vec<(IslId, SwitchId)>);
    let mut hops: Vec<Vec<Lane>> = Vec::new();
    let mut isl_users: Vec<((IslId, SwitchId), f64, usize)> = Vec::new();
    for r in 0..n {
        let (a, b) = (t.nodes[r], t.nodes[(r + 1) % n]);
        if a == b {
            continue;
        }
        let mut lanes = Vec::new();
        for (ea, _) in halves_of(plan, t, a) {
            for (eb, _) in halves_of(plan, t, b)
                .into_iter()
                .filter(|(e, _)| e.half == ea.half)
            {
                let Some(path) = fabric.path(plan, ea, eb) else {
                    continue;
                };
                let mut rate = half_rate(ea).min(half_rate(eb)) * HALF_SHARE;
                if !path.switches.is_empty() {
                    rate *= 1.0 - plan.capacity.switch_penalty_pct / 100.0;
                }
                let isls: Vec<(IslId, SwitchId)> = path.isl_hops().collect();
                for h in &isls {
                    match isl_users.iter_mut().find(|(k, _, _)| k == h) {
                        Some((_, sum, count)) => {
                            *sum += rate;
                            *count += 1;
                        }
                        None => isl_users.push((*h, rate, 1)),
                    }
                }
                lanes.push((rate, isls));
            }
        }
        hops.push(lanes);
    }
    // an ISL direction carrying more than it can scales every lane on it down (two or more
    // flows on it lose to congestion control, as in the flow model)
    let scale = |h: &(IslId, SwitchId)| -> f64 {
        let Some((_, sum, count)) = isl_users.iter().find(|(k, _, _)| k == h) else {
            return 1.0;
        };
        let eff = if *count >= 2 {
            plan.capacity.efficiency
        } else {
            1.0
        };
        let cap = plan.isls[h.0.0].capacity_gbps * eff;
        if *sum > cap { cap / sum } else { 1.0 }
    };
    let bottleneck_gbps = hops
        .iter()
        .map(|lanes| {
            lanes
                .iter()
                .map(|(rate, isls)| rate * isls.iter().map(scale).fold(1.0, f64::min))
                .sum::<f64>()
        })
        .fold(f64::INFINITY, f64::min);
    let peak_gbs = if bottleneck_gbps.is_finite() {
        bottleneck_gbps / 8.0 * efficiency(t.collective, n)
    } else {
        0.0
    };
    NcclExpected {
        peak_gbs,
        t0_us,
        factor,
    }
}
