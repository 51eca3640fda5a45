//! `[[cable]]`: direct, ring and switched cables into segments (one subnet each), every
//! port half cabled at most once.

mod crossing;
mod direct;
mod ring;
mod switched;

pub(super) use crossing::ring_crossing;
pub use ring::MAX_RING_NODES;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use ipnet::Ipv4Net;
use toml::Spanned;

use super::addresses::{SegSpans, member_address, parse_net};
use super::names::{Declared, MAX_LABELS, Places, and_list, keyword, times};
use super::nodes::node_ref;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;
use direct::direct_cable;
use ring::ring_cable;
use switched::switched_cable;

/// Where each endpoint was cabled, to catch a half cabled twice; and which raw cable each place
/// (by its span's start) belongs to.
pub(super) struct Cabled(Places<Endpoint>, HashMap<usize, usize>);

/// The halves cabled more than once by the same cables, with every place each is cabled.
type Repeats = Vec<(Endpoint, Vec<Range<usize>>)>;

impl Cabled {
    fn new() -> Cabled {
        Cabled(Places::new(), HashMap::new())
    }

    /// Mark `e` cabled at `at` by raw cable `ci`; false when it was cabled before.
    fn add(&mut self, e: Endpoint, at: Range<usize>, ci: usize) -> bool {
        self.1.entry(at.start).or_insert(ci);
        self.0.add(e, at)
    }

    /// One problem per mistake: the halves the same cables cable again are one problem (a
    /// cable declared twice is one error naming both declarations, not one per end and half),
    /// naming their ports (`spark-a.f0`) when more than one half of a port is in it.
    fn finish(self, ctx: &mut Ctx, nodes: &[Node], raw: &[RawCable]) {
        let owner = self.1;
        let mut groups: Vec<(Vec<usize>, Repeats)> = Vec::new();
        for (e, places) in self.0.repeated() {
            let key: Vec<usize> = places
                .iter()
                .map(|p| owner.get(&p.start).copied().unwrap_or(usize::MAX))
                .collect();
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.1.push((e, places)),
                None => groups.push((key, vec![(e, places)])),
            }
        }
        for (by, items) in groups {
            let mut cables: Vec<String> = Vec::new();
            for ci in by {
                let name = match raw.get(ci) {
                    Some(c) => match &c.name {
                        Some(n) => format!("`{}`", n.get_ref()),
                        None => format!("`{}{}`", c.kind.get_ref(), ci + 1),
                    },
                    None => continue,
                };
                if !cables.contains(&name) {
                    cables.push(name);
                }
            }
            ctx.push(cabled_again(&items, nodes, &cables));
        }
    }
}

/// The problem of one group of halves cabled again by the same cables.
fn cabled_again(items: &Repeats, nodes: &[Node], cables: &[String]) -> Problem {
    let mut names: Vec<String> = Vec::new();
    // in the order the first cable gives them
    let mut ordered: Vec<&(Endpoint, Vec<Range<usize>>)> = items.iter().collect();
    ordered.sort_by_key(|(_, places)| places.first().map(|r| r.start));
    for (e, _) in ordered {
        let port = format!("{}.{}", nodes[e.node.0].name, e.port);
        let halves = items
            .iter()
            .filter(|(x, _)| x.node == e.node && x.port == e.port)
            .count();
        let name = if halves > 1 {
            format!("`{port}`")
        } else {
            format!("`{port}.{}`", e.half)
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let n = items.first().map(|(_, p)| p.len()).unwrap_or(2);
    let what = if names.len() == 1 { "is" } else { "are" };
    let mut p = Problem::error(
        "plan::cabled-twice",
        match cables.len() {
            0 | 1 => format!("{} {what} cabled {}", and_list(&names, 4), times(n)),
            _ => format!(
                "{} {what} cabled {}: by cables {}",
                and_list(&names, 4),
                times(n),
                and_list(cables, 4)
            ),
        },
    )
    .help("a port half carries one link: remove one of the two cables or use another port");
    // every place once: the first cable's ends, then each again; the first place again is
    // where the reader fixes it (the primary label)
    let mut places: Vec<(Range<usize>, &str)> = Vec::new();
    for k in 0..n {
        for (_, at) in items {
            let Some(at) = at.get(k) else { continue };
            if !places.iter().any(|(x, _)| x == at) {
                let label = if k == 0 {
                    "first cabled here"
                } else {
                    "cabled again here"
                };
                places.push((at.clone(), label));
            }
        }
    }
    if let Some(i) = places.iter().position(|(_, l)| *l == "cabled again here") {
        let (at, label) = places.remove(i);
        p = p.at(at, label);
    }
    let total = places.len() + 1;
    for (at, label) in places.into_iter().take(MAX_LABELS - 1) {
        p = if p.primary.is_none() {
            p.at(at, label)
        } else {
            p.also(at, label)
        };
    }
    if total > MAX_LABELS {
        let help = p.help.take().unwrap_or_default();
        p = p.help(format!(
            "{help} ({total} places; the first {MAX_LABELS} are shown)"
        ));
    }
    p
}

pub(super) fn port_check(
    ctx: &mut Ctx,
    node: &Node,
    profiles: &[Profile],
    port: &str,
    at: Range<usize>,
) -> bool {
    let prof = &profiles[node.profile.0];
    if prof.port(port).is_some() {
        return true;
    }
    let mut p = Problem::error(
        "plan::unknown-port",
        format!(
            "node `{}` has no port `{port}` (profile `{}`)",
            node.name, prof.name
        ),
    )
    .at(at, "no such port");
    p = match did_you_mean(port, prof.ports.iter().map(|p| p.name.as_str())) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help(format!(
            "profile `{}` has ports {}",
            prof.name,
            prof.ports
                .iter()
                .map(|p| format!("`{}`", p.name))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    ctx.push(p);
    false
}

/// `NODE.PORT` -> (node, port)
pub(super) fn node_port(
    ctx: &mut Ctx,
    r: &Spanned<String>,
    nodes: &[Node],
    profiles: &[Profile],
) -> Option<(NodeId, String)> {
    let Some((node, port)) = r.get_ref().split_once('.') else {
        ctx.push(
            Problem::error(
                "plan::port-ref",
                format!("`{}` does not name a node port", r.get_ref()),
            )
            .at(span(r), "expected `NODE.PORT`")
            .help("write the node and its port, e.g. `spark-a.f0`"),
        );
        return None;
    };
    let id = node_ref(ctx, node, span(r), nodes, "cable end")?;
    if !port_check(ctx, &nodes[id.0], profiles, port, span(r)) {
        return None;
    }
    Some((id, port.to_string()))
}

pub(super) fn halves_for(
    ctx: &mut Ctx,
    raw: Option<&Vec<Spanned<String>>>,
    ends: &[(NodeId, String)],
    nodes: &[Node],
    profiles: &[Profile],
) -> Vec<String> {
    // default: every half the first end's port has
    let default: Vec<String> = ends
        .first()
        .and_then(|(n, p)| profiles[nodes[n.0].profile.0].port(p))
        .map(|p| p.halves.iter().map(|h| h.name.clone()).collect())
        .unwrap_or_default();
    let Some(raw) = raw else {
        return default;
    };
    let mut out = Vec::new();
    for h in raw {
        let mut ok = true;
        for (n, p) in ends {
            let prof = &profiles[nodes[n.0].profile.0];
            if prof.half(p, h.get_ref()).is_none() {
                ok = false;
                let halves: Vec<&str> = prof
                    .port(p)
                    .map(|pp| pp.halves.iter().map(|x| x.name.as_str()).collect())
                    .unwrap_or_default();
                let mut pr = Problem::error(
                    "plan::unknown-half",
                    format!(
                        "port `{}.{p}` has no half `{}`",
                        nodes[n.0].name,
                        h.get_ref()
                    ),
                )
                .at(span(h), "no such half");
                pr = match did_you_mean(h.get_ref(), halves.iter().copied()) {
                    Some(s) => pr.help(format!("did you mean `{s}`?")),
                    None => pr.help(format!("its halves are {}", halves.join(", "))),
                };
                ctx.push(pr);
                break;
            }
        }
        if ok {
            if out.contains(h.get_ref()) {
                ctx.push(
                    Problem::error(
                        "plan::duplicate-name",
                        format!("half `{}` is listed twice", h.get_ref()),
                    )
                    .at(span(h), "again here")
                    .help("list each half once"),
                );
            } else {
                out.push(h.get_ref().clone());
            }
        }
    }
    out
}

/// What the cables build, and what they are checked against: the segments so far with their
/// spans, and where each port half was cabled.
pub(super) struct Wiring<'p> {
    pub(super) nodes: &'p [Node],
    pub(super) profiles: &'p [Profile],
    pub(super) switches: &'p [Switch],
    pub(super) cabled: Cabled,
    pub(super) segments: Vec<Segment>,
    /// Per segment: span of its subnet, and spans of explicit addresses by member index.
    pub(super) seg_spans: SegSpans,
    /// Raw cables that cable a port half again.
    pub(super) recabled: HashSet<usize>,
}

/// What the cables pass hands on: the cables, their segments, per segment the spans of its
/// subnet and addresses, and the raw cables that cable a port half again.
pub(super) struct Wired {
    pub(super) cables: Vec<Cable>,
    pub(super) segments: Vec<Segment>,
    pub(super) seg_spans: SegSpans,
    pub(super) recabled: HashSet<usize>,
}

/// The validated cables and their segments.
pub(super) fn cables(
    ctx: &mut Ctx,
    raw: &[RawCable],
    nodes: &[Node],
    profiles: &[Profile],
    switches: &[Switch],
) -> Wired {
    let mut out = Vec::new();
    let mut w = Wiring {
        nodes,
        profiles,
        switches,
        cabled: Cabled::new(),
        segments: Vec::new(),
        seg_spans: Vec::new(),
        recabled: HashSet::new(),
    };
    let mut names = Declared::new("cable", String::new());
    for (ci, c) in raw.iter().enumerate() {
        let kinds = [
            ("direct", CableKind::Direct),
            ("ring", CableKind::Ring),
            ("switched", CableKind::Switched),
        ];
        let Some(kind) = keyword(ctx, "plan::cable-kind", "cable kind", &c.kind, &kinds) else {
            continue;
        };
        let name = match &c.name {
            Some(n) => {
                names.declare(ctx, n);
                n.get_ref().clone()
            }
            None => format!("{}{}", c.kind.get_ref(), ci + 1),
        };
        stray_fields(ctx, c, kind);
        let first_seg = w.segments.len();
        match kind {
            CableKind::Direct => direct_cable(ctx, &mut w, c, &name, ci),
            CableKind::Ring => ring_cable(ctx, &mut w, c, &name, ci),
            CableKind::Switched => switched_cable(ctx, &mut w, c, &name, ci),
        }
        out.push(Cable {
            name,
            kind,
            segments: (first_seg..w.segments.len()).map(SegmentId).collect(),
        });
    }
    names.finish(ctx);
    w.cabled.finish(ctx, nodes, raw);
    Wired {
        cables: out,
        segments: w.segments,
        seg_spans: w.seg_spans,
        recabled: w.recabled,
    }
}

/// Fields that do not belong to the cable's kind.
fn stray_fields(ctx: &mut Ctx, c: &RawCable, kind: CableKind) {
    let stray = [
        ("ends", c.ends.is_some() && kind != CableKind::Direct),
        ("nodes", c.nodes.is_some() && kind != CableKind::Ring),
        ("ports", c.ports.is_some() && kind != CableKind::Ring),
        ("attach", c.attach.is_some() && kind != CableKind::Switched),
        (
            "subnet-pool",
            c.subnet_pool.is_some() && kind != CableKind::Ring,
        ),
        (
            "link-subnets",
            c.link_subnets.is_some() && kind != CableKind::Ring,
        ),
    ];
    for (field, bad) in stray {
        if bad {
            ctx.push(
                Problem::error(
                    "plan::cable-field",
                    format!("a `{}` cable does not take `{field}`", c.kind.get_ref()),
                )
                .at(span(&c.kind), "this kind")
                .help(
                    "direct: `ends`; ring: `nodes` (and `ports`, `subnet-pool`); switched: `attach`",
                ),
            );
        }
    }
}

/// A segment about to be added: its name, half, subnet, and where each end lands.
/// Where a switched end lands: its switch, and the switch's port where the plan names it.
pub(super) type Landing = (SwitchId, Option<String>);

pub(super) struct NewSegment {
    name: String,
    half: String,
    subnet: Ipv4Net,
    subnet_span: Range<usize>,
    /// (end, where the plan names it, its switch and the switch's port)
    ends: Vec<(Endpoint, Range<usize>, Option<Landing>)>,
}

/// Add a segment: mark each end cabled (a half cabled twice is an error), give each its
/// address (explicit or derived from the subnet, in end order), and record the spans.
pub(super) fn push_segment(
    ctx: &mut Ctx,
    w: &mut Wiring,
    c: &RawCable,
    ci: usize,
    seg: NewSegment,
) {
    let mut members = Vec::new();
    let mut spans = BTreeMap::new();
    for (i, (e, at, landing)) in seg.ends.into_iter().enumerate() {
        if !w.cabled.add(e.clone(), at.clone(), ci) {
            w.recabled.insert(ci);
        }
        let address = member_address(
            ctx,
            c,
            w.nodes,
            &e,
            seg.subnet,
            i,
            &mut spans,
            i,
            seg.subnet_span.clone(),
        );
        let (switch, switch_port) = match landing {
            Some((s, p)) => (Some(s), p),
            None => (None, None),
        };
        members.push(Member {
            endpoint: e,
            address,
            switch,
            switch_port,
        });
    }
    w.segments.push(Segment {
        id: SegmentId(w.segments.len()),
        name: seg.name,
        cable: ci,
        half: seg.half,
        subnet: seg.subnet,
        members,
    });
    w.seg_spans.push((seg.subnet_span, spans));
}

pub(super) fn per_half_subnets(
    ctx: &mut Ctx,
    c: &RawCable,
    halves: &[String],
    name: &str,
) -> BTreeMap<String, (Ipv4Net, Range<usize>)> {
    let mut out = BTreeMap::new();
    match &c.subnets {
        None => {
            ctx.push(
                Problem::error("plan::subnet-missing", format!("cable `{name}` gives no subnets"))
                    .at(span(&c.kind), "this cable")
                    .help("one subnet per half: `subnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }`"),
            );
        }
        Some(s) => {
            let map = s.get_ref();
            {
                for (h, net) in map {
                    if !halves.contains(h.get_ref()) {
                        ctx.push(
                            Problem::error("plan::unknown-half", format!("cable `{name}` gives a subnet for half `{}`, which it does not carry", h.get_ref()))
                                .at(span(h), "not a carried half")
                                .help(format!("this cable carries {}", halves.join(", "))),
                        );
                        continue;
                    }
                    if let Some(n) = parse_net(ctx, net) {
                        out.insert(h.get_ref().clone(), (n, span(net)));
                    }
                }
                for h in halves {
                    if !map.keys().any(|k| k.get_ref() == h) {
                        ctx.push(
                            Problem::error(
                                "plan::subnet-missing",
                                format!("cable `{name}` gives no subnet for half `{h}`"),
                            )
                            .at(span(s), "half missing")
                            .help(format!(
                                "add `{h} = \"ADDRESS/PREFIX\"`: each half is its own subnet"
                            )),
                        );
                    }
                }
            }
        }
    }
    out
}
