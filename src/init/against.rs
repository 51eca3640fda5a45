//! `fabricplan detect PLAN --against`: the plan against the fabric as found, each difference
//! as the plan edit (or the change on the box) that makes them agree, with the plan's line: a
//! cable that lands elsewhere (by who answers: LLDP, IPv6 or IPv4 neighbours), a device renamed
//! on its box, a half that lost its address or runs a smaller MTU, a node off its peers'
//! firmware (or the profile's pinned one), a PCIe link below its maximum, a host that does not
//! answer. Pure: the CLI reads the hosts.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Host;
use super::boxes::{self, Boxes};
use super::links::{self, Far, Links};
use crate::discover::{HalfResolution, resolve_node};
use crate::plan::{CableKind, Endpoint, NodeId, Plan, Segment};

/// One difference between the plan and the fabric.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Difference {
    /// What it is about: `cable ring.l2`, `mtu spark-a.f0.a`, `firmware spark-b`.
    pub about: String,
    /// The difference and the edit or change that removes it.
    pub text: String,
    /// The plan's line it is about (1-based), where there is one.
    pub line: Option<usize>,
}

impl Difference {
    pub fn line_text(&self) -> String {
        format!("{}: {}", self.about, self.text)
    }
}

/// The plan's lines, to point at.
struct Lines<'a> {
    text: &'a str,
}

impl Lines<'_> {
    /// The line of `key` in the `index`-th `[[header]]` block (its header's line when the key
    /// is not written there).
    fn in_block(&self, header: &str, index: usize, keys: &[&str]) -> Option<usize> {
        let open = format!("[[{header}]]");
        let lines: Vec<&str> = self.text.lines().collect();
        let start = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with(&open))
            .nth(index)?
            .0;
        let end = (start + 1..lines.len())
            .find(|i| lines[*i].trim_start().starts_with('['))
            .unwrap_or(lines.len());
        // the first key the block writes, in the order given
        let found = keys.iter().find_map(|k| {
            (start + 1..end).find(|i| {
                lines[*i]
                    .trim_start()
                    .strip_prefix(k)
                    .is_some_and(|r| r.trim_start().starts_with('=') || r.starts_with('.'))
            })
        });
        Some(found.unwrap_or(start) + 1)
    }

    /// The `[[node]]` block of `name`: the line of `key` in it.
    fn node(&self, plan: &Plan, name: &str, keys: &[&str]) -> Option<usize> {
        let i = plan.nodes.iter().position(|n| n.name == name)?;
        self.in_block("node", i, keys)
    }
}

/// What the comparison found: the differences, and how many of the plan's cables (a direct or
/// ring link, a switched port) who answers proved where the plan puts them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub differences: Vec<Difference>,
    pub proven: usize,
    pub cables: usize,
}

/// Compare the plan with the hosts' readings (`hosts` named as the plan's nodes).
pub fn compare(plan: &Plan, hosts: &[Host]) -> Comparison {
    let boxes = boxes::read(hosts);
    let lines = Lines { text: &plan.text };
    let mut out: Vec<Difference> = boxes
        .left_out
        .iter()
        .map(|l| Difference {
            about: format!("reach {}", l.host),
            text: l.why.clone(),
            line: lines.node(plan, &l.host, &["name"]),
        })
        .collect();
    let links = links::find(&boxes);
    let mut res: HashMap<NodeId, (usize, Vec<HalfResolution>)> = HashMap::new();
    for (i, b) in boxes.boxes.iter().enumerate() {
        if let Some(n) = plan.node_by_name(&b.given) {
            res.insert(n.id, (i, resolve_node(plan, n.id, &b.probe)));
        }
    }
    out.extend(cables(plan, &boxes, &links, &res, &lines));
    out.extend(halves(plan, &boxes, &res, &lines));
    out.extend(firmware(plan, &res, &lines));
    let (proven, cables) = proven(plan, &links, &res);
    Comparison {
        differences: out,
        proven,
        cables,
    }
}

/// How many of the plan's cables (a direct or ring link; a switched node port) were heard where
/// the plan puts them: a far end the plan names answered on one of its halves (for a switched
/// port: its planned switch by LLDP, or another port of its segment).
fn proven(
    plan: &Plan,
    links: &Links,
    res: &HashMap<NodeId, (usize, Vec<HalfResolution>)>,
) -> (usize, usize) {
    let mut all: BTreeMap<String, bool> = BTreeMap::new();
    for s in &plan.segments {
        let switched = plan.cables.get(s.cable).map(|c| c.kind) == Some(CableKind::Switched);
        for m in &s.members {
            let key = if switched {
                format!("{}.{}", plan.node(m.endpoint.node).name, m.endpoint.port)
            } else {
                link_of(s)
            };
            let heard =
                half(res, &m.endpoint).and_then(|(b, h)| links.get(&(b, h.netdev.clone()?)));
            let planned_switch = m
                .switch
                .and_then(|w| plan.switches.get(w.0))
                .map(|w| w.name.as_str());
            let ok = heard.is_some_and(|x| {
                x.fars.iter().chain(&x.segment).any(|f| match f {
                    Far::Switch { name, .. } => Some(name.as_str()) == planned_switch,
                    Far::Node { r#box, netdev } => s.members.iter().any(|o| {
                        o.endpoint != m.endpoint
                            && half(res, &o.endpoint).is_some_and(|(ob, oh)| {
                                ob == *r#box && oh.netdev.as_ref() == Some(netdev)
                            })
                    }),
                    Far::Stranger(_) => false,
                })
            });
            *all.entry(key).or_insert(false) |= ok;
        }
    }
    (all.values().filter(|v| **v).count(), all.len())
}

/// The resolution of a planned half.
fn half<'a>(
    res: &'a HashMap<NodeId, (usize, Vec<HalfResolution>)>,
    e: &Endpoint,
) -> Option<(usize, &'a HalfResolution)> {
    let (b, hs) = res.get(&e.node)?;
    hs.iter().find(|h| &h.endpoint == e).map(|h| (*b, h))
}

/// The plan port a netdev of `node` is (pinned, else the profile's).
fn port_of(plan: &Plan, node: NodeId, netdev: &str) -> Option<String> {
    let pinned = plan
        .node(node)
        .pins
        .iter()
        .find(|(_, p)| p.netdev.as_deref() == Some(netdev))
        .map(|((port, _), _)| port.clone());
    pinned.or_else(|| {
        plan.profile_of(node)
            .ports
            .iter()
            .find(|p| p.halves.iter().any(|h| h.netdev == netdev))
            .map(|p| p.name.clone())
    })
}

/// The link a segment is part of: `ring.l2` of `ring.l2.a`, `stack` of `stack.a`.
fn link_of(s: &Segment) -> String {
    s.name
        .strip_suffix(&format!(".{}", s.half))
        .unwrap_or(&s.name)
        .to_string()
}

/// Cables that land elsewhere than planned: one difference per link.
fn cables(
    plan: &Plan,
    boxes: &Boxes,
    links: &Links,
    res: &HashMap<NodeId, (usize, Vec<HalfResolution>)>,
    lines: &Lines<'_>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut found: Vec<Moved> = Vec::new();
    let mut said: HashSet<String> = HashSet::new();
    for s in &plan.segments {
        let kind = plan.cables.get(s.cable).map(|c| c.kind);
        let link = link_of(s);
        if kind == Some(CableKind::Switched) {
            for d in switched(plan, links, res, s, lines) {
                if said.insert(d.about.clone()) {
                    out.push(d);
                }
            }
            continue;
        }
        if said.contains(&link) || s.members.len() != 2 {
            continue;
        }
        for (me, other) in [
            (&s.members[0], &s.members[1]),
            (&s.members[1], &s.members[0]),
        ] {
            let Some(m) = moved(
                plan,
                boxes,
                links,
                res,
                s,
                (&me.endpoint, &other.endpoint),
                lines,
            ) else {
                continue;
            };
            said.insert(link.clone());
            found.push(m);
            break;
        }
    }
    out.extend(exchanged(found));
    out
}

/// A moved cable as found: the difference, the two ports it joins as found (sorted), and the
/// two the plan joins.
struct Moved {
    difference: Difference,
    found: [String; 2],
    planned: [String; 2],
    source: &'static str,
}

/// The moved cables, one difference each; two planned cables found as one physical cable (the
/// two cables of one node exchanged between its ports, seen from both) are one difference
/// naming that node.
fn exchanged(found: Vec<Moved>) -> Vec<Difference> {
    let mut groups: Vec<Vec<Moved>> = Vec::new();
    for m in found {
        match groups.iter_mut().find(|g| g[0].found == m.found) {
            Some(g) => g.push(m),
            None => groups.push(vec![m]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            if g.len() == 1 {
                return g.remove(0).difference;
            }
            let node_of = |p: &String| p.split('.').next().unwrap_or_default().to_string();
            let common = g[0].planned.iter().map(node_of).find(|n| {
                g.iter().all(|m| m.planned.iter().any(|p| node_of(p) == *n))
            });
            let abouts: Vec<String> = g.iter().map(|m| m.difference.about.replacen("cable ", "", 1)).collect();
            let planned: Vec<String> = g.iter().map(|m| format!("{} -- {}", m.planned[0], m.planned[1])).collect();
            let line = g[0].difference.line;
            let edit = line.map(|l| format!("change line {l}")).unwrap_or_else(|| "change the cables".into());
            Difference {
                about: format!("cables {}", abouts.join(", ")),
                text: format!(
                    "planned {}, found {} -- {} ({}): {}",
                    planned.join(" and "),
                    g[0].found[0],
                    g[0].found[1],
                    g[0].source,
                    match common {
                        Some(n) => format!("the cables at {n} are exchanged between its ports: swap them there, or {edit}"),
                        None => format!("one cable found where the plan has {}: check them, or {edit}", g.len()),
                    }
                ),
                line,
            }
        })
        .collect()
}

/// `me`'s half hears another far end than the plan's `other`: the difference.
fn moved(
    plan: &Plan,
    boxes: &Boxes,
    links: &Links,
    res: &HashMap<NodeId, (usize, Vec<HalfResolution>)>,
    s: &Segment,
    (me, other): (&Endpoint, &Endpoint),
    lines: &Lines<'_>,
) -> Option<Moved> {
    let (b, h) = half(res, me)?;
    let netdev = h.netdev.as_deref()?;
    let heard = links.get(&(b, netdev.to_string()))?;
    let expected = half(res, other).and_then(|(ob, oh)| Some((ob, oh.netdev.clone()?)));
    let mut found = None;
    for f in &heard.fars {
        if let Far::Node { r#box, netdev: fnd } = f {
            if expected
                .as_ref()
                .is_some_and(|(ob, ond)| ob == r#box && ond == fnd)
            {
                return None;
            }
            found = found.or(Some((*r#box, fnd.clone())));
        }
    }
    let (fb, fnd) = found?;
    let far = &boxes.boxes[fb];
    let far_node = plan.node_by_name(&far.given)?;
    let far_port = port_of(plan, far_node.id, &fnd).unwrap_or_else(|| fnd.clone());
    let here_port = port_of(plan, me.node, netdev).unwrap_or_else(|| me.port.clone());
    let name = |e: &Endpoint| format!("{}.{}", plan.node(e.node).name, e.port);
    let (first, second) = (&s.members[0].endpoint, &s.members[1].endpoint);
    let here = format!("{}.{here_port}", plan.node(me.node).name);
    let there = format!("{}.{far_port}", far_node.name);
    let found_text = if me == first {
        format!("{here} -- {there}")
    } else {
        format!("{there} -- {here}")
    };
    let line = lines.in_block("cable", s.cable, &["ends", "nodes", "attach"]);
    let mut pair = [here.clone(), there.clone()];
    pair.sort();
    Some(Moved {
        difference: Difference {
            about: format!("cable {}", link_of(s)),
            text: format!(
                "planned {} -- {}, found {found_text} ({}): {} or move the cable",
                name(first),
                name(second),
                heard.source.text(),
                line.map(|l| format!("change line {l}"))
                    .unwrap_or_else(|| "change the cable".into())
            ),
            line,
        },
        found: pair,
        planned: [name(first), name(second)],
        source: heard.source.text(),
    })
}

/// The switched halves that land on another switch (or switch port) than planned, by LLDP: one
/// difference per node port.
fn switched(
    plan: &Plan,
    links: &Links,
    res: &HashMap<NodeId, (usize, Vec<HalfResolution>)>,
    s: &Segment,
    lines: &Lines<'_>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    for m in &s.members {
        let Some((b, h)) = half(res, &m.endpoint) else {
            continue;
        };
        let Some(heard) = h.netdev.as_ref().and_then(|nd| links.get(&(b, nd.clone()))) else {
            continue;
        };
        let Some(planned) = m
            .switch
            .and_then(|w| plan.switches.get(w.0))
            .map(|w| w.name.clone())
        else {
            continue;
        };
        for f in &heard.fars {
            let Far::Switch { name, port } = f else {
                continue;
            };
            let wrong_switch = *name != planned && plan.switches.iter().any(|w| &w.name == name);
            let wrong_port = *name == planned
                && matches!((&m.switch_port, port), (Some(p), Some(f)) if !(f == p || f.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('s') && r.len() > 1 && r[1..].chars().all(|c| c.is_ascii_digit()))));
            if wrong_switch || wrong_port {
                let line = lines.in_block("cable", s.cable, &["attach"]);
                let planned_at = match &m.switch_port {
                    Some(p) => format!("{planned} {p}"),
                    None => planned.clone(),
                };
                let found_at = match port {
                    Some(p) => format!("{name} {p}"),
                    None => name.clone(),
                };
                out.push(Difference {
                    about: format!("cable {}.{}", plan.node(m.endpoint.node).name, m.endpoint.port),
                    text: format!("planned on {planned_at} (cable `{}`), found on {found_at} (LLDP): {} or move the cable", plan.cables.get(s.cable).map(|c| c.name.as_str()).unwrap_or_default(), line.map(|l| format!("change line {l}")).unwrap_or_else(|| "change the attach".into())),
                    line,
                });
                break;
            }
        }
    }
    out
}

/// Per planned half: its address gone, a smaller MTU, its device renamed, its PCIe link below
/// its maximum.
fn halves(
    plan: &Plan,
    boxes: &Boxes,
    res: &HashMap<NodeId, (usize, Vec<HalfResolution>)>,
    lines: &Lines<'_>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut nodes: Vec<&NodeId> = res.keys().collect();
    nodes.sort();
    for n in nodes {
        let probe = boxes.boxes.get(res[n].0).map(|b| &b.probe);
        for h in &res[n].1 {
            out.extend(half_differences(plan, h, probe, lines));
        }
    }
    out
}

fn half_differences(
    plan: &Plan,
    h: &HalfResolution,
    probe: Option<&crate::discover::Probe>,
    lines: &Lines<'_>,
) -> Vec<Difference> {
    use crate::discover::resolve::HalfIssue;
    let mut out = Vec::new();
    let node = plan.node(h.endpoint.node).name.clone();
    let nd = h.netdev.clone().unwrap_or_else(|| "NETDEV".into());
    let cable_line = plan.member_of(&h.endpoint).and_then(|(s, _)| {
        lines.in_block(
            "cable",
            s.cable,
            &["addresses", "subnets", "link-subnets", "subnet-pool"],
        )
    });
    if let Some(fix) = &h.fix_command {
        out.push(Difference {
            about: format!("address {}", h.name),
            text: format!("{}/{} (line {}) is not configured on {node}: run there `{fix}`, or change the plan's address", h.address, h.prefix, cable_line.map(|l| l.to_string()).unwrap_or_else(|| "?".into())),
            line: cable_line,
        });
    }
    if let Some(m) = h.mtu.filter(|m| *m < 9000 && h.address_found) {
        out.push(Difference {
            about: format!("mtu {}", h.name),
            text: format!("{nd} runs MTU {m}, the fabric 9000: run on {node} `sudo ip link set {} mtu 9000` (the plan has no MTU line: the box changes)", crate::render::quote(&nd).unwrap_or_default()),
            line: None,
        });
    }
    let pinned = plan.pinned(&h.endpoint);
    let profile_dev = plan.profile_half(&h.endpoint).map(|p| p.device.clone());
    let live = probe
        .and_then(|p| p.device_of_netdev(&nd))
        .map(|d| d.name.clone());
    let key = format!("pin.\"{}.{}\"", h.endpoint.port, h.endpoint.half);
    let line = lines.node(plan, &node, &[&key, "pin", "name"]);
    let at = line
        .map(|l| format!("line {l}"))
        .unwrap_or_else(|| "its node".into());
    let text = match (&pinned.device, &live, &profile_dev) {
        (Some(p), Some(l), _) if p != l => Some(format!(
            "the plan pins `{p}` ({at}), the device behind {nd} on {node} is `{l}`: change the pin to `{l}`, or remove it and leave the name to discovery"
        )),
        (Some(p), None, _) if h.issue == Some(HalfIssue::DeviceMissing) => Some(format!(
            "the plan pins `{p}` ({at}), which {node} does not have: change the pin, or remove it and leave the name to discovery"
        )),
        // a half whose address sits on another port's netdev is a cable question, not a name
        (None, Some(l), Some(p)) if l != p && h.landed_on.is_none() => Some(format!(
            "profile `{}` says `{p}`, the device behind {nd} on {node} is `{l}` (renamed): runs use `{l}`; to hold the plan to it, pin it on {at} (`{key} = {{ device = \"{l}\" }}`)",
            plan.profile_of(h.endpoint.node).name
        )),
        _ => None,
    };
    if let Some(text) = text {
        out.push(Difference {
            about: format!("device {}", h.name),
            text,
            line,
        });
    }
    if let Some(l) = h
        .hardware
        .as_ref()
        .and_then(|hw| hw.pcie.as_ref())
        .filter(|l| l.degraded())
    {
        out.push(Difference {
            about: format!("pcie {}", h.name),
            text: format!("its PCIe link trained at {} of {} (it carries {:.1} Gb/s): reseat or service the card on {node}", l.now(), l.max(), l.carries_gbps().unwrap_or(0.0)),
            line: None,
        });
    }
    out
}

/// Nodes whose firmware is not the profile's pinned one, or not what most nodes run (on a tie
/// the newest): one difference per node.
fn firmware(
    plan: &Plan,
    res: &HashMap<NodeId, (usize, Vec<HalfResolution>)>,
    lines: &Lines<'_>,
) -> Vec<Difference> {
    let mut per_node: BTreeMap<NodeId, String> = BTreeMap::new();
    for (n, (_, hs)) in res {
        if let Some(fw) = hs
            .iter()
            .find_map(|h| h.hardware.as_ref()?.firmware.clone())
        {
            per_node.insert(*n, fw);
        }
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for v in per_node.values() {
        match counts.iter_mut().find(|(x, _)| x == v) {
            Some((_, c)) => *c += 1,
            None => counts.push((v, 1)),
        }
    }
    counts.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(crate::discover::hardware::newer(b.0, a.0))
    });
    let common = counts.first().map(|(v, _)| v.to_string());
    let mut out = Vec::new();
    for (n, fw) in &per_node {
        let node = &plan.node(*n).name;
        let profile = plan.profile_of(*n);
        let (want, line, why) = match &profile.firmware {
            Some(p) => (
                p.clone(),
                plan.profiles
                    .iter()
                    .position(|x| x.name == profile.name)
                    .and_then(|i| lines.in_block("profile", i, &["firmware"])),
                format!("the profile `{}` pins", profile.name),
            ),
            None => (
                common.clone().unwrap_or_default(),
                None,
                "the other nodes run".to_string(),
            ),
        };
        if *fw != want {
            out.push(Difference {
                about: format!("firmware {node}"),
                text: format!("{node} runs {fw}, {why} {want}: update {node}{}", line.map(|l| format!(", or change line {l}")).unwrap_or_else(|| format!(" (to hold every node to it, pin `firmware = \"{want}\"` in profile `{}`)", profile.name))),
                line,
            });
        }
    }
    out
}
