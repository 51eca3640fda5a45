//! Fault specifications (`KIND:TARGET`, from the plan's `[sim] faults` and `--sim-fault`),
//! resolved against the plan's names.

use crate::plan::{Endpoint, NodeId, Plan, SwitchId, validate::check_sim_fault};

/// One injected fault.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Firmware throttle on these halves: ~12.7 Gb/s.
    Throttle(Vec<Endpoint>),
    /// The netdev of these halves at MTU 1500.
    Mtu1500(Vec<Endpoint>),
    /// The cable planned on `port` lands on the node's other port (and the other way round).
    Crossed { node: NodeId, port: String },
    /// Every command to the node fails: unreachable.
    DeadHost(NodeId),
    /// Servers started on the node exit before listening.
    ServerDies(NodeId),
    /// The ISL between the two switches is RSTP-blocked: traffic crawls (~4.5 Gb/s).
    RstpBlock(SwitchId, SwitchId),
    /// NCCL finds no IB device on the node and the communicator falls back to sockets.
    NcclSocket(NodeId),
    /// The PCIe link of these halves trained at half its width (x2 of x4): each carries what
    /// the narrower link carries, and sysfs says so.
    PcieDegraded(Vec<Endpoint>),
    /// Every device of the node runs this firmware.
    Firmware(NodeId, String),
    /// The cables planned at these two node ports are swapped: each lands where the other was
    /// planned (two ports of one box, or of two boxes). Addresses stay as planned.
    Swapped((NodeId, String), (NodeId, String)),
}

/// Read `KIND:TARGET` against `plan`. Targets of `throttle`, `mtu1500` and `pcie-degraded` are
/// `NODE.PORT.HALF`; `NODE.PORT` means both halves of the port. `firmware:NODE=VERSION`,
/// `swapped:NODE.PORT=NODE.PORT`.
pub fn parse(plan: &Plan, text: &str) -> Result<Fault, String> {
    check_sim_fault(text, &plan.nodes, &plan.switches)?;
    let (kind, target) = text.split_once(':').unwrap_or((text, ""));
    let node_of = |name: &str| {
        plan.node_by_name(name)
            .map(|n| n.id)
            .ok_or_else(|| format!("fault `{text}` names node `{name}`, which is not declared"))
    };
    let halves = || -> Result<Vec<Endpoint>, String> {
        let mut parts = target.splitn(3, '.');
        let node = node_of(parts.next().unwrap_or(""))?;
        let port = parts.next();
        let half = parts.next();
        let profile = plan.profile_of(node);
        let mut out = Vec::new();
        for p in &profile.ports {
            if port.is_some_and(|x| x != p.name) {
                continue;
            }
            for h in &p.halves {
                if half.is_some_and(|x| x != h.name) {
                    continue;
                }
                out.push(Endpoint {
                    node,
                    port: p.name.clone(),
                    half: h.name.clone(),
                });
            }
        }
        if out.is_empty() {
            return Err(format!(
                "fault `{text}`: `{target}` is not a port or half of profile `{}`",
                profile.name
            ));
        }
        Ok(out)
    };
    let node_port = |end: &str| -> Result<(NodeId, String), String> {
        let (node, port) = end
            .split_once('.')
            .ok_or_else(|| format!("fault `{text}`: `{end}` is not `NODE.PORT`"))?;
        let node = node_of(node)?;
        if plan.profile_of(node).port(port).is_none() {
            return Err(format!(
                "fault `{text}`: `{port}` is not a port of profile `{}`",
                plan.profile_of(node).name
            ));
        }
        Ok((node, port.to_string()))
    };
    Ok(match kind {
        "throttle" => Fault::Throttle(halves()?),
        "mtu1500" => Fault::Mtu1500(halves()?),
        "pcie-degraded" => Fault::PcieDegraded(halves()?),
        "firmware" => {
            let (node, version) = target.split_once('=').unwrap_or((target, ""));
            Fault::Firmware(node_of(node)?, version.to_string())
        }
        "swapped" => {
            let (a, b) = target.split_once('=').unwrap_or((target, ""));
            Fault::Swapped(node_port(a)?, node_port(b)?)
        }
        "crossed" => {
            let (node, port) = target
                .split_once('.')
                .ok_or_else(|| format!("fault `{text}`: the target is `NODE.PORT`"))?;
            let node = node_of(node)?;
            if plan.profile_of(node).port(port).is_none() {
                return Err(format!(
                    "fault `{text}`: `{port}` is not a port of profile `{}`",
                    plan.profile_of(node).name
                ));
            }
            if plan.profile_of(node).ports.len() < 2 {
                return Err(format!(
                    "fault `{text}`: the node has one port, a cable cannot land on another"
                ));
            }
            Fault::Crossed {
                node,
                port: port.to_string(),
            }
        }
        "dead-host" => Fault::DeadHost(node_of(target)?),
        "server-dies" => Fault::ServerDies(node_of(target)?),
        "nccl-socket" => Fault::NcclSocket(node_of(target)?),
        "rstp-block" => {
            let find = |a: &str, b: &str| {
                let sa = plan.switches.iter().find(|s| s.name == a)?;
                let sb = plan.switches.iter().find(|s| s.name == b)?;
                Some((sa.id, sb.id))
            };
            let pair = target
                .match_indices('-')
                .find_map(|(i, _)| find(&target[..i], &target[i + 1..]))
                .ok_or_else(|| format!("fault `{text}`: `{target}` does not name two switches"))?;
            if !plan
                .isls
                .iter()
                .any(|l| (l.a, l.b) == pair || (l.b, l.a) == pair)
            {
                return Err(format!("fault `{text}`: no ISL joins the two switches"));
            }
            Fault::RstpBlock(pair.0, pair.1)
        }
        other => return Err(format!("unknown fault `{other}`")),
    })
}
