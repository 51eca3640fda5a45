//! Subnets and addresses: parsing, derived and explicit addresses, overlaps and reuse.

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::ops::Range;

use ipnet::Ipv4Net;
use toml::Spanned;

use super::cables::{SegSpans, node_ref};
use super::{Ctx, span};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;

pub(super) fn parse_net(ctx: &mut Ctx, s: &Spanned<String>) -> Option<Ipv4Net> {
    match s.get_ref().parse::<Ipv4Net>() {
        Ok(n) => {
            if n.network() != n.addr() {
                ctx.push(
                    Problem::warning(
                        "plan::subnet-host-bits",
                        format!(
                            "subnet `{}` has host bits set; it means `{}`",
                            s.get_ref(),
                            n.trunc()
                        ),
                    )
                    .at(span(s), "host bits set")
                    .help(format!("write `{}`", n.trunc())),
                );
            }
            Some(n.trunc())
        }
        Err(_) => {
            ctx.push(
                Problem::error(
                    "plan::subnet",
                    format!("`{}` is not an IPv4 subnet", s.get_ref()),
                )
                .at(span(s), "not ADDRESS/PREFIX")
                .help("write a subnet such as `198.51.100.0/30`"),
            );
            None
        }
    }
}

pub(super) fn nth_host(net: Ipv4Net, n: usize) -> Option<Ipv4Addr> {
    net.hosts().nth(n)
}

/// Explicit addresses of a cable: `{ "NODE" | "NODE.PORT" = { HALF = "ADDR" } }`.
pub(super) fn explicit_address<'a>(
    c: &'a RawCable,
    node: &str,
    port: &str,
    half: &str,
) -> Option<&'a Spanned<String>> {
    if c.addresses.is_empty() {
        return None;
    }
    // keys are unique and `NODE` sorts before `NODE.PORT`: look both up, in that order
    c.addresses.get(node).and_then(|v| v.get(half)).or_else(|| {
        c.addresses
            .get(format!("{node}.{port}").as_str())
            .and_then(|v| v.get(half))
    })
}

pub(super) fn check_address_keys(ctx: &mut Ctx, c: &RawCable, nodes: &[Node]) {
    for (k, v) in &c.addresses {
        let node = k.get_ref().split('.').next().unwrap_or("");
        node_ref(ctx, node, span(k), nodes, "address");
        for a in v.values() {
            if a.get_ref().parse::<Ipv4Addr>().is_err() {
                ctx.push(
                    Problem::error(
                        "plan::address",
                        format!("`{}` is not an IPv4 address", a.get_ref()),
                    )
                    .at(span(a), "not an address")
                    .help("write a dotted quad such as `198.51.100.1`"),
                );
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn member_address(
    ctx: &mut Ctx,
    c: &RawCable,
    nodes: &[Node],
    e: &Endpoint,
    subnet: Ipv4Net,
    index: usize,
    spans: &mut BTreeMap<usize, Range<usize>>,
    member_idx: usize,
    at: Range<usize>,
) -> Ipv4Addr {
    let node = &nodes[e.node.0].name;
    if let Some(a) = explicit_address(c, node, &e.port, &e.half)
        && let Ok(addr) = a.get_ref().parse::<Ipv4Addr>()
    {
        spans.insert(member_idx, span(a));
        return addr;
    }
    match nth_host(subnet, index) {
        Some(a) => a,
        None => {
            ctx.push(
                Problem::error(
                    "plan::subnet-too-small",
                    format!(
                        "subnet `{subnet}` has no room for `{node}.{}.{}`",
                        e.port, e.half
                    ),
                )
                .at(at, "subnet too small")
                .help("use a larger subnet or give addresses explicitly"),
            );
            Ipv4Addr::UNSPECIFIED
        }
    }
}

/// Does any pair of subnets overlap? Two prefixes overlap only when one holds the other, so
/// sorted by network address (then shorter prefix first) an overlap shows between neighbours:
/// O(n log n), where checking every pair is O(n^2).
pub(super) fn any_subnet_overlap(segments: &[Segment]) -> bool {
    let mut nets: Vec<Ipv4Net> = segments.iter().map(|s| s.subnet).collect();
    nets.sort_unstable_by_key(|n| (n.network(), n.prefix_len()));
    nets.windows(2).any(|w| w[0].contains(&w[1].network()))
}

pub(super) fn subnets_and_addresses(ctx: &mut Ctx, segments: &[Segment], spans: &SegSpans) {
    // the pairwise pass names every overlapping pair; run it only when there is one
    let pairs: &[Segment] = if any_subnet_overlap(segments) {
        segments
    } else {
        &[]
    };
    for (i, a) in pairs.iter().enumerate() {
        for (j, b) in pairs.iter().enumerate().skip(i + 1) {
            if a.subnet.contains(&b.subnet.network()) || b.subnet.contains(&a.subnet.network()) {
                let same = a.subnet == b.subnet;
                ctx.push(
                    Problem::error(
                        "plan::subnet-overlap",
                        if same {
                            format!(
                                "links `{}` and `{}` are in one subnet `{}`",
                                a.name, b.name, a.subnet
                            )
                        } else {
                            format!(
                                "subnets of `{}` ({}) and `{}` ({}) overlap",
                                a.name, a.subnet, b.name, b.subnet
                            )
                        },
                    )
                    .at(spans[j].0.clone(), format!("`{}`", b.name))
                    .also(spans[i].0.clone(), format!("`{}`", a.name))
                    .help("each link half is its own subnet: routing is ambiguous otherwise"),
                );
            }
        }
    }
    let mut used: HashMap<Ipv4Addr, (usize, usize)> = HashMap::new();
    for (si, s) in segments.iter().enumerate() {
        for (mi, m) in s.members.iter().enumerate() {
            if m.address.is_unspecified() {
                continue;
            }
            let at = spans[si]
                .1
                .get(&mi)
                .cloned()
                .unwrap_or_else(|| spans[si].0.clone());
            let bcast = s.subnet.prefix_len() < 31
                && (m.address == s.subnet.broadcast() || m.address == s.subnet.network());
            if !s.subnet.contains(&m.address) || bcast {
                ctx.push(
                    Problem::error(
                        "plan::address-outside-subnet",
                        format!(
                            "address `{}` of `{}` is not a host address of its link's subnet `{}`",
                            m.address, s.name, s.subnet
                        ),
                    )
                    .at(at.clone(), "outside the subnet")
                    .also(spans[si].0.clone(), "the link's subnet")
                    .help(format!("use a host address of `{}`", s.subnet)),
                );
            }
            if let Some((psi, pmi)) = used.get(&m.address) {
                let pat = spans[*psi]
                    .1
                    .get(pmi)
                    .cloned()
                    .unwrap_or_else(|| spans[*psi].0.clone());
                ctx.push(
                    Problem::error(
                        "plan::address-twice",
                        format!("address `{}` is used twice", m.address),
                    )
                    .at(at, "used again here")
                    .also(pat, "first used here")
                    .help("every link end needs its own address"),
                );
            } else {
                used.insert(m.address, (si, mi));
            }
        }
    }
}
