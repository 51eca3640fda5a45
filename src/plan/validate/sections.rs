//! `[tests]`: the preflight flag, and the building blocks each test kind reads its own section
//! with ([`SectionReader`]: halves, schedules and sampling, declared rounds and flows, node
//! references, unique names, size warnings). The sections themselves are the kinds'.

use std::collections::BTreeSet;
use std::ops::Range;

use toml::Spanned;

use toml::de::DeValue;

use super::names::{Declared, Places, keyword, label_places};
use super::nodes::node_ref;
use super::repeats::Repeats;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::section::{ScheduleKeys, Section, SectionKind, SectionReader};

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
        names: Vec::new(),
        at: 0..0,
    };
    let mut out = Vec::new();
    let mut repeats = Repeats::default();
    for (kind, value) in sections {
        let at = value.span();
        let tables: Vec<Spanned<DeValue<'_>>> = match (kind.repeated(), value.into_inner()) {
            (true, DeValue::Array(items)) => items.into_iter().collect(),
            (_, v) => vec![Spanned::new(at.clone(), v)],
        };
        for table in tables {
            reader.at = table.span();
            let at = reader.at.clone();
            let text = super::repeats::text(table.get_ref());
            let table = toml::de::ValueDeserializer::from(table);
            if let Some(data) = kind.read(table, &mut reader) {
                repeats.note(kind.key(), text, at.clone());
                out.push(Section {
                    key: kind.key(),
                    data,
                    at,
                });
            }
        }
    }
    for d in std::mem::take(&mut reader.names) {
        d.finish(reader.ctx);
    }
    repeats.finish(reader.ctx);
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
    /// Names unique across the plan's sections, per what they name (`NCCL test`).
    names: Vec<Declared>,
    /// Where the table being read is.
    at: Range<usize>,
}

/// The building blocks of test sections: each reads one shape of key and reports its problems;
/// kinds call them from their [`SectionKind::read`].
impl SectionReader for SectionScope<'_> {
    fn at(&self) -> Range<usize> {
        self.at.clone()
    }

    fn push(&mut self, p: Problem) {
        self.ctx.push(p);
    }

    fn nodes(&self) -> &[Node] {
        self.scope.nodes
    }

    fn segments(&self) -> &[Segment] {
        self.scope.segments
    }

    fn halves(&mut self, raw: Option<&Vec<Spanned<String>>>) -> Vec<String> {
        test_halves(self.ctx, raw, self.scope.segments)
    }

    fn schedule(&mut self, raw: Option<&Spanned<String>>, has_rounds: bool) -> ScheduleKind {
        schedule_kind(self.ctx, raw, has_rounds)
    }

    fn sampling(&mut self, keys: ScheduleKeys<'_>, schedule: ScheduleKind) -> ScheduleKind {
        super::sampling::sampling(self.ctx, keys, schedule, self.scope.segments)
    }

    fn rounds(&mut self, raw: &[RawRound]) -> Vec<DeclaredRound> {
        declared_rounds(self.ctx, raw, self.scope)
    }

    fn node(&mut self, name: &Spanned<String>, what: &str) -> Option<NodeId> {
        node_ref(self.ctx, name.get_ref(), span(name), self.scope.nodes, what)
    }

    fn declare(&mut self, what: &'static str, name: &Spanned<String>) {
        let i = match self.names.iter().position(|d| d.what() == what) {
            Some(i) => i,
            None => {
                self.names.push(Declared::new(what, String::new()));
                self.names.len() - 1
            }
        };
        self.names[i].declare(self.ctx, name);
    }

    fn per_link_size(
        &mut self,
        key: &str,
        halves: &[String],
        duration_s: u32,
        schedule_at: Option<Range<usize>>,
        bounded_by: Option<&str>,
    ) {
        let size = PerLink {
            test: key,
            halves,
            duration_s,
            schedule_at,
            bounded_by,
        };
        per_link_size(self.ctx, &size, self.cables, self.scope.segments);
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
fn per_link_size(ctx: &mut Ctx, size: &PerLink<'_>, cables: &[RawCable], segments: &[Segment]) {
    let PerLink {
        test,
        halves,
        duration_s,
        ..
    } = *size;
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
    // all-pairs on a fabric that big runs more than a plan may: only offered where it fits
    let fits = |name: &str| {
        name != "all-pairs"
            || (n.saturating_mul(n - 1) <= super::MAX_JOBS
                && n.saturating_mul(2) <= super::MAX_ROUNDS)
    };
    let bounded: Vec<String> = BOUNDED_SCHEDULES
        .iter()
        .filter(|(name, _)| fits(name))
        .map(|(name, runs)| format!("`schedule = \"{name}\"` ({})", runs(n)))
        .collect();
    let help = match size.bounded_by {
        None => format!(
            "per-link runs each pair alone; for a switched fabric use a bounded schedule: {}",
            bounded.join(", or ")
        ),
        Some(other) => format!(
            "`{test}` runs each pair of a switched fabric alone: set `enabled = false` or name fewer `halves`; `{other}` measures a fabric with {}",
            bounded.join(", or ")
        ),
    };
    let at = span(&cables[big.cable].kind);
    let mut p = Problem::warning(
        "plan::schedule-size",
        format!(
            "`{test}` runs per link: {} rounds, about {} at {each} s each",
            crate::text::thousands(rounds as u64),
            duration(rounds.saturating_mul(each))
        ),
    )
    .at(
        at,
        format!(
            "{n} members: {} pairs",
            crate::text::thousands((n.saturating_mul(n - 1) / 2) as u64)
        ),
    )
    .help(help);
    if let Some(s) = size.schedule_at.clone() {
        p = p.also(s, "one pair at a time");
    }
    ctx.push(p);
}

/// A test that runs each pair alone, as [`SectionReader::per_link_size`] is told of it.
struct PerLink<'a> {
    test: &'a str,
    halves: &'a [String],
    duration_s: u32,
    schedule_at: Option<Range<usize>>,
    bounded_by: Option<&'a str>,
}

/// Seconds in the largest unit that keeps a number above 1: "42 min", "3.5 days", "2.8 years".
pub(super) fn duration(s: usize) -> String {
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

/// What a test is checked against: the plan's nodes and segments.
pub(super) struct Scope<'a> {
    nodes: &'a [Node],
    segments: &'a [Segment],
    cabling: &'a Cabling,
}

/// `[[tests.<kind>.round]]`: named rounds of flows, no port half in two flows of one round.
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
