//! The fix of a finding: a command for that part on that host where one exists, and the fix in
//! words. Nothing here tells a person to do what fabricplan already does (it starts servers
//! and stops them itself, sets NCCL's transport variables, pins Open MPI to the fabric): a fix names what is
//! left to the site.

use super::label::Found;
use crate::gate::judge::Verdict;
use crate::gate::part::{Part, Software};
use crate::gate::trap::Trap;
use crate::plan::{Plan, SshTarget};
use crate::render::quote;

/// Where and how to fix a part.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fix {
    /// The node whose host the fix runs on (or the switch whose configuration it changes).
    pub host: Option<String>,
    /// A command to run from where fabricplan runs.
    pub command: Option<String>,
    /// The fix in words.
    pub text: String,
}

fn q(s: &str) -> String {
    quote(s).unwrap_or_else(|| "''".to_string())
}

/// `ssh spark-b` (or `ssh -p 2222 admin@10.0.0.2`): how a person reaches the node.
pub fn ssh_to(plan: &Plan, node: &str) -> String {
    match plan.node_by_name(node).map(|n| &n.ssh) {
        Some(SshTarget::Host {
            host, user, port, ..
        }) => {
            let mut s = "ssh".to_string();
            if let Some(p) = port {
                s.push_str(&format!(" -p {p}"));
            }
            let at = match user {
                Some(u) => format!("{u}@{host}"),
                None => host.clone(),
            };
            s.push(' ');
            s.push_str(&q(&at));
            s
        }
        _ => format!("ssh {}", q(node)),
    }
}

/// `ssh NODE CMD` for one remote command (its words already quoted), or `ssh NODE 'A && B'`.
fn remote(plan: &Plan, node: &str, cmds: &[String]) -> Option<String> {
    match cmds {
        [] => None,
        [one] => Some(format!("{} {one}", ssh_to(plan, node))),
        many => Some(format!("{} {}", ssh_to(plan, node), q(&many.join(" && ")))),
    }
}

/// The netdevs a part stands for on its node: a half's, or every half's of a port.
fn netdevs(plan: &Plan, found: &Found<'_>, part: &Part) -> Vec<String> {
    match part {
        Part::Half { node, port, half } => {
            found.netdev(plan, node, port, half).into_iter().collect()
        }
        Part::Port { node, port } => found.port_netdevs(plan, node, port),
        _ => Vec::new(),
    }
}

/// One command per netdev of the part, on its node.
fn per_netdev(
    plan: &Plan,
    found: &Found<'_>,
    part: &Part,
    cmd: impl Fn(&str) -> String,
) -> Option<String> {
    let node = part.node_name()?;
    let cmds: Vec<String> = netdevs(plan, found, part)
        .iter()
        .map(|n| cmd(&q(n)))
        .collect();
    remote(plan, node, &cmds)
}

/// The fix of `part`, which `head` (its first evidence) names with `trap`.
pub fn fix(plan: &Plan, found: &Found<'_>, part: &Part, trap: Option<Trap>, head: &Verdict) -> Fix {
    let host = match part {
        Part::Isl { name } => plan.isls.iter().find(|i| &i.name == name).map(|i| {
            format!(
                "{} and {}",
                plan.switches[i.a.0].name, plan.switches[i.b.0].name
            )
        }),
        Part::Switch { name } => Some(name.clone()),
        _ => part.node_name().map(str::to_string),
    };
    let (command, text) = match trap {
        // a site's own trap: its own fix text, as the plan wrote it
        Some(Trap::Site) | None => (None, head.fix.clone().unwrap_or_default()),
        Some(t) => by_trap(plan, found, part, t, head),
    };
    // a gate whose plan wrote its own fix keeps the site's words (the command stays)
    let text = match head.fix.as_deref() {
        Some(own) if trap.is_some_and(|t| t != Trap::Site && own != t.fix()) => own.to_string(),
        _ => text,
    };
    Fix {
        host,
        command,
        text,
    }
}

fn by_trap(
    plan: &Plan,
    found: &Found<'_>,
    part: &Part,
    t: Trap,
    head: &Verdict,
) -> (Option<String>, String) {
    let node = part.node_name().unwrap_or_default().to_string();
    if let Some(f) = run_side(plan, found, part, t, &node) {
        return f;
    }
    match (t, part) {
        (Trap::MtuMismatch, Part::Half { .. } | Part::Port { .. }) => (
            per_netdev(plan, found, part, |n| format!("sudo ip link set {n} mtu 9000")),
            "set MTU 9000 on the netdev, and persist it in the node's network configuration".into(),
        ),
        (Trap::MtuMismatch, Part::Isl { .. } | Part::Switch { .. } | Part::Cable { .. }) => (
            None,
            "set MTU 9000 (9216 on switches) on every switch port on the path, the ISL's ports on both switches included".into(),
        ),
        (Trap::FirmwareThrottle, _) => (
            part.node_name().and_then(|n| remote(plan, n, &["sudo mlxfwmanager --online -u".into()])),
            "update the ConnectX-7 firmware on this node, then drain NIC power fully (power off, unplug for a minute), not just a reboot".into(),
        ),
        (Trap::BelowLineRate | Trap::HalfDeadOrThrottled | Trap::SlowLatency, Part::Half { .. } | Part::Port { .. }) => (
            per_netdev(plan, found, part, |n| format!("sudo ethtool -m {n}")),
            "reseat or replace the cable at this half (the module's EEPROM shows its type and length), and check its PCIe link (`lspci -vv`)".into(),
        ),
        (Trap::PortDown, Part::Half { .. } | Part::Port { .. }) => (
            per_netdev(plan, found, part, |n| format!("sudo ip link set {n} up")),
            "bring the netdev up; if it has no carrier, seat the cable and check the far end".into(),
        ),
        (Trap::AddressMissing, _) => (
            address_fix(plan, found, part),
            "configure the half's planned address on its netdev, MTU 9000, and persist it".into(),
        ),
        (Trap::CrossedCable, Part::Port { node, .. }) => (
            None,
            format!("the cables in {node}'s two ports are in each other's port: swap them at {node} so each sits where the plan says (or change the plan to match the cabling)"),
        ),
        (Trap::CrossedCable, _) => (None, cabling_text(part)),
        (Trap::RoutingTrap, _) => (
            per_netdev(plan, found, part, |n| format!("ip route show dev {n}")),
            "remove the default route, second routes and stale bonds or profiles that hold this fabric netdev (the routes are listed by the command)".into(),
        ),
        (Trap::IslBlockedRstp | Trap::SoftwareForwarding | Trap::CongestionControl, _) => {
            (None, t.fix().to_string())
        }
        (Trap::Unreachable, _) => (
            Some(format!("{} true", ssh_to(plan, &node))),
            format!("make {node} reachable over SSH from here: it is down, its sshd is not running, or the key or known_hosts entry is refused"),
        ),
        (Trap::SlurmNodeUnavailable | Trap::SlurmStepLaunch, _) => slurmd_fix(plan, &node),
        (Trap::TcpFallback | Trap::FabricNotUsed, Part::Software { software: Software::Nccl, .. }) => (
            remote(plan, &node, &["ibv_devinfo -l".into()]),
            nccl_text(&node, head),
        ),
        (Trap::ServerGoneOrFirewall, _) => (
            remote(plan, &node, &["sudo iptables -S INPUT".into()]),
            format!("the test server on {node} exited or was refused before the client connected: read its log in the run directory, and let the test ports in as DESTINATION ports in {node}'s firewall"),
        ),
        (Trap::ExecutableMissing, _) => (
            None,
            format!("build nccl-tests with MPI=1 on {node} at the plan's nccl-tests-dir (`fabricplan run --setup`), or fix nccl-tests-dir"),
        ),
        (Trap::MemoryRegistration, _) => (
            remote(plan, &node, &["grep -i cma /proc/meminfo".into()]),
            format!("give {node}'s kernel contiguous memory (the `cma=` boot parameter) so ibv_reg_mr succeeds"),
        ),
        (Trap::PinnedNameWrong, Part::Plan { what }) => (
            head.gate
                .strip_prefix("discover ")
                .and_then(|h| h.split('.').next())
                .map(|n| format!("fabricplan detect --host {}", q(n))),
            format!("change {what} in the plan to the name that box really has (the command lists them), or remove the pin and let discovery choose: {}", head.detail),
        ),
        (_, Part::Plan { what }) => (
            None,
            format!("change {what} in the plan: {}", head.detail),
        ),
        (Trap::NoDevice, _) => (
            remote(plan, &node, &["ibv_devinfo -l".into()]),
            "the RDMA device is missing: check the driver (mlx5_ib) and rdma-core on the node, or the plan's pinned name".into(),
        ),
        _ => (None, head.fix.clone().unwrap_or_else(|| t.fix().to_string())),
    }
}

/// Congestion held back by flow control: on a switch, its PFC/ECN configuration (the command
/// shows, on a host attached to it, the pause frames the switch sends); without one, the hosts'
/// (the command shows this host's PFC and trust settings).
fn congestion_fix(plan: &Plan, found: &Found<'_>, part: &Part) -> (Option<String>, String) {
    let on = |m: &&crate::plan::Member| match part {
        Part::Switch { name } => m
            .switch
            .and_then(|s| plan.switches.get(s.0))
            .is_some_and(|s| s.name == *name),
        _ => part.node_name() == Some(plan.node(m.endpoint.node).name.as_str()),
    };
    let members: Vec<&crate::plan::Member> = plan
        .segments
        .iter()
        .flat_map(|s| &s.members)
        .filter(|m| on(m))
        .collect();
    match part {
        Part::Switch { name } => (
            members.first().and_then(|m| {
                per_netdev(plan, found, &plan.half_part(&m.endpoint), |n| {
                    format!("ethtool -S {n} | grep -i -e pause -e discard")
                })
            }),
            format!(
                "flow control on switch {name} holds the traffic back: check its PFC (one lossless priority, the hosts' RoCE priority, with buffer headroom on every port of these hosts) and its ECN marking thresholds, so that ECN slows senders before PFC pauses them (the command shows the pause frames a host attached to it receives)"
            ),
        ),
        _ => {
            let node = part.node_name().unwrap_or_default();
            let cmds: Vec<String> = members
                .iter()
                .filter_map(|m| {
                    let e = &m.endpoint;
                    found.netdev(plan, node, &e.port, &e.half)
                })
                .map(|n| format!("sudo mlnx_qos -i {}", q(&n)))
                .collect();
            (
                remote(plan, node, &cmds),
                format!(
                    "the PFC/ECN configuration of {node} and the hosts it is cabled to holds the traffic back: set the same trust mode (dscp), the same PFC priority (the RoCE traffic class) and ECN on every fabric netdev at both ends of each link (e.g. `mlnx_qos -i NETDEV --trust dscp --pfc 0,0,0,1,0,0,0,0`); the command shows {node}'s"
                ),
            )
        }
    }
}

/// The fix of what happened to a run on a host rather than in what it measured: a link that
/// flapped under it, its directory, a tool killed, flooding, or leaving processes behind.
fn run_side(
    plan: &Plan,
    found: &Found<'_>,
    part: &Part,
    t: Trap,
    node: &str,
) -> Option<(Option<String>, String)> {
    Some(match (t, part) {
        (Trap::FlowControl, _) => {
            congestion_fix(plan, found, part)
        }
        (Trap::LinkFlapped, Part::Half { .. } | Part::Port { .. }) => (
            per_netdev(plan, found, part, |n| format!("ip -s link show {n}")),
            "the link of this half went down and came back: reseat or replace its cable and module (the command counts its carrier changes; the kernel log says when)".into(),
        ),
        (Trap::LinkFlapped, _) => (
            None,
            "this cable's link went down and came back: reseat, clean or replace the cable and its modules, then measure again (`ip -s link show NETDEV` on either end counts its carrier changes; the kernel log says when)".into(),
        ),
        (Trap::PcieDegraded, Part::Half { node: n, port, half }) => {
            let pci = found
                .half(n, port, half)
                .and_then(|h| h.hardware.as_ref())
                .and_then(|h| h.pci.clone());
            let command = pci.as_deref().and_then(|a| {
                crate::render::quote(a)
                    .and_then(|a| remote(plan, node, &[format!("sudo lspci -vv -s {a} | grep -e LnkCap: -e LnkSta:")]))
            });
            let on_board = plan
                .node_by_name(node)
                .is_some_and(|x| plan.profile_of(x.id).name == "gb10");
            let text = if on_board {
                format!(
                    "the half's PCIe link trained narrow or slow: on GB10 the ConnectX-7 is on the board (no card or riser to reseat): update the platform firmware through its update path, power off and unplug for 30 s, and if LnkSta still falls short of LnkCap, have {node}'s board serviced"
                )
            } else {
                "the half's PCIe link trained narrow or slow: reseat the NIC (and its riser or cable), check the slot's PCIe settings in the firmware setup (link speed, bifurcation); LnkSta must equal LnkCap".to_string()
            };
            (command, text)
        }
        (Trap::HostScratch, _) => (
            remote(plan, node, &["'ls -ld \"${TMPDIR:-/tmp}\"; df -h \"${TMPDIR:-/tmp}\"'".into()]),
            format!("fabricplan could not make its private directory on {node}: its temporary directory (TMPDIR, else /tmp) must exist, be writable by the run's user (a sticky /tmp is) and have free space"),
        ),
        (Trap::ToolKilled, _) => (
            remote(plan, node, &["sudo dmesg -T | grep -i -e oom -e killed | tail".into()]),
            format!("something on {node} killed the tool before its time: the kernel log says whether it was the OOM killer (free memory on {node}, or limit what else runs there); else find what sent the signal"),
        ),
        (Trap::OutputFlood, _) => (
            None,
            format!("the tool on {node} wrote without end and was stopped at the output bound: run its command by hand there (it is in the run directory) and read what it prints"),
        ),
        (Trap::LeftRunning, _) => (
            None,
            format!("a tool on {node} left processes running after it ended (fabricplan stopped them): check the tool's wrapper on {node} for children it starts in the background"),
        ),
        _ => return None,
    })
}

fn address_fix(plan: &Plan, found: &Found<'_>, part: &Part) -> Option<String> {
    let Part::Half { node, port, half } = part else {
        return None;
    };
    let cmd = found.half(node, port, half)?.fix_command.clone()?;
    remote(plan, node, &[format!("sudo {cmd}")])
}

/// A cable found elsewhere than planned: where it lands is in what was seen; the fix is the move.
fn cabling_text(part: &Part) -> String {
    let at = match part {
        Part::Cable { a, b, .. } => format!(" between {a} and {b}"),
        _ => String::new(),
    };
    format!(
        "move the cable{at} to the ports the plan names (where it lands is in what was seen), or change the plan to match the cabling"
    )
}

fn slurmd_fix(plan: &Plan, node: &str) -> (Option<String>, String) {
    (
        remote(plan, node, &["sudo systemctl start slurmd".into()]),
        format!(
            "start slurmd on {node} (its log says why it stopped), then return the node to service: `scontrol update nodename={} state=resume`",
            q(node)
        ),
    )
}

fn nccl_text(node: &str, head: &Verdict) -> String {
    let seen = if head.detail.contains("No device found") {
        "NCCL on this node found no RDMA device (`NET/IB : No device found`)"
    } else {
        "NCCL on this node fell back to sockets"
    };
    format!(
        "{seen}: the devices must be listed by `ibv_devinfo -l` on {node} and readable by the job's user (rdma-core and the mlx5_ib driver installed, /dev/infiniband present); fabricplan already sets NCCL_NET_PLUGIN=none, NCCL_IB_HCA and NCCL_SOCKET_IFNAME from discovery"
    )
}
