//! The ring NCCL builds over the ranks: its lanes (device pairs on one wire) per hop, at the
//! rate of their wire, throttle, MTU and ISL, and what a collective achieves on it.

use std::collections::HashMap;

use super::Rank;
use crate::kinds::nccl::capacity as nccl_model;
use crate::kinds::nccl::section::Collective;
use crate::plan::{IslId, SwitchId};
use crate::sim::world::{Dev, World};

/// A firmware-throttled half.
const THROTTLED_GBPS: f64 = 11.4;
/// Traffic forced through an RSTP-blocked ISL.
const BLOCKED_GBPS: f64 = 4.5;
/// NET/Socket over the fabric netdevs, GB/s of bus bandwidth at large sizes.
pub(super) const SOCKET_GBS: f64 = 2.2;

/// One lane of a ring hop: a device pair on one wire (indices into the world's devices) and
/// the rate it carries, Gb/s.
pub(super) struct Lane {
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) gbps: f64,
}

/// What the collective achieves on the ring: nccl-tests' bus factor, the base latency (us)
/// and the bus bandwidth at large sizes (GB/s).
pub(super) struct Speed {
    pub(super) factor: f64,
    pub(super) t0: f64,
    pub(super) bus_gbs: f64,
}

/// The ring's hops, rank r to rank r + 1: the lanes of each (every pair of the two ranks'
/// devices on one wire), at the rate of their wire, throttle, MTU and blocked ISL; then every
/// ISL direction carrying more than it can shared out. No hops for a single rank.
pub(super) fn ring_hops(world: &World, ranks: &[Rank]) -> Vec<Vec<Lane>> {
    let n = ranks.len();
    let mut hops: Vec<Vec<Lane>> = Vec::new();
    if n <= 1 {
        return hops;
    }
    // the lanes (hop, lane) crossing each ISL direction
    let mut isl_load: HashMap<(IslId, SwitchId), Vec<(usize, usize)>> = HashMap::new();
    for r in 0..n {
        let (a, b) = (&ranks[r], &ranks[(r + 1) % n]);
        let mut lanes = Vec::new();
        for &da in &a.ib {
            for &db in &b.ib {
                let (x, y): (&Dev, &Dev) = (&world.devs[da], &world.devs[db]);
                if !world.linked(x, y) {
                    continue;
                }
                // the capacity model's share of the slower end's half, less a switch's cost
                let half = |d: &Dev| {
                    world
                        .plan
                        .profile_of(d.node)
                        .half_rate_gbps
                        .unwrap_or(crate::capacity::DEFAULT_HALF_GBPS)
                };
                let mut g = half(x).min(half(y)) * nccl_model::HALF_SHARE;
                if world.path(x, y).is_some_and(|p| !p.switches.is_empty()) {
                    g *= 1.0 - world.plan.capacity.switch_penalty_pct / 100.0;
                }
                if x.throttled || y.throttled {
                    g = THROTTLED_GBPS;
                }
                if x.mtu < 9000 || y.mtu < 9000 {
                    g *= 0.8;
                }
                for (isl, from) in world.isl_hops(x, y) {
                    if world.isl_blocked(isl) {
                        g = g.min(BLOCKED_GBPS);
                    }
                    isl_load
                        .entry((isl, from))
                        .or_default()
                        .push((r, lanes.len()));
                }
                lanes.push(Lane {
                    from: da,
                    to: db,
                    gbps: g,
                });
            }
        }
        hops.push(lanes);
    }
    share_isls(world, &mut hops, isl_load);
    hops
}

/// An ISL direction carrying more than it can: every lane on it scaled down.
fn share_isls(
    world: &World,
    hops: &mut [Vec<Lane>],
    isl_load: HashMap<(IslId, SwitchId), Vec<(usize, usize)>>,
) {
    for ((isl, _), users) in isl_load {
        let cap = world.plan.isls[isl.0].capacity_gbps
            * if users.len() >= 2 {
                world.plan.capacity.efficiency
            } else {
                1.0
            };
        let sum: f64 = users.iter().map(|(h, l)| hops[*h][*l].gbps).sum();
        if sum > cap {
            for (h, l) in users {
                hops[h][l].gbps *= cap / sum;
            }
        }
    }
}

/// The capacity model's own constants for the collective over `n` ranks (bus factor, base
/// latency, efficiency): the simulated fabric answers what the gates expect of a healthy one.
/// A collective the model does not know: a ring's factor and latency, full efficiency.
pub(super) fn collective_model(coll: &str, n: usize) -> (f64, f64, f64) {
    let collective = match coll {
        "all_reduce" => Some(Collective::AllReduce),
        "all_gather" => Some(Collective::AllGather),
        "sendrecv" => Some(Collective::Sendrecv),
        _ => None,
    };
    match collective {
        Some(c) => (
            nccl_model::bus_factor(c, n),
            nccl_model::base_latency_us(c, n),
            nccl_model::efficiency(c, n),
        ),
        None => {
            let nf = n as f64;
            ((nf - 1.0) / nf, 18.0 + 3.0 * nf, 1.0)
        }
    }
}
