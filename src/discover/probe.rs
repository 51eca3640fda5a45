//! The read-only probe: one shell script per node, one SSH round trip, nothing installed.
//! It dumps the kernel release, the RDMA devices from sysfs (state, rate, netdev, GID table,
//! counters, firmware, board id, the PCI function's address, PCIe link and driver), the
//! interfaces (with their MACs), addresses and routes from iproute2, and, where lldpd runs, its
//! neighbours (`lldpcli -f json0 show neighbors`); `parse` reads the dump.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

/// `rd FILE`: the first line of FILE into `v` (empty when unreadable), with the shell's own
/// `read`; `dump TAG FILE...`: `@TAG FILE:VALUE` per readable, non-empty file (what
/// `grep -H . FILE... | sed 's/^/@TAG /'` prints for one-line sysfs files) without a fork.
/// A GB10 box has hundreds of counter and GID files: forking `cat`, `grep` and `sed` per
/// attribute cost ~50 processes per host, the most of a fan-out's CPU on a small machine.
macro_rules! shell_helpers {
    () => {
        r#"rd() { v=; { read -r v < "$1"; } 2>/dev/null; }
dump() { t=$1; shift; for f in "$@"; do rd "$f"; [ -n "$v" ] && printf '@%s %s:%s\n' "$t" "$f" "$v"; done; }
"#
    };
}
const SHELL_HELPERS: &str = shell_helpers!();

/// The probe script. POSIX sh, read-only, sysfs, `ip` and `lldpcli` only. Shell builtins read
/// sysfs (the PCI function and its driver are the targets of `device` and `device/driver`,
/// resolved by `cd -P`, not `readlink`); the only processes it starts are the three `ip`
/// listings and, where installed, one `lldpcli` and one `ethtool -S` per RDMA netdev (its
/// port's physical-layer counters: [`crate::tools::ethtool::parse`]).
pub const PROBE_SCRIPT: &str = concat!(
    shell_helpers!(),
    r#"rd /proc/sys/kernel/hostname; h=$v; [ -n "$h" ] || h=$(hostname); echo "@host $h"
rd /proc/sys/kernel/osrelease; echo "@kernel $v"
for d in /sys/class/infiniband/*; do
  [ -d "$d" ] || continue
  p="$d/ports/1"
  echo "@dev ${d##*/}"
  rd "$p/state"; echo "@state $v"
  rd "$p/phys_state"; echo "@phys $v"
  rd "$p/rate"; echo "@rate $v"
  rd "$p/link_layer"; echo "@layer $v"
  rd "$d/fw_ver"; echo "@fw $v"
  rd "$d/board_id"; echo "@board $v"
  for f in current_link_speed current_link_width max_link_speed max_link_width; do
    rd "$d/device/$f"; echo "@pcie $f:$v"
  done
  if cd -P "$d/device" 2>/dev/null; then
    case ${PWD##*/} in *:*:*.*) echo "@pci ${PWD##*/}" ;; esac
  fi
  if cd -P "$d/device/driver" 2>/dev/null; then
    drv=${PWD##*/}; echo "@driver $drv"; rd "/sys/module/$drv/version"; echo "@driver-version $v"
  fi
  cd /
  for n in "$d"/device/net/*; do [ -e "$n" ] && echo "@netdev ${n##*/}"; done
  dump gid "$p"/gids/*
  dump gidtype "$p"/gid_attrs/types/*
  dump counter "$p"/counters/* "$p"/hw_counters/*
done
echo "@carrier"
for n in /sys/class/net/*; do rd "$n/carrier_changes"; [ -n "$v" ] && echo "${n##*/} $v"; done
if command -v ethtool >/dev/null 2>&1; then
  for n in /sys/class/infiniband/*/device/net/*; do
    [ -e "$n" ] && { echo "@ethtool ${n##*/}"; ethtool -S "${n##*/}" 2>&1; }
  done
fi
if command -v lldpcli >/dev/null 2>&1; then
  echo "@lldp"
  lldpcli -f json0 show neighbors 2>&1
fi
echo "@ip"
ip -4 -o addr show 2>/dev/null
echo "@link"
ip -o link show 2>/dev/null
echo "@route"
ip -4 route show 2>/dev/null
echo "@end"
"#
);

/// How long a host has to answer the probe.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Counters only, for snapshots around a job: one `@dev` block per device (its port's counters
/// and hw_counters, and its netdev's `carrier_changes`: a flap during the job), no process
/// forked.
/// A device name that cannot be a shell word (a NUL byte) is skipped.
pub fn counters_script(devices: &[String]) -> String {
    let mut s = String::from(SHELL_HELPERS);
    for d in devices {
        let Some(q) = crate::render::quote(d) else {
            continue;
        };
        s.push_str(&format!(
            "echo @dev {q}; p=/sys/class/infiniband/{q}; dump counter \"$p\"/ports/1/counters/* \"$p\"/ports/1/hw_counters/* \"$p\"/device/net/*/carrier_changes\n"
        ));
    }
    s.push_str("echo @end\n");
    s
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gid {
    pub index: u32,
    pub gid: String,
    /// `RoCE v2`, `IB/RoCE v1`, ...
    pub kind: String,
}

/// The PCIe link of a device's PCI function, as sysfs spells it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
pub struct PcieLink {
    /// `current_link_speed`: `32.0 GT/s PCIe`.
    pub speed: String,
    pub width: Option<u32>,
    pub max_speed: String,
    pub max_width: Option<u32>,
}

impl PcieLink {
    /// `32.0 GT/s x4`, or `?` where sysfs said nothing readable.
    fn text(speed: &str, width: Option<u32>) -> String {
        let s = crate::capacity::pcie::gts(speed)
            .map(|g| format!("{g} GT/s"))
            .unwrap_or_else(|| "?".into());
        match width {
            Some(w) => format!("{s} x{w}"),
            None => s,
        }
    }

    /// The link now: `16 GT/s x2`.
    pub fn now(&self) -> String {
        PcieLink::text(&self.speed, self.width)
    }

    /// The link at its maximum: `16 GT/s x4`.
    pub fn max(&self) -> String {
        PcieLink::text(&self.max_speed, self.max_width)
    }

    /// Trained below its maximum: fewer lanes or a lower transfer rate (both read).
    pub fn degraded(&self) -> bool {
        let g = crate::capacity::pcie::gts;
        let slower = matches!((g(&self.speed), g(&self.max_speed)), (Some(a), Some(b)) if a < b);
        let narrower = matches!((self.width, self.max_width), (Some(a), Some(b)) if a < b);
        slower || narrower
    }

    /// What an RDMA flow can move over the link as it trained, Gb/s.
    pub fn carries_gbps(&self) -> Option<f64> {
        let gts = crate::capacity::pcie::gts(&self.speed)?;
        Some(crate::capacity::pcie::carries_gbps(gts, self.width?))
    }

    /// What it would carry at its maximum, Gb/s.
    pub fn max_carries_gbps(&self) -> Option<f64> {
        let gts = crate::capacity::pcie::gts(&self.max_speed)?;
        Some(crate::capacity::pcie::carries_gbps(gts, self.max_width?))
    }
}

/// What a device is, beyond its port: firmware, board, its PCI function and driver.
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
pub struct Hardware {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board_id: Option<String>,
    /// The PCI function's address (`0000:01:00.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie: Option<PcieLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// `/sys/module/DRIVER/version`, where the driver has one (out-of-tree builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    pub name: String,
    /// `ACTIVE`, `DOWN`, ...
    pub state: String,
    pub phys_state: String,
    /// As the OS reports it: a hint only (200 Gb/sec is shown for a 100G half).
    pub rate: String,
    pub link_layer: String,
    pub netdevs: Vec<String>,
    pub gids: Vec<Gid>,
    pub counters: BTreeMap<String, u64>,
    pub hardware: Hardware,
}

impl Device {
    pub fn active(&self) -> bool {
        self.state == "ACTIVE"
    }

    /// The RoCE v2 GID index whose GID maps `ip` (IPv4-mapped: its last four bytes).
    pub fn roce_v2_index(&self, ip: Ipv4Addr) -> Option<u32> {
        let o = ip.octets();
        let tail = format!("{:02x}{:02x}:{:02x}{:02x}", o[0], o[1], o[2], o[3]);
        self.gids
            .iter()
            .filter(|g| g.kind.contains("RoCE v2"))
            .find(|g| {
                g.gid
                    .to_ascii_lowercase()
                    .ends_with(&format!("ffff:{tail}"))
            })
            .map(|g| g.index)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interface {
    pub name: String,
    pub mtu: Option<u32>,
    pub up: bool,
    /// A bond or bridge this interface is enslaved to.
    pub master: Option<String>,
    pub ipv4: Vec<Ipv4Net>,
    /// The link-layer address (`link/ether`), lowercase.
    pub mac: Option<String>,
    /// How many times its carrier came or went since it was created
    /// (`/sys/class/net/NETDEV/carrier_changes`): a flap between two probes shows here.
    pub carrier_changes: Option<u64>,
    /// Its port's documented `ethtool -S` counters, by meaning (an RDMA netdev, where ethtool
    /// is installed and answered).
    pub phy: BTreeMap<crate::tools::ethtool::parse::Meaning, u64>,
}

/// What one node's probe found.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Probe {
    pub hostname: String,
    pub devices: Vec<Device>,
    pub interfaces: Vec<Interface>,
    /// `ip -4 route` lines.
    pub routes: Vec<String>,
    /// The kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: Option<String>,
    /// What lldpd hears, where `lldpcli` is installed (its error when lldpd does not run).
    pub lldp: Option<crate::parse::lldp::LldpReport>,
    /// The probe ran to its end marker.
    pub complete: bool,
}

impl Probe {
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }

    pub fn interface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    /// The interface holding `ip`.
    pub fn interface_with(&self, ip: Ipv4Addr) -> Option<&Interface> {
        self.interfaces
            .iter()
            .find(|i| i.ipv4.iter().any(|n| n.addr() == ip))
    }

    /// The interface whose MAC is `mac` (lowercase).
    pub fn interface_with_mac(&self, mac: &str) -> Option<&Interface> {
        self.interfaces
            .iter()
            .find(|i| i.mac.as_deref() == Some(mac))
    }

    /// The RDMA device behind a netdev.
    pub fn device_of_netdev(&self, netdev: &str) -> Option<&Device> {
        self.devices
            .iter()
            .find(|d| d.netdevs.iter().any(|n| n == netdev))
    }
}

fn iface_mut<'a>(ifs: &'a mut Vec<Interface>, name: &str) -> &'a mut Interface {
    if let Some(i) = ifs.iter().position(|i| i.name == name) {
        return &mut ifs[i];
    }
    ifs.push(Interface {
        name: name.to_string(),
        mtu: None,
        up: false,
        master: None,
        ipv4: Vec::new(),
        mac: None,
        carrier_changes: None,
        phy: BTreeMap::new(),
    });
    let last = ifs.len() - 1;
    &mut ifs[last]
}

/// Read a probe dump (also the counters-only dump).
pub fn parse(text: &str) -> Probe {
    let mut p = Probe::default();
    let mut section = "";
    let mut lldp = String::new();
    let mut ethtool: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        if section == "lldp" && !line.starts_with('@') {
            lldp.push_str(line);
            lldp.push('\n');
            continue;
        }
        if section == "ethtool" && !line.starts_with('@') {
            if let Some((_, t)) = ethtool.last_mut() {
                t.push_str(line);
                t.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix('@') {
            let (tag, val) = rest.split_once(' ').unwrap_or((rest, ""));
            match tag {
                "host" => p.hostname = val.trim().to_string(),
                "kernel" => p.kernel = Some(val.trim().to_string()).filter(|k| !k.is_empty()),
                "dev" => p.devices.push(Device {
                    name: val.trim().to_string(),
                    state: String::new(),
                    phys_state: String::new(),
                    rate: String::new(),
                    link_layer: String::new(),
                    netdevs: Vec::new(),
                    gids: Vec::new(),
                    counters: BTreeMap::new(),
                    hardware: Hardware::default(),
                }),
                "ip" | "link" | "route" | "lldp" | "carrier" => section = tag,
                "ethtool" => {
                    section = tag;
                    ethtool.push((val.trim().to_string(), String::new()));
                }
                "end" => {
                    p.complete = true;
                    section = "";
                }
                _ => {
                    if let Some(d) = p.devices.last_mut() {
                        device_line(d, tag, val);
                    }
                }
            }
            continue;
        }
        section_line(&mut p, section, line);
    }
    if text.contains("\n@lldp") || text.starts_with("@lldp") {
        p.lldp = Some(crate::parse::lldp::parse(&lldp));
    }
    for (name, out) in ethtool {
        let stats = crate::tools::ethtool::parse::parse(&out);
        if !name.is_empty() && stats.status == crate::parse::Status::Ok {
            iface_mut(&mut p.interfaces, &name).phy = stats.known;
        }
    }
    p
}

/// A `@TAG VALUE` line about the device being read.
fn device_line(d: &mut Device, tag: &str, val: &str) {
    // sysfs state reads "4: ACTIVE": keep the word
    let word = |v: &str| {
        v.split_once(": ")
            .map(|(_, w)| w)
            .unwrap_or(v)
            .trim()
            .to_string()
    };
    let some = |v: &str| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    let hw = &mut d.hardware;
    match tag {
        "state" => d.state = word(val),
        "phys" => d.phys_state = word(val),
        "rate" => d.rate = val.trim().to_string(),
        "layer" => d.link_layer = val.trim().to_string(),
        "netdev" => d.netdevs.push(val.trim().to_string()),
        "fw" => hw.firmware = some(val),
        "board" => hw.board_id = some(val),
        "pci" => hw.pci = some(val),
        "driver" => hw.driver = some(val),
        "driver-version" => hw.driver_version = some(val),
        "pcie" => {
            let Some((file, v)) = val.split_once(':') else {
                return;
            };
            let link = hw.pcie.get_or_insert_with(PcieLink::default);
            let v = v.trim();
            match file {
                "current_link_speed" => link.speed = v.to_string(),
                "current_link_width" => link.width = v.parse().ok(),
                "max_link_speed" => link.max_speed = v.to_string(),
                "max_link_width" => link.max_width = v.parse().ok(),
                _ => {}
            }
            if link == &PcieLink::default() {
                hw.pcie = None;
            }
        }
        "gid" | "gidtype" | "counter" => file_line(d, tag, val),
        _ => {}
    }
}

/// `PATH:VALUE` of a GID, GID type or counter file: the file name is the index or counter name.
fn file_line(d: &mut Device, tag: &str, val: &str) {
    let Some((path, v)) = val.split_once(':') else {
        return;
    };
    let file = path.rsplit('/').next().unwrap_or("");
    match tag {
        "gid" => {
            if let Ok(i) = file.parse::<u32>() {
                let g = v.trim().to_string();
                if g.chars().any(|c| c != '0' && c != ':') {
                    d.gids.push(Gid {
                        index: i,
                        gid: g,
                        kind: String::new(),
                    });
                }
            }
        }
        "gidtype" => {
            if let Ok(i) = file.parse::<u32>()
                && let Some(g) = d.gids.iter_mut().find(|g| g.index == i)
            {
                g.kind = v.trim().to_string();
            }
        }
        _ => {
            if let Ok(n) = v.trim().parse::<u64>() {
                d.counters.insert(file.to_string(), n);
            }
        }
    }
}

/// A line of the `ip` sections.
fn section_line(p: &mut Probe, section: &str, line: &str) {
    match section {
        "carrier" => {
            // enp1s0f0np0 4
            if let Some((name, n)) = line.trim().split_once(' ')
                && let Ok(n) = n.trim().parse::<u64>()
            {
                iface_mut(&mut p.interfaces, name).carrier_changes = Some(n);
            }
        }
        "ip" => {
            // 2: enp1s0f0np0    inet 198.51.100.1/30 brd ... scope global enp1s0f0np0\  valid_lft ...
            let toks: Vec<&str> = line.split_whitespace().collect();
            if toks.len() >= 4 && toks[2] == "inet" {
                let name = toks[1].trim_end_matches(':');
                let name = name.split('@').next().unwrap_or(name);
                if let Ok(net) = toks[3].parse::<Ipv4Net>() {
                    iface_mut(&mut p.interfaces, name).ipv4.push(net);
                }
            }
        }
        "link" => {
            // 2: enp1s0f0np0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc ... master bond0 state UP ...\    link/ether 4c:bb:47:00:01:03 brd ...
            let toks: Vec<&str> = line.split_whitespace().collect();
            if toks.len() >= 3 {
                let name = toks[1].trim_end_matches(':');
                let name = name.split('@').next().unwrap_or(name).to_string();
                let i = iface_mut(&mut p.interfaces, &name);
                i.up = toks[2].contains("LOWER_UP")
                    || toks.windows(2).any(|w| w[0] == "state" && w[1] == "UP");
                for w in toks.windows(2) {
                    match w[0] {
                        "mtu" => i.mtu = w[1].parse().ok(),
                        "master" => i.master = Some(w[1].to_string()),
                        "link/ether" => i.mac = crate::parse::neigh::mac(w[1]),
                        _ => {}
                    }
                }
            }
        }
        "route" if !line.trim().is_empty() => p.routes.push(line.trim().to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "@host spark-a
@kernel 6.11.0-1016-nvidia
@dev rocep1s0f0
@state 4: ACTIVE
@phys 5: LinkUp
@rate 200 Gb/sec (4X HDR)
@layer Ethernet
@fw 28.45.1200
@board MT_0000000970
@pcie current_link_speed:32.0 GT/s PCIe
@pcie current_link_width:2
@pcie max_link_speed:32.0 GT/s PCIe
@pcie max_link_width:4
@pci 0000:01:00.0
@driver mlx5_core
@driver-version 
@netdev enp1s0f0np0
@gid /sys/class/infiniband/rocep1s0f0/ports/1/gids/0:fe80:0000:0000:0000:0000:0000:0000:0001
@gid /sys/class/infiniband/rocep1s0f0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c633:6401
@gid /sys/class/infiniband/rocep1s0f0/ports/1/gids/4:0000:0000:0000:0000:0000:0000:0000:0000
@gidtype /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/0:IB/RoCE v1
@gidtype /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3:RoCE v2
@counter /sys/class/infiniband/rocep1s0f0/ports/1/counters/port_xmit_data:123
@counter /sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/packet_seq_err:0
@dev rocep1s0f1
@state 1: DOWN
@phys 3: Disabled
@rate 200 Gb/sec (4X HDR)
@layer Ethernet
@fw 
@pcie current_link_speed:
@pcie current_link_width:
@pcie max_link_speed:
@pcie max_link_width:
@netdev enp1s0f1np1
@lldp
{\"lldp\":[{\"interface\":[{\"name\":\"enp1s0f0np0\",\"chassis\":[{\"name\":[{\"value\":\"spark-b\"}]}],\"port\":[{\"id\":[{\"type\":\"mac\",\"value\":\"4c:bb:47:00:01:03\"}],\"descr\":[{\"value\":\"enp1s0f1np1\"}]}]}]}]}
@ip
2: enp1s0f0np0    inet 198.51.100.1/30 brd 198.51.100.3 scope global enp1s0f0np0\\       valid_lft forever preferred_lft forever
@link
1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000
2: enp1s0f0np0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether 4C:BB:47:00:00:03 brd ff:ff:ff:ff:ff:ff link-netnsid 0
3: enp1s0f1np1: <BROADCAST,MULTICAST> mtu 1500 qdisc noop master bond0 state DOWN mode DEFAULT group default qlen 1000
@route
default via 192.0.2.1 dev eno1
@end
";

    #[test]
    fn reads_devices_gids_interfaces() {
        let p = parse(DUMP);
        assert!(p.complete);
        assert_eq!(p.hostname, "spark-a");
        let d = p.device("rocep1s0f0").unwrap();
        assert!(d.active());
        assert_eq!(d.netdevs, vec!["enp1s0f0np0"]);
        assert_eq!(d.gids.len(), 2, "empty GID entries are skipped");
        assert_eq!(d.roce_v2_index("198.51.100.1".parse().unwrap()), Some(3));
        assert_eq!(d.roce_v2_index("198.51.100.2".parse().unwrap()), None);
        assert_eq!(d.counters["port_xmit_data"], 123);
        assert!(!p.device("rocep1s0f1").unwrap().active());
        let i = p.interface("enp1s0f0np0").unwrap();
        assert_eq!(i.mtu, Some(9000));
        assert!(i.up);
        assert_eq!(i.ipv4[0].to_string(), "198.51.100.1/30");
        assert_eq!(
            p.interface("enp1s0f1np1").unwrap().master.as_deref(),
            Some("bond0")
        );
        assert_eq!(
            p.interface_with("198.51.100.1".parse().unwrap())
                .unwrap()
                .name,
            "enp1s0f0np0"
        );
    }

    #[test]
    fn reads_firmware_pcie_driver_mac_and_lldp() {
        let p = parse(DUMP);
        assert_eq!(p.kernel.as_deref(), Some("6.11.0-1016-nvidia"));
        let hw = &p.device("rocep1s0f0").unwrap().hardware;
        assert_eq!(hw.firmware.as_deref(), Some("28.45.1200"));
        assert_eq!(hw.board_id.as_deref(), Some("MT_0000000970"));
        assert_eq!(hw.pci.as_deref(), Some("0000:01:00.0"));
        assert_eq!(hw.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(hw.driver_version, None, "an empty version file is none");
        let link = hw.pcie.as_ref().unwrap();
        assert!(link.degraded());
        assert_eq!(
            (link.now().as_str(), link.max().as_str()),
            ("32 GT/s x2", "32 GT/s x4")
        );
        assert!((link.carries_gbps().unwrap() - 56.08).abs() < 0.01);
        // a device whose function says nothing has no link and no firmware
        let other = &p.device("rocep1s0f1").unwrap().hardware;
        assert_eq!((other.pcie.as_ref(), other.firmware.as_ref()), (None, None));
        assert_eq!(
            p.interface_with_mac("4c:bb:47:00:00:03")
                .map(|i| i.name.as_str()),
            Some("enp1s0f0np0")
        );
        let lldp = p.lldp.as_ref().unwrap();
        assert_eq!(lldp.neighbours[0].chassis_name.as_deref(), Some("spark-b"));
        // without lldpcli there is no LLDP reading at all
        assert!(parse(&DUMP.replace("@lldp\n", "@x\n")).lldp.is_none());
    }

    #[test]
    fn truncated_dump_is_incomplete() {
        let p = parse(&DUMP[..200]);
        assert!(!p.complete);
    }
}
