//! The fabric as a picture: nodes, switches, cables and ISLs, each marked by what was measured
//! over it and the checks that name it. This file gathers the marks; [`picture`] draws them.

mod picture;

use std::collections::HashMap;

use serde::Serialize;

use super::ctx::{Ctx, bw_items};
use super::format::fmt_val;
use crate::gate::judge::Outcome;
use crate::plan::{Endpoint, Plan};
use crate::topology::Fabric;

/// An element of the picture and what crossed it.
#[derive(Default)]
struct Mark {
    ok: usize,
    warn: usize,
    fail: usize,
    /// A check that names the element failed (discovery, MTU, ping).
    check_fail: bool,
    notes: Vec<String>,
}

impl Mark {
    fn add(&mut self, o: Outcome, note: String) {
        match o {
            Outcome::Ok => self.ok += 1,
            Outcome::Warn => self.warn += 1,
            Outcome::Fail => self.fail += 1,
        }
        if o != Outcome::Ok && self.notes.len() < 6 {
            self.notes.push(note);
        }
    }

    /// FAIL when every flow over it failed or a check on it failed, WARN when some did not
    /// pass, OK when all passed; `None` when nothing crossed it.
    fn class(&self) -> Option<&'static str> {
        let n = self.ok + self.warn + self.fail;
        if self.check_fail || (n > 0 && self.fail == n) {
            Some("fab-fail")
        } else if self.warn + self.fail > 0 {
            Some("fab-warn")
        } else if n > 0 {
            Some("fab-ok")
        } else {
            None
        }
    }

    /// What crossed it, then what did not pass over it: a tooltip's lines.
    fn lines(&self) -> Vec<String> {
        let n = self.ok + self.warn + self.fail;
        let mut out = vec![if n == 0 {
            "nothing measured over it".to_string()
        } else {
            format!(
                "{n} measurement(s): {} OK, {} WARN, {} FAIL",
                self.ok, self.warn, self.fail
            )
        }];
        out.extend(self.notes.iter().cloned());
        out
    }
}

/// The marks of the picture: per node, per segment member (its cable: segment id and member
/// index), per ISL.
struct Marks {
    nodes: Vec<Mark>,
    segs: HashMap<(usize, usize), Mark>,
    isls: Vec<Mark>,
}

/// A segment member by its endpoint's name: the name, the endpoint, the segment id and the
/// member's index.
type Members = Vec<(String, Endpoint, usize, usize)>;

/// Members by name, the first of a name (as a scan finds it).
fn index(members: &Members) -> HashMap<&str, usize> {
    let mut at = HashMap::new();
    for (i, (name, ..)) in members.iter().enumerate() {
        at.entry(name.as_str()).or_insert(i);
    }
    at
}

impl Marks {
    /// Everything the run says about the plan's elements: unreachable nodes, the checks that
    /// name endpoints or nodes, every bandwidth flow over its cables and ISLs.
    fn of(ctx: &Ctx<'_>, p: &Plan, fab: &Fabric) -> Marks {
        let mut marks = Marks {
            nodes: p.nodes.iter().map(|_| Mark::default()).collect(),
            segs: HashMap::new(),
            isls: p.isls.iter().map(|_| Mark::default()).collect(),
        };
        let members: Members = p
            .segments
            .iter()
            .flat_map(|s| {
                s.members.iter().enumerate().map(move |(mi, m)| {
                    (p.endpoint_name(&m.endpoint), m.endpoint.clone(), s.id.0, mi)
                })
            })
            .collect();
        marks.unreachable(ctx, p);
        marks.checks(ctx, p, &members);
        marks.measurements(ctx, p, fab, &members);
        marks
    }

    fn unreachable(&mut self, ctx: &Ctx<'_>, p: &Plan) {
        for d in &ctx.r.discovery {
            if !d.reachable
                && let Some(i) = p.nodes.iter().position(|n| n.name == d.node)
            {
                self.nodes[i].check_fail = true;
                self.nodes[i].add(
                    Outcome::Fail,
                    format!("unreachable: {}", d.error.clone().unwrap_or_default()),
                );
            }
        }
    }

    /// Checks (preflight) name endpoints: mark their cables and nodes.
    fn checks(&mut self, ctx: &Ctx<'_>, p: &Plan, members: &Members) {
        let index = index(members);
        let find = |name: &str| index.get(name).map(|i| &members[*i]);
        let mut node_at: HashMap<&str, usize> = HashMap::new();
        for (i, n) in p.nodes.iter().enumerate() {
            node_at.entry(n.name.as_str()).or_insert(i);
        }
        for v in &ctx.r.preflight {
            for tok in v.gate.split_whitespace() {
                if let Some((_, e, s, m)) = find(tok) {
                    let mk = self.segs.entry((*s, *m)).or_default();
                    if v.outcome == Outcome::Fail {
                        mk.check_fail = true;
                        mk.notes.push(format!("{}: {}", v.gate, v.detail));
                    }
                    if v.outcome == Outcome::Fail {
                        self.nodes[e.node.0].notes.push(format!("{}: FAIL", v.gate));
                    }
                } else if let Some(&i) = node_at.get(tok)
                    && v.outcome != Outcome::Ok
                {
                    self.nodes[i]
                        .notes
                        .push(format!("{}: {}", v.gate, v.outcome.as_str()));
                }
            }
        }
    }

    /// Measurements: every flow marks the cables at both ends and the ISLs it crossed.
    fn measurements(&mut self, ctx: &Ctx<'_>, p: &Plan, fab: &Fabric, members: &Members) {
        let index = index(members);
        let find = |name: &str| index.get(name).map(|i| &members[*i]);
        for it in bw_items(ctx).iter().filter(|it| it.flow.half != "both") {
            let note = format!(
                "{} {}",
                it.v.gate,
                it.v.measured
                    .map(|m| format!("{} {}", fmt_val(m), it.v.unit))
                    .unwrap_or_else(|| "not measured".into())
            );
            let (Some(c), Some(s)) = (find(&it.flow.src_endpoint()), find(&it.flow.dst_endpoint()))
            else {
                continue;
            };
            self.segs
                .entry((c.2, c.3))
                .or_default()
                .add(it.v.outcome, note.clone());
            if (s.2, s.3) != (c.2, c.3) {
                self.segs
                    .entry((s.2, s.3))
                    .or_default()
                    .add(it.v.outcome, note.clone());
            }
            if let Some(path) = fab.path(p, &c.1, &s.1) {
                for (isl, _) in path.isl_hops() {
                    self.isls[isl.0].add(it.v.outcome, note.clone());
                }
            }
        }
    }
}

/// The section: the picture, or why there is none.
#[derive(Serialize)]
pub(super) struct Section {
    no_picture: Option<String>,
    drawing: Option<picture::Drawing>,
}

pub(super) fn fabric(ctx: &Ctx<'_>) -> Section {
    let (Some(p), Some(fab)) = (ctx.plan, ctx.fabric.as_ref()) else {
        return Section {
            no_picture: Some(
                ctx.plan_note
                    .clone()
                    .unwrap_or_else(|| "the run directory has no plan.toml".into()),
            ),
            drawing: None,
        };
    };
    let marks = Marks::of(ctx, p, fab);
    Section {
        no_picture: None,
        drawing: Some(picture::draw(p, &marks)),
    }
}
