//! `[tests]`: every test kind's section (`rdma-bw`, `rdma-bw-both`, `rdma-lat`, `nccl`,
//! `iperf3`), its schedule, declared rounds and flows. Kept in one file: each kind's section moves
//! into its own file with the kind.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

use toml::Spanned;

use super::cables::node_ref;
use super::names::{Declared, keyword};
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;

pub(super) fn schedule_kind(
    ctx: &mut Ctx,
    s: Option<&Spanned<String>>,
    has_rounds: bool,
) -> ScheduleKind {
    match s {
        None if has_rounds => ScheduleKind::Rounds,
        None => ScheduleKind::PerLink,
        Some(s) => keyword(
            ctx,
            "plan::schedule",
            "schedule",
            s,
            &[
                ("per-link", ScheduleKind::PerLink),
                ("rounds", ScheduleKind::Rounds),
                ("all-pairs", ScheduleKind::AllPairs),
            ],
        )
        .unwrap_or(ScheduleKind::PerLink),
    }
}

pub(super) fn test_halves(
    ctx: &mut Ctx,
    raw: Option<&Vec<Spanned<String>>>,
    segments: &[Segment],
) -> Vec<String> {
    let Some(raw) = raw else { return Vec::new() };
    let known: BTreeSet<&str> = segments.iter().map(|s| s.half.as_str()).collect();
    let mut out = Vec::new();
    for h in raw {
        if !known.contains(h.get_ref().as_str()) {
            let mut p = Problem::error(
                "plan::unknown-half",
                format!("no cable carries half `{}`", h.get_ref()),
            )
            .at(span(h), "unknown half");
            p = match did_you_mean(h.get_ref(), known.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!(
                    "cabled halves: {}",
                    known.iter().copied().collect::<Vec<_>>().join(", ")
                )),
            };
            ctx.push(p);
        } else {
            out.push(h.get_ref().clone());
        }
    }
    out
}

/// Resolve `NODE[.PORT[.HALF]]` on one side of a flow to candidate endpoints.
pub(super) fn endpoint_candidates(
    spec: &str,
    nodes: &[Node],
    segments: &[Segment],
) -> Result<Vec<Endpoint>, String> {
    let mut parts = spec.split('.');
    let node = parts.next().unwrap_or("");
    let port = parts.next();
    let half = parts.next();
    if parts.next().is_some() {
        return Err(format!("`{spec}` has too many parts"));
    }
    let Some(n) = nodes.iter().find(|n| n.name == node) else {
        return Err(
            match did_you_mean(node, nodes.iter().map(|n| n.name.as_str())) {
                Some(s) => format!("node `{node}` is not declared; did you mean `{s}`?"),
                None => format!("node `{node}` is not declared"),
            },
        );
    };
    Ok(segments
        .iter()
        .flat_map(|s| s.members.iter().map(|m| m.endpoint.clone()))
        .filter(|e| {
            e.node == n.id && port.is_none_or(|p| p == e.port) && half.is_none_or(|h| h == e.half)
        })
        .collect())
}

pub(super) fn resolve_flow(
    ctx: &mut Ctx,
    f: &Spanned<String>,
    nodes: &[Node],
    segments: &[Segment],
) -> Option<Flow> {
    let Some((c, s)) = f.get_ref().split_once("->") else {
        ctx.push(
            Problem::error("plan::flow", format!("`{}` is not a flow", f.get_ref()))
                .at(span(f), "expected `CLIENT -> SERVER`")
                .help("write `\"gb10-04 -> gb10-01\"` or with port and half `\"gb10-04.f0.a -> gb10-01.f0.a\"`"),
        );
        return None;
    };
    let (c, s) = (c.trim(), s.trim());
    let cands = |x: &str, ctx: &mut Ctx| match endpoint_candidates(x, nodes, segments) {
        Ok(v) => Some(v),
        Err(msg) => {
            ctx.push(
                Problem::error("plan::unknown-node", msg)
                    .at(span(f), "in this flow")
                    .help("flow ends are `NODE[.PORT[.HALF]]` of declared, cabled nodes"),
            );
            None
        }
    };
    let cc = cands(c, ctx)?;
    let sc = cands(s, ctx)?;
    let mut options: Vec<Flow> = Vec::new();
    for ce in &cc {
        for se in &sc {
            if ce.node == se.node {
                continue;
            }
            for seg in segments {
                if seg.half == ce.half
                    && seg.half == se.half
                    && seg.members.iter().any(|m| &m.endpoint == ce)
                    && seg.members.iter().any(|m| &m.endpoint == se)
                {
                    options.push(Flow {
                        client: ce.clone(),
                        server: se.clone(),
                        segment: seg.id,
                    });
                }
            }
        }
    }
    if options.is_empty() {
        ctx.push(
            Problem::error("plan::no-path", format!("no link joins the two ends of `{}`", f.get_ref()))
                .at(span(f), "no path")
                .help("a flow's ends must share a cable half (a direct link, or the same switched fabric half)"),
        );
        return None;
    }
    // unspecified halves default to `a` (the report's matrix ran one half per pair)
    if options.len() > 1 {
        let first_half = options
            .iter()
            .map(|o| o.client.half.clone())
            .min()
            .unwrap_or_default();
        options.retain(|o| o.client.half == first_half);
    }
    if options.len() > 1 {
        ctx.push(
            Problem::error(
                "plan::flow-ambiguous",
                format!(
                    "`{}` could use {} different links",
                    f.get_ref(),
                    options.len()
                ),
            )
            .at(span(f), "ambiguous")
            .help("name the port and half: `NODE.PORT.HALF -> NODE.PORT.HALF`"),
        );
        return None;
    }
    options.pop()
}

/// The `[tests]` table: every test kind, in the model's form.
pub(super) fn tests(ctx: &mut Ctx, raw: &RawTests, nodes: &[Node], segments: &[Segment]) -> Tests {
    let rdma_bw = raw
        .rdma_bw
        .as_ref()
        .and_then(|t| bw_test(ctx, t, false, nodes, segments));
    let rdma_bw_both = raw
        .rdma_bw_both
        .as_ref()
        .and_then(|t| bw_test(ctx, t, true, nodes, segments));
    let rdma_lat = raw
        .rdma_lat
        .as_ref()
        .filter(|t| t.enabled != Some(false))
        .map(|t| LatTest {
            size_bytes: t.size_bytes.unwrap_or(2),
            iterations: t.iterations.unwrap_or(1000),
            halves: test_halves(ctx, t.halves.as_ref(), segments),
            timeout_s: t.timeout_s.unwrap_or(30),
        });
    let iperf3 = raw
        .iperf3
        .as_ref()
        .filter(|t| t.enabled != Some(false))
        .map(|t| {
            let d = t.duration_s.unwrap_or(2).max(1);
            IperfTest {
                duration_s: d,
                streams: t.streams.unwrap_or(1).max(1),
                halves: test_halves(ctx, t.halves.as_ref(), segments),
                timeout_s: t.timeout_s.unwrap_or(d.saturating_add(20)),
            }
        });
    let mut nccl = Vec::new();
    let mut nccl_names = Declared::new("NCCL test", String::new());
    for t in &raw.nccl {
        if let Some(test) = nccl_test(ctx, t, &mut nccl_names, nodes, segments) {
            nccl.push(test);
        }
    }
    Tests {
        preflight: raw.preflight.unwrap_or(true),
        rdma_bw,
        rdma_bw_both,
        rdma_lat,
        nccl,
        iperf3,
    }
}

/// `[tests.rdma-bw]` or (`both`) `[tests.rdma-bw-both]`.
fn bw_test(
    ctx: &mut Ctx,
    t: &RawBwTest,
    both: bool,
    nodes: &[Node],
    segments: &[Segment],
) -> Option<BwTest> {
    if t.enabled == Some(false) {
        return None;
    }
    let schedule = schedule_kind(ctx, t.schedule.as_ref(), !t.round.is_empty());
    if schedule == ScheduleKind::Rounds && t.round.is_empty() {
        ctx.push(
            Problem::error(
                "plan::rounds-missing",
                "schedule `rounds` declares no rounds",
            )
            .at(t.schedule.as_ref().map(span).unwrap_or(0..0), "here")
            .help("add `[[tests.rdma-bw.round]]` tables with `name` and `flows`"),
        );
    }
    if both && schedule != ScheduleKind::PerLink {
        ctx.push(
            Problem::error(
                "plan::schedule",
                "`rdma-bw-both` always runs both halves of each cable together",
            )
            .at(t.schedule.as_ref().map(span).unwrap_or(0..0), "here")
            .help("remove `schedule` from `[tests.rdma-bw-both]`"),
        );
    }
    let rounds = declared_rounds(ctx, &t.round, nodes, segments);
    let duration_s = t.duration_s.unwrap_or(6).max(1);
    Some(BwTest {
        duration_s,
        size_bytes: t.size_bytes.unwrap_or(65536),
        qps: t.qps.unwrap_or(1).max(1),
        schedule,
        halves: test_halves(ctx, t.halves.as_ref(), segments),
        rounds,
        timeout_s: t.timeout_s.unwrap_or(duration_s.saturating_add(30)),
    })
}

/// `[[tests.rdma-bw.round]]`: named rounds of flows, no port half in two flows of one round.
fn declared_rounds(
    ctx: &mut Ctx,
    raw: &[RawRound],
    nodes: &[Node],
    segments: &[Segment],
) -> Vec<DeclaredRound> {
    let mut rounds = Vec::new();
    let mut round_names = Declared::new("round", String::new());
    for r in raw {
        round_names.declare(ctx, &r.name);
        let mut flows = Vec::new();
        let mut busy: HashMap<Endpoint, Range<usize>> = HashMap::new();
        for f in &r.flows {
            if let Some(flow) = resolve_flow(ctx, f, nodes, segments) {
                for e in [&flow.client, &flow.server] {
                    if let Some(first) = busy.get(e) {
                        ctx.push(
                            Problem::error("plan::round-conflict", format!("`{}.{}.{}` is in two jobs of round `{}` at once", nodes[e.node.0].name, e.port, e.half, r.name.get_ref()))
                                .at(span(f), "second job")
                                .also(first.clone(), "first job")
                                .help("a node half carries one measurement at a time: move one flow to another round"),
                        );
                    }
                    busy.insert(e.clone(), span(f));
                }
                flows.push(flow);
            }
        }
        if flows.is_empty() && r.flows.is_empty() {
            ctx.push(
                Problem::error(
                    "plan::round-empty",
                    format!("round `{}` has no flows", r.name.get_ref()),
                )
                .at(span(&r.name), "empty")
                .help("list flows as `\"CLIENT -> SERVER\"`"),
            );
        }
        rounds.push(DeclaredRound {
            name: r.name.get_ref().clone(),
            flows,
        });
    }
    rounds
}

/// One `[[tests.nccl]]`.
fn nccl_test(
    ctx: &mut Ctx,
    t: &RawNcclTest,
    names: &mut Declared,
    nodes: &[Node],
    segments: &[Segment],
) -> Option<NcclTest> {
    let collectives = [
        ("all_reduce", Collective::AllReduce),
        ("all_gather", Collective::AllGather),
        ("sendrecv", Collective::Sendrecv),
    ];
    let collective = keyword(
        ctx,
        "plan::collective",
        "collective",
        &t.collective,
        &collectives,
    )?;
    let name = match &t.name {
        Some(n) => {
            names.declare(ctx, n);
            n.get_ref().clone()
        }
        None => collective.name().to_string(),
    };
    let (ids, at): (Vec<NodeId>, Range<usize>) = match &t.nodes {
        Some(list) => (
            list.get_ref()
                .iter()
                .filter_map(|r| node_ref(ctx, r.get_ref(), span(r), nodes, "NCCL test"))
                .collect(),
            span(list),
        ),
        None => (nodes.iter().map(|n| n.id).collect(), span(&t.collective)),
    };
    if ids.len() < 2 {
        ctx.push(
            Problem::error(
                "plan::nccl-ranks",
                format!("NCCL test `{name}` needs at least two nodes"),
            )
            .at(at.clone(), "here")
            .help("list the ranks' nodes in `nodes`"),
        );
    }
    let halves = test_halves(ctx, t.halves.as_ref(), segments);
    nccl_paths(ctx, &name, &ids, &halves, at, nodes, segments);
    nccl_sizes(ctx, t);
    for k in t.env.keys() {
        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || k.is_empty() {
            ctx.push(
                Problem::error(
                    "plan::env-name",
                    format!("`{k}` is not an environment variable name"),
                )
                .at(span(&t.collective), "in this test")
                .help("letters, digits and `_`"),
            );
        }
    }
    let size = |v: &Option<Spanned<String>>, default: &str| {
        v.as_ref()
            .map(|s| s.get_ref().trim().to_string())
            .unwrap_or_else(|| default.into())
    };
    Some(NcclTest {
        name,
        collective,
        nodes: ids,
        halves,
        min_bytes: size(&t.min_bytes, "8"),
        max_bytes: size(&t.max_bytes, "128M"),
        step_factor: t.step_factor.unwrap_or(2).max(2),
        warmup: t.warmup.unwrap_or(5),
        iterations: t.iterations.unwrap_or(20).max(1),
        env: t.env.clone(),
        timeout_s: t.timeout_s.unwrap_or(300),
    })
}

/// The largest NCCL message a plan may ask for: GB10 memory is unified (a 16 GB buffer froze a
/// node), so a size past this is a typo (`128G` for `128M`), not a measurement.
const NCCL_MAX_BYTES: u64 = 64 << 30;

/// `min-bytes` and `max-bytes`: sizes from 1 byte to 64G, the minimum not above the maximum (a
/// zero minimum never grows by `step-factor`).
fn nccl_sizes(ctx: &mut Ctx, t: &RawNcclTest) {
    let mut sizes = [Some(8), Some(128 << 20)];
    for (i, (k, v)) in [("min-bytes", &t.min_bytes), ("max-bytes", &t.max_bytes)]
        .into_iter()
        .enumerate()
    {
        let Some(v) = v else { continue };
        sizes[i] = parse_size(v.get_ref());
        match sizes[i] {
            None => ctx.push(Problem::error("plan::size", format!("`{k} = \"{}\"` is not a size", v.get_ref())).at(span(v), "not a size").help("bytes with an optional K, M or G suffix (binary multiples, as nccl-tests reads them): `8`, `128M`, `1G`")),
            Some(n) if n == 0 || n > NCCL_MAX_BYTES => {
                sizes[i] = None;
                ctx.push(
                    Problem::error("plan::size", format!("`{k} = \"{}\"` is out of range", v.get_ref()))
                        .at(span(v), "out of range")
                        .help("a size from 1 byte to `64G`; GB10 memory is unified: raise past `1G` only deliberately"),
                );
            }
            Some(_) => {}
        }
    }
    if let [Some(lo), Some(hi)] = sizes
        && lo > hi
    {
        let shown = |v: &Option<Spanned<String>>, default: &str| {
            v.as_ref().map_or(format!("{default} (default)"), |v| {
                format!("\"{}\"", v.get_ref())
            })
        };
        let mut p = Problem::error(
            "plan::size",
            format!(
                "`min-bytes = {}` is above `max-bytes = {}`",
                shown(&t.min_bytes, "8"),
                shown(&t.max_bytes, "\"128M\"")
            ),
        )
        .help("nccl-tests runs from `min-bytes` up to `max-bytes`");
        for (v, label) in [(&t.min_bytes, "minimum"), (&t.max_bytes, "maximum")] {
            if let Some(v) = v {
                p = if p.primary.is_none() {
                    p.at(span(v), label)
                } else {
                    p.also(span(v), label)
                };
            }
        }
        ctx.push(p);
    }
}

/// Every pair of ranks needs a fabric path (a shared segment on some half): each node's
/// eligible segments, sorted, and a pair is joined when their lists meet.
fn nccl_paths(
    ctx: &mut Ctx,
    name: &str,
    ids: &[NodeId],
    halves: &[String],
    at: Range<usize>,
    nodes: &[Node],
    segments: &[Segment],
) {
    let mut segs_of: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for s in segments
        .iter()
        .filter(|s| halves.is_empty() || halves.contains(&s.half))
    {
        for m in &s.members {
            let list = &mut segs_of[m.endpoint.node.0];
            if list.last() != Some(&s.id.0) {
                list.push(s.id.0);
            }
        }
    }
    let shared = |a: &[usize], b: &[usize]| {
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    };
    // one segment holding every rank (a switched fabric) joins every pair
    let mut common: Vec<usize> = ids
        .first()
        .map(|a| segs_of[a.0].clone())
        .unwrap_or_default();
    for r in ids.iter().skip(1) {
        common.retain(|s| segs_of[r.0].binary_search(s).is_ok());
    }
    if !common.is_empty() {
        return;
    }
    for (i, a) in ids.iter().enumerate() {
        for b in ids.iter().skip(i + 1) {
            if !shared(&segs_of[a.0], &segs_of[b.0]) {
                ctx.push(
                    Problem::error("plan::no-path", format!("NCCL test `{name}`: no fabric path between `{}` and `{}`", nodes[a.0].name, nodes[b.0].name))
                        .at(at.clone(), "these ranks")
                        .help("every pair of ranks needs a direct link or a shared switch; a switchless ring of four or more has no path between opposite nodes: add a switch or run the test on adjacent nodes"),
                );
            }
        }
    }
}

/// `8`, `64K`, `128M`, `1G` -> bytes (binary multiples, as nccl-tests reads them).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}
