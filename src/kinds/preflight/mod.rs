//! The preflight pings: read-only, before any measurement. Per link, a small ping and a jumbo
//! do-not-fragment ping (`-M do -s 8972`) out of the planned netdev; on a switched fabric each
//! port is pinged from a peer on its own switch, and each ISL once each way between two healthy
//! ports, so a failure is pinned to what it is about: a link, a port, or an ISL. A failure
//! blocks only the measurements whose path it affects.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use minijinja::context;

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::{Endpoint, IslId, NodeId, Plan, SwitchId};
use crate::render::job::Resolution;
use crate::render::{Renderer, Template};
use crate::topology::Fabric;

/// The ping's template.
pub const TEMPLATES: &[Template] = &[Template {
    name: "ping",
    source: include_str!("templates/ping.j2"),
    variables: &["count", "netdev", "jumbo", "peer_ip", "local_ip", "node"],
}];

/// What a failing check keeps from running.
#[derive(Debug, Clone, PartialEq)]
pub enum Blocks {
    /// Measurements on these node halves.
    Endpoints(Vec<Endpoint>),
    /// Measurements whose path crosses this ISL (either way).
    Isl(IslId),
    /// The NCCL test of this name.
    Test(String),
    Nothing,
}

/// One ping of the preflight.
#[derive(Debug, Clone)]
pub struct Ping {
    pub from: Endpoint,
    pub to: Endpoint,
    pub to_ip: Ipv4Addr,
    pub jumbo: bool,
    /// The ISL hops between the two (switched fabrics).
    pub isls: Vec<(IslId, SwitchId)>,
    /// The rendered command, run on `from`'s node.
    pub command: String,
}

impl Ping {
    pub fn node(&self) -> NodeId {
        self.from.node
    }
}

/// The pings of the needed nodes. Nothing is pinged from or to a node that cannot be reached
/// (its one FAIL is `reach NODE`): a dead host is never a cabling fault.
pub fn pings(
    plan: &Plan,
    fabric: &Fabric,
    renderer: &Renderer,
    res: &Resolution,
    needed: &[NodeId],
    unreachable: &dyn Fn(NodeId) -> bool,
) -> Vec<Ping> {
    let usable = |e: &Endpoint| needed.contains(&e.node) && !unreachable(e.node);
    let mut pairs: Vec<(Endpoint, Endpoint, Ipv4Addr, Ipv4Addr)> = Vec::new();
    for seg in &plan.segments {
        let members: Vec<_> = seg.members.iter().filter(|m| usable(&m.endpoint)).collect();
        if members.len() < 2 {
            continue;
        }
        // each member pings the first member on its own switch (or the segment's first); the
        // first members of two switches ping each other both ways (the ISL)
        let mut firsts: Vec<(Option<SwitchId>, usize)> = Vec::new();
        for (i, m) in members.iter().enumerate() {
            match firsts.iter().find(|(s, _)| *s == m.switch) {
                Some(&(_, f)) => pairs.push((
                    m.endpoint.clone(),
                    members[f].endpoint.clone(),
                    m.address,
                    members[f].address,
                )),
                None => firsts.push((m.switch, i)),
            }
        }
        if firsts.len() == 1 {
            continue;
        }
        for (a, (_, fa)) in firsts.iter().enumerate() {
            for (_, fb) in firsts.iter().skip(a + 1) {
                let (x, y) = (members[*fa], members[*fb]);
                pairs.push((x.endpoint.clone(), y.endpoint.clone(), x.address, y.address));
                pairs.push((y.endpoint.clone(), x.endpoint.clone(), y.address, x.address));
            }
        }
    }
    let mut out = Vec::new();
    for (from, to, from_ip, to_ip) in pairs {
        let Some(netdev) = res.halves.get(&from).and_then(|f| f.netdev.clone()) else {
            continue;
        };
        let isls: Vec<(IslId, SwitchId)> = fabric
            .path(plan, &from, &to)
            .map(|p| p.isl_hops().collect())
            .unwrap_or_default();
        for jumbo in [false, true] {
            let ctx = context! {
                count => 3, netdev => netdev.clone(), jumbo => jumbo,
                peer_ip => to_ip.to_string(), local_ip => from_ip.to_string(),
                node => plan.node(from.node).name.clone(),
            };
            if let Ok(command) = renderer.render("ping", ctx) {
                out.push(Ping {
                    from: from.clone(),
                    to: to.clone(),
                    to_ip,
                    jumbo,
                    isls: isls.clone(),
                    command,
                });
            }
        }
    }
    out
}

/// What one ping said.
struct Said {
    replies: u64,
    mtu_error: bool,
    last_line: String,
    mtu_line: Option<String>,
}

fn read(text: &str) -> Said {
    let p = crate::tools::ping::parse::parse(text);
    let (replies, mtu_error) = (p.received.unwrap_or(0), p.mtu_error.is_some());
    Said {
        replies,
        mtu_error,
        last_line: text
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no output")
            .to_string(),
        mtu_line: text
            .lines()
            .find(|l| l.contains("mtu") || l.contains("too long") || l.contains("Frag"))
            .map(|l| l.trim().to_string()),
    }
}

fn isl_name(plan: &Plan, isl: IslId) -> String {
    let i = &plan.isls[isl.0];
    format!(
        "{} ({} <-> {})",
        i.name, plan.switches[i.a.0].name, plan.switches[i.b.0].name
    )
}

/// The parts a ping's path runs through: its two halves, the cables into them, the ISLs.
fn path_parts(plan: &Plan, p: &Ping) -> Vec<Part> {
    let mut v = vec![plan.half_part(&p.from), plan.half_part(&p.to)];
    for e in [&p.from, &p.to] {
        if let Some(c) = plan.cable_part(e)
            && !v.contains(&c)
        {
            v.push(c);
        }
    }
    v.extend(p.isls.iter().map(|(i, _)| plan.isl_part(*i)));
    v
}

/// An ISL probe's parts: the ISL, then the halves and cables that probed it (a probing end
/// that is itself broken explains the probe too).
fn isl_first(isl: Part, ends: Vec<Part>) -> Vec<Part> {
    let mut v = vec![isl];
    for p in ends {
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// A path's parts with its cables first: no reply at all is the cabling before the ends.
fn cable_first(mut v: Vec<Part>) -> Vec<Part> {
    v.sort_by_key(|p| !matches!(p, Part::Cable { .. }));
    v
}

/// For each small ping, by (from, to), whether it answered.
type SmallAnswers = HashMap<(Endpoint, Endpoint), bool>;

/// What each ping said (or why it could not run), and which small pings answered.
fn read_all(
    pings: &[Ping],
    outs: &[Result<String, String>],
) -> (Vec<Result<Said, String>>, SmallAnswers) {
    let mut small_ok = SmallAnswers::new();
    let mut said: Vec<Result<Said, String>> = Vec::new();
    for (p, o) in pings.iter().zip(outs) {
        let s = o.as_ref().map(|t| read(t)).map_err(Clone::clone);
        if !p.jumbo
            && let Ok(s) = &s
        {
            small_ok.insert(
                (p.from.clone(), p.to.clone()),
                s.replies > 0 && !s.mtu_error,
            );
        }
        said.push(s);
    }
    (said, small_ok)
}

/// The failed pings across ISLs, grouped by ISL, with the parts of the paths that probed it:
/// one verdict per ISL.
#[derive(Default)]
struct Across {
    why: HashMap<IslId, Vec<String>>,
    ends: HashMap<IslId, Vec<Part>>,
}

impl Across {
    /// Ping `p` across `isl` failed for `why`.
    fn add(&mut self, plan: &Plan, p: &Ping, isl: IslId, why: String) {
        self.ends
            .entry(isl)
            .or_default()
            .extend(path_parts(plan, p));
        self.why.entry(isl).or_default().push(format!(
            "{} -> {}: {why}",
            plan.endpoint_name(&p.from),
            plan.endpoint_name(&p.to)
        ));
    }

    /// One FAIL per ISL, in ISL order: an MTU hop when every failure was the jumbo ping's, a
    /// blocked ISL otherwise. Each blocks what crosses its ISL.
    fn verdicts(mut self, plan: &Plan) -> Vec<(Verdict, Blocks)> {
        let mut out = Vec::new();
        let mut isls: Vec<(IslId, Vec<String>)> =
            std::mem::take(&mut self.why).into_iter().collect();
        isls.sort_by_key(|(i, _)| *i);
        for (isl, why) in isls {
            let mtu = why.iter().all(|w| w.contains("8972-byte"));
            out.push((
                Verdict::check(
                    format!(
                        "{} across {}",
                        if mtu { "jumbo ping" } else { "ping" },
                        isl_name(plan, isl)
                    ),
                    Outcome::Fail,
                    format!(
                        "the ports on both switches answer their own switch; across the ISL: {}",
                        why.join("; ")
                    ),
                    Some(if mtu {
                        Trap::MtuMismatch
                    } else {
                        Trap::IslBlockedRstp
                    }),
                )
                .about(isl_first(
                    plan.isl_part(isl),
                    self.ends.remove(&isl).unwrap_or_default(),
                )),
                Blocks::Isl(isl),
            ));
        }
        out
    }
}

/// The verdicts of the pings, each with what it blocks. Across an ISL, the two directions of one
/// ISL are one verdict (one root cause, one FAIL) when the ports on both sides answer their own
/// switch's pings: the ISL is at fault, and only the measurements crossing it are blocked. A
/// ping that could not be run at all is about what reaches its node, as the launcher says
/// (`reach`: its sshd over SSH, its slurmd under Slurm).
pub fn judge(
    plan: &Plan,
    pings: &[Ping],
    outs: &[Result<String, String>],
    reach: &dyn Fn(&str) -> Part,
) -> Vec<(Verdict, Blocks)> {
    let (said, small_ok) = read_all(pings, outs);
    let mut across = Across::default();
    let mut out = Vec::new();
    for (p, s) in pings.iter().zip(said) {
        let gate = format!(
            "{} {} -> {}",
            if p.jumbo { "jumbo ping" } else { "ping" },
            plan.endpoint_name(&p.from),
            plan.endpoint_name(&p.to)
        );
        let ends = || Blocks::Endpoints(vec![p.from.clone(), p.to.clone()]);
        // what a ping over this path is about: its two halves, then the cable or ISLs between
        let path = || path_parts(plan, p);
        let s = match s {
            Err(e) => {
                let from = plan.node(p.from.node).name.clone();
                out.push((
                    Verdict::check(gate, Outcome::Fail, e, Some(Trap::Unreachable))
                        .about(vec![reach(&from)]),
                    ends(),
                ));
                continue;
            }
            Ok(s) => s,
        };
        if s.replies > 0 && !s.mtu_error {
            out.push((
                Verdict::check(gate, Outcome::Ok, format!("{} replies", s.replies), None)
                    .about(path()),
                Blocks::Nothing,
            ));
            continue;
        }
        let small_answers = small_ok
            .get(&(p.from.clone(), p.to.clone()))
            .copied()
            .unwrap_or(false);
        if p.jumbo && small_answers {
            let why = format!(
                "small ping answers, 8972-byte do-not-fragment ping does not: {}",
                s.mtu_line.unwrap_or_else(|| "no reply".into())
            );
            if let Some((isl, _)) = p.isls.first() {
                across.add(plan, p, *isl, why);
                continue;
            }
            out.push((
                Verdict::check(gate, Outcome::Fail, why, Some(Trap::MtuMismatch)).about(path()),
                ends(),
            ));
        } else if let Some((isl, _)) = p.isls.first() {
            across.add(plan, p, *isl, format!("no reply: {}", s.last_line));
        } else {
            out.push((
                Verdict::check(
                    gate,
                    Outcome::Fail,
                    format!("no reply: {}", s.last_line),
                    Some(Trap::CrossedCable),
                )
                .about(cable_first(path())),
                ends(),
            ));
        }
    }
    out.extend(across.verdicts(plan));
    out
}
