//! Sampled rounds: a switched fabric measured in K seeded random perfect matchings instead of
//! every pair. Round `r` of a segment is computed on its own from (seed, segment, r), so a
//! 4096-member segment's round costs O(members) and nothing is listed ahead.
//!
//! The matchings are random, but built so that K of them exercise the whole fabric:
//!
//! - Rounds come in pairs. A pair splits the members in two sides, each switch's members
//!   shared out evenly between them; in the first round one side sends, in the second the other
//!   does, each time to fresh partners. Every member is client in one round of the pair and
//!   server in the other (with an odd count, the one sitting a round out misses one role; a
//!   different member sits out each round).
//! - Before the rest are paired at random, a round first pairs, for every ISL direction, a
//!   client on one side of it with a server on the other (the group pair whose route loads the
//!   most directions not yet loaded first). With an even count and two or more members on
//!   each switch, every round loads every ISL direction; with a switch's lone member, or an
//!   odd count, every round pair does, unless a switch's only member sits a round out, when
//!   later rounds do. `plan` states what K rounds load.
//!
//! The generator is ChaCha8 (a fixed algorithm, `rand_chacha`) keyed by the seed and the
//! segment, one stream per use; integers below a bound are drawn here from its raw output, so
//! the sequence does not move with a crate's sampling code.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use serde::Serialize;

use crate::plan::{IslId, Plan, SegmentId, SwitchId};
use crate::topology::Fabric;

/// The random source of one use (`stream`) of a segment's sampling.
fn stream(seed: u64, segment: u64, stream: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&segment.to_le_bytes());
    // the rest names the use: another random use of the same seed never shares a key
    key[16..24].copy_from_slice(b"sampled\0");
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(stream);
    rng
}

/// Uniform in `0..n` (n > 0): Lemire's multiply-and-reject on the raw 64-bit output.
fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    let n = n as u64;
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        let floor = n.wrapping_neg() % n;
        while (m as u64) < floor {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as usize
}

/// Fisher-Yates.
fn shuffle<T>(rng: &mut ChaCha8Rng, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = below(rng, i + 1);
        v.swap(i, j);
    }
}

/// A segment as the matching sees it: each member's switch as a group, and the ISL directions
/// each group-to-group route loads.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Member index -> group (its switch, numbered in the segment; members without a switch
    /// share one group).
    group: Vec<usize>,
    groups: usize,
    /// The ISL directions any route between two groups loads, numbered here.
    directions: Vec<(IslId, SwitchId)>,
    /// `routes[a * groups + b]`: the directions (numbers) from group a to group b.
    routes: Vec<Vec<usize>>,
}

impl Layout {
    /// The layout of `segment`.
    pub fn new(plan: &Plan, fabric: &Fabric, segment: SegmentId) -> Layout {
        let members = &plan.segment(segment).members;
        let mut switches: Vec<Option<SwitchId>> = members.iter().map(|m| m.switch).collect();
        switches.sort();
        switches.dedup();
        let group: Vec<usize> = members
            .iter()
            .map(|m| switches.binary_search(&m.switch).unwrap_or(0))
            .collect();
        let groups = switches.len();
        let mut directions: Vec<(IslId, SwitchId)> = Vec::new();
        let mut routes = vec![Vec::new(); groups * groups];
        for (a, sa) in switches.iter().enumerate() {
            for (b, sb) in switches.iter().enumerate() {
                let (Some(sa), Some(sb)) = (sa, sb) else {
                    continue;
                };
                for hop in fabric.switch_route(*sa, *sb).unwrap_or_default() {
                    let d = match directions.iter().position(|x| x == hop) {
                        Some(d) => d,
                        None => {
                            directions.push(*hop);
                            directions.len() - 1
                        }
                    };
                    routes[a * groups + b].push(d);
                }
            }
        }
        Layout {
            group,
            groups,
            directions,
            routes,
        }
    }

    /// The ISL directions a flow between this segment's members can load.
    pub fn directions(&self) -> &[(IslId, SwitchId)] {
        &self.directions
    }

    fn route(&self, a: usize, b: usize) -> &[usize] {
        &self.routes[a * self.groups + b]
    }
}

/// The members sitting out rounds `2j` and `2j+1` of an odd-sized segment: positions `2j` and
/// `2j+1` (mod m) of one seeded order of the members, so each round's is a different member
/// until every member has sat out once.
fn sitters(m: usize, seed: u64, segment: u64, j: usize) -> (usize, usize) {
    let mut rng = stream(seed, segment, u64::MAX);
    let (i0, i1) = ((2 * j) % m, (2 * j + 1) % m);
    let need = i0.max(i1) + 1;
    let mut order: Vec<usize> = (0..m).collect();
    // a forward Fisher-Yates prefix: the first `need` places of one fixed random order
    for i in 0..need.min(m - 1) {
        let k = i + below(&mut rng, m - i);
        order.swap(i, k);
    }
    (order[i0], order[i1])
}

/// Round `r`'s (client, server) member pairs for a segment laid out as `layout`, keyed by
/// `segment` (its id) and `seed`: a perfect matching (one member sits out when the count is
/// odd), sorted by client.
pub fn pairing(layout: &Layout, seed: u64, segment: u64, r: usize) -> Vec<(usize, usize)> {
    let m = layout.group.len();
    if m < 2 {
        return Vec::new();
    }
    let j = r / 2;
    let second = r % 2 == 1;
    let (s0, s1) = if m % 2 == 1 {
        let (a, b) = sitters(m, seed, segment, j);
        (Some(a), Some(b))
    } else {
        (None, None)
    };
    // the pair's two sides: each switch's members shuffled and dealt alternately, an odd
    // switch's extra member to the side that is short
    let mut rng = stream(seed, segment, 4 * j as u64);
    let mut by_group: Vec<Vec<usize>> = vec![Vec::new(); layout.groups];
    for (i, g) in layout.group.iter().enumerate() {
        if Some(i) != s0 && Some(i) != s1 {
            by_group[*g].push(i);
        }
    }
    let (mut a, mut b): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    for g in &mut by_group {
        shuffle(&mut rng, g);
        let start_a = match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => below(&mut rng, 2) == 0,
        };
        for (k, x) in g.iter().enumerate() {
            if (k % 2 == 0) == start_a {
                a.push(*x);
            } else {
                b.push(*x);
            }
        }
    }
    if a.len() < b.len() {
        std::mem::swap(&mut a, &mut b);
    }
    // odd: |a| = |b| + 1; the first round's sitter-out s0, its server side completed by s1, and
    // the other way round in the second
    let (clients, servers) = if second {
        b.extend(s0);
        (b, a)
    } else {
        b.extend(s1);
        (a, b)
    };
    let mut rng = stream(seed, segment, 4 * j as u64 + 1 + u64::from(second));
    let mut out = match_sides(layout, &mut rng, clients, servers);
    out.sort_unstable();
    out
}

/// Clients to servers (equal counts): first a pair across each ISL direction not yet loaded
/// where a free client and server allow it, the route loading the most first; then the rest
/// at random.
fn match_sides(
    layout: &Layout,
    rng: &mut ChaCha8Rng,
    clients: Vec<usize>,
    servers: Vec<usize>,
) -> Vec<(usize, usize)> {
    let g = layout.groups;
    let mut cg: Vec<Vec<usize>> = vec![Vec::new(); g];
    let mut sg: Vec<Vec<usize>> = vec![Vec::new(); g];
    for c in clients {
        cg[layout.group[c]].push(c);
    }
    for s in servers {
        sg[layout.group[s]].push(s);
    }
    for v in cg.iter_mut().chain(sg.iter_mut()) {
        shuffle(rng, v);
    }
    let mut loaded = vec![false; layout.directions.len()];
    let mut out = Vec::new();
    loop {
        let (mut best, mut score) = (Vec::new(), 0);
        for (a, ca) in cg.iter().enumerate() {
            if ca.is_empty() {
                continue;
            }
            for (b, sb) in sg.iter().enumerate() {
                if a == b || sb.is_empty() {
                    continue;
                }
                let s = layout.route(a, b).iter().filter(|d| !loaded[**d]).count();
                if s > score {
                    score = s;
                    best.clear();
                }
                if s == score && s > 0 {
                    best.push((a, b));
                }
            }
        }
        if score == 0 {
            break;
        }
        let (a, b) = best[below(rng, best.len())];
        let (Some(c), Some(s)) = (cg[a].pop(), sg[b].pop()) else {
            break;
        };
        for d in layout.route(a, b) {
            loaded[*d] = true;
        }
        out.push((c, s));
    }
    let mut cs: Vec<usize> = cg.into_iter().flatten().collect();
    let mut ss: Vec<usize> = sg.into_iter().flatten().collect();
    shuffle(rng, &mut cs);
    shuffle(rng, &mut ss);
    out.extend(cs.into_iter().zip(ss));
    out
}

/// What K sampled rounds cover, for `plan` to state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// The test kind.
    pub kind: &'static str,
    /// Random pairings (`rounds` in the plan) and their seed.
    pub pairings: u32,
    pub seed: u64,
    /// Rounds in the schedule (twice the pairings with `direction = "both"`).
    pub rounds: usize,
    /// Ports (node halves) of the sampled segments, and how many were client, server, both.
    pub ports: usize,
    pub ports_as_client: usize,
    pub ports_as_server: usize,
    pub ports_both_roles: usize,
    /// Node pairs measured (either way, any half) out of n(n-1)/2.
    pub node_pairs: usize,
    pub node_pairs_total: usize,
    /// ISL directions the rounds load, out of those a flow between the segments' members can
    /// cross.
    pub isl_directions: usize,
    pub isl_directions_total: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A layout of switches in a chain, `sizes[k]` members on switch k, without a plan.
    fn chain(sizes: &[usize]) -> Layout {
        let groups = sizes.len();
        let mut group = Vec::new();
        for (k, n) in sizes.iter().enumerate() {
            group.extend(std::iter::repeat_n(k, *n));
        }
        // directions: ISL k joins switch k and k+1; (k, from k) is 2k, (k, from k+1) is 2k+1
        let directions: Vec<(IslId, SwitchId)> = (0..groups.saturating_sub(1))
            .flat_map(|k| [(IslId(k), SwitchId(k)), (IslId(k), SwitchId(k + 1))])
            .collect();
        let mut routes = vec![Vec::new(); groups * groups];
        for a in 0..groups {
            for b in 0..groups {
                routes[a * groups + b] = if a < b {
                    (a..b).map(|k| 2 * k).collect()
                } else {
                    (b..a).rev().map(|k| 2 * k + 1).collect()
                };
            }
        }
        Layout {
            group,
            groups,
            directions,
            routes,
        }
    }

    /// Every member once at most, clients and servers distinct, m/2 pairs.
    fn check_perfect(layout: &Layout, pairs: &[(usize, usize)]) {
        let m = layout.group.len();
        let mut seen = HashSet::new();
        for (c, s) in pairs {
            assert!(c != s && *c < m && *s < m);
            assert!(
                seen.insert(*c) && seen.insert(*s),
                "member twice: {pairs:?}"
            );
        }
        assert_eq!(pairs.len(), m / 2, "{m} members: {pairs:?}");
    }

    fn loaded(layout: &Layout, pairs: &[(usize, usize)]) -> HashSet<usize> {
        pairs
            .iter()
            .flat_map(|(c, s)| {
                layout
                    .route(layout.group[*c], layout.group[*s])
                    .iter()
                    .copied()
            })
            .collect()
    }

    #[test]
    fn every_round_is_a_perfect_matching_and_odd_sitters_differ() {
        for sizes in [
            vec![2],
            vec![3],
            vec![1, 1],
            vec![1, 2],
            vec![32, 32],
            vec![33, 30],
            vec![5, 1, 7],
            vec![2, 2, 2, 2],
            vec![200, 311],
        ] {
            let l = chain(&sizes);
            let m = l.group.len();
            let mut sat = Vec::new();
            for r in 0..12 {
                let p = pairing(&l, 7, 3, r);
                check_perfect(&l, &p);
                if m % 2 == 1 {
                    let busy: HashSet<usize> = p.iter().flat_map(|(c, s)| [*c, *s]).collect();
                    let out: Vec<usize> = (0..m).filter(|x| !busy.contains(x)).collect();
                    assert_eq!(out.len(), 1);
                    sat.push(out[0]);
                }
            }
            if m % 2 == 1 {
                let distinct: HashSet<&usize> = sat.iter().collect();
                assert_eq!(distinct.len(), sat.len().min(m), "{sizes:?}: {sat:?}");
            }
        }
    }

    #[test]
    fn every_member_is_client_and_server_over_a_round_pair() {
        for sizes in [vec![32, 32], vec![7, 9], vec![1, 4, 2], vec![64]] {
            let l = chain(&sizes);
            let m = l.group.len();
            for j in 0..4 {
                let (mut client, mut server) = (HashSet::new(), HashSet::new());
                for r in [2 * j, 2 * j + 1] {
                    for (c, s) in pairing(&l, 11, 0, r) {
                        client.insert(c);
                        server.insert(s);
                    }
                }
                // an odd count: the two sitters of the pair miss one role each
                let both = (0..m)
                    .filter(|x| client.contains(x) && server.contains(x))
                    .count();
                let want = if m % 2 == 1 { m - 2 } else { m };
                assert_eq!(both, want, "{sizes:?} pair {j}");
            }
            // over two pairs, everyone
            let (mut client, mut server) = (HashSet::new(), HashSet::new());
            for r in 0..4 {
                for (c, s) in pairing(&l, 11, 0, r) {
                    client.insert(c);
                    server.insert(s);
                }
            }
            assert_eq!(client.len(), m, "{sizes:?}");
            assert_eq!(server.len(), m, "{sizes:?}");
        }
    }

    #[test]
    fn every_isl_direction_is_loaded() {
        // an even count and two or more members per switch: every round loads every direction
        for sizes in [
            vec![2, 2],
            vec![32, 32],
            vec![3, 2, 3],
            vec![2, 2, 2, 2, 2],
            vec![40, 3, 17],
        ] {
            let l = chain(&sizes);
            for r in 0..8 {
                let got = loaded(&l, &pairing(&l, 5, 1, r));
                assert_eq!(got.len(), l.directions.len(), "{sizes:?} round {r}");
            }
        }
        // a lone member on a switch, or an odd count (one sits out): each round pair does
        for sizes in [
            vec![1, 1],
            vec![1, 5],
            vec![2, 1, 2, 3],
            vec![3, 2, 2],
            vec![33, 32],
            vec![5, 5, 5],
        ] {
            let l = chain(&sizes);
            for j in 0..8 {
                let mut got = loaded(&l, &pairing(&l, 5, 1, 2 * j));
                got.extend(loaded(&l, &pairing(&l, 5, 1, 2 * j + 1)));
                assert_eq!(got.len(), l.directions.len(), "{sizes:?} pair {j}");
            }
        }
        // both: a switch's only member may sit a round out, and that pair misses a direction
        // into or out of it; the next pairs load it
        for sizes in [vec![6, 1, 6], vec![1, 2, 2], vec![1, 1, 1], vec![1, 3, 1]] {
            let l = chain(&sizes);
            for seed in 0..20 {
                let mut got = HashSet::new();
                for r in 0..8 {
                    got.extend(loaded(&l, &pairing(&l, seed, 1, r)));
                }
                assert_eq!(got.len(), l.directions.len(), "{sizes:?} seed {seed}");
            }
        }
    }

    #[test]
    fn the_same_seed_the_same_rounds_another_seed_others() {
        let l = chain(&[30, 34]);
        for r in 0..6 {
            assert_eq!(pairing(&l, 1, 0, r), pairing(&l, 1, 0, r));
        }
        let a: Vec<_> = (0..6).map(|r| pairing(&l, 1, 0, r)).collect();
        let b: Vec<_> = (0..6).map(|r| pairing(&l, 2, 0, r)).collect();
        let c: Vec<_> = (0..6).map(|r| pairing(&l, 1, 1, r)).collect();
        assert_ne!(a, b, "another seed");
        assert_ne!(a, c, "another segment");
        // fresh partners: six matchings of 64 share few pairs
        let pairs: HashSet<(usize, usize)> = a
            .iter()
            .flatten()
            .map(|(c, s)| (*c.min(s), *c.max(s)))
            .collect();
        assert!(pairs.len() > 6 * 32 - 12, "{}", pairs.len());
    }

    /// The sequence is ChaCha8's and this file's: pinned, so a dependency update that moved it
    /// would be seen (a plan's rounds are part of its meaning).
    #[test]
    fn the_sequence_is_pinned() {
        let mut rng = stream(1, 0, 0);
        let first: Vec<usize> = (0..6).map(|_| below(&mut rng, 1000)).collect();
        let l = chain(&[3, 3]);
        let p = pairing(&l, 1, 0, 0);
        assert_eq!(first, [137, 947, 566, 175, 363, 165]);
        assert_eq!(p, [(1, 5), (3, 0), (4, 2)]);
    }
}
