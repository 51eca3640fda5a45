//! `[tests]`: the preflight flag, and the building blocks each test kind reads its own section
//! with (schedules, halves, declared rounds and flows, NCCL ranks, size warnings).

use std::collections::BTreeSet;
use std::ops::Range;

use toml::Spanned;

use toml::de::DeValue;

use super::names::{Declared, MAX_LABELS, Places, keyword, label_places};
use super::nodes::node_ref;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::section::{Section, SectionKind, SectionReader};

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
                (
                    "sampled",
                    ScheduleKind::Sampled(Sampling {
                        rounds: Sampling::DEFAULT_ROUNDS,
                        seed: Sampling::DEFAULT_SEED,
                    }),
                ),
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

/// The cabled endpoints of each node with their segment, in segment order: a flow's ends
/// resolve in the size of one node's cabling, not of the whole plan.
pub(super) struct Cabling {
    by_node: Vec<Vec<(Endpoint, SegmentId)>>,
}

impl Cabling {
    pub(super) fn new(nodes: &[Node], segments: &[Segment]) -> Cabling {
        let mut by_node = vec![Vec::new(); nodes.len()];
        for s in segments {
            for m in &s.members {
                if let Some(list) = by_node.get_mut(m.endpoint.node.0) {
                    list.push((m.endpoint.clone(), s.id));
                }
            }
        }
        Cabling { by_node }
    }
}

/// Resolve `NODE[.PORT[.HALF]]` on one side of a flow to candidate endpoints.
fn endpoint_candidates<'c>(
    ctx: &mut Ctx,
    spec: &str,
    nodes: &[Node],
    cabling: &'c Cabling,
) -> Result<Vec<&'c (Endpoint, SegmentId)>, String> {
    let mut parts = spec.split('.');
    let node = parts.next().unwrap_or("");
    let port = parts.next();
    let half = parts.next();
    if parts.next().is_some() {
        return Err(format!("`{spec}` has too many parts"));
    }
    let Some(&id) = ctx.node_ids.get(node) else {
        return Err(
            match ctx.suggest(node, nodes.iter().map(|n| n.name.as_str())) {
                Some(s) => format!("node `{node}` is not declared; did you mean `{s}`?"),
                None => format!("node `{node}` is not declared"),
            },
        );
    };
    Ok(cabling.by_node[id.0]
        .iter()
        .filter(|(e, _)| port.is_none_or(|p| p == e.port) && half.is_none_or(|h| h == e.half))
        .collect())
}

pub(super) fn resolve_flow(
    ctx: &mut Ctx,
    f: &Spanned<String>,
    nodes: &[Node],
    cabling: &Cabling,
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
    let cands = |x: &str, ctx: &mut Ctx| match endpoint_candidates(ctx, x, nodes, cabling) {
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
    for (ce, cseg) in &cc {
        for (se, sseg) in &sc {
            // one segment holds both ends (on one half: a segment is one half)
            if ce.node != se.node && cseg == sseg {
                options.push(Flow {
                    client: ce.clone(),
                    server: se.clone(),
                    segment: *cseg,
                });
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
/// The plan's `[tests]`: the preflight flag, and each kind's sections read by the kind itself
/// with the building blocks of [`SectionReader`].
pub(super) fn tests(
    ctx: &mut Ctx,
    raw: &RawTests,
    sections: Vec<(&'static dyn SectionKind, Spanned<DeValue<'_>>)>,
    cables: &[RawCable],
    nodes: &[Node],
    segments: &[Segment],
) -> Tests {
    let cabling = Cabling::new(nodes, segments);
    let scope = Scope {
        nodes,
        segments,
        cabling: &cabling,
    };
    let mut reader = SectionScope {
        ctx,
        scope: &scope,
        cables,
        nccl_names: Declared::new("NCCL test", String::new()),
        at: 0..0,
    };
    let mut out = Vec::new();
    for (kind, value) in sections {
        let at = value.span();
        let tables: Vec<Spanned<DeValue<'_>>> = match (kind.repeated(), value.into_inner()) {
            (true, DeValue::Array(items)) => items.into_iter().collect(),
            (_, v) => vec![Spanned::new(at.clone(), v)],
        };
        for table in tables {
            reader.at = table.span();
            let at = reader.at.clone();
            let table = toml::de::ValueDeserializer::from(table);
            if let Some(data) = kind.read(table, &mut reader) {
                out.push(Section {
                    key: kind.key(),
                    data,
                    at,
                });
            }
        }
    }
    reader.nccl_names.finish(reader.ctx);
    Tests {
        preflight: raw.preflight.unwrap_or(true),
        sections: out,
    }
}

/// What a kind's section reader reaches of the validation: the plan so far and the problems.
struct SectionScope<'a> {
    ctx: &'a mut Ctx,
    scope: &'a Scope<'a>,
    cables: &'a [RawCable],
    /// NCCL test names, unique across every `[[tests.nccl]]`.
    nccl_names: Declared,
    /// Where the table being read is.
    at: Range<usize>,
}

/// The building blocks of test sections: each reads one shape of section and warns about its
/// size; kinds call them from their [`SectionKind::read`].
impl SectionReader for SectionScope<'_> {
    fn at(&self) -> Range<usize> {
        self.at.clone()
    }

    fn push(&mut self, p: Problem) {
        self.ctx.push(p);
    }

    /// A bandwidth section (`rdma-bw`, `rdma-bw-both` when `both`), named `key`.
    fn bw(&mut self, t: &RawBwTest, key: &str, both: bool) -> Option<BwTest> {
        let s = self;
        let test = bw_test(s.ctx, t, both, s.scope)?;
        if test.schedule == ScheduleKind::PerLink && !both {
            per_link_size(
                s.ctx,
                key,
                &test.halves,
                test.duration_s,
                t.schedule.as_ref().map(span),
                s.cables,
                s.scope.segments,
            );
        }
        Some(test)
    }

    /// A latency section, named `key`.
    fn lat(&mut self, t: &RawLatTest, key: &str) -> Option<LatTest> {
        if t.enabled == Some(false) {
            return None;
        }
        let s = self;
        let test = LatTest {
            size_bytes: t.size_bytes.unwrap_or(2),
            iterations: t.iterations.unwrap_or(1000),
            halves: test_halves(s.ctx, t.halves.as_ref(), s.scope.segments),
            timeout_s: t.timeout_s.unwrap_or(30),
        };
        per_link_size(
            s.ctx,
            key,
            &test.halves,
            0,
            None,
            s.cables,
            s.scope.segments,
        );
        Some(test)
    }

    /// A TCP sanity section, named `key`.
    fn iperf(&mut self, t: &RawIperfTest, key: &str) -> Option<IperfTest> {
        if t.enabled == Some(false) {
            return None;
        }
        let s = self;
        let d = t.duration_s.unwrap_or(2).max(1);
        let test = IperfTest {
            duration_s: d,
            streams: t.streams.unwrap_or(1).max(1),
            halves: test_halves(s.ctx, t.halves.as_ref(), s.scope.segments),
            timeout_s: t.timeout_s.unwrap_or(d.saturating_add(20)),
        };
        per_link_size(
            s.ctx,
            key,
            &test.halves,
            d,
            None,
            s.cables,
            s.scope.segments,
        );
        Some(test)
    }

    /// One NCCL test (names unique across the plan's NCCL tests).
    fn nccl(&mut self, t: &RawNcclTest) -> Option<NcclTest> {
        let s = self;
        nccl_test(s.ctx, t, &mut s.nccl_names, s.scope.nodes, s.scope.segments)
    }
}

/// Rounds past which a per-link test is worth a warning: each runs alone, one pair at a time.
const PER_LINK_ROUNDS_WARN: usize = 500;

/// Seconds a round costs beyond its measurement (start the server, wait until it is ready,
/// collect).
const ROUND_OVERHEAD_S: usize = 1;

/// What a bounded schedule runs for a segment of `n` members, in words.
type Runs = fn(usize) -> String;

/// Schedules that bound the rounds of a switched fabric, as the warning offers them: the name,
/// and what it runs for a segment of `n` members. A new bounded schedule is one more line.
const BOUNDED_SCHEDULES: &[(&str, Runs)] = &[
    ("all-pairs", |n| {
        format!(
            "every pair once, {} rounds of concurrent pairs",
            n.saturating_sub(1).max(1)
        )
    }),
    ("sampled", |n| {
        format!(
            "{} random pairings of all {n} at once, `rounds = K` for more, the end at fault named",
            Sampling::DEFAULT_ROUNDS
        )
    }),
];

/// A per-link test on a switched fabric runs every member pair alone: n(n-1)/2 rounds (12.5
/// million for 5000 nodes, and `plan` writes every one). Past `PER_LINK_ROUNDS_WARN` rounds,
/// a warning names the count, the time it would take, and the bounded schedules.
fn per_link_size(
    ctx: &mut Ctx,
    test: &str,
    halves: &[String],
    duration_s: u32,
    schedule_at: Option<Range<usize>>,
    cables: &[RawCable],
    segments: &[Segment],
) {
    let selected = segments
        .iter()
        .filter(|s| halves.is_empty() || halves.contains(&s.half));
    let (mut rounds, mut biggest): (usize, Option<&Segment>) = (0, None);
    for s in selected {
        let n = s.members.len();
        rounds = rounds.saturating_add(n.saturating_mul(n.saturating_sub(1)) / 2);
        if biggest.is_none_or(|b| n > b.members.len()) {
            biggest = Some(s);
        }
    }
    let Some(big) = biggest.filter(|b| b.members.len() > 2) else {
        return;
    };
    if rounds <= PER_LINK_ROUNDS_WARN {
        return;
    }
    let n = big.members.len();
    let each = duration_s as usize + ROUND_OVERHEAD_S;
    let bounded: Vec<String> = BOUNDED_SCHEDULES
        .iter()
        .map(|(name, runs)| format!("`schedule = \"{name}\"` ({})", runs(n)))
        .collect();
    let help = if test == "rdma-bw" {
        format!(
            "per-link runs each pair alone; for a switched fabric use a bounded schedule: {}",
            bounded.join(", or ")
        )
    } else {
        format!(
            "`{test}` runs each pair of a switched fabric alone: set `enabled = false` or name fewer `halves`; `rdma-bw` measures a fabric with {}",
            bounded.join(", or ")
        )
    };
    let at = span(&cables[big.cable].kind);
    let mut p = Problem::warning(
        "plan::schedule-size",
        format!(
            "`{test}` runs per link: {} rounds, about {} at {each} s each",
            thousands(rounds),
            duration(rounds.saturating_mul(each))
        ),
    )
    .at(
        at,
        format!(
            "{n} members: {} pairs",
            thousands(n.saturating_mul(n - 1) / 2)
        ),
    )
    .help(help);
    if let Some(s) = schedule_at {
        p = p.also(s, "one pair at a time");
    }
    ctx.push(p);
}

/// 12497500 -> "12,497,500".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds in the largest unit that keeps a number above 1: "42 min", "3.5 days", "2.8 years".
fn duration(s: usize) -> String {
    let s = s as f64;
    let units = [
        (365.0 * 86400.0, "years"),
        (86400.0, "days"),
        (3600.0, "h"),
        (60.0, "min"),
    ];
    for (size, name) in units {
        if s >= size {
            let v = s / size;
            return if v < 10.0 {
                format!("{v:.1} {name}")
            } else {
                format!("{v:.0} {name}")
            };
        }
    }
    format!("{s:.0} s")
}

/// `[tests.rdma-bw]` or (`both`) `[tests.rdma-bw-both]`.
/// What a test is checked against: the plan's nodes and segments.
pub(super) struct Scope<'a> {
    nodes: &'a [Node],
    segments: &'a [Segment],
    cabling: &'a Cabling,
}

fn bw_test(ctx: &mut Ctx, t: &RawBwTest, both: bool, scope: &Scope) -> Option<BwTest> {
    let segments = scope.segments;
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
    let schedule = super::sampling::sampling(ctx, t, schedule, scope.segments);
    let rounds = declared_rounds(ctx, &t.round, scope);
    let duration_s = t.duration_s.unwrap_or(6).max(1);
    let direction = match &t.direction {
        // declared rounds are declared flows: they run the way they are written
        None if schedule == ScheduleKind::Rounds => Direction::One,
        None => Direction::Both,
        Some(d) => keyword(
            ctx,
            "plan::direction",
            "direction",
            d,
            &[
                ("one", Direction::One),
                ("both", Direction::Both),
                ("bidirectional", Direction::Bidirectional),
            ],
        )
        .unwrap_or(Direction::Both),
    };
    Some(BwTest {
        duration_s,
        size_bytes: t.size_bytes.unwrap_or(65536),
        qps: t.qps.unwrap_or(1).max(1),
        schedule,
        direction,
        halves: test_halves(ctx, t.halves.as_ref(), segments),
        rounds,
        timeout_s: t.timeout_s.unwrap_or(duration_s.saturating_add(30)),
    })
}

/// `[[tests.rdma-bw.round]]`: named rounds of flows, no port half in two flows of one round.
fn declared_rounds(ctx: &mut Ctx, raw: &[RawRound], scope: &Scope) -> Vec<DeclaredRound> {
    let nodes = scope.nodes;
    let mut rounds = Vec::new();
    let mut round_names = Declared::new("round", String::new());
    for r in raw {
        round_names.declare(ctx, &r.name);
        let mut flows = Vec::new();
        let mut busy: Places<Endpoint> = Places::new();
        for f in &r.flows {
            if let Some(flow) = resolve_flow(ctx, f, nodes, scope.cabling) {
                for e in [&flow.client, &flow.server] {
                    busy.add(e.clone(), span(f));
                }
                flows.push(flow);
            }
        }
        for (e, places) in busy.repeated() {
            let p = Problem::error(
                "plan::round-conflict",
                format!(
                    "`{}.{}.{}` is in {} jobs of round `{}` at once",
                    nodes[e.node.0].name,
                    e.port,
                    e.half,
                    match places.len() {
                        2 => "two".to_string(),
                        n => n.to_string(),
                    },
                    r.name.get_ref()
                ),
            )
            .help("a node half carries one measurement at a time: move one flow to another round");
            let again = if places.len() == 2 {
                "second job"
            } else {
                "another job"
            };
            ctx.push(label_places(p, &places, "first job", again));
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
    round_names.finish(ctx);
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
        sizes[i] = crate::text::size::parse(v.get_ref());
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
    // every pair, within a budget: the pairs without a path are one problem naming a few
    let mut missing: Vec<String> = Vec::new();
    let (mut count, mut checks, mut complete) = (0usize, 0usize, true);
    'scan: for (i, a) in ids.iter().enumerate() {
        for b in ids.iter().skip(i + 1) {
            checks += 1;
            if checks > PAIR_CHECKS {
                complete = false;
                break 'scan;
            }
            if !shared(&segs_of[a.0], &segs_of[b.0]) {
                count += 1;
                if missing.len() < MAX_LABELS {
                    missing.push(format!("`{}` and `{}`", nodes[a.0].name, nodes[b.0].name));
                }
            }
        }
    }
    let message = match (count, complete) {
        (0, _) => return,
        (1, true) => format!("NCCL test `{name}`: no fabric path between {}", missing[0]),
        (n, true) if n <= MAX_LABELS => format!(
            "NCCL test `{name}`: no fabric path between {n} pairs of ranks: {}",
            missing.join(", ")
        ),
        (n, true) => format!(
            "NCCL test `{name}`: no fabric path between {n} pairs of ranks: {}, ...",
            missing.join(", ")
        ),
        (n, false) => format!(
            "NCCL test `{name}`: no fabric path between at least {n} pairs of ranks: {}, ...",
            missing.join(", ")
        ),
    };
    ctx.push(
        Problem::error("plan::no-path", message)
            .at(at, "these ranks")
            .help("every pair of ranks needs a direct link or a shared switch; a switchless ring of four or more has no path between opposite nodes: add a switch or run the test on adjacent nodes"),
    );
}

/// Pairs of ranks checked for a fabric path per NCCL test (every pair up to about 2800 ranks);
/// past it the check names what it found.
const PAIR_CHECKS: usize = 4_000_000;
