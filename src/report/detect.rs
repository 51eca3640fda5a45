//! `fabricplan detect`: per node, every RDMA device with its state, the OS-reported rate (a
//! hint), netdev, IPv4, MTU, RoCE v2 GID index and link drops, the live ones marked; and for
//! planned halves with no address, the exact command to run on which box. Runs nothing.

use serde::Serialize;

use crate::discover::{HalfResolution, Probe};

/// One node's discovery, for text and JSON output.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub node: String,
    pub reachable: bool,
    pub error: Option<String>,
    pub probe: Option<Probe>,
    pub halves: Vec<HalfResolution>,
}

/// The text tables.
pub fn render(nodes: &[NodeReport]) -> String {
    let mut s = String::new();
    for n in nodes {
        let host = n
            .probe
            .as_ref()
            .map(|p| p.hostname.clone())
            .filter(|h| !h.is_empty());
        s.push_str(&format!(
            "{}{}\n",
            n.node,
            host.map(|h| format!(" (hostname {h})")).unwrap_or_default()
        ));
        let Some(p) = &n.probe else {
            s.push_str(&format!(
                "  unreachable: {}\n\n",
                n.error.clone().unwrap_or_default()
            ));
            continue;
        };
        if p.devices.is_empty() {
            s.push_str("  no RDMA devices under /sys/class/infiniband (driver not loaded, or not an RDMA host)\n\n");
            continue;
        }
        s.push_str(&format!(
            "    {:<14} {:<8} {:<20} {:<16} {:<18} {:>5} {:>4} {:>6}  {}\n",
            "DEVICE", "STATE", "RATE (OS hint)", "NETDEV", "IPv4", "MTU", "GID", "DROPS", "PLANNED"
        ));
        for d in &p.devices {
            let netdev = d.netdevs.first().cloned().unwrap_or_else(|| "-".into());
            let iface = p.interface(&netdev);
            let ip = iface.and_then(|i| i.ipv4.first().copied());
            let gid = ip.and_then(|ip| d.roce_v2_index(ip.addr()));
            let planned: Vec<&HalfResolution> = n
                .halves
                .iter()
                .filter(|h| h.device.as_deref() == Some(d.name.as_str()))
                .collect();
            let live = d.active() && iface.is_some_and(|i| i.up) && ip.is_some();
            s.push_str(&format!(
                "  {} {:<14} {:<8} {:<20} {:<16} {:<18} {:>5} {:>4} {:>6}  {}\n",
                if live { "*" } else { " " },
                d.name,
                if d.state.is_empty() { "?" } else { &d.state },
                if d.rate.is_empty() { "-" } else { &d.rate },
                netdev,
                ip.map(|i| i.to_string()).unwrap_or_else(|| "-".into()),
                iface
                    .and_then(|i| i.mtu)
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "-".into()),
                gid.map(|g| g.to_string()).unwrap_or_else(|| "-".into()),
                d.counters
                    .get("link_downed")
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "-".into()),
                planned
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        for h in &n.halves {
            if let Some(fix) = &h.fix_command {
                s.push_str(&format!(
                    "  {} has no address: run on {}:\n    {fix}\n",
                    h.name, n.node
                ));
            } else if !h.problems.is_empty() {
                for pr in &h.problems {
                    s.push_str(&format!("  ! {pr}\n"));
                }
            }
        }
        s.push_str("  * = live: ACTIVE, carrier, IPv4 assigned. The OS rate is not proof of line rate.\n\n");
    }
    // names, states and errors come from the hosts: shown, never obeyed by the terminal
    crate::text::inert_lines(&s).into_owned()
}
