//! From a node's probe to facts per planned half. Never assumes a name or a GID index is the
//! same on two boxes: each half is resolved on its own box, from the address the plan gives it.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::Serialize;

use super::probe::{Hardware, Probe};
use crate::plan::{Endpoint, NodeId, Plan};
use crate::render::job::HalfFacts;

/// What discovery concluded for one planned half.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct HalfResolution {
    pub endpoint: Endpoint,
    pub name: String,
    pub address: Ipv4Addr,
    pub prefix: u8,
    pub device: Option<String>,
    pub netdev: Option<String>,
    pub gid_index: Option<u32>,
    pub active: bool,
    pub mtu: Option<u32>,
    /// The OS-reported rate: a hint, never proof.
    pub rate_hint: Option<String>,
    pub link_downed: Option<u64>,
    /// Its netdev's carrier changes so far (`/sys/class/net/NETDEV/carrier_changes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier_changes: Option<u64>,
    /// The planned address is configured on this box.
    pub address_found: bool,
    /// Problems, in words.
    #[serde(default)]
    pub problems: Vec<String>,
    /// The first problem, as a kind: what the preflight check names.
    #[serde(default)]
    pub issue: Option<HalfIssue>,
    /// The port the planned address really sits on, when the profile puts its netdev on another
    /// port than the plan says (the cable lands there); `None` when it is where planned, or the
    /// half is pinned.
    #[serde(default)]
    pub landed_on: Option<String>,
    /// The exact command to run on this box when the address is missing (fabricplan runs nothing).
    pub fix_command: Option<String>,
    /// The device's firmware, board, PCI function, PCIe link and driver, as discovery read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<Hardware>,
    /// The port's error and retransmission counters as read: the documented `ethtool -S` ones
    /// by meaning (`symbol-errors`, `corrected-bits`, `link-down-events`, ...) and the RDMA
    /// device's [`RDMA_COUNTERS`] by their sysfs names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub port_counters: BTreeMap<String, u64>,
}

/// The RDMA counters (`ports/1/counters` and `hw_counters`) that say the fabric lost or
/// retransmitted, or that congestion control acted.
pub const RDMA_COUNTERS: &[&str] = &[
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "rnr_nak_retry_err",
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
];

/// The port counters of a half: its netdev's physical-layer ones, its device's RDMA ones.
fn port_counters(
    iface: Option<&super::probe::Interface>,
    dev: Option<&super::probe::Device>,
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (m, v) in iface.map(|i| &i.phy).into_iter().flatten() {
        if let Ok(serde_json::Value::String(name)) = serde_json::to_value(m) {
            out.insert(name, *v);
        }
    }
    for (name, v) in dev.map(|d| &d.counters).into_iter().flatten() {
        if RDMA_COUNTERS.contains(&name.as_str()) {
            out.insert(name.clone(), *v);
        }
    }
    out
}

/// What is wrong with a planned half, as discovery sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HalfIssue {
    /// The pinned netdev is not where the address lives.
    PinnedNetdevElsewhere,
    /// The pinned device is not the live one behind the address's netdev.
    PinnedDeviceNotLive,
    /// The device does not exist on the box.
    DeviceMissing,
    /// The device exists, its port is not ACTIVE.
    DeviceDown,
    /// The planned address is not configured on the box.
    AddressMissing,
    /// The pinned GID index is not the RoCE v2 entry of the address.
    GidPinWrong,
    /// No RoCE v2 GID maps the address.
    NoGid,
}

impl HalfResolution {
    pub fn facts(&self) -> HalfFacts {
        HalfFacts {
            device: self.device.clone(),
            netdev: self.netdev.clone(),
            gid_index: self.gid_index,
        }
    }
}

/// Resolve every planned half of `node` from its probe.
pub fn resolve_node(plan: &Plan, node: NodeId, probe: &Probe) -> Vec<HalfResolution> {
    let mut out = Vec::new();
    for seg in &plan.segments {
        for m in seg.members.iter().filter(|m| m.endpoint.node == node) {
            out.push(resolve_half(
                plan,
                &m.endpoint,
                m.address,
                seg.subnet.prefix_len(),
                probe,
            ));
        }
    }
    out
}

/// Problems found about one half, in words and as kinds (the first is the cause).
#[derive(Default)]
struct Found {
    problems: Vec<String>,
    issues: Vec<HalfIssue>,
}

impl Found {
    fn push(&mut self, text: String, issue: HalfIssue) {
        self.problems.push(text);
        self.issues.push(issue);
    }
}

fn resolve_half(
    plan: &Plan,
    e: &Endpoint,
    address: Ipv4Addr,
    prefix: u8,
    probe: &Probe,
) -> HalfResolution {
    let name = plan.endpoint_name(e);
    let pin = plan.pinned(e);
    let mut found = Found::default();
    let iface = probe.interface_with(address);
    let address_found = iface.is_some();
    // the netdev: where the address lives; else the pinned one; else the profile's
    let netdev = iface
        .map(|i| i.name.clone())
        .or_else(|| pin.netdev.clone())
        .or_else(|| plan.profile_half(e).map(|d| d.netdev.clone()));
    if let (Some(i), Some(p)) = (iface, &pin.netdev)
        && &i.name != p
    {
        found.push(
            format!(
                "{name}: the plan pins netdev `{p}` but {address} is on `{}`",
                i.name
            ),
            HalfIssue::PinnedNetdevElsewhere,
        );
    }
    let device = device_of(plan, e, netdev.as_deref(), probe, &mut found);
    let dev = device.as_deref().and_then(|d| probe.device(d));
    let mut fix_command = None;
    if !address_found {
        fix_command = Some(address_missing(
            plan,
            e,
            address,
            prefix,
            netdev.as_deref(),
            probe,
            &mut found,
        ));
    }
    let gid_index = gid_of(
        &name,
        (pin.gid_index, device.as_deref()),
        dev,
        address,
        address_found,
        &mut found,
    );
    // where the cable really lands: the profile's port of the netdev holding the address
    let pinned = pin.device.is_some() || pin.netdev.is_some();
    let landed_on = iface
        .filter(|_| !pinned)
        .and_then(|i| port_of_netdev(plan, e.node, &i.name))
        .filter(|p| *p != e.port);
    let live = netdev.as_deref().and_then(|n| probe.interface(n));
    let mtu = live.and_then(|i| i.mtu);
    let carrier_changes = live.and_then(|i| i.carrier_changes);
    HalfResolution {
        endpoint: e.clone(),
        name,
        address,
        prefix,
        device,
        netdev,
        gid_index,
        active: dev.is_some_and(|d| d.active()),
        mtu,
        rate_hint: dev.map(|d| d.rate.clone()).filter(|r| !r.is_empty()),
        link_downed: dev.and_then(|d| d.counters.get("link_downed").copied()),
        carrier_changes,
        address_found,
        issue: found.issues.first().copied(),
        problems: found.problems,
        landed_on,
        fix_command,
        hardware: dev
            .map(|d| d.hardware.clone())
            .filter(|h| h != &Hardware::default()),
        port_counters: port_counters(live, dev),
    }
}

/// The device of a half: the pinned one (said when it is not the live one behind the netdev),
/// else the live one behind the netdev, else the profile's where it exists. Its absence or a
/// port not ACTIVE is a problem.
fn device_of(
    plan: &Plan,
    e: &Endpoint,
    netdev: Option<&str>,
    probe: &Probe,
    found: &mut Found,
) -> Option<String> {
    let name = plan.endpoint_name(e);
    let pin = plan.pinned(e);
    let dev_from_netdev = netdev.and_then(|n| probe.device_of_netdev(n));
    let device = match (&pin.device, dev_from_netdev) {
        (Some(p), Some(d)) if &d.name != p => {
            found.push(format!(
                "{name}: the plan pins device `{p}` but the live device behind `{}` is `{}` (names differ per box: pin each box's own name, or leave it to discovery)",
                netdev.unwrap_or_default(),
                d.name
            ), HalfIssue::PinnedDeviceNotLive);
            Some(p.clone())
        }
        (Some(p), _) => Some(p.clone()),
        (None, Some(d)) => Some(d.name.clone()),
        (None, None) => plan
            .profile_half(e)
            .map(|d| d.device.clone())
            .filter(|d| probe.device(d).is_some()),
    };
    match device.as_deref().map(|d| (d, probe.device(d))) {
        // the box shows no RDMA device at all: the cause of every other problem of its halves
        None if probe.complete && probe.devices.is_empty() => found.push(
            format!(
                "{name}: {} shows no RDMA device (/sys/class/infiniband is empty: is the NIC's driver loaded, and rdma-core installed?)",
                if probe.hostname.is_empty() {
                    plan.node(e.node).name.as_str()
                } else {
                    probe.hostname.as_str()
                }
            ),
            HalfIssue::DeviceMissing,
        ),
        Some((d, None)) => found.push(
            format!("{name}: device `{d}` does not exist on {}", probe.hostname),
            HalfIssue::DeviceMissing,
        ),
        Some((_, Some(d))) if !d.active() => found.push(
            format!(
                "{name}: device `{}` is {}",
                d.name,
                if d.state.is_empty() {
                    "in an unknown state"
                } else {
                    &d.state
                }
            ),
            HalfIssue::DeviceDown,
        ),
        _ => {}
    }
    device
}

/// The planned address is not on the box: said, and the exact command to run there (fabricplan
/// runs nothing), every value quoted (a netdev comes from the box).
fn address_missing(
    plan: &Plan,
    e: &Endpoint,
    address: Ipv4Addr,
    prefix: u8,
    netdev: Option<&str>,
    probe: &Probe,
    found: &mut Found,
) -> String {
    let nd = netdev
        .and_then(crate::render::quote)
        .unwrap_or_else(|| "NETDEV".into());
    found.push(
        format!(
            "{}: {address}/{prefix} is not configured on {}",
            plan.endpoint_name(e),
            if probe.hostname.is_empty() {
                plan.node(e.node).name.as_str()
            } else {
                probe.hostname.as_str()
            }
        ),
        HalfIssue::AddressMissing,
    );
    format!("sudo ip addr add {address}/{prefix} dev {nd} && sudo ip link set {nd} up mtu 9000")
}

/// The GID index: the pinned one (said when it is not the RoCE v2 entry of the address), else
/// that entry; none is a problem when the address is there.
fn gid_of(
    name: &str,
    (pinned, device): (Option<u32>, Option<&str>),
    dev: Option<&super::probe::Device>,
    address: Ipv4Addr,
    address_found: bool,
    found: &mut Found,
) -> Option<u32> {
    let gid_index = pinned.or_else(|| dev.and_then(|d| d.roce_v2_index(address)));
    if let (Some(p), Some(d)) = (pinned, dev)
        && let Some(at) = d.roce_v2_index(address)
        && at != p
    {
        found.push(format!("{name}: the plan pins GID index {p} but the RoCE v2 entry for {address} on `{}` is {at}", d.name), HalfIssue::GidPinWrong);
    }
    if gid_index.is_none() && address_found {
        found.push(
            format!(
                "{name}: no RoCE v2 GID maps {address} on `{}`",
                device.unwrap_or_default()
            ),
            HalfIssue::NoGid,
        );
    }
    gid_index
}

/// The profile port whose half uses `netdev` on `node`.
fn port_of_netdev(plan: &Plan, node: NodeId, netdev: &str) -> Option<String> {
    plan.profile_of(node)
        .ports
        .iter()
        .find(|p| p.halves.iter().any(|h| h.netdev == netdev))
        .map(|p| p.name.clone())
}
