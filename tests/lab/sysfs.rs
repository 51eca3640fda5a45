//! The per-host `/sys/class/infiniband` tree: written at build time from the spec, bind-mounted
//! at the real path inside the host's mount namespace, bumped by the stand-ins at run time.

use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;

/// The four RDMA devices of a GB10 (DGX Spark) and the netdev behind each.
pub const GB10_DEVICES: [(&str, &str); 4] = [
    ("rocep1s0f0", "enp1s0f0np0"),
    ("roceP2p1s0f0", "enP2p1s0f0np0"),
    ("rocep1s0f1", "enp1s0f1np1"),
    ("roceP2p1s0f1", "enP2p1s0f1np1"),
];

/// Port counters under `ports/1/counters` (data counters in 4-byte words).
pub const PORT_COUNTERS: [&str; 8] = [
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "link_downed",
    "link_error_recovery",
    "symbol_error",
    "port_rcv_errors",
];

/// RoCE counters under `ports/1/hw_counters`.
pub const HW_COUNTERS: [&str; 7] = [
    "packet_seq_err",
    "out_of_sequence",
    "rnr_nak_retry_err",
    "local_ack_timeout_err",
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
];

/// Number of GID table entries written per port (unused ones are all-zero, like a real table).
const GID_SLOTS: u32 = 16;

/// The firmware every lab device runs unless the spec says otherwise (a ConnectX-7 release).
pub const DEFAULT_FIRMWARE: &str = "28.45.1200";
/// The board id (PSID) of every lab device.
pub const BOARD_ID: &str = "MT_0000000970";
/// The driver every lab device is bound to (the link name of `device/driver`).
pub const DRIVER: &str = "mlx5_core";

/// The PCIe link under a device, as sysfs spells it (`32.0 GT/s PCIe`, width `4`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcieLink {
    pub speed: String,
    pub width: u32,
    pub max_speed: String,
    pub max_width: u32,
}

impl PcieLink {
    /// A GB10 half: its own PCIe Gen5 x4 function, trained at its maximum.
    pub fn gb10() -> PcieLink {
        PcieLink::trained("32.0 GT/s PCIe", 4, 4)
    }

    /// A link of `speed` that trained at `width` lanes of `max_width`.
    pub fn trained(speed: &str, width: u32, max_width: u32) -> PcieLink {
        PcieLink {
            speed: speed.to_string(),
            width,
            max_speed: speed.to_string(),
            max_width,
        }
    }
}

/// The PCI address of a GB10 device: `rocep1s0f0` is `0000:01:00.0`, `roceP2p1s0f1` is
/// `0002:01:00.1` (the name spells domain, bus, slot and function).
pub fn pci_address(dev: &str) -> String {
    let domain = if dev.contains("P2") { 2 } else { 0 };
    let function = dev.chars().last().and_then(|c| c.to_digit(10)).unwrap_or(0);
    format!("{domain:04x}:01:00.{function}")
}

/// What one device of one host looks like.
pub struct DeviceState<'a> {
    pub dev: &'a str,
    pub netdev: &'a str,
    pub active: bool,
    /// The IPv4 on the netdev, if any: it fills the IPv4-mapped GID entries.
    pub ipv4: Option<Ipv4Addr>,
    /// Where the RoCE v2 / IPv4-mapped entry sits (its RoCE v1 twin sits just below it).
    pub gid_index: u32,
    /// Seed for the link-local GID (stands in for the MAC).
    pub mac_seed: u32,
    /// `fw_ver`.
    pub firmware: &'a str,
    /// The PCIe link of the device's PCI function.
    pub pcie: &'a PcieLink,
}

fn put(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("mkdir {}: {e}", parent.display()))?;
    }
    fs::write(path, format!("{text}\n")).map_err(|e| format!("write {}: {e}", path.display()))
}

fn gid_text(bytes: [u8; 16]) -> String {
    bytes
        .chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// The port state line as the kernel prints it.
pub fn state_text(active: bool) -> (&'static str, &'static str) {
    if active {
        ("4: ACTIVE", "5: LinkUp")
    } else {
        ("1: DOWN", "3: Disabled")
    }
}

/// The PCI function behind a device, as on a real host: `DEV/device` is a link to the function's
/// directory (`.pci/ADDRESS`, hidden from a `*` glob of the class directory) holding `net/NETDEV`,
/// the link's speed and width, and `driver`, a link to `.drivers/mlx5_core`.
fn write_pci_function(root: &Path, d: &DeviceState<'_>) -> Result<(), String> {
    let address = pci_address(d.dev);
    let function = root.join(".pci").join(&address);
    fs::create_dir_all(function.join("net").join(d.netdev))
        .and_then(|_| fs::create_dir_all(root.join(".drivers").join(DRIVER)))
        .map_err(|e| format!("mkdir {}: {e}", function.display()))?;
    let link = |target: &str, at: &Path| {
        let _ = fs::remove_file(at);
        std::os::unix::fs::symlink(target, at).map_err(|e| format!("symlink {}: {e}", at.display()))
    };
    link(
        &format!("../.pci/{address}"),
        &root.join(d.dev).join("device"),
    )?;
    link(
        &format!("../../.drivers/{DRIVER}"),
        &function.join("driver"),
    )?;
    // the netdev's own counters, as on a real host where `device/net/NETDEV` is the netdev's
    // directory: its carrier count is the namespace's real one (a flapped veth counts)
    link(
        &format!("/sys/class/net/{}/carrier_changes", d.netdev),
        &function.join("net").join(d.netdev).join("carrier_changes"),
    )?;
    put(&function.join("current_link_speed"), &d.pcie.speed)?;
    put(
        &function.join("current_link_width"),
        &d.pcie.width.to_string(),
    )?;
    put(&function.join("max_link_speed"), &d.pcie.max_speed)?;
    put(
        &function.join("max_link_width"),
        &d.pcie.max_width.to_string(),
    )
}

/// Rewrites the PCIe link of `dev` under `root` (a link that retrained).
pub fn write_pcie(root: &Path, dev: &str, pcie: &PcieLink) -> Result<(), String> {
    let function = root.join(".pci").join(pci_address(dev));
    put(&function.join("current_link_speed"), &pcie.speed)?;
    put(
        &function.join("current_link_width"),
        &pcie.width.to_string(),
    )?;
    put(&function.join("max_link_speed"), &pcie.max_speed)?;
    put(
        &function.join("max_link_width"),
        &pcie.max_width.to_string(),
    )
}

/// Writes one device under `root` (the host's infiniband dir).
pub fn write_device(root: &Path, d: &DeviceState<'_>) -> Result<(), String> {
    let dev = root.join(d.dev);
    let port = dev.join("ports/1");
    fs::create_dir_all(&dev).map_err(|e| format!("mkdir {}: {e}", dev.display()))?;
    write_pci_function(root, d)?;
    let (state, phys) = state_text(d.active);
    put(&port.join("state"), state)?;
    put(&port.join("phys_state"), phys)?;
    // Deliberately the misleading figure the OS reports for a 100G half.
    put(&port.join("rate"), "200 Gb/sec (4X HDR)")?;
    put(&port.join("link_layer"), "Ethernet")?;
    put(&dev.join("node_type"), "1: CA")?;
    put(&dev.join("fw_ver"), d.firmware)?;
    put(&dev.join("board_id"), BOARD_ID)?;
    put(&dev.join("hca_type"), "MT4129")?;

    let seed = d.mac_seed.to_be_bytes();
    let mut link_local = [0u8; 16];
    link_local[0] = 0xfe;
    link_local[1] = 0x80;
    link_local[8..16].copy_from_slice(&[0x0a, 0xc0, 0xeb, 0xff, 0xfe, seed[1], seed[2], seed[3]]);
    let mut entries: Vec<(u32, [u8; 16], &str)> =
        vec![(0, link_local, "IB/RoCE v1"), (1, link_local, "RoCE v2")];
    if let Some(ip) = d.ipv4 {
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&ip.octets());
        let v2 = d.gid_index.max(1);
        if v2 >= 2 {
            entries.push((v2 - 1, mapped, "IB/RoCE v1"));
        }
        entries.retain(|(i, _, _)| *i != v2);
        entries.push((v2, mapped, "RoCE v2"));
    }
    let slots = GID_SLOTS.max(d.gid_index + 1);
    for i in 0..slots {
        let entry = entries.iter().rev().find(|(idx, _, _)| *idx == i);
        let gid = entry.map(|e| e.1).unwrap_or([0u8; 16]);
        put(&port.join("gids").join(i.to_string()), &gid_text(gid))?;
        if let Some((_, _, ty)) = entry {
            put(&port.join("gid_attrs/types").join(i.to_string()), ty)?;
            put(&port.join("gid_attrs/ndevs").join(i.to_string()), d.netdev)?;
        }
    }
    for c in PORT_COUNTERS {
        put(&port.join("counters").join(c), "0")?;
    }
    for c in HW_COUNTERS {
        put(&port.join("hw_counters").join(c), "0")?;
    }
    Ok(())
}
