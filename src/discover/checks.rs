//! Preflight checks that need nothing but the probes: pure functions from what discovery found
//! to verdicts, each with the endpoints it blocks when it fails. The pings and the mpirun launch
//! check, which need the network, live in `exec::preflight`.

use std::collections::HashMap;

use super::probe::Probe;
use super::resolve::{HalfIssue, HalfResolution};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::{Part, Software};
use crate::gate::trap::Trap;
use crate::plan::{Endpoint, NodeId, Plan};

/// The MTU every planned half's netdev is set to (a jumbo frame: 8972-byte pings).
pub const PLANNED_MTU: u32 = 9000;

/// A verdict and the planned halves whose measurements it blocks when it fails.
pub type Check = (Verdict, Vec<Endpoint>);

/// Per half: the live device, its GID, the address, MTU 9000.
pub fn half_checks(plan: &Plan, node: NodeId, halves: &[HalfResolution]) -> Vec<Check> {
    let mut out = Vec::new();
    for h in halves {
        let mut problems = h.problems.clone();
        if let Some(fix) = &h.fix_command {
            problems.push(format!("run on {}: {fix}", plan.node(node).name));
        }
        // named for what was seen, the first problem being the cause of the others
        let trap = match h.issue {
            // a pin that assumes one box's device name on another: the f0/f1 asymmetry
            Some(HalfIssue::PinnedDeviceNotLive | HalfIssue::PinnedNetdevElsewhere) => {
                Trap::PinnedNameWrong
            }
            Some(HalfIssue::DeviceMissing) => Trap::NoDevice,
            Some(HalfIssue::DeviceDown) => Trap::PortDown,
            Some(HalfIssue::AddressMissing) => Trap::AddressMissing,
            Some(HalfIssue::GidPinWrong | HalfIssue::NoGid) => Trap::NoGid,
            None if h.device.is_none() => Trap::NoDevice,
            None => Trap::PortDown,
        };
        let detail = if problems.is_empty() {
            format!(
                "{} / {} / GID {} / {}; link drops since boot {}; OS reports {} (a hint, not proof)",
                h.device.clone().unwrap_or_default(),
                h.netdev.clone().unwrap_or_default(),
                h.gid_index.map(|g| g.to_string()).unwrap_or_default(),
                h.address,
                h.link_downed
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "unknown".into()),
                h.rate_hint.clone().unwrap_or_else(|| "no rate".into())
            )
        } else {
            problems.join("; ")
        };
        let outcome = if problems.is_empty() {
            Outcome::Ok
        } else {
            Outcome::Fail
        };
        let half = plan.half_part(&h.endpoint);
        let parts = match trap {
            // the plan pins a name this box does not have: the plan's record is what is wrong
            Trap::PinnedNameWrong => vec![Part::Plan {
                what: format!("the pin of {}", h.name),
            }],
            // no link: the half, or the cable into it
            Trap::PortDown if outcome != Outcome::Ok => {
                let mut v = vec![half];
                v.extend(plan.cable_part(&h.endpoint));
                v
            }
            _ => vec![half],
        };
        out.push((
            Verdict::check(format!("discover {}", h.name), outcome, detail, Some(trap))
                .about(parts),
            vec![h.endpoint.clone()],
        ));
        if h.address_found {
            let ok = h.mtu == Some(PLANNED_MTU);
            out.push((
                Verdict::check(
                    format!("mtu {}", h.name),
                    if ok { Outcome::Ok } else { Outcome::Fail },
                    format!(
                        "{} mtu {}",
                        h.netdev.clone().unwrap_or_default(),
                        h.mtu
                            .map(|m| m.to_string())
                            .unwrap_or_else(|| "unknown".into())
                    ),
                    Some(Trap::MtuMismatch),
                )
                .about(vec![plan.half_part(&h.endpoint)]),
                vec![h.endpoint.clone()],
            ));
        }
    }
    out
}

/// Both ends of each link at the same MTU.
pub fn link_mtu_checks(plan: &Plan, all: &HashMap<NodeId, Vec<HalfResolution>>) -> Vec<Check> {
    let find = |e: &Endpoint| {
        all.get(&e.node)
            .and_then(|v| v.iter().find(|h| &h.endpoint == e))
    };
    let mut out = Vec::new();
    for seg in &plan.segments {
        let mtus: Vec<(&HalfResolution, u32)> = seg
            .members
            .iter()
            .filter_map(|m| find(&m.endpoint))
            .filter_map(|h| h.mtu.map(|m| (h, m)))
            .collect();
        if mtus.len() >= 2 && mtus.iter().any(|(_, m)| *m != mtus[0].1) {
            let list: Vec<String> = mtus
                .iter()
                .map(|(h, m)| format!("{} {m}", h.name))
                .collect();
            // the ends below the largest MTU are the ones to raise
            let top = mtus.iter().map(|(_, m)| *m).max().unwrap_or(0);
            let low: Vec<Part> = mtus
                .iter()
                .filter(|(_, m)| *m < top)
                .map(|(h, _)| plan.half_part(&h.endpoint))
                .collect();
            out.push((
                Verdict::check(
                    format!("mtu equal on {}", seg.name),
                    Outcome::Fail,
                    format!("the ends disagree: {}", list.join(", ")),
                    Some(Trap::MtuMismatch),
                )
                .about(low),
                seg.members.iter().map(|m| m.endpoint.clone()).collect(),
            ));
        }
    }
    out
}

/// Which port.half of the node's profile a device or netdev name belongs to.
fn port_half_of(plan: &Plan, node: NodeId, dev_or_netdev: &str) -> Option<(String, String)> {
    let prof = plan.profile_of(node);
    for p in &prof.ports {
        for h in &p.halves {
            if h.device == dev_or_netdev || h.netdev == dev_or_netdev {
                return Some((p.name.clone(), h.name.clone()));
            }
        }
    }
    None
}

/// Cabling: a planned half whose port has no carrier while another, unplanned port of the same
/// half is live means the cable landed elsewhere. Named the way a person says it.
pub fn cabling_checks(
    plan: &Plan,
    node: NodeId,
    probe: &Probe,
    halves: &[HalfResolution],
) -> Vec<Check> {
    let name = &plan.node(node).name;
    let planned: Vec<(String, String)> = halves
        .iter()
        .map(|h| (h.endpoint.port.clone(), h.endpoint.half.clone()))
        .collect();
    let mut out = Vec::new();
    for h in halves {
        if let Some(port) = &h.landed_on {
            // measured where it really lands, and right: but the plan is the site's record of
            // its cabling, and it is wrong
            out.push((
                Verdict::check(
                    format!("cabling {}", h.name),
                    Outcome::Warn,
                    format!(
                        "{name}: this cable lands on {port}, the plan says {} ({} is live on {}, where {} is configured)",
                        h.endpoint.port,
                        h.device.clone().unwrap_or_default(),
                        h.netdev.clone().unwrap_or_default(),
                        h.address
                    ),
                    Some(Trap::CrossedCable),
                )
                .about(plan.cable_part(&h.endpoint).into_iter().collect()),
                Vec::new(),
            ));
            continue;
        }
        let carrier = h
            .netdev
            .as_deref()
            .and_then(|n| probe.interface(n))
            .map(|i| i.up);
        let dead = !h.active || carrier == Some(false);
        if !dead {
            continue;
        }
        // a live device of the same half on a port the plan does not use on this node
        let live_elsewhere = probe.devices.iter().find_map(|d| {
            let (port, half) = port_half_of(plan, node, &d.name)?;
            let up = d
                .netdevs
                .iter()
                .any(|n| probe.interface(n).is_some_and(|i| i.up));
            (d.active()
                && up
                && half == h.endpoint.half
                && port != h.endpoint.port
                && !planned.contains(&(port.clone(), half.clone())))
            .then(|| (port, d.name.clone()))
        });
        if let Some((port, dev)) = live_elsewhere {
            out.push((
                Verdict::check(
                    format!("cabling {}", h.name),
                    Outcome::Fail,
                    format!(
                        "{name}: this cable lands on {port}, the plan says {} ({dev} is live, {} has no link)",
                        h.endpoint.port,
                        h.device.clone().unwrap_or_default()
                    ),
                    Some(Trap::CrossedCable),
                )
                .about(plan.cable_part(&h.endpoint).into_iter().collect()),
                vec![h.endpoint.clone()],
            ));
        }
    }
    out
}

/// Routing: no default route through a fabric netdev, one route per fabric subnet, no fabric
/// netdev enslaved to a bond or bridge.
pub fn routing_checks(
    plan: &Plan,
    node: NodeId,
    probe: &Probe,
    halves: &[HalfResolution],
) -> Vec<Check> {
    let name = &plan.node(node).name;
    let mut out = Vec::new();
    for h in halves {
        let Some(nd) = h.netdev.as_deref() else {
            continue;
        };
        let mut problems = Vec::new();
        for r in &probe.routes {
            let toks: Vec<&str> = r.split_whitespace().collect();
            let dev = toks.windows(2).find(|w| w[0] == "dev").map(|w| w[1]);
            if toks.first() == Some(&"default") && dev == Some(nd) {
                problems.push(format!("default route through {nd}: `{r}`"));
            }
        }
        let subnet = plan.member_of(&h.endpoint).map(|(s, _)| s.subnet);
        // one subnet per half: the address sits in the planned subnet, with its prefix, and
        // the netdev holds no other address that would route the same traffic elsewhere
        if let (Some(subnet), Some(iface)) = (subnet, probe.interface(nd)) {
            for net in &iface.ipv4 {
                if net.addr() == h.address && net.prefix_len() != subnet.prefix_len() {
                    problems.push(format!("{nd} holds {net}, the plan's subnet is {subnet}"));
                } else if net.addr() != h.address {
                    problems.push(format!("{nd} also holds {net}: one subnet per half"));
                }
            }
        }
        if let Some(subnet) = subnet {
            let routes: Vec<&String> = probe
                .routes
                .iter()
                .filter(|r| r.split_whitespace().next() == Some(subnet.to_string().as_str()))
                .collect();
            let other: Vec<&&String> = routes
                .iter()
                .filter(|r| !r.contains(&format!("dev {nd}")))
                .collect();
            if !other.is_empty() {
                problems.push(format!(
                    "a second route to {subnet}: `{}`",
                    other
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join("`, `")
                ));
            }
        }
        if let Some(m) = probe.interface(nd).and_then(|i| i.master.clone()) {
            problems.push(format!(
                "{nd} is enslaved to `{m}` (a stale bond or bridge holds the fabric port)"
            ));
        }
        if !problems.is_empty() {
            out.push((
                Verdict::check(
                    format!("routes {}", h.name),
                    Outcome::Fail,
                    format!("{name}: {}", problems.join("; ")),
                    Some(Trap::RoutingTrap),
                )
                .about(vec![plan.half_part(&h.endpoint)]),
                vec![h.endpoint.clone()],
            ));
        }
    }
    out
}

/// NCCL_SOCKET_IFNAME / NCCL_IB_HCA / NCCL_IB_GID_INDEX in the node's environment must agree
/// with what discovery found on that node.
pub fn nccl_env_checks(plan: &Plan, node: NodeId, halves: &[HalfResolution]) -> Vec<Check> {
    let env = &plan.node(node).env;
    let name = &plan.node(node).name;
    let list = |v: &str| -> Vec<String> {
        v.trim_start_matches(['=', '^'])
            .split(',')
            .map(|x| x.split(':').next().unwrap_or("").trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    };
    let mut problems = Vec::new();
    // the device and netdev lists: each live name must start with one of the listed ones
    type Name = fn(&HalfResolution) -> Option<&String>;
    let lists: [(&str, &str, Name); 2] = [
        ("NCCL_IB_HCA", "the live device", |h| h.device.as_ref()),
        ("NCCL_SOCKET_IFNAME", "the netdev", |h| h.netdev.as_ref()),
    ];
    for (var, what, name_of) in lists {
        let Some(v) = env.get(var) else { continue };
        let listed = list(v);
        for h in halves {
            if let Some(d) = name_of(h)
                && !listed.iter().any(|l| d.starts_with(l.as_str()))
            {
                problems.push(format!("{var}={v} does not name {d}, {what} of {}", h.name));
            }
        }
    }
    if let Some(v) = env.get("NCCL_IB_GID_INDEX") {
        for h in halves {
            if let Some(g) = h.gid_index
                && v.trim() != g.to_string()
            {
                problems.push(format!(
                    "NCCL_IB_GID_INDEX={v} but the RoCE v2 entry for {} is {g}",
                    h.name
                ));
            }
        }
    }
    if problems.is_empty() {
        return Vec::new();
    }
    vec![(
        Verdict::check(
            format!("nccl env {name}"),
            Outcome::Fail,
            problems.join("; "),
            Some(Trap::NcclEnvMismatch),
        )
        .about(vec![Part::software(name, Software::Nccl)]),
        Vec::new(),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::probe::parse;
    use crate::discover::resolve_node;
    use std::path::Path;

    const PLAN: &str = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
env = { NCCL_IB_GID_INDEX = "3", NCCL_IB_HCA = "rocep1s0f1" }
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
halves = ["a"]
subnets = { a = "198.51.100.0/30" }
"#;

    fn dump(f0_up: bool, f1_up: bool, route_extra: &str) -> String {
        let st = |u: bool| if u { "4: ACTIVE" } else { "1: DOWN" };
        let fl = |u: bool| {
            if u {
                "<BROADCAST,MULTICAST,UP,LOWER_UP>"
            } else {
                "<NO-CARRIER,BROADCAST,MULTICAST,UP>"
            }
        };
        format!(
            "@host spark-a
@dev rocep1s0f0
@state {}
@netdev enp1s0f0np0
@gid /x/gids/3:0000:0000:0000:0000:0000:ffff:c633:6401
@gidtype /x/types/3:RoCE v2
@dev rocep1s0f1
@state {}
@netdev enp1s0f1np1
@ip
2: enp1s0f0np0    inet 198.51.100.1/30 scope global enp1s0f0np0
@link
2: enp1s0f0np0: {} mtu 9000 state UP
3: enp1s0f1np1: {} mtu 1500 master bond0 state UP
@route
198.51.100.0/30 dev enp1s0f0np0 proto kernel scope link src 198.51.100.1
{route_extra}
@end
",
            st(f0_up),
            st(f1_up),
            fl(f0_up),
            fl(f1_up)
        )
    }

    fn plan() -> Plan {
        crate::plan::load_str(
            Path::new("p.toml"),
            PLAN,
            Path::new("."),
            &crate::plan::NoKinds,
        )
        .unwrap()
        .plan
    }

    #[test]
    fn crossed_cable_is_named() {
        let plan = plan();
        let probe = parse(&dump(false, true, ""));
        let halves = resolve_node(&plan, NodeId(0), &probe);
        let c = cabling_checks(&plan, NodeId(0), &probe, &halves);
        assert_eq!(c.len(), 1);
        assert!(
            c[0].0
                .detail
                .starts_with("spark-a: this cable lands on f1, the plan says f0"),
            "{}",
            c[0].0.detail
        );
        assert_eq!(c[0].0.trap, Some(Trap::CrossedCable));
        // near miss: the planned port is live; nothing to say
        let probe = parse(&dump(true, true, ""));
        let halves = resolve_node(&plan, NodeId(0), &probe);
        assert!(cabling_checks(&plan, NodeId(0), &probe, &halves).is_empty());
    }

    #[test]
    fn default_route_second_route_and_bond() {
        let plan = plan();
        let probe = parse(&dump(
            true,
            false,
            "default via 198.51.100.2 dev enp1s0f0np0\n198.51.100.0/30 dev eno1 scope link",
        ));
        let halves = resolve_node(&plan, NodeId(0), &probe);
        let c = routing_checks(&plan, NodeId(0), &probe, &halves);
        assert_eq!(c.len(), 1);
        assert!(c[0].0.detail.contains("default route through enp1s0f0np0"));
        assert!(c[0].0.detail.contains("a second route to 198.51.100.0/30"));
        let probe = parse(&dump(true, false, ""));
        let halves = resolve_node(&plan, NodeId(0), &probe);
        assert!(routing_checks(&plan, NodeId(0), &probe, &halves).is_empty());
    }

    #[test]
    fn one_subnet_per_half() {
        let plan = plan();
        let d = dump(true, false, "").replace(
            "2: enp1s0f0np0    inet 198.51.100.1/30 scope global enp1s0f0np0\n",
            "2: enp1s0f0np0    inet 198.51.100.1/24 scope global enp1s0f0np0\n2: enp1s0f0np0    inet 192.0.2.9/24 scope global enp1s0f0np0\n",
        );
        let probe = parse(&d);
        let halves = resolve_node(&plan, NodeId(0), &probe);
        let c = routing_checks(&plan, NodeId(0), &probe, &halves);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].0
                .detail
                .contains("holds 198.51.100.1/24, the plan's subnet is 198.51.100.0/30"),
            "{}",
            c[0].0.detail
        );
        assert!(
            c[0].0.detail.contains("also holds 192.0.2.9/24"),
            "{}",
            c[0].0.detail
        );
    }

    #[test]
    fn node_nccl_env_must_agree_with_discovery() {
        let plan = plan();
        let probe = parse(&dump(true, false, ""));
        let halves = resolve_node(&plan, NodeId(0), &probe);
        let c = nccl_env_checks(&plan, NodeId(0), &halves);
        assert_eq!(c.len(), 1);
        assert!(
            c[0].0.detail.contains("does not name rocep1s0f0"),
            "{}",
            c[0].0.detail
        );
        assert!(!c[0].0.detail.contains("GID_INDEX"), "GID 3 agrees");
    }

    /// Regression: a cable in f1 with its address on f1's netdev, the plan saying f0, was
    /// resolved to the f1 device and went green without a word.
    #[test]
    fn a_cable_on_the_other_port_is_a_warning() {
        let text = PLAN.replace(
            "env = { NCCL_IB_GID_INDEX = \"3\", NCCL_IB_HCA = \"rocep1s0f1\" }\n",
            "",
        );
        let plan = crate::plan::load_str(
            Path::new("p.toml"),
            &text,
            Path::new("."),
            &crate::plan::NoKinds,
        )
        .unwrap()
        .plan;
        let dump = "@host spark-a
@dev rocep1s0f0
@state 1: DOWN
@netdev enp1s0f0np0
@dev rocep1s0f1
@state 4: ACTIVE
@netdev enp1s0f1np1
@gid /x/gids/3:0000:0000:0000:0000:0000:ffff:c633:6401
@gidtype /x/types/3:RoCE v2
@ip
3: enp1s0f1np1    inet 198.51.100.1/30 scope global enp1s0f1np1
@link
2: enp1s0f0np0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9000 state DOWN
3: enp1s0f1np1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP
@route
198.51.100.0/30 dev enp1s0f1np1 proto kernel scope link src 198.51.100.1
@end
";
        let probe = parse(dump);
        let halves = resolve_node(&plan, NodeId(0), &probe);
        assert_eq!(halves[0].device.as_deref(), Some("rocep1s0f1"));
        assert_eq!(halves[0].landed_on.as_deref(), Some("f1"));
        let c = cabling_checks(&plan, NodeId(0), &probe, &halves);
        assert_eq!(c.len(), 1, "{c:#?}");
        assert_eq!(c[0].0.outcome, Outcome::Warn);
        assert!(
            c[0].0
                .detail
                .starts_with("spark-a: this cable lands on f1, the plan says f0 (rocep1s0f1 is live on enp1s0f1np1"),
            "{}",
            c[0].0.detail
        );
        // the half's own checks pass: it measures where it lands
        assert!(
            half_checks(&plan, NodeId(0), &halves)
                .iter()
                .all(|(v, _)| v.outcome == Outcome::Ok)
        );
        // near miss: a pinned half is where the plan says it is
        let pinned = text.replace(
            "name = \"spark-a\"\n",
            "name = \"spark-a\"\npin.\"f0.a\" = { netdev = \"enp1s0f1np1\", device = \"rocep1s0f1\" }\n",
        );
        let plan = crate::plan::load_str(
            Path::new("p.toml"),
            &pinned,
            Path::new("."),
            &crate::plan::NoKinds,
        )
        .unwrap()
        .plan;
        let halves = resolve_node(&plan, NodeId(0), &probe);
        assert!(cabling_checks(&plan, NodeId(0), &probe, &halves).is_empty());
    }
}
