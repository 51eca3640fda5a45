//! Subnets and addresses: parsing, derived and explicit addresses, overlaps and reuse.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::ops::Range;

use ipnet::Ipv4Net;
use toml::Spanned;

use super::names::{MAX_LABELS, Places, and_list, label_places, times};
use super::nodes::node_ref;
use super::{Ctx, span};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;

/// Per segment: the span of its subnet, and the spans of explicit addresses by member index.
pub(super) type SegSpans = Vec<(Range<usize>, BTreeMap<usize, Range<usize>>)>;

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

/// Segments whose subnets overlap, in groups: CIDR blocks either nest or are disjoint, so
/// sorted by network address (shorter prefix first) each group is an outermost block and the
/// blocks that follow inside it. O(n log n); each group is one problem, however many links it
/// holds (a plan repeating one cable 2000 times gets one error, not two million).
fn overlapping_groups(segments: &[Segment]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..segments.len()).collect();
    order.sort_by_key(|&i| {
        (
            segments[i].subnet.network(),
            segments[i].subnet.prefix_len(),
            i,
        )
    });
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        match current.first() {
            Some(&outer)
                if segments[outer]
                    .subnet
                    .contains(&segments[i].subnet.network()) =>
            {
                current.push(i)
            }
            _ => {
                if current.len() > 1 {
                    groups.push(std::mem::take(&mut current));
                }
                current = vec![i];
            }
        }
    }
    if current.len() > 1 {
        groups.push(current);
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort_unstable_by_key(|g| g[1]);
    groups
}

fn subnet_overlaps(ctx: &mut Ctx, segments: &[Segment], spans: &SegSpans) {
    for group in overlapping_groups(segments) {
        let first = &segments[group[0]];
        let same = group.iter().all(|&i| segments[i].subnet == first.subnet);
        let message = if same {
            let links: Vec<String> = group
                .iter()
                .map(|&i| format!("`{}`", segments[i].name))
                .collect();
            format!(
                "links {} are in one subnet `{}`",
                and_list(&links, MAX_LABELS),
                first.subnet
            )
        } else {
            let links: Vec<String> = group
                .iter()
                .map(|&i| format!("`{}` ({})", segments[i].name, segments[i].subnet))
                .collect();
            format!("subnets of {} overlap", and_list(&links, MAX_LABELS))
        };
        let mut p = Problem::error("plan::subnet-overlap", message)
            .help("each link half is its own subnet: routing is ambiguous otherwise");
        // the second link is the primary label, the first and the next ones secondary
        for (k, &i) in group.iter().enumerate().take(MAX_LABELS) {
            let (at, label) = (spans[i].0.clone(), format!("`{}`", segments[i].name));
            p = if k == 1 {
                p.at(at, label)
            } else {
                p.also(at, label)
            };
        }
        ctx.push(p);
    }
}

pub(super) fn subnets_and_addresses(ctx: &mut Ctx, segments: &[Segment], spans: &SegSpans) {
    subnet_overlaps(ctx, segments, spans);
    let mut used: Places<Ipv4Addr> = Places::new();
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
            used.add(m.address, at);
        }
    }
    for (address, places) in used.repeated() {
        let p = Problem::error(
            "plan::address-twice",
            format!("address `{address}` is used {}", times(places.len())),
        )
        .help("every link end needs its own address");
        ctx.push(label_places(
            p,
            &places,
            "first used here",
            "used again here",
        ));
    }
}
