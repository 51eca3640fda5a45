//! The boxes: which hosts are distinct machines with RDMA devices, what each box's ports and
//! halves are, and a profile per kind of box. A box showing the GB10's four devices is the
//! built-in `gb10` profile (its halves then told apart by where each one's cable lands, in
//! [`super::cabling`]); any other box's devices are grouped into ports by their PCI functions
//! (two functions at the same bus address in two PCI domains are two halves of one port, as on
//! GB10), one profile per set of names.

use super::Host;
use super::evidence::Extra;
use crate::discover::Probe;
use crate::plan::Profile;
use crate::plan::validate::is_safe_name;

/// A half as found on a box.
#[derive(Debug, Clone, PartialEq)]
pub struct Half {
    pub name: String,
    pub device: String,
    pub netdev: String,
}

/// A port as found on a box: its halves.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    pub name: String,
    pub halves: Vec<Half>,
}

/// One box: a distinct machine with RDMA devices.
#[derive(Debug, Clone)]
pub struct BoxInfo {
    /// The plan's node name: as given, or its hostname where what was given is no node name.
    pub name: String,
    /// As given on the command line.
    pub given: String,
    pub probe: Probe,
    pub extra: Extra,
    pub profile: usize,
    pub ports: Vec<Port>,
}

impl BoxInfo {
    /// The port and half of a netdev on this box.
    pub fn half_of(&self, netdev: &str) -> Option<(&Port, &Half)> {
        self.ports
            .iter()
            .find_map(|p| p.halves.iter().find(|h| h.netdev == netdev).map(|h| (p, h)))
    }
}

/// A kind of box.
#[derive(Debug, Clone)]
pub struct ProfileInfo {
    pub name: String,
    /// The built-in `gb10`: no `[[profile]]` table is written.
    pub builtin: bool,
    pub ports: Vec<Port>,
    /// Where its facts came from (a comment).
    pub source: String,
    /// What one half carries, Gb/s, and where that figure came from (generic boxes).
    pub half_rate: Option<(f64, String)>,
}

/// A host left out of the plan, and why.
#[derive(Debug, Clone)]
pub struct LeftOut {
    pub host: String,
    pub why: String,
}

impl LeftOut {
    pub fn line(&self) -> String {
        format!("{}: {}", self.host, self.why)
    }
}

/// The boxes and profiles, and the hosts left out.
#[derive(Debug, Clone, Default)]
pub struct Boxes {
    pub boxes: Vec<BoxInfo>,
    pub profiles: Vec<ProfileInfo>,
    pub left_out: Vec<LeftOut>,
}

impl Boxes {
    /// The box whose node name is `name`.
    pub fn by_name(&self, name: &str) -> Option<usize> {
        self.boxes.iter().position(|b| b.name == name)
    }
}

/// Read the hosts into boxes (the hosts left out, and why, in `left_out`).
pub fn read(hosts: &[Host]) -> Boxes {
    let mut out = Boxes::default();
    for h in hosts {
        let probe = match &h.probe {
            Err(e) => {
                out.left_out.push(LeftOut {
                    host: h.name.clone(),
                    why: format!("did not answer ({e})"),
                });
                continue;
            }
            Ok(p) if !p.complete => {
                out.left_out.push(LeftOut {
                    host: h.name.clone(),
                    why: "its discovery probe did not run to its end".into(),
                });
                continue;
            }
            Ok(p) => p,
        };
        if probe.devices.is_empty() {
            out.left_out.push(LeftOut {
                host: h.name.clone(),
                why: "no RDMA device under /sys/class/infiniband (driver not loaded, or not an RDMA host)".into(),
            });
            continue;
        }
        if let Some(same) = out.boxes.iter().find(|b| same_machine(b, probe, &h.extra)) {
            let why = if same.given == h.name {
                "given twice, kept once".to_string()
            } else {
                format!(
                    "the same machine as {} ({}): given twice under two names, kept once",
                    same.given,
                    match &h.extra.machine_id {
                        Some(id) => format!("machine id {id}, the same interface MACs"),
                        None => "the same interface MACs".into(),
                    }
                )
            };
            out.left_out.push(LeftOut {
                host: h.name.clone(),
                why,
            });
            continue;
        }
        let name = node_name(&h.name, &probe.hostname, &out.boxes);
        let (ports, kind) = layout(probe);
        let profile = profile_for(&mut out.profiles, ports.clone(), kind, probe);
        out.boxes.push(BoxInfo {
            name,
            given: h.name.clone(),
            probe: probe.clone(),
            extra: h.extra.clone(),
            profile,
            ports,
        });
    }
    out
}

/// One machine: the same interface MACs (a MAC is one NIC's), and not two machine ids. A
/// machine id alone is no proof: boxes cloned from one image share it.
fn same_machine(b: &BoxInfo, probe: &Probe, extra: &Extra) -> bool {
    if let (Some(a), Some(c)) = (&b.extra.machine_id, &extra.machine_id)
        && a != c
    {
        return false;
    }
    let macs = |p: &Probe| -> Vec<String> {
        p.interfaces
            .iter()
            .filter_map(|i| i.mac.clone())
            .filter(|m| m != "00:00:00:00:00:00")
            .collect()
    };
    let mine = macs(probe);
    !mine.is_empty() && macs(&b.probe).iter().any(|m| mine.contains(m))
}

/// The node name: as given when it is one, else the hostname's first label, else `node-N`.
fn node_name(given: &str, hostname: &str, taken: &[BoxInfo]) -> String {
    let short = hostname.split('.').next().unwrap_or_default();
    let candidates = [given.to_string(), short.to_string()];
    let free = |n: &str| is_safe_name(n) && !taken.iter().any(|b| b.name == n);
    if let Some(n) = candidates.iter().find(|n| free(n)) {
        return n.clone();
    }
    (1..)
        .map(|i| format!("node-{i}"))
        .find(|n| free(n))
        .unwrap_or_default()
}

/// What a GB10's RDMA devices say in `ports/1/rate` when its ports run at their line rate
/// (`200 Gb/sec (4X HDR)`, each half alike, though a half carries about half of it).
pub const GB10_RATE_GBPS: f64 = 200.0;

/// The kind of layout a box has.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Gb10,
    /// The GB10's four devices, but its ports run below the GB10's rate (this many Gb/s):
    /// the built-in profile's figures would promise what these links do not carry.
    Gb10Slower(f64),
    Generic,
}

/// The line rate a device's `ports/1/rate` says, Gb/s (`200 Gb/sec (4X HDR)` -> 200).
fn os_rate(d: &crate::discover::probe::Device) -> Option<f64> {
    d.rate
        .split_whitespace()
        .next()
        .and_then(|r| r.parse().ok())
        .filter(|r: &f64| *r > 0.0)
}

/// The box's ports and halves: GB10's when the box shows exactly its four devices (at the
/// GB10's rate: else [`Kind::Gb10Slower`]), else grouped by PCI function.
fn layout(probe: &Probe) -> (Vec<Port>, Kind) {
    let gb10 = Profile::gb10();
    let mut want: Vec<(String, String)> = gb10
        .ports
        .iter()
        .flat_map(|p| {
            p.halves
                .iter()
                .map(|h| (h.device.clone(), h.netdev.clone()))
        })
        .collect();
    let mut have: Vec<(String, String)> = probe
        .devices
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                d.netdevs.first().cloned().unwrap_or_default(),
            )
        })
        .collect();
    want.sort();
    have.sort();
    if want == have {
        let ports = gb10
            .ports
            .iter()
            .map(|p| Port {
                name: p.name.clone(),
                halves: p
                    .halves
                    .iter()
                    .map(|h| Half {
                        name: h.name.clone(),
                        device: h.device.clone(),
                        netdev: h.netdev.clone(),
                    })
                    .collect(),
            })
            .collect();
        let slowest = probe
            .devices
            .iter()
            .filter_map(os_rate)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))));
        return match slowest {
            Some(r) if r < GB10_RATE_GBPS => (ports, Kind::Gb10Slower(r)),
            _ => (ports, Kind::Gb10),
        };
    }
    (generic_ports(probe), Kind::Generic)
}

/// `0002:01:00.1` -> (`01:00.1`, `0002`): the function's address in its domain, and the domain.
fn pci_parts(pci: &str) -> (String, String) {
    match pci.split_once(':') {
        Some((dom, rest)) if rest.contains(':') => (rest.to_string(), dom.to_string()),
        _ => (pci.to_string(), String::new()),
    }
}

/// Ports by PCI function: functions at the same bus address in different domains are the
/// halves of one port; a device without a readable function is a port of its own.
fn generic_ports(probe: &Probe) -> Vec<Port> {
    let mut groups: Vec<(String, Vec<(String, &crate::discover::probe::Device)>)> = Vec::new();
    for d in &probe.devices {
        if d.netdevs.is_empty() {
            continue;
        }
        let (key, dom) = match &d.hardware.pci {
            Some(p) => pci_parts(p),
            None => (format!("dev:{}", d.name), String::new()),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push((dom, d)),
            None => groups.push((key, vec![(dom, d)])),
        }
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (_, mut devs))| {
            devs.sort_by(|a, b| a.0.cmp(&b.0));
            Port {
                name: format!("p{i}"),
                halves: devs
                    .iter()
                    .enumerate()
                    .map(|(k, (_, d))| Half {
                        name: half_name(k),
                        device: d.name.clone(),
                        netdev: d.netdevs[0].clone(),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// `a`, `b`, ... `z`, `h26`, ...
fn half_name(k: usize) -> String {
    match u8::try_from(k) {
        Ok(k) if k < 26 => char::from(b'a' + k).to_string(),
        _ => format!("h{k}"),
    }
}

/// The profile of a box of these ports: an existing one of the same layout, or a new one.
fn profile_for(
    profiles: &mut Vec<ProfileInfo>,
    ports: Vec<Port>,
    kind: Kind,
    probe: &Probe,
) -> usize {
    let rate = match kind {
        Kind::Gb10 => None,
        _ => half_rate(probe),
    };
    let builtin = kind == Kind::Gb10;
    if let Some(i) = profiles.iter().position(|p| {
        p.ports == ports
            && p.builtin == builtin
            && p.half_rate.as_ref().map(|r| r.0) == rate.as_ref().map(|r| r.0)
    }) {
        return i;
    }
    let first = probe.devices.first();
    let board = first
        .and_then(|d| d.hardware.board_id.clone())
        .unwrap_or_else(|| "-".into());
    let info = match kind {
        Kind::Gb10 => ProfileInfo {
            name: "gb10".into(),
            builtin: true,
            ports,
            source: format!(
                "built-in profile gb10: the box shows the GB10's four RDMA devices (rocep1s0f0, rocep1s0f1, roceP2p1s0f0, roceP2p1s0f1), board {board}"
            ),
            half_rate: None,
        },
        Kind::Gb10Slower(r) => ProfileInfo {
            name: format!("box-{}", profiles.iter().filter(|p| !p.builtin).count() + 1),
            builtin: false,
            ports,
            source: format!(
                "from {}'s sysfs: the GB10's four RDMA devices (board {board}), but its ports run at {r} Gb/s, not the {GB10_RATE_GBPS} Gb/s a GB10's ports run at: the GB10's ports and halves, with what these links carry (if they should run at {GB10_RATE_GBPS}, check the cables and the far ends, then use the built-in `gb10`)",
                probe.hostname
            ),
            half_rate: rate,
        },
        Kind::Generic => {
            let n = profiles.iter().filter(|p| !p.builtin).count() + 1;
            ProfileInfo {
                name: format!("box-{n}"),
                builtin: false,
                source: format!(
                    "from {}'s sysfs: {} RDMA device(s), board {board}, ports grouped by PCI function",
                    probe.hostname,
                    probe.devices.len()
                ),
                half_rate: rate,
                ports,
            }
        }
    };
    profiles.push(info);
    profiles.len() - 1
}

/// What a half carries at most: the port rate sysfs reports, capped by its PCIe link (the
/// lowest over the box's devices), and where that came from.
fn half_rate(probe: &Probe) -> Option<(f64, String)> {
    let mut best: Option<(f64, String)> = None;
    for d in &probe.devices {
        let os = os_rate(d);
        let pcie = d.hardware.pcie.as_ref().and_then(|l| l.max_carries_gbps());
        let (rate, why) = match (os, pcie) {
            (Some(o), Some(p)) if p < o => (
                p,
                format!(
                    "PCIe {} carries {p:.1} Gb/s, below the port's {o} Gb/s (/sys/class/infiniband/{}/ports/1/rate)",
                    d.hardware
                        .pcie
                        .as_ref()
                        .map(|l| l.max())
                        .unwrap_or_default(),
                    d.name
                ),
            ),
            (Some(o), _) => (
                o,
                format!(
                    "/sys/class/infiniband/{}/ports/1/rate says {}",
                    d.name, d.rate
                ),
            ),
            (None, Some(p)) => (
                p,
                format!(
                    "PCIe {} carries {p:.1} Gb/s",
                    d.hardware
                        .pcie
                        .as_ref()
                        .map(|l| l.max())
                        .unwrap_or_default()
                ),
            ),
            (None, None) => continue,
        };
        if best.as_ref().is_none_or(|(b, _)| rate < *b) {
            best = Some(((rate * 10.0).round() / 10.0, why));
        }
    }
    best
}
