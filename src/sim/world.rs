//! The simulated fabric, built from the plan and the faults: every node's RDMA devices (the
//! profile's, named as pinned), the planned addresses on their netdevs, where each cable really
//! lands, MTUs, GID tables and the counters that traffic advances. Also the probe's `@...` dump.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::fault::Fault;
use super::noise::Rng;
use crate::plan::{Endpoint, NodeId, Plan, SegmentId, SwitchId};
use crate::topology::Fabric;

/// The RoCE v2 GID index the simulated boxes use when the plan pins none.
pub const DEFAULT_GID_INDEX: u32 = 3;
/// The firmware of the simulated boxes' NICs (a ConnectX-7 release), unless a fault says.
pub const SIM_FIRMWARE: &str = "28.45.1200";
/// The simulated boxes' kernel (DGX OS).
pub const SIM_KERNEL: &str = "6.11.0-1016-nvidia";
/// Each half's PCIe link: Gen5 x4, as on GB10.
pub const SIM_PCIE_SPEED: &str = "32.0 GT/s PCIe";
pub const SIM_PCIE_WIDTH: u32 = 4;

/// The lanes a simulated half's PCIe link has at most: [`SIM_PCIE_WIDTH`] (a GB10 half, Gen5
/// x4), or the fewest of x8 and x16 that carry a faster profile's half rate (a 400G rail is
/// a Gen5 x16 function), so a healthy link never caps its half below its rate.
pub fn pcie_lanes_for(half_rate_gbps: f64) -> u32 {
    let gts = crate::capacity::pcie::gts(SIM_PCIE_SPEED).unwrap_or(32.0);
    [SIM_PCIE_WIDTH, 8, 16]
        .into_iter()
        .find(|l| crate::capacity::pcie::carries_gbps(gts, *l) >= half_rate_gbps)
        .unwrap_or(16)
}

/// The MAC of interface `ifindex` of node `n` (the management interface is 2).
pub(crate) fn mac(n: NodeId, ifindex: u32) -> String {
    format!(
        "4c:bb:47:{:02x}:{:02x}:{:02x}",
        (n.0 / 256) % 256,
        n.0 % 256,
        ifindex
    )
}

/// One simulated RDMA device (one half of one port).
#[derive(Debug, Clone)]
pub(crate) struct Dev {
    pub node: NodeId,
    pub name: String,
    pub netdev: String,
    /// The physical port and half this device is.
    pub endpoint: Endpoint,
    /// The planned address on this device's netdev, with its subnet.
    pub address: Option<(Ipv4Addr, Ipv4Net)>,
    /// The planned endpoint whose cable really lands on this device (itself unless crossed),
    /// and that endpoint's segment.
    pub wired: Option<(Endpoint, SegmentId)>,
    pub mtu: u32,
    pub gid_index: u32,
    pub throttled: bool,
    /// Lanes its PCIe link trained at, and has at most ([`pcie_lanes_for`] its profile).
    pub pcie_width: u32,
    pub pcie_max: u32,
    pub firmware: String,
    /// Interface index for `ip` output.
    pub ifindex: u32,
    /// Its link goes down and comes back after discovery (`flap`).
    pub flapped: bool,
    /// Symbol errors per second its port counts after discovery (`phy-errors`).
    pub phy_errors_per_s: Option<f64>,
    /// Flow control holds it back (`congestion`): paused by its switch, or sending pauses.
    pub congestion: Option<super::fault::CongestionRole>,
}

impl Dev {
    pub fn active(&self) -> bool {
        self.wired.is_some()
    }

    pub fn segment(&self) -> Option<SegmentId> {
        self.wired.as_ref().map(|(_, s)| *s)
    }

    /// perftest's active MTU: the largest IB MTU that fits the netdev MTU.
    pub fn ib_mtu(&self) -> u32 {
        [256u32, 512, 1024, 2048, 4096]
            .into_iter()
            .filter(|m| m + 100 <= self.mtu)
            .max()
            .unwrap_or(256)
    }

    /// The 16 GID bytes of the RoCE v2 entry (IPv4-mapped), if the netdev has an address.
    pub fn gid_bytes(&self) -> [u8; 16] {
        let mut g = [0u8; 16];
        if let Some((ip, _)) = self.address {
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&ip.octets());
        }
        g
    }

    /// Is `index` a usable RoCE v2 GID on this device?
    pub fn roce_v2(&self, index: u32) -> bool {
        self.address.is_some() && index == self.gid_index
    }
}

/// The world the simulated transport answers from.
pub(crate) struct World {
    pub plan: Plan,
    pub fabric: Fabric,
    pub devs: Vec<Dev>,
    pub faults: Vec<Fault>,
    pub seed: u64,
    /// Indices, so that answering a command never scans every device of a big fabric: each
    /// node's devices (built node by node, so a range of `devs`), the node of a name, the
    /// device holding an address (the first, as a scan would find) and of an endpoint.
    by_node: Vec<std::ops::Range<usize>>,
    by_name: HashMap<String, NodeId>,
    by_ip: HashMap<Ipv4Addr, usize>,
    by_endpoint: HashMap<Endpoint, usize>,
    /// The devices wired to each segment (its cable's ends as they really are).
    by_segment: HashMap<SegmentId, Vec<usize>>,
    /// [`World::pcie_caps`], worked out once: the devices never change after the world is
    /// built, and a scan of all of them for every round and every flow made big runs quadratic.
    pcie_caps: crate::capacity::HalfCaps,
}

const COUNTERS: [&str; 12] = [
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "port_rcv_data",
    "port_rcv_errors",
    "port_rcv_packets",
    "port_xmit_data",
    "port_xmit_discards",
    "port_xmit_packets",
    "port_xmit_wait",
    "symbol_error",
];

/// A netdev's carrier changes, kept among its device's counters.
pub const CARRIER: &str = "carrier_changes";

const HW_COUNTERS: [&str; 10] = [
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "rnr_nak_retry_err",
    "rp_cnp_handled",
];

/// The planned node port whose cable really lands at `(node, port)`: itself, unless a crossed
/// or swapped cable fault moved it (each fault a swap of two ports, applied in order).
fn landing(plan: &Plan, faults: &[Fault], node: NodeId, port: &str) -> (NodeId, String) {
    let mut at = (node, port.to_string());
    for f in faults {
        let (a, b) = match f {
            Fault::Crossed { node: n, port: p } => {
                let other = plan
                    .profile_of(*n)
                    .ports
                    .iter()
                    .find(|x| &x.name != p)
                    .map(|x| x.name.clone())
                    .unwrap_or_else(|| p.clone());
                ((*n, p.clone()), (*n, other))
            }
            Fault::Swapped(a, b) => (a.clone(), b.clone()),
            _ => continue,
        };
        if at == a {
            at = b;
        } else if at == b {
            at = a;
        }
    }
    at
}

/// A pin gives one half another half's name (the f0/f1 asymmetry): that other half then carries
/// the name the pinned one would have had, so no two share a name. Pinned name -> freed name.
fn renamed(plan: &Plan, node: crate::plan::NodeId) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    for p in &plan.profile_of(node).ports {
        for h in &p.halves {
            let pin = plan.pinned(&Endpoint {
                node,
                port: p.name.clone(),
                half: h.name.clone(),
            });
            for (pinned, own) in [(&pin.device, &h.device), (&pin.netdev, &h.netdev)] {
                if let Some(x) = pinned.as_ref().filter(|x| *x != own) {
                    out.insert(x.clone(), own.clone());
                }
            }
        }
    }
    out
}

/// Every node's devices, node by node (so each node's are a range of the list).
fn build_devs(
    plan: &Plan,
    fabric: &Fabric,
    faults: &[Fault],
) -> (Vec<Dev>, Vec<std::ops::Range<usize>>) {
    let mut devs = Vec::new();
    let mut by_node = Vec::with_capacity(plan.nodes.len());
    let has = |e: &Endpoint, pick: fn(&Fault) -> Option<&Vec<Endpoint>>| {
        faults.iter().filter_map(pick).any(|es| es.contains(e))
    };
    for node in &plan.nodes {
        let first = devs.len();
        let firmware = faults
            .iter()
            .rev()
            .find_map(|f| match f {
                Fault::Firmware(n, v) if *n == node.id => Some(v.clone()),
                _ => None,
            })
            .unwrap_or_else(|| SIM_FIRMWARE.to_string());
        let renamed = renamed(plan, node.id);
        let unpinned = |pinned: &Option<String>, own: &String| {
            pinned
                .clone()
                .unwrap_or_else(|| renamed.get(own).cloned().unwrap_or_else(|| own.clone()))
        };
        let mut ifindex = 3;
        let lanes = pcie_lanes_for(
            plan.profile_of(node.id)
                .half_rate_gbps
                .unwrap_or(crate::capacity::DEFAULT_HALF_GBPS),
        );
        for p in &plan.profile_of(node.id).ports {
            let (land_node, land_port) = landing(plan, faults, node.id, &p.name);
            for h in &p.halves {
                let endpoint = Endpoint {
                    node: node.id,
                    port: p.name.clone(),
                    half: h.name.clone(),
                };
                let pin = plan.pinned(&endpoint);
                let address = fabric
                    .member_of(plan, &endpoint)
                    .map(|(s, m)| (m.address, s.subnet));
                let planned_here = Endpoint {
                    node: land_node,
                    port: land_port.clone(),
                    half: h.name.clone(),
                };
                let wired = fabric
                    .member_of(plan, &planned_here)
                    .map(|(s, _)| (planned_here.clone(), s.id));
                let mtu = if has(&endpoint, |f| match f {
                    Fault::Mtu1500(es) => Some(es),
                    _ => None,
                }) || address.is_none()
                {
                    1500
                } else {
                    9000
                };
                devs.push(Dev {
                    node: node.id,
                    name: unpinned(&pin.device, &h.device),
                    netdev: unpinned(&pin.netdev, &h.netdev),
                    throttled: has(&endpoint, |f| match f {
                        Fault::Throttle(es) => Some(es),
                        _ => None,
                    }),
                    pcie_width: if has(&endpoint, |f| match f {
                        Fault::PcieDegraded(es) => Some(es),
                        _ => None,
                    }) {
                        lanes / 2
                    } else {
                        lanes
                    },
                    pcie_max: lanes,
                    firmware: firmware.clone(),
                    endpoint,
                    address,
                    wired,
                    mtu,
                    gid_index: pin.gid_index.unwrap_or(DEFAULT_GID_INDEX),
                    ifindex,
                    flapped: false,
                    phy_errors_per_s: None,
                    congestion: None,
                });
                apply_port_faults(faults, devs.last_mut());
                ifindex += 1;
            }
        }
        by_node.push(first..devs.len());
    }
    (devs, by_node)
}

/// What sysfs says of a port's rate: the standard speed at or above the profile's port (else
/// half) rate, `200 Gb/sec (4X HDR)` for a GB10.
fn nominal_rate(plan: &Plan, d: &Dev) -> &'static str {
    let p = plan.profile_of(d.node);
    let rate = p.port_rate_gbps.or(p.half_rate_gbps).unwrap_or(0.0);
    [
        (100.0, "100 Gb/sec (4X EDR)"),
        (200.0, "200 Gb/sec (4X HDR)"),
        (400.0, "400 Gb/sec (4X NDR)"),
    ]
    .into_iter()
    .find(|(r, _)| rate <= *r)
    .map_or("800 Gb/sec (4X XDR)", |(_, t)| t)
}

/// `flap` and `phy-errors` on the device just built.
fn apply_port_faults(faults: &[Fault], dev: Option<&mut Dev>) {
    let Some(d) = dev else { return };
    for f in faults {
        match f {
            Fault::Flap(es) if es.contains(&d.endpoint) => d.flapped = true,
            Fault::Congestion(es, role) if es.contains(&d.endpoint) => d.congestion = Some(*role),
            Fault::PhyErrors(es, rate) if es.contains(&d.endpoint) => {
                d.phy_errors_per_s = Some(*rate)
            }
            _ => {}
        }
    }
}

impl World {
    pub fn new(plan: Plan, faults: Vec<Fault>) -> World {
        let fabric = Fabric::build(&plan);
        let seed = plan.sim.seed;
        let (devs, by_node) = build_devs(&plan, &fabric, &faults);
        let mut by_ip = HashMap::new();
        let mut by_endpoint = HashMap::new();
        let mut by_segment: HashMap<SegmentId, Vec<usize>> = HashMap::new();
        for (i, d) in devs.iter().enumerate() {
            if let Some((ip, _)) = d.address {
                by_ip.entry(ip).or_insert(i);
            }
            by_endpoint.entry(d.endpoint.clone()).or_insert(i);
            if let Some(seg) = d.segment() {
                by_segment.entry(seg).or_default().push(i);
            }
        }
        let mut by_name = HashMap::new();
        for n in &plan.nodes {
            by_name.entry(n.name.clone()).or_insert(n.id);
        }
        let pcie_caps = World::narrow_links(&plan, &devs);
        World {
            plan,
            fabric,
            devs,
            faults,
            seed,
            by_node,
            by_name,
            by_ip,
            by_endpoint,
            by_segment,
            pcie_caps,
        }
    }

    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn name(&self, n: NodeId) -> &str {
        &self.plan.node(n).name
    }

    pub fn dead(&self, n: NodeId) -> bool {
        self.faults
            .iter()
            .any(|f| matches!(f, Fault::DeadHost(x) if *x == n))
    }

    pub fn server_dies(&self, n: NodeId) -> bool {
        self.faults
            .iter()
            .any(|f| matches!(f, Fault::ServerDies(x) if *x == n))
    }

    pub fn nccl_socket(&self, n: NodeId) -> bool {
        self.faults
            .iter()
            .any(|f| matches!(f, Fault::NcclSocket(x) if *x == n))
    }

    /// Is the ISL direction `from` -> other end of `isl` RSTP-blocked?
    pub fn isl_blocked(&self, isl: crate::plan::IslId) -> bool {
        let l = &self.plan.isls[isl.0];
        self.faults.iter().any(|f| {
            matches!(f, Fault::RstpBlock(a, b) if (*a, *b) == (l.a, l.b) || (*b, *a) == (l.a, l.b))
        })
    }

    pub fn devs_of(&self, n: NodeId) -> impl Iterator<Item = &Dev> {
        let range = self.by_node.get(n.0).cloned().unwrap_or(0..0);
        self.devs[range].iter()
    }

    /// The device of an endpoint (its physical port and half).
    pub fn dev_of_endpoint(&self, e: &Endpoint) -> Option<&Dev> {
        self.by_endpoint.get(e).map(|i| &self.devs[*i])
    }

    pub fn dev(&self, n: NodeId, name: &str) -> Option<&Dev> {
        self.devs_of(n).find(|d| d.name == name)
    }

    pub fn dev_by_netdev(&self, n: NodeId, netdev: &str) -> Option<&Dev> {
        self.devs_of(n).find(|d| d.netdev == netdev)
    }

    /// The halves whose PCIe link trained narrower than it should, with what it carries (below
    /// their rate only).
    pub fn pcie_caps(&self) -> &crate::capacity::HalfCaps {
        &self.pcie_caps
    }

    /// [`World::pcie_caps`] of `devs`.
    fn narrow_links(plan: &Plan, devs: &[Dev]) -> crate::capacity::HalfCaps {
        let mut caps = crate::capacity::HalfCaps::new();
        for d in devs.iter().filter(|d| d.pcie_width < d.pcie_max) {
            let rate = plan
                .profile_of(d.node)
                .half_rate_gbps
                .unwrap_or(crate::capacity::DEFAULT_HALF_GBPS);
            let gts = crate::capacity::pcie::gts(SIM_PCIE_SPEED).unwrap_or(32.0);
            let cap = crate::capacity::pcie::carries_gbps(gts, d.pcie_width);
            if cap < rate {
                caps.insert(d.endpoint.clone(), cap);
            }
        }
        caps
    }

    /// The devices wired to segment `seg`, as the cables really are.
    pub fn wired_to(&self, seg: SegmentId) -> impl Iterator<Item = &Dev> {
        self.by_segment
            .get(&seg)
            .into_iter()
            .flatten()
            .map(|i| &self.devs[*i])
    }

    /// The device holding a planned address (any node).
    pub fn dev_by_ip(&self, ip: Ipv4Addr) -> Option<&Dev> {
        self.by_ip.get(&ip).map(|i| &self.devs[*i])
    }

    /// The device node `n` routes `dst` out of (the one whose subnet holds it).
    pub fn route(&self, n: NodeId, dst: Ipv4Addr) -> Option<&Dev> {
        self.devs_of(n)
            .find(|d| d.address.is_some_and(|(_, net)| net.contains(&dst)))
    }

    /// Two devices on one wire (same segment, both cabled, different nodes, both alive).
    pub fn linked(&self, a: &Dev, b: &Dev) -> bool {
        a.node != b.node
            && !self.dead(a.node)
            && !self.dead(b.node)
            && a.segment().is_some()
            && a.segment() == b.segment()
    }

    /// Can `from` (a device) reach `dst` over IP on its wire?
    pub fn reaches(&self, from: &Dev, dst: Ipv4Addr) -> bool {
        self.dev_by_ip(dst).is_some_and(|to| self.linked(from, to))
    }

    /// The switches and ISL directions between two linked devices (their wired endpoints).
    pub fn isl_hops(&self, a: &Dev, b: &Dev) -> Vec<(crate::plan::IslId, SwitchId)> {
        match (&a.wired, &b.wired) {
            (Some((ea, _)), Some((eb, _))) => self
                .fabric
                .path(&self.plan, ea, eb)
                .map(|p| p.isl_hops().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The fabric path between two linked devices (their wired endpoints).
    pub fn path(&self, a: &Dev, b: &Dev) -> Option<crate::topology::Path> {
        let (ea, _) = a.wired.as_ref()?;
        let (eb, _) = b.wired.as_ref()?;
        self.fabric.path(&self.plan, ea, eb)
    }

    /// The management address of a node (not on the fabric).
    pub fn mgmt_ip(&self, n: NodeId) -> Ipv4Addr {
        Ipv4Addr::new(100, 64, (n.0 / 200) as u8, (n.0 % 200) as u8 + 10)
    }

    /// Initial counters of every device: plausible, seeded, quiet error counters.
    pub fn initial_counters(&self) -> HashMap<(NodeId, String), BTreeMap<String, u64>> {
        let mut out = HashMap::new();
        for d in &self.devs {
            let mut r = Rng::keyed(self.seed, &["counters", self.name(d.node), &d.name]);
            let mut c = BTreeMap::new();
            for k in COUNTERS.iter().chain(HW_COUNTERS.iter()) {
                c.insert(k.to_string(), 0u64);
            }
            // its netdev's carrier count: up once since it was created
            c.insert(CARRIER.to_string(), if d.active() { 2 } else { 0 });
            if d.active() {
                let words = r.range(1 << 24, 1 << 34);
                c.insert("port_xmit_data".into(), words);
                c.insert("port_rcv_data".into(), words + r.range(0, 1 << 20));
                c.insert("port_xmit_packets".into(), words / 1024);
                c.insert("port_rcv_packets".into(), words / 1024 + r.range(0, 1000));
            }
            out.insert((d.node, d.name.clone()), c);
        }
        out
    }

    /// The probe's dump for node `n` (see `discover::probe`), with `lldp` as its lldpd's
    /// answer, which the caller reads from where the cables land.
    pub fn probe(
        &self,
        n: NodeId,
        counters: &HashMap<(NodeId, String), BTreeMap<String, u64>>,
        lldp: &str,
        later: Option<f64>,
    ) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "@host {}", self.name(n));
        let _ = writeln!(s, "@kernel {SIM_KERNEL}");
        for d in self.devs_of(n) {
            self.dump_dev(&mut s, d, counters, true);
        }
        self.port_counters(&mut s, n, later);
        s.push_str("@lldp\n");
        s.push_str(lldp);
        s.push('\n');
        let mgmt = self.mgmt_ip(n);
        s.push_str("@ip\n");
        s.push_str("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n");
        let _ = writeln!(
            s,
            "2: enP7s7    inet {mgmt}/16 brd 100.64.255.255 scope global dynamic noprefixroute enP7s7\\       valid_lft 84512sec preferred_lft 84512sec"
        );
        for d in self.devs_of(n) {
            if let Some((ip, net)) = d.address {
                let _ = writeln!(
                    s,
                    "{}: {}    inet {ip}/{} brd {} scope global noprefixroute {}\\       valid_lft forever preferred_lft forever",
                    d.ifindex,
                    d.netdev,
                    net.prefix_len(),
                    net.broadcast(),
                    d.netdev
                );
            }
        }
        s.push_str("@link\n");
        s.push_str("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n");
        let mac = |i: u32| mac(n, i);
        let _ = writeln!(
            s,
            "2: enP7s7: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000\\    link/ether {} brd ff:ff:ff:ff:ff:ff",
            mac(2)
        );
        for d in self.devs_of(n) {
            let (flags, state) = if d.active() {
                ("<BROADCAST,MULTICAST,UP,LOWER_UP>", "UP")
            } else if d.address.is_some() {
                ("<NO-CARRIER,BROADCAST,MULTICAST,UP>", "DOWN")
            } else {
                ("<BROADCAST,MULTICAST>", "DOWN")
            };
            let _ = writeln!(
                s,
                "{}: {}: {flags} mtu {} qdisc mq state {state} mode DEFAULT group default qlen 1000\\    link/ether {} brd ff:ff:ff:ff:ff:ff",
                d.ifindex,
                d.netdev,
                d.mtu,
                mac(d.ifindex)
            );
        }
        s.push_str("@route\n");
        let _ = writeln!(
            s,
            "default via 100.64.0.1 dev enP7s7 proto dhcp src {mgmt} metric 100"
        );
        let _ = writeln!(
            s,
            "100.64.0.0/16 dev enP7s7 proto kernel scope link src {mgmt} metric 100"
        );
        for d in self.devs_of(n) {
            if let Some((ip, net)) = d.address {
                let _ = writeln!(
                    s,
                    "{} dev {} proto kernel scope link src {ip} metric 400{}",
                    net.trunc(),
                    d.netdev,
                    if d.active() { "" } else { " linkdown" }
                );
            }
        }
        s.push_str("@end\n");
        s
    }

    /// Whether `d`'s link flapped: its own `flap`, or the far end's on a direct link (a cable
    /// going down is seen at both its ends).
    pub fn flapped(&self, d: &Dev) -> bool {
        d.flapped
            || d.wired.as_ref().is_some_and(|(_, seg)| {
                let on: Vec<&Dev> = self.wired_to(*seg).collect();
                on.len() == 2 && on.iter().any(|x| x.flapped)
            })
    }

    /// The carrier counts and `ethtool -S` physical-layer counters of node `n`'s netdevs;
    /// `later` (simulated seconds since the node was first probed: one per read of it since;
    /// `None` for the first probe) shows what `flap`, `phy-errors` and `congestion` did since.
    fn port_counters(&self, s: &mut String, n: NodeId, later: Option<f64>) {
        s.push_str("@carrier\n");
        let flapped = |d: &Dev| later.is_some() && self.flapped(d);
        for d in self.devs_of(n) {
            let base = if d.active() { 2 } else { 0 };
            let _ = writeln!(s, "{} {}", d.netdev, base + 2 * u64::from(flapped(d)));
        }
        for d in self.devs_of(n) {
            let symbols = match (later, d.phy_errors_per_s) {
                (Some(t), Some(r)) => ((r * t).ceil() as u64).max(1),
                _ => 0,
            };
            // congestion: pause frames at 2,000 a second since discovery, received by a
            // paused half, sent by a sending one
            let pauses = match (later, d.congestion) {
                (Some(t), Some(_)) => ((2000.0 * t).ceil() as u64).max(1),
                _ => 0,
            };
            let (rx_pause, tx_pause) = match d.congestion {
                Some(super::fault::CongestionRole::Sends) => (0, pauses),
                _ => (pauses, 0),
            };
            let _ = writeln!(s, "@ethtool {}", d.netdev);
            s.push_str(&crate::tools::ethtool::sim::stats(
                &crate::tools::ethtool::sim::Phy {
                    symbol_errors: symbols,
                    link_down_events: u64::from(flapped(d)),
                    rx_pause,
                    tx_pause,
                },
            ));
        }
    }

    /// The counters-only dump for `devices` on node `n`.
    pub fn counters_dump(
        &self,
        n: NodeId,
        devices: &[String],
        counters: &HashMap<(NodeId, String), BTreeMap<String, u64>>,
    ) -> String {
        let mut s = String::new();
        for name in devices {
            match self.dev(n, name) {
                Some(d) => self.dump_dev(&mut s, d, counters, false),
                None => {
                    let _ = writeln!(s, "@dev {name}");
                }
            }
        }
        s.push_str("@end\n");
        s
    }

    fn dump_dev(
        &self,
        s: &mut String,
        d: &Dev,
        counters: &HashMap<(NodeId, String), BTreeMap<String, u64>>,
        full: bool,
    ) {
        let base = format!("/sys/class/infiniband/{}/ports/1", d.name);
        let _ = writeln!(s, "@dev {}", d.name);
        if full {
            if d.active() {
                s.push_str("@state 4: ACTIVE\n@phys 5: LinkUp\n");
            } else {
                s.push_str("@state 1: DOWN\n@phys 3: Disabled\n");
            }
            // the OS reports the port's nominal speed (200 Gb/s for a GB10's 100G half): a
            // hint, never proof
            let _ = writeln!(s, "@rate {}\n@layer Ethernet", nominal_rate(&self.plan, d));
            let _ = writeln!(s, "@fw {}\n@board MT_0000000970", d.firmware);
            let _ = writeln!(
                s,
                "@pcie current_link_speed:{SIM_PCIE_SPEED}\n@pcie current_link_width:{}\n@pcie max_link_speed:{SIM_PCIE_SPEED}\n@pcie max_link_width:{}",
                d.pcie_width, d.pcie_max
            );
            let profile = self.plan.profile_of(d.node);
            let function = profile
                .ports
                .iter()
                .position(|p| p.name == d.endpoint.port)
                .unwrap_or(0);
            let domain = profile
                .port(&d.endpoint.port)
                .and_then(|p| p.halves.iter().position(|h| h.name == d.endpoint.half))
                .unwrap_or(0)
                * 2;
            let _ = writeln!(s, "@pci {domain:04x}:01:00.{function}\n@driver mlx5_core");
            let _ = writeln!(s, "@netdev {}", d.netdev);
            let mac_tail = format!("{:02x}{:02x}", d.node.0 % 256, d.ifindex);
            let link_local = format!("fe80:0000:0000:0000:4ebb:47ff:fe00:{mac_tail}");
            let mut gids: BTreeMap<u32, (String, &str)> = BTreeMap::new();
            gids.insert(0, (link_local.clone(), "IB/RoCE v1"));
            gids.insert(1, (link_local, "RoCE v2"));
            if let Some((ip, _)) = d.address {
                let o = ip.octets();
                let g = format!(
                    "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}",
                    o[0], o[1], o[2], o[3]
                );
                if d.gid_index > 0 {
                    gids.insert(d.gid_index - 1, (g.clone(), "IB/RoCE v1"));
                }
                gids.insert(d.gid_index, (g, "RoCE v2"));
            }
            let top = gids.keys().max().copied().unwrap_or(0) + 2;
            for i in 0..=top {
                let g = gids
                    .get(&i)
                    .map(|(g, _)| g.clone())
                    .unwrap_or_else(|| "0000:0000:0000:0000:0000:0000:0000:0000".into());
                let _ = writeln!(s, "@gid {base}/gids/{i}:{g}");
            }
            for (i, (_, t)) in &gids {
                let _ = writeln!(s, "@gidtype {base}/gid_attrs/types/{i}:{t}");
            }
        }
        if let Some(c) = counters.get(&(d.node, d.name.clone())) {
            for (k, v) in c {
                if k == CARRIER {
                    // the counters script reads it beside the device's (the probe: `@carrier`)
                    if !full {
                        let _ = writeln!(
                            s,
                            "@counter /sys/class/infiniband/{}/device/net/{}/{CARRIER}:{v}",
                            d.name, d.netdev
                        );
                    }
                    continue;
                }
                let dir = if HW_COUNTERS.contains(&k.as_str()) {
                    "hw_counters"
                } else {
                    "counters"
                };
                let _ = writeln!(s, "@counter {base}/{dir}/{k}:{v}");
            }
        }
    }
}
