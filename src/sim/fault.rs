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
    /// The links of these halves go down and come back after discovery: their carrier counts
    /// (both ends of a direct link) and link-down events grow.
    Flap(Vec<Endpoint>),
    /// These halves' ports count symbol errors FEC did not correct after discovery, at this
    /// many per simulated second (each read of the node's probe or counters after discovery is
    /// one; at least one error).
    PhyErrors(Vec<Endpoint>, f64),
    /// Congestion that flow control holds back: on a switch (`congestion:SWITCH`, its PFC/ECN
    /// misconfigured or its buffers short) every half attached to it is paused and gets CNPs;
    /// on a node (`congestion:NODE`, no switch: the hosts' PFC/ECN configuration) its halves
    /// send pause frames and CNPs. Flows through them crawl at [`CONGESTED_GBPS`].
    Congestion(Vec<Endpoint>, CongestionRole),
}

/// What a congested half does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CongestionRole {
    /// It is paused (the switch sends it pause frames) and handles CNPs.
    Paused,
    /// It sends pause frames and CNPs (its receive side is held back).
    Sends,
}

/// What a flow through a congested half carries, Gb/s.
pub const CONGESTED_GBPS: f64 = 40.0;

/// The symbol errors per second of `phy-errors` without `=RATE`.
pub const PHY_ERRORS_PER_S: f64 = 100.0;

/// Read `KIND:TARGET` against `plan`. Targets of `throttle`, `mtu1500`, `pcie-degraded`, `flap`
/// and `phy-errors` are `NODE.PORT.HALF`; `NODE.PORT` means both halves of the port
/// (`phy-errors:NODE.PORT.HALF=RATE`: symbol errors per second). `firmware:NODE=VERSION`,
/// `swapped:NODE.PORT=NODE.PORT`.
pub fn parse(plan: &Plan, text: &str) -> Result<Fault, String> {
    check_sim_fault(text, &plan.nodes, &plan.switches)?;
    let (kind, target) = text.split_once(':').unwrap_or((text, ""));
    let spec = Spec { plan, text, target };
    Ok(match kind {
        "throttle" => Fault::Throttle(spec.halves()?),
        "mtu1500" => Fault::Mtu1500(spec.halves()?),
        "pcie-degraded" => Fault::PcieDegraded(spec.halves()?),
        "firmware" => {
            let (node, version) = target.split_once('=').unwrap_or((target, ""));
            Fault::Firmware(spec.node_of(node)?, version.to_string())
        }
        "swapped" => {
            let (a, b) = target.split_once('=').unwrap_or((target, ""));
            Fault::Swapped(spec.node_port(a)?, spec.node_port(b)?)
        }
        "crossed" => spec.crossed()?,
        "flap" => Fault::Flap(spec.halves()?),
        "phy-errors" => {
            let (halves, rate) = target.split_once('=').unwrap_or((target, ""));
            let rate = if rate.is_empty() {
                PHY_ERRORS_PER_S
            } else {
                rate.parse::<f64>()
                    .ok()
                    .filter(|r| r.is_finite() && *r > 0.0)
                    .ok_or_else(|| {
                        format!(
                            "fault `{text}`: `{rate}` is not a number of errors per second above 0"
                        )
                    })?
            };
            let spec = Spec {
                target: halves,
                ..spec
            };
            Fault::PhyErrors(spec.halves()?, rate)
        }
        "congestion" => spec.congestion()?,
        "dead-host" => Fault::DeadHost(spec.node_of(target)?),
        "server-dies" => Fault::ServerDies(spec.node_of(target)?),
        "nccl-socket" => Fault::NcclSocket(spec.node_of(target)?),
        "rstp-block" => spec.rstp_block()?,
        other => return Err(format!("unknown fault `{other}`")),
    })
}

/// One fault's text and its target, read against the plan's names.
struct Spec<'a> {
    plan: &'a Plan,
    /// The whole `KIND:TARGET`, for the messages.
    text: &'a str,
    target: &'a str,
}

impl Spec<'_> {
    /// `congestion:SWITCH` (the halves attached to it, paused) or `congestion:NODE` (its
    /// halves, sending).
    fn congestion(&self) -> Result<Fault, String> {
        let plan = self.plan;
        if let Some(sw) = plan.switches.iter().position(|s| s.name == self.target) {
            let halves = plan
                .segments
                .iter()
                .flat_map(|s| &s.members)
                .filter(|m| m.switch.is_some_and(|x| x.0 == sw))
                .map(|m| m.endpoint.clone())
                .collect();
            return Ok(Fault::Congestion(halves, CongestionRole::Paused));
        }
        let node = self.node_of(self.target)?;
        let halves = plan
            .segments
            .iter()
            .flat_map(|s| &s.members)
            .filter(|m| m.endpoint.node == node)
            .map(|m| m.endpoint.clone())
            .collect();
        Ok(Fault::Congestion(halves, CongestionRole::Sends))
    }

    /// The node named `name`.
    fn node_of(&self, name: &str) -> Result<NodeId, String> {
        self.plan.node_by_name(name).map(|n| n.id).ok_or_else(|| {
            format!(
                "fault `{}` names node `{name}`, which is not declared",
                self.text
            )
        })
    }

    /// The halves the target names: `NODE.PORT.HALF`, both halves of `NODE.PORT`, every half
    /// of `NODE`.
    fn halves(&self) -> Result<Vec<Endpoint>, String> {
        let (text, target) = (self.text, self.target);
        let mut parts = target.splitn(3, '.');
        let node = self.node_of(parts.next().unwrap_or(""))?;
        let port = parts.next();
        let half = parts.next();
        let profile = self.plan.profile_of(node);
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
        // a fault on halves no cable of the plan carries would change nothing: said, not
        // accepted and ignored
        let cabled = |e: &Endpoint| {
            self.plan
                .segments
                .iter()
                .any(|s| s.members.iter().any(|m| m.endpoint == *e))
        };
        if !out.iter().any(cabled) {
            let planned: Vec<String> = self
                .plan
                .segments
                .iter()
                .flat_map(|s| &s.members)
                .filter(|m| m.endpoint.node == node)
                .map(|m| self.plan.endpoint_name(&m.endpoint))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            return Err(format!(
                "fault `{text}`: no cable of the plan carries `{target}`, so it would change \
                 nothing; the planned halves of `{}` are {}",
                self.plan.node(node).name,
                if planned.is_empty() {
                    "none".to_string()
                } else {
                    planned.join(", ")
                }
            ));
        }
        Ok(out)
    }

    /// The node port `end` names (`NODE.PORT`).
    fn node_port(&self, end: &str) -> Result<(NodeId, String), String> {
        let text = self.text;
        let (node, port) = end
            .split_once('.')
            .ok_or_else(|| format!("fault `{text}`: `{end}` is not `NODE.PORT`"))?;
        let node = self.node_of(node)?;
        let profile = self.plan.profile_of(node);
        if profile.port(port).is_none() {
            return Err(format!(
                "fault `{text}`: `{port}` is not a port of profile `{}`",
                profile.name
            ));
        }
        Ok((node, port.to_string()))
    }

    /// `crossed:NODE.PORT`: the port's cable lands on another port of the node, which needs
    /// one.
    fn crossed(&self) -> Result<Fault, String> {
        let text = self.text;
        if !self.target.contains('.') {
            return Err(format!("fault `{text}`: the target is `NODE.PORT`"));
        }
        let (node, port) = self.node_port(self.target)?;
        if self.plan.profile_of(node).ports.len() < 2 {
            return Err(format!(
                "fault `{text}`: the node has one port, a cable cannot land on another"
            ));
        }
        Ok(Fault::Crossed { node, port })
    }

    /// `rstp-block:SWITCH-SWITCH`: the two switches (names may hold `-`), which an ISL must
    /// join.
    fn rstp_block(&self) -> Result<Fault, String> {
        let (plan, text, target) = (self.plan, self.text, self.target);
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
        Ok(Fault::RstpBlock(pair.0, pair.1))
    }
}
