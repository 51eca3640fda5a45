//! `[[cable]]`: direct, ring and switched cables into segments (one subnet each), every
//! port half cabled at most once.

mod crossing;
mod direct;
mod ring;
mod switched;

pub(super) use crossing::ring_crossing;
pub use ring::MAX_RING_NODES;

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use ipnet::Ipv4Net;
use toml::Spanned;

use super::addresses::{SegSpans, member_address, parse_net};
use super::names::{Declared, Places, keyword, label_places, times};
use super::nodes::node_ref;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;
use direct::direct_cable;
use ring::ring_cable;
use switched::switched_cable;

/// Where each endpoint was cabled, to catch a half cabled twice.
pub(super) struct Cabled(Places<Endpoint>);

impl Cabled {
    /// One problem per port half cabled more than once, naming every cable end.
    fn finish(self, ctx: &mut Ctx, nodes: &[Node]) {
        for (e, places) in self.0.repeated() {
            let p = Problem::error(
                "plan::cabled-twice",
                format!(
                    "`{}.{}.{}` is cabled {}",
                    nodes[e.node.0].name,
                    e.port,
                    e.half,
                    times(places.len())
                ),
            )
            .help("a port half carries one link: remove one of the two cables or use another port");
            ctx.push(label_places(
                p,
                &places,
                "first cabled here",
                "cabled again here",
            ));
        }
    }
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
        cabled: Cabled(Places::new()),
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
    w.cabled.finish(ctx, nodes);
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
        if !w.cabled.0.add(e.clone(), at) {
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
