//! From a node's probe to facts per planned half. Never assumes a name or a GID index is the
//! same on two boxes: each half is resolved on its own box, from the address the plan gives it.

use std::net::Ipv4Addr;

use serde::Serialize;

use super::probe::Probe;
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

fn resolve_half(
    plan: &Plan,
    e: &Endpoint,
    address: Ipv4Addr,
    prefix: u8,
    probe: &Probe,
) -> HalfResolution {
    let name = plan.endpoint_name(e);
    let pin = plan.pinned(e);
    let default = plan.profile_half(e).cloned();
    let mut problems = Vec::new();
    let mut issues: Vec<HalfIssue> = Vec::new();
    let mut fix_command = None;
    let iface = probe.interface_with(address);
    let address_found = iface.is_some();
    // the netdev: where the address lives; else the pinned one; else the profile's
    let netdev = iface
        .map(|i| i.name.clone())
        .or_else(|| pin.netdev.clone())
        .or_else(|| default.as_ref().map(|d| d.netdev.clone()));
    if let (Some(i), Some(p)) = (iface, &pin.netdev)
        && &i.name != p
    {
        problems.push(format!(
            "{name}: the plan pins netdev `{p}` but {address} is on `{}`",
            i.name
        ));
        issues.push(HalfIssue::PinnedNetdevElsewhere);
    }
    let dev_from_netdev = netdev.as_deref().and_then(|n| probe.device_of_netdev(n));
    let device = match (&pin.device, dev_from_netdev) {
        (Some(p), Some(d)) if &d.name != p => {
            problems.push(format!(
                "{name}: the plan pins device `{p}` but the live device behind `{}` is `{}` (names differ per box: pin each box's own name, or leave it to discovery)",
                netdev.clone().unwrap_or_default(),
                d.name
            ));
            issues.push(HalfIssue::PinnedDeviceNotLive);
            Some(p.clone())
        }
        (Some(p), _) => Some(p.clone()),
        (None, Some(d)) => Some(d.name.clone()),
        (None, None) => default
            .as_ref()
            .map(|d| d.device.clone())
            .filter(|d| probe.device(d).is_some()),
    };
    let dev = device.as_deref().and_then(|d| probe.device(d));
    if device.is_some() && dev.is_none() {
        problems.push(format!(
            "{name}: device `{}` does not exist on {}",
            device.clone().unwrap_or_default(),
            probe.hostname
        ));
        issues.push(HalfIssue::DeviceMissing);
    }
    let active = dev.is_some_and(|d| d.active());
    if let Some(d) = dev
        && !d.active()
    {
        problems.push(format!(
            "{name}: device `{}` is {}",
            d.name,
            if d.state.is_empty() {
                "in an unknown state"
            } else {
                &d.state
            }
        ));
        issues.push(HalfIssue::DeviceDown);
    }
    if !address_found {
        // shown to an operator to paste: every value quoted (a netdev comes from the box)
        let nd = netdev
            .as_deref()
            .and_then(crate::render::quote)
            .unwrap_or_else(|| "NETDEV".into());
        problems.push(format!(
            "{name}: {address}/{prefix} is not configured on {}",
            if probe.hostname.is_empty() {
                plan.node(e.node).name.as_str()
            } else {
                probe.hostname.as_str()
            }
        ));
        fix_command = Some(format!(
            "sudo ip addr add {address}/{prefix} dev {nd} && sudo ip link set {nd} up mtu 9000"
        ));
        issues.push(HalfIssue::AddressMissing);
    }
    let gid_index = pin
        .gid_index
        .or_else(|| dev.and_then(|d| d.roce_v2_index(address)));
    if let (Some(p), Some(d)) = (pin.gid_index, dev)
        && let Some(found) = d.roce_v2_index(address)
        && found != p
    {
        problems.push(format!("{name}: the plan pins GID index {p} but the RoCE v2 entry for {address} on `{}` is {found}", d.name));
        issues.push(HalfIssue::GidPinWrong);
    }
    if gid_index.is_none() && address_found {
        problems.push(format!(
            "{name}: no RoCE v2 GID maps {address} on `{}`",
            device.clone().unwrap_or_default()
        ));
        issues.push(HalfIssue::NoGid);
    }
    // where the cable really lands: the profile's port of the netdev holding the address
    let pinned = pin.device.is_some() || pin.netdev.is_some();
    let landed_on = iface
        .filter(|_| !pinned)
        .and_then(|i| port_of_netdev(plan, e.node, &i.name))
        .filter(|p| *p != e.port);
    let mtu = netdev
        .as_deref()
        .and_then(|n| probe.interface(n))
        .and_then(|i| i.mtu);
    HalfResolution {
        endpoint: e.clone(),
        name,
        address,
        prefix,
        device,
        netdev,
        gid_index,
        active,
        mtu,
        rate_hint: dev.map(|d| d.rate.clone()).filter(|r| !r.is_empty()),
        link_downed: dev.and_then(|d| d.counters.get("link_downed").copied()),
        address_found,
        problems,
        issue: issues.first().copied(),
        landed_on,
        fix_command,
    }
}

/// The profile port whose half uses `netdev` on `node`.
fn port_of_netdev(plan: &Plan, node: NodeId, netdev: &str) -> Option<String> {
    plan.profile_of(node)
        .ports
        .iter()
        .find(|p| p.halves.iter().any(|h| h.netdev == netdev))
        .map(|p| p.name.clone())
}
