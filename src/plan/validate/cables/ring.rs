//! `kind = "ring"`: node[i].f0 faces node[i+1].f1, one subnet per link and half.

use std::collections::BTreeMap;
use std::ops::Range;

use ipnet::Ipv4Net;
use toml::Spanned;

use super::{NewSegment, Wiring, halves_for, port_check, push_segment};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::validate::addresses::{check_address_keys, parse_net};
use crate::plan::validate::nodes::node_ref;
use crate::plan::validate::{Ctx, span};

type NodeList = Spanned<Vec<Spanned<String>>>;

/// The most nodes a switchless ring may have. Each node's two ports face its two neighbours,
/// so a ring is point-to-point cables and nothing between them: past three nodes a node
/// reaches only its neighbours over RDMA (an NCCL job across opposite nodes of a ring of four
/// is refused), and every link is measured alone, four rounds a node (two halves, both ways).
/// Rings are built to join a handful of dual-port boxes before there is a switch (the
/// project's own has three); sixteen is several times that, and still a plan that runs its
/// 64 per-link rounds in about eight minutes. A larger "ring" is a fabric that wants a switch,
/// or a generated plan that would run for days: both are refused at once.
pub const MAX_RING_NODES: usize = 16;

pub(super) fn ring_cable(ctx: &mut Ctx, w: &mut Wiring, c: &RawCable, name: &str, ci: usize) {
    let Some(list) = &c.nodes else {
        ctx.push(
            Problem::error("plan::ring-nodes", "a ring cable needs `nodes`")
                .at(span(&c.kind), "this cable")
                .help("`nodes = [\"spark-1\", \"spark-2\", \"spark-3\"]`: node[i].f0 faces node[i+1].f1"),
        );
        return;
    };
    let n = list.get_ref().len();
    if n < 3 {
        ctx.push(
            Problem::error(
                "plan::ring-too-small",
                format!("a ring needs at least 3 nodes, this one has {n}"),
            )
            .at(span(list), "too few nodes")
            .help("two nodes are a `direct` cable"),
        );
        return;
    }
    if n > MAX_RING_NODES {
        ctx.push(
            Problem::error(
                "plan::ring-too-large",
                format!("a switchless ring has at most {MAX_RING_NODES} nodes, this one has {n}"),
            )
            .at(span(list), format!("{n} nodes"))
            .help(format!("past a handful of boxes, join them through a switch: `kind = \"switched\"` with each node's port in `[cable.attach]`; or split it into rings of at most {MAX_RING_NODES}")),
        );
        return;
    }
    check_address_keys(ctx, c, w.nodes);
    let Some(ids) = ring_members(ctx, list, w.nodes) else {
        return;
    };
    let Some((out_port, in_port)) = ring_ports(ctx, w, c, list, &ids, name) else {
        return;
    };
    let pairs: Vec<(NodeId, String)> = ids.iter().map(|id| (*id, out_port.clone())).collect();
    let halves = halves_for(ctx, c.halves.as_ref(), &pairs, w.nodes, w.profiles);
    let Some(nets) = ring_subnets(ctx, c, list, name, halves.len()) else {
        return;
    };
    let node_spans: Vec<Range<usize>> = list.get_ref().iter().map(span).collect();
    for i in 0..n {
        let j = (i + 1) % n;
        for (hi, half) in halves.iter().enumerate() {
            let (subnet, sub_span) = nets[i * halves.len() + hi].clone();
            let end = |k: usize, port: &str| {
                let e = Endpoint {
                    node: ids[k],
                    port: port.to_string(),
                    half: half.clone(),
                };
                (e, node_spans[k].clone(), None)
            };
            push_segment(
                ctx,
                w,
                c,
                ci,
                NewSegment {
                    name: format!("{name}.l{}.{half}", i + 1),
                    half: half.clone(),
                    subnet,
                    subnet_span: sub_span,
                    ends: vec![end(i, &out_port), end(j, &in_port)],
                },
            );
        }
    }
}

/// The ring's nodes, each declared and listed once.
fn ring_members(ctx: &mut Ctx, list: &NodeList, nodes: &[Node]) -> Option<Vec<NodeId>> {
    let ids: Vec<Option<NodeId>> = list
        .get_ref()
        .iter()
        .map(|r| node_ref(ctx, r.get_ref(), span(r), nodes, "ring"))
        .collect();
    let mut seen = BTreeMap::new();
    for (r, id) in list.get_ref().iter().zip(&ids) {
        if let Some(id) = id
            && let Some(first) = seen.insert(*id, span(r))
        {
            ctx.push(
                Problem::error(
                    "plan::ring-nodes",
                    format!("node `{}` appears twice in the ring", r.get_ref()),
                )
                .at(span(r), "again here")
                .also(first, "first here")
                .help("each node appears once; the ring wraps from the last to the first"),
            );
            return None;
        }
    }
    ids.into_iter().collect()
}

/// The outgoing and incoming port, both on every node, and not the same port.
fn ring_ports(
    ctx: &mut Ctx,
    w: &Wiring,
    c: &RawCable,
    list: &NodeList,
    ids: &[NodeId],
    name: &str,
) -> Option<(String, String)> {
    let (out_port, in_port, ports_span) = match &c.ports {
        None => ("f0".to_string(), "f1".to_string(), span(list)),
        Some(p) if p.get_ref().len() == 2 => (
            p.get_ref()[0].get_ref().clone(),
            p.get_ref()[1].get_ref().clone(),
            span(p),
        ),
        Some(p) => {
            ctx.push(
                Problem::error(
                    "plan::ring-ports",
                    "a ring's `ports` names the outgoing and the incoming port",
                )
                .at(span(p), "expected two ports")
                .help("`ports = [\"f0\", \"f1\"]`: node[i].f0 faces node[i+1].f1"),
            );
            return None;
        }
    };
    for id in ids {
        let node = &w.nodes[id.0];
        if !port_check(ctx, node, w.profiles, &out_port, ports_span.clone())
            || !port_check(ctx, node, w.profiles, &in_port, ports_span.clone())
        {
            return None;
        }
    }
    if out_port == in_port {
        // every node's one port would face both neighbours: two cables in one cage
        ctx.push(
            Problem::error(
                "plan::ring-ports",
                format!("ring `{name}` uses `{out_port}` both ways: every node's `{out_port}` would carry two cables"),
            )
            .at(ports_span, "same port both ways")
            .help("a ring node's outgoing port faces the next node and its incoming port the previous one: `ports = [\"f0\", \"f1\"]`"),
        );
        return None;
    }
    Some((out_port, in_port))
}

/// One subnet per link and half, in order: an explicit list, or carved from a pool.
fn ring_subnets(
    ctx: &mut Ctx,
    c: &RawCable,
    list: &NodeList,
    name: &str,
    halves: usize,
) -> Option<Vec<(Ipv4Net, Range<usize>)>> {
    let n = list.get_ref().len();
    let needed = n * halves;
    if let Some(s) = &c.subnets {
        ctx.push(
            Problem::error("plan::subnet-count", format!("ring `{name}` needs a subnet for every link, not one per half"))
                .at(span(s), "one per half")
                .help("give `link-subnets` (link 1 a, link 1 b, ...) or `subnet-pool = \"198.19.0.0/16\"`"),
        );
        return None;
    }
    match (&c.link_subnets, &c.subnet_pool) {
        (Some(s), None) => {
            let list = s.get_ref();
            if list.len() != needed {
                ctx.push(
                    Problem::error("plan::subnet-count", format!("ring `{name}` has {n} links x {halves} halves = {needed} subnets to give, the list has {}", list.len()))
                        .at(span(s), "wrong count")
                        .help("list them in order: link 1 half a, link 1 half b, link 2 half a, ... (link i joins node i to node i+1), or use `subnet-pool`"),
                );
                return None;
            }
            let nets: Vec<(Ipv4Net, Range<usize>)> = list
                .iter()
                .filter_map(|net| parse_net(ctx, net).map(|x| (x, span(net))))
                .collect();
            (nets.len() == needed).then_some(nets)
        }
        (None, Some(pool)) => pool_subnets(ctx, pool, c.pool_prefix, needed),
        (Some(s), Some(_)) => {
            ctx.push(
                Problem::error(
                    "plan::subnet-pool",
                    format!("ring `{name}` gives both `link-subnets` and `subnet-pool`"),
                )
                .at(span(s), "here")
                .help("keep one of them"),
            );
            None
        }
        (None, None) => {
            ctx.push(
                Problem::error("plan::subnet-missing", format!("ring `{name}` gives no subnets"))
                    .at(span(list), "this ring")
                    .help("each link is its own subnet: `subnet-pool = \"198.19.0.0/16\"` or `link-subnets = [...]`"),
            );
            None
        }
    }
}

/// The first `needed` subnets of `pool-prefix` length (default /24) carved from the pool.
fn pool_subnets(
    ctx: &mut Ctx,
    pool: &Spanned<String>,
    prefix: Option<u8>,
    needed: usize,
) -> Option<Vec<(Ipv4Net, Range<usize>)>> {
    let pool_net = parse_net(ctx, pool)?;
    let prefix = prefix.unwrap_or(24);
    let Ok(iter) = pool_net.subnets(prefix) else {
        ctx.push(
            Problem::error(
                "plan::subnet-pool",
                format!("`pool-prefix = {prefix}` does not fit in `{pool_net}`"),
            )
            .at(span(pool), "here")
            .help("the pool prefix must be longer than the pool's own"),
        );
        return None;
    };
    let nets: Vec<(Ipv4Net, Range<usize>)> = iter.take(needed).map(|x| (x, span(pool))).collect();
    if nets.len() < needed {
        ctx.push(
            Problem::error(
                "plan::subnet-pool",
                format!("pool `{pool_net}` holds fewer than {needed} /{prefix} subnets"),
            )
            .at(span(pool), "pool too small")
            .help("use a larger pool or a longer `pool-prefix`"),
        );
        return None;
    }
    Some(nets)
}
