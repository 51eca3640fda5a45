//! Cables proven by who answers. After the small ping over each planned link, the neighbour
//! table of the pinging box names the MAC that answered; discovery knows every netdev's MAC on
//! every box, so the MAC names the far box and netdev. Where lldpd runs, each cabled end also
//! hears its far chassis and port. Both are compared with the plan, per cable: a cable proven
//! is OK with its evidence; a cable landing elsewhere is one verdict naming both ends as planned
//! and as found, with the recabling to do, implicating the cable; without either source the
//! verdict says the cabling was inferred, not proven. Pure: the runner reads the tables.

use std::collections::{BTreeMap, HashMap};

use super::checks::Check;
use super::probe::Probe;
use super::resolve::HalfResolution;
use crate::gate::judge::{Outcome, Reached, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::parse::neigh::NeighReport;
use crate::plan::{CableKind, Endpoint, NodeId, Plan, SegmentId};

/// What the runner gathered for the proof.
pub struct Evidence<'a> {
    pub probes: &'a HashMap<NodeId, Probe>,
    pub resolutions: &'a HashMap<NodeId, Vec<HalfResolution>>,
    /// Each pinging box's neighbour table, read after its pings.
    pub neighbours: &'a HashMap<NodeId, NeighReport>,
    /// The small pings: from, to, whether it was answered.
    pub pings: &'a [(Endpoint, Endpoint, bool)],
}

/// A far end as found.
#[derive(Debug, Clone, PartialEq)]
enum Far {
    /// A planned node's netdev, and the plan port that netdev is (when it is one).
    Node {
        node: NodeId,
        netdev: String,
        port: Option<String>,
    },
    /// A switch (`known`: a plan switch's name; else a chassis no plan entity is called) and
    /// its port.
    Switch {
        name: String,
        known: bool,
        port: Option<String>,
    },
}

impl Far {
    fn text(&self, plan: &Plan) -> String {
        match self {
            Far::Node { node, netdev, port } => {
                let n = &plan.node(*node).name;
                match port {
                    Some(p) => format!("{n}.{netdev} ({n}.{p})"),
                    None => format!("{n}.{netdev}"),
                }
            }
            Far::Switch { name, port, .. } => match port {
                Some(p) => format!("{name} {p}"),
                None => name.clone(),
            },
        }
    }

    /// The node port (or switch and port) as a person names where a cable lands.
    fn place(&self, plan: &Plan) -> String {
        match self {
            Far::Node { node, netdev, port } => {
                let n = &plan.node(*node).name;
                format!("{n}.{}", port.as_deref().unwrap_or(netdev))
            }
            far => far.text(plan),
        }
    }
}

/// What one cabled end (a half) heard, against what the plan puts at its far end.
struct Seen {
    /// The local half, `spark-a.f0.a`, and its node port, `spark-a.f0`.
    local: String,
    local_port: String,
    planned: Planned,
    mac: Option<(String, Option<Far>)>,
    lldp: Option<Far>,
}

/// The plan's far end of one half.
#[derive(Clone)]
enum Planned {
    Node { end: Endpoint, netdevs: Vec<String> },
    Switch { name: String, port: Option<String> },
}

impl Planned {
    fn place(&self, plan: &Plan) -> String {
        match self {
            Planned::Node { end, .. } => format!("{}.{}", plan.node(end.node).name, end.port),
            Planned::Switch { name, port } => match port {
                Some(p) => format!("{name} {p}"),
                None => name.clone(),
            },
        }
    }

    /// Whether `far` is this end. A switch port matches itself or a breakout of it
    /// (`swp12s1` of `swp12`); a chassis no plan entity is called is neither (`None`: cannot
    /// tell: the plan's switch names are not the switches' own).
    fn agrees(&self, far: &Far) -> Option<bool> {
        match (self, far) {
            (Planned::Node { end, netdevs }, Far::Node { node, netdev, .. }) => {
                Some(*node == end.node && netdevs.contains(netdev))
            }
            (
                Planned::Switch { name, port },
                Far::Switch {
                    name: n2,
                    known,
                    port: p2,
                },
            ) => {
                if name != n2 {
                    return known.then_some(false);
                }
                Some(match (port, p2) {
                    (Some(p), Some(f)) => breakout_of(f, p),
                    _ => true,
                })
            }
            _ => Some(false),
        }
    }
}

/// `swp12`, or a breakout of it: `swp12s0`, `swp12s1`.
fn breakout_of(found: &str, planned: &str) -> bool {
    found == planned
        || found
            .strip_prefix(planned)
            .and_then(|r| r.strip_prefix('s'))
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()))
}

/// The node that owns `mac`, and its netdev.
fn owner_of_mac(ev: &Evidence<'_>, mac: &str) -> Option<(NodeId, String)> {
    let mut nodes: Vec<&NodeId> = ev.probes.keys().collect();
    nodes.sort();
    nodes
        .into_iter()
        .find_map(|n| Some((*n, ev.probes[n].interface_with_mac(mac)?.name.clone())))
}

/// The plan port a netdev of `node` is: where discovery resolved a half to it, else the profile.
fn port_of(plan: &Plan, ev: &Evidence<'_>, node: NodeId, netdev: &str) -> Option<String> {
    let resolved = ev
        .resolutions
        .get(&node)
        .and_then(|hs| hs.iter().find(|h| h.netdev.as_deref() == Some(netdev)))
        .map(|h| h.endpoint.port.clone());
    resolved.or_else(|| {
        plan.profile_of(node)
            .ports
            .iter()
            .find(|p| p.halves.iter().any(|h| h.netdev == netdev))
            .map(|p| p.name.clone())
    })
}

fn far_node(plan: &Plan, ev: &Evidence<'_>, node: NodeId, netdev: String) -> Far {
    let port = port_of(plan, ev, node, &netdev);
    Far::Node { node, netdev, port }
}

/// The far end an LLDP neighbour names: a plan node by its name or hostname (its port by the
/// port's MAC, else its description, a netdev name), else a switch.
fn far_of_lldp(plan: &Plan, ev: &Evidence<'_>, n: &crate::parse::lldp::LldpNeighbour) -> Far {
    let chassis = n.chassis_name.clone().unwrap_or_default();
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    let node = plan.nodes.iter().find(|x| {
        x.name == chassis
            || ev
                .probes
                .get(&x.id)
                .is_some_and(|p| !p.hostname.is_empty() && short(&p.hostname) == short(&chassis))
    });
    match node {
        Some(x) => {
            let by_mac = n
                .port_mac()
                .and_then(|m| ev.probes.get(&x.id)?.interface_with_mac(m))
                .map(|i| i.name.clone());
            let netdev = by_mac.or_else(|| n.port_descr.clone()).unwrap_or_default();
            far_node(plan, ev, x.id, netdev)
        }
        None => Far::Switch {
            known: plan.switches.iter().any(|s| s.name == chassis),
            name: chassis,
            port: n
                .port_id
                .as_ref()
                .filter(|i| i.kind != "mac")
                .map(|i| i.value.clone())
                .or_else(|| n.port_descr.clone()),
        },
    }
}

/// The netdevs the plan puts at an end: its pin, else its profile's.
fn planned_netdevs(plan: &Plan, e: &Endpoint) -> Vec<String> {
    plan.pinned(e)
        .netdev
        .or_else(|| plan.profile_half(e).map(|h| h.netdev.clone()))
        .into_iter()
        .collect()
}

/// The netdev a half really uses on its box (discovery's), else the plan's.
fn local_netdev(plan: &Plan, ev: &Evidence<'_>, e: &Endpoint) -> Option<String> {
    ev.resolutions
        .get(&e.node)
        .and_then(|hs| hs.iter().find(|h| &h.endpoint == e))
        .and_then(|h| h.netdev.clone())
        .or_else(|| planned_netdevs(plan, e).into_iter().next())
}

/// What the end `local` of segment `seg` heard, against the plan's far end.
fn seen(plan: &Plan, ev: &Evidence<'_>, seg: SegmentId, local: &Endpoint) -> Option<Seen> {
    let segment = plan.segment(seg);
    let me = segment.members.iter().find(|m| &m.endpoint == local)?;
    let probe = ev.probes.get(&local.node)?;
    let netdev = local_netdev(plan, ev, local)?;
    let (planned, far_address) = match me.switch {
        Some(sw) => (
            Planned::Switch {
                name: plan.switches[sw.0].name.clone(),
                port: me.switch_port.clone(),
            },
            None,
        ),
        None => {
            let other = segment.members.iter().find(|m| &m.endpoint != local)?;
            let netdevs = planned_netdevs(plan, &other.endpoint);
            (
                Planned::Node {
                    end: other.endpoint.clone(),
                    netdevs,
                },
                Some(other.address),
            )
        }
    };
    let mac = far_address.and_then(|a| {
        let e = ev
            .neighbours
            .get(&local.node)?
            .entry(&a.to_string(), &netdev)?;
        let m = e.lladdr.clone()?;
        let far = owner_of_mac(ev, &m).map(|(n, d)| far_node(plan, ev, n, d));
        Some((m, far))
    });
    let lldp = probe
        .lldp
        .as_ref()
        .and_then(|r| r.on(&netdev).next())
        .map(|n| far_of_lldp(plan, ev, n));
    Some(Seen {
        local: plan.endpoint_name(local),
        local_port: format!("{}.{}", plan.node(local.node).name, local.port),
        planned,
        mac,
        lldp,
    })
}

/// One planned cable: its part, its segments and its ends (node ports, a switch).
struct PlannedCable {
    part: Part,
    name: String,
    segments: Vec<SegmentId>,
    /// Only these ends of the segments (a switched cable is one node port's).
    ends: Vec<(NodeId, String)>,
}

/// The plan's cables as a person counts them: a direct cable, each link of a ring, each node
/// port attached to a switch.
fn planned_cables(plan: &Plan) -> Vec<PlannedCable> {
    let mut out: Vec<PlannedCable> = Vec::new();
    for c in &plan.cables {
        let mut groups: BTreeMap<Vec<(NodeId, String)>, Vec<SegmentId>> = BTreeMap::new();
        for sid in &c.segments {
            let seg = plan.segment(*sid);
            let mut ports: Vec<(NodeId, String)> = seg
                .members
                .iter()
                .map(|m| (m.endpoint.node, m.endpoint.port.clone()))
                .collect();
            ports.sort();
            ports.dedup();
            if c.kind == CableKind::Switched {
                for p in ports {
                    groups.entry(vec![p]).or_default().push(*sid);
                }
            } else {
                groups.entry(ports).or_default().push(*sid);
            }
        }
        for (ends, segments) in groups {
            let name = |(n, p): &(NodeId, String)| format!("{}.{p}", plan.node(*n).name);
            let (part, label) = match ends.as_slice() {
                [a, b] => (
                    Part::cable(&name(a), &name(b)),
                    format!("{} -- {}", name(a), name(b)),
                ),
                [a] => {
                    let sw = plan
                        .segment(segments[0])
                        .members
                        .iter()
                        .find(|m| (m.endpoint.node, m.endpoint.port.clone()) == *a)
                        .and_then(|m| m.switch)
                        .map(|s| plan.switches[s.0].name.clone())
                        .unwrap_or_default();
                    (Part::cable(&name(a), &sw), format!("{} -- {sw}", name(a)))
                }
                _ => continue,
            };
            out.push(PlannedCable {
                part,
                name: label,
                segments,
                ends,
            });
        }
    }
    out
}

/// The verdict of every planned cable whose ends were probed (see the module doc).
pub fn cable_checks(plan: &Plan, ev: &Evidence<'_>) -> Vec<Check> {
    let mut out = Vec::new();
    for c in planned_cables(plan) {
        let mut seens = Vec::new();
        let mut endpoints = Vec::new();
        for sid in &c.segments {
            for m in &plan.segment(*sid).members {
                if !c.ends.contains(&(m.endpoint.node, m.endpoint.port.clone())) {
                    continue;
                }
                endpoints.push(m.endpoint.clone());
                if let Some(s) = seen(plan, ev, *sid, &m.endpoint) {
                    seens.push(s);
                }
            }
        }
        let crossed = ev
            .pings
            .iter()
            .filter(|(a, b, _)| endpoints.contains(a) || endpoints.contains(b))
            .map(|(_, _, ok)| *ok)
            .collect::<Vec<bool>>();
        if let Some(v) = judge_cable(plan, &c, &seens, &crossed) {
            let blocks = if v.outcome == Outcome::Fail {
                endpoints
            } else {
                Vec::new()
            };
            out.push((v.about(vec![c.part.clone()]), blocks));
        }
    }
    out
}

/// An end whose evidence names another far end than the plan's.
struct Wrong {
    local: String,
    local_port: String,
    /// As found: `spark-c.enp1s0f1np1 (spark-c.f1)`, and where: `spark-c.f1`.
    found: String,
    found_at: String,
    planned: String,
    how: &'static str,
}

/// One cable's verdict from what its ends heard and whether its pings crossed.
fn judge_cable(plan: &Plan, c: &PlannedCable, seens: &[Seen], crossed: &[bool]) -> Option<Verdict> {
    let gate = format!("cable {}", c.name);
    let pings_ok = !crossed.is_empty() && crossed.iter().all(|ok| *ok);
    // every end whose evidence names another far end: (local port, found, planned), once each
    let mut wrong: Vec<Wrong> = Vec::new();
    let mut proven: Vec<String> = Vec::new();
    let mut other_node = false;
    for s in seens {
        let by_mac = s.mac.as_ref().and_then(|(_, f)| f.clone());
        let sources: Vec<(&'static str, &Far)> =
            [("MAC", by_mac.as_ref()), ("LLDP", s.lldp.as_ref())]
                .into_iter()
                .filter_map(|(k, f)| f.map(|f| (k, f)))
                .collect();
        for (how, far) in &sources {
            if s.planned.agrees(far) == Some(false) {
                let item = Wrong {
                    local: s.local.clone(),
                    local_port: s.local_port.clone(),
                    found: far.text(plan),
                    found_at: far.place(plan),
                    planned: s.planned.place(plan),
                    how,
                };
                let seen_before = wrong
                    .iter()
                    .any(|w| w.local_port == item.local_port && w.found_at == item.found_at);
                if !seen_before {
                    other_node |= !matches!((&s.planned, far), (Planned::Node { end, .. }, Far::Node { node, .. }) if *node == end.node);
                    wrong.push(item);
                }
            }
        }
        if let Some(line) = proof_line(plan, s) {
            proven.push(line);
        }
    }
    if !wrong.is_empty() {
        let said: Vec<String> = wrong
            .iter()
            .map(|w| {
                format!(
                    "{} reaches {} ({}); the plan says {}: move the cable's far end from {} to {}",
                    w.local, w.found, w.how, w.planned, w.found_at, w.planned
                )
            })
            .collect();
        // the port only, with the pings crossing: measured where it lands, and right
        let outcome = if other_node || !pings_ok {
            Outcome::Fail
        } else {
            Outcome::Warn
        };
        return Some(
            Verdict::check(
                gate,
                outcome,
                format!(
                    "{} (or change the plan to match the cabling)",
                    said.join("; ")
                ),
                Some(Trap::CrossedCable),
            )
            .reaching(
                wrong
                    .iter()
                    .map(|w| Reached {
                        from: w.local.clone(),
                        to: w.found_at.clone(),
                    })
                    .collect(),
            ),
        );
    }
    if !proven.is_empty() {
        return Some(Verdict::check(
            gate,
            Outcome::Ok,
            format!("proven: {}", proven.join("; ")),
            None,
        ));
    }
    pings_ok.then(|| {
        Verdict::check(
            gate,
            Outcome::Ok,
            "inferred, not proven: the pings crossed, but no neighbour entry named the MAC that answered and no LLDP neighbour was heard (run lldpd on the nodes to prove the cabling)",
            None,
        )
    })
}

/// `spark-b.f1.a answered by spark-a.enp1s0f0np0 (MAC 4c:...); LLDP agrees`, for an end whose
/// evidence all agrees with the plan.
fn proof_line(plan: &Plan, s: &Seen) -> Option<String> {
    let mac = s.mac.as_ref().and_then(|(m, f)| {
        let f = f.as_ref()?;
        (s.planned.agrees(f) == Some(true))
            .then(|| format!("answered by {} (MAC {m})", f.text(plan)))
    });
    let lldp = s
        .lldp
        .as_ref()
        .filter(|f| s.planned.agrees(f) == Some(true))
        .map(|f| f.text(plan));
    match (mac, lldp) {
        (Some(m), Some(_)) => Some(format!("{} {m}; LLDP agrees", s.local)),
        (Some(m), None) => Some(format!("{} {m}", s.local)),
        (None, Some(l)) => Some(format!("{} hears {l} (LLDP)", s.local)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::probe::parse as probe;
    use crate::discover::resolve_node;
    use std::path::Path;

    const PLAN: &str = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
[[node]]
name = "spark-b"
[[node]]
name = "spark-c"
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f1"]
halves = ["a"]
subnets = { a = "198.51.100.0/30" }
[[switch]]
name = "sw-a"
[[cable]]
kind = "switched"
attach = { "spark-a.f1" = { switch = "sw-a", switch-port = "swp12" }, "spark-c.f1" = "sw-a" }
halves = ["a"]
subnets = { a = "203.0.113.0/24" }
"#;

    fn plan() -> Plan {
        crate::plan::load_str(
            Path::new("p.toml"),
            PLAN,
            Path::new("."),
            &crate::plan::NoKinds,
        )
        .map(|l| l.plan)
        .unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// A node's probe: every GB10 netdev with MAC `4c:bb:47:00:0N:0I`, the given addresses, and
    /// `lldp` as lldpcli's json0 (absent: no lldpcli).
    fn dump(n: u8, addrs: &[(&str, &str)], lldp: Option<&str>) -> Probe {
        let mut s = format!("@host spark-{}\n", (b'a' + n) as char);
        let netdevs = [
            "enp1s0f0np0",
            "enP2p1s0f0np0",
            "enp1s0f1np1",
            "enP2p1s0f1np1",
        ];
        let devs = ["rocep1s0f0", "roceP2p1s0f0", "rocep1s0f1", "roceP2p1s0f1"];
        for (d, nd) in devs.iter().zip(netdevs) {
            s.push_str(&format!("@dev {d}\n@state 4: ACTIVE\n@netdev {nd}\n"));
        }
        if let Some(l) = lldp {
            s.push_str(&format!("@lldp\n{l}\n"));
        }
        s.push_str("@ip\n");
        for (nd, a) in addrs {
            s.push_str(&format!("9: {nd}    inet {a} scope global {nd}\n"));
        }
        s.push_str("@link\n");
        for (i, nd) in netdevs.iter().enumerate() {
            s.push_str(&format!(
                "{i}: {nd}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP\\    link/ether 4c:bb:47:00:0{n}:0{i} brd ff:ff:ff:ff:ff:ff\n"
            ));
        }
        s.push_str("@route\n@end\n");
        probe(&s)
    }

    fn lldp(local: &str, chassis: &str, port: (&str, &str)) -> String {
        format!(
            r#"{{"lldp":[{{"interface":[{{"name":"{local}","chassis":[{{"name":[{{"value":"{chassis}"}}]}}],"port":[{{"id":[{{"type":"{}","value":"{}"}}],"descr":[{{"value":"{}"}}]}}]}}]}}]}}"#,
            port.0, port.1, port.1
        )
    }

    struct World {
        probes: HashMap<NodeId, Probe>,
        neighbours: HashMap<NodeId, NeighReport>,
        pings: Vec<(Endpoint, Endpoint, bool)>,
    }

    impl World {
        fn checks(&self, plan: &Plan) -> Vec<Check> {
            let resolutions = self
                .probes
                .iter()
                .map(|(n, p)| (*n, resolve_node(plan, *n, p)))
                .collect();
            let ev = Evidence {
                probes: &self.probes,
                resolutions: &resolutions,
                neighbours: &self.neighbours,
                pings: &self.pings,
            };
            cable_checks(plan, &ev)
        }
    }

    fn ep(n: usize, port: &str) -> Endpoint {
        Endpoint {
            node: NodeId(n),
            port: port.into(),
            half: "a".into(),
        }
    }

    /// spark-b pinged spark-a over the direct cable and `mac` answered; LLDP on a and b as given.
    fn direct(
        mac: Option<&str>,
        lldp_a: Option<String>,
        lldp_b: Option<String>,
        ping: bool,
    ) -> World {
        let neigh = match mac {
            Some(m) => format!(
                r#"[{{"dst":"198.51.100.1","dev":"enp1s0f1np1","lladdr":"{m}","state":["REACHABLE"]}}]"#
            ),
            None => r#"[{"dst":"198.51.100.1","dev":"enp1s0f1np1","state":["FAILED"]}]"#.into(),
        };
        World {
            probes: HashMap::from([
                (
                    NodeId(0),
                    dump(0, &[("enp1s0f0np0", "198.51.100.1/30")], lldp_a.as_deref()),
                ),
                (
                    NodeId(1),
                    dump(1, &[("enp1s0f1np1", "198.51.100.2/30")], lldp_b.as_deref()),
                ),
                (NodeId(2), dump(2, &[], None)),
            ]),
            neighbours: HashMap::from([(NodeId(1), crate::parse::neigh::parse(&neigh))]),
            pings: vec![(ep(1, "f1"), ep(0, "f0"), ping)],
        }
    }

    fn direct_cable(c: &[Check]) -> &Verdict {
        &c.iter()
            .find(|(v, _)| v.gate == "cable spark-a.f0 -- spark-b.f1")
            .expect("the direct cable's verdict")
            .0
    }

    #[test]
    fn proven_by_mac_and_lldp() {
        let p = plan();
        let w = direct(
            Some("4c:bb:47:00:00:00"),
            Some(lldp("enp1s0f0np0", "spark-b", ("mac", "4c:bb:47:00:01:02"))),
            Some(lldp("enp1s0f1np1", "spark-a", ("mac", "4c:bb:47:00:00:00"))),
            true,
        );
        let c = w.checks(&p);
        let v = direct_cable(&c);
        assert_eq!(v.outcome, Outcome::Ok, "{}", v.detail);
        assert_eq!(
            v.detail,
            "proven: spark-a.f0.a hears spark-b.enp1s0f1np1 (spark-b.f1) (LLDP); spark-b.f1.a answered by spark-a.enp1s0f0np0 (spark-a.f0) (MAC 4c:bb:47:00:00:00); LLDP agrees"
        );
        assert_eq!(v.clears, vec![Part::cable("spark-a.f0", "spark-b.f1")]);
    }

    #[test]
    fn a_cable_on_another_box_is_one_fail_naming_both_ends() {
        let p = plan();
        // spark-a.f0's cable reaches spark-c.f1 (LLDP); nothing answered spark-b's ping
        let w = direct(
            None,
            Some(lldp("enp1s0f0np0", "spark-c", ("mac", "4c:bb:47:00:02:02"))),
            None,
            false,
        );
        let c = w.checks(&p);
        let (v, blocks) = c
            .iter()
            .find(|(v, _)| v.gate.starts_with("cable spark-a.f0"))
            .unwrap();
        assert_eq!(v.outcome, Outcome::Fail);
        assert_eq!(
            v.detail,
            "spark-a.f0.a reaches spark-c.enp1s0f1np1 (spark-c.f1) (LLDP); the plan says spark-b.f1: move the cable's far end from spark-c.f1 to spark-b.f1 (or change the plan to match the cabling)"
        );
        assert_eq!(v.implicates, vec![Part::cable("spark-a.f0", "spark-b.f1")]);
        assert_eq!(blocks, &vec![ep(0, "f0"), ep(1, "f1")]);
        // the MAC alone says it too
        let w = direct(Some("4c:bb:47:00:02:02"), None, None, true);
        let v = direct_cable(&w.checks(&p)).clone();
        assert_eq!(v.outcome, Outcome::Fail);
        assert!(
            v.detail
                .starts_with("spark-b.f1.a reaches spark-c.enp1s0f1np1 (spark-c.f1) (MAC)"),
            "{}",
            v.detail
        );
    }

    #[test]
    fn the_other_port_of_the_planned_box_with_pings_crossing_is_a_warn() {
        let p = plan();
        let w = direct(
            Some("4c:bb:47:00:00:00"),
            Some(lldp("enp1s0f0np0", "spark-b", ("mac", "4c:bb:47:00:01:00"))),
            None,
            true,
        );
        let v = direct_cable(&w.checks(&p)).clone();
        assert_eq!(v.outcome, Outcome::Warn, "{}", v.detail);
        assert!(
            v.detail.contains(
                "the plan says spark-b.f1: move the cable's far end from spark-b.f0 to spark-b.f1"
            ),
            "{}",
            v.detail
        );
    }

    #[test]
    fn without_either_source_the_cabling_is_inferred() {
        let p = plan();
        let mut w = direct(None, None, None, true);
        w.neighbours.clear();
        let v = direct_cable(&w.checks(&p)).clone();
        assert_eq!(v.outcome, Outcome::Ok);
        assert!(v.detail.starts_with("inferred, not proven"), "{}", v.detail);
        // nothing proven and the pings did not cross: the pings say it, not this
        let w = direct(None, None, None, false);
        assert!(
            w.checks(&p)
                .iter()
                .all(|(v, _)| !v.gate.starts_with("cable spark-a.f0 --"))
        );
    }

    #[test]
    fn a_switch_port_is_proven_by_lldp_a_breakout_included() {
        let p = plan();
        let mut w = direct(None, None, None, true);
        let sw = |port: &str| Some(lldp("enp1s0f1np1", "sw-a", ("ifname", port)));
        w.probes.insert(
            NodeId(0),
            dump(
                0,
                &[("enp1s0f1np1", "203.0.113.1/24")],
                sw("swp12s0").as_deref(),
            ),
        );
        let find = |c: &[Check]| {
            c.iter()
                .find(|(v, _)| v.gate == "cable spark-a.f1 -- sw-a")
                .unwrap()
                .0
                .clone()
        };
        let v = find(&w.checks(&p));
        assert_eq!(v.outcome, Outcome::Ok, "{}", v.detail);
        assert!(
            v.detail.contains("hears sw-a swp12s0 (LLDP)"),
            "{}",
            v.detail
        );
        w.probes.insert(
            NodeId(0),
            dump(
                0,
                &[("enp1s0f1np1", "203.0.113.1/24")],
                sw("swp13").as_deref(),
            ),
        );
        let v = find(&w.checks(&p));
        assert_eq!(v.outcome, Outcome::Fail, "{}", v.detail);
        assert!(
            v.detail
                .contains("reaches sw-a swp13 (LLDP); the plan says sw-a swp12"),
            "{}",
            v.detail
        );
        // a chassis the plan does not name: neither proof nor mismatch
        w.probes.insert(
            NodeId(0),
            dump(
                0,
                &[("enp1s0f1np1", "203.0.113.1/24")],
                Some(&lldp("enp1s0f1np1", "leaf01", ("ifname", "swp12"))),
            ),
        );
        assert!(
            w.checks(&p)
                .iter()
                .all(|(v, _)| v.gate != "cable spark-a.f1 -- sw-a")
        );
    }
}
