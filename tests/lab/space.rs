//! What a lab may take on this machine: names (namespaces, root-namespace links) and IPv4
//! networks nobody else uses, and the translation of a spec's fabric addresses into the lab's.
//!
//! A lab never assumes it is alone. Before it builds, [`Inventory::scan`] lists every network
//! namespace (named ones from `ip netns`, unnamed ones through `/proc/*/ns/net`), the links of
//! the root namespace, and every IPv4 address and route of all those namespaces. The lab then
//! takes the first name prefix whose names are all free ([`choose_prefix`]), the first free
//! management /24 of 198.18.0.0/16 ([`choose_mgmt`]) and the smallest shift of the spec's fabric
//! subnets inside 198.19.0.0/16 that lands on free networks ([`choose_fabric_shift`]). On an
//! idle machine that is `fpl<tag>`, 198.18.0.0/24 and no shift: the spec's own addresses.
//!
//! Nothing here creates or deletes anything.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::sh;

/// An IPv4 network (`base` masked to `prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Net {
    pub base: u32,
    pub prefix: u8,
}

impl Net {
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Net {
        Net {
            base: u32::from(addr) & mask(prefix),
            prefix,
        }
    }

    /// `a.b.c.d/p` or a bare address (a /32).
    pub fn parse(text: &str) -> Option<Net> {
        let (ip, prefix) = match text.split_once('/') {
            Some((ip, p)) => (ip, p.parse().ok().filter(|p| *p <= 32)?),
            None => (text, 32),
        };
        Some(Net::new(ip.parse().ok()?, prefix))
    }

    pub fn overlaps(&self, other: &Net) -> bool {
        let m = mask(self.prefix.min(other.prefix));
        self.base & m == other.base & m
    }

    pub fn size(&self) -> u64 {
        1u64 << (32 - self.prefix as u32)
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix as u32)
    }
}

/// Where management subnets come from (one /24 each).
pub const MGMT_BLOCK: Net = Net {
    base: 0xC612_0000, // 198.18.0.0
    prefix: 16,
};
/// Where fabric subnets live, in a spec and in a lab.
pub const FABRIC_BLOCK: Net = Net {
    base: 0xC613_0000, // 198.19.0.0
    prefix: 16,
};

/// Routes broader than this are not counted as "in use": a default or aggregate route is
/// overridden by the lab's own more specific routes.
const BROADEST_ROUTE: u8 = 16;

/// What is taken on this machine right now.
#[derive(Debug, Default, Clone)]
pub struct Inventory {
    /// Named network namespaces (`ip netns list`).
    pub netns: BTreeSet<String>,
    /// Links of the root namespace.
    pub links: BTreeSet<String>,
    /// IPv4 networks with an address or a route in any namespace, with where they were seen.
    pub nets: Vec<(Net, String)>,
    /// TCP ports listening in the root namespace.
    pub tcp_listen: BTreeSet<u16>,
}

impl Inventory {
    /// Lists namespaces, root links, IPv4 networks of every namespace and listening ports.
    pub fn scan() -> Inventory {
        let mut inv = Inventory::default();
        let list = sh::run(&["ip", "netns", "list"]);
        for line in String::from_utf8_lossy(&list.stdout).lines() {
            if let Some(name) = line.split_whitespace().next() {
                inv.netns.insert(name.to_string());
            }
        }
        inv.links = root_links();
        inv.add_nets("root", &[]);
        let mut seen: BTreeSet<u64> = BTreeSet::new();
        if let Some(ino) = ns_inode(Path::new("/proc/self/ns/net")) {
            seen.insert(ino);
        }
        for ns in inv.netns.clone() {
            if let Some(ino) = ns_inode(&Path::new("/run/netns").join(&ns)) {
                seen.insert(ino);
            }
            inv.add_nets(&format!("netns {ns}"), &["-n", &ns]);
        }
        // Namespaces nobody named (a container, another harness): one process in each tells.
        for (ino, pid) in unnamed_netns(&seen) {
            let path = format!("/proc/{pid}/ns/net");
            let argv = ["nsenter", &format!("--net={path}"), "--", "ip"];
            inv.add_nets_with(&format!("netns of pid {pid} (inode {ino})"), &argv, &[]);
        }
        inv.tcp_listen = listening_ports();
        inv
    }

    fn add_nets(&mut self, place: &str, ns_args: &[&str]) {
        self.add_nets_with(place, &["ip"], ns_args);
    }

    fn add_nets_with(&mut self, place: &str, ip: &[&str], ns_args: &[&str]) {
        let mut argv: Vec<&str> = ip.to_vec();
        argv.extend_from_slice(ns_args);
        let mut addr = argv.clone();
        addr.extend_from_slice(&["-4", "-o", "addr", "show"]);
        for line in String::from_utf8_lossy(&sh::run(&addr).stdout).lines() {
            let mut words = line.split_whitespace();
            if words.any(|w| w == "inet") {
                if let Some(net) = words.next().and_then(Net::parse) {
                    self.nets.push((net, place.to_string()));
                }
            }
        }
        let mut route = argv;
        route.extend_from_slice(&["-4", "route", "show", "table", "all"]);
        for line in String::from_utf8_lossy(&sh::run(&route).stdout).lines() {
            if let Some(net) = route_destination(line) {
                if net.prefix >= BROADEST_ROUTE {
                    self.nets.push((net, place.to_string()));
                }
            }
        }
    }

    /// Where `net` is already in use, if anywhere.
    pub fn user_of(&self, net: &Net) -> Option<&str> {
        self.nets
            .iter()
            .find(|(n, _)| n.overlaps(net))
            .map(|(_, place)| place.as_str())
    }
}

/// The destination of an `ip route` line (`default` and unparsable lines: none).
fn route_destination(line: &str) -> Option<Net> {
    const TYPES: [&str; 10] = [
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "throw",
        "unreachable",
        "prohibit",
        "blackhole",
        "nat",
        "anycast",
    ];
    let mut words = line.split_whitespace();
    let mut first = words.next()?;
    if TYPES.contains(&first) {
        first = words.next()?;
    }
    if first == "default" {
        return None;
    }
    Net::parse(first)
}

/// Names of the links in the root namespace (without the `@peer` part).
pub fn root_links() -> BTreeSet<String> {
    let links = sh::run(&["ip", "-o", "link", "show"]);
    String::from_utf8_lossy(&links.stdout)
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .collect()
}

/// The inode of a network namespace file (`/proc/PID/ns/net`, `/run/netns/NAME`).
pub fn ns_inode(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// One process per network namespace not in `seen` (by inode): (inode, pid).
fn unnamed_netns(seen: &BTreeSet<u64>) -> Vec<(u64, u32)> {
    let mut found: Vec<(u64, u32)> = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(ino) = ns_inode(&entry.path().join("ns/net")) {
            if !seen.contains(&ino) && !found.iter().any(|(i, _)| *i == ino) {
                found.push((ino, pid));
            }
        }
    }
    found
}

/// TCP ports in LISTEN state in the root namespace (IPv4 and IPv6).
fn listening_ports() -> BTreeSet<u16> {
    let mut ports = BTreeSet::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 3 && cols[3] == "0A" {
                if let Some(port) = cols[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
                {
                    ports.insert(port);
                }
            }
        }
    }
    ports
}

/// The names a lab with this prefix creates (namespaces, root links).
pub struct Names {
    pub netns: Vec<String>,
    pub links: Vec<String>,
}

impl Names {
    pub fn of(prefix: &str, hosts: &[String], switches: usize) -> Names {
        let mut netns: Vec<String> = hosts.iter().map(|h| format!("{prefix}-{h}")).collect();
        netns.extend((0..switches).map(|k| format!("{prefix}-sw{k}")));
        netns.push(format!("{prefix}-void"));
        let mut links = vec![format!("{prefix}br")];
        links.extend((1..=hosts.len()).map(|i| format!("{prefix}m{i}")));
        Names { netns, links }
    }
}

/// The first of `fpl<tag>`, `fpl<tag>_1` ... `fpl<tag>_99` none of whose names (namespaces, root
/// links, lab directory under `base`) exists yet.
pub fn choose_prefix(
    family: &str,
    tag: &str,
    hosts: &[String],
    switches: usize,
    inv: &Inventory,
    base: &Path,
) -> Result<String, String> {
    let candidates = std::iter::once(format!("{family}{tag}"))
        .chain((1..100).map(|n| format!("{family}{tag}_{n}")));
    for prefix in candidates {
        let names = Names::of(&prefix, hosts, switches);
        let free = names.netns.iter().all(|n| !inv.netns.contains(n))
            && names.links.iter().all(|l| !inv.links.contains(l))
            && !base.join(&prefix).exists();
        if free {
            return Ok(prefix);
        }
    }
    Err(format!(
        "no free lab names for tag {tag:?}: {family}{tag} and {family}{tag}_1..99 are all taken"
    ))
}

/// The first management /24 of 198.18.0.0/16 with no address or route anywhere: its third octet.
pub fn choose_mgmt(inv: &Inventory) -> Result<u8, String> {
    (0..=255u8)
        .find(|n| inv.user_of(&mgmt_net(*n)).is_none())
        .ok_or_else(|| "no free management /24 in 198.18.0.0/16".to_string())
}

/// The management /24 with third octet `n`.
pub fn mgmt_net(n: u8) -> Net {
    Net::new(Ipv4Addr::new(198, 18, n, 0), 24)
}

/// The smallest shift `k` (in /24 steps: 198.19.X.Y -> 198.19.X+k.Y) that moves every spec fabric
/// network onto free space, keeping each network aligned and inside 198.19.0.0/16.
pub fn choose_fabric_shift(spec_nets: &[Net], inv: &Inventory) -> Result<u8, String> {
    for net in spec_nets {
        if !FABRIC_BLOCK.overlaps(net) || net.prefix < FABRIC_BLOCK.prefix {
            return Err(format!(
                "fabric network {net} is outside {FABRIC_BLOCK}: lab fabric addresses come from {FABRIC_BLOCK}"
            ));
        }
    }
    let mut last_conflict = String::new();
    'shift: for k in 0..=255u32 {
        for net in spec_nets {
            // A network wider than a /24 moves only by whole multiples of its size.
            if net.prefix < 24 && k % (1 << (24 - net.prefix as u32)) != 0 {
                continue 'shift;
            }
            let moved = Net {
                base: net.base + (k << 8),
                prefix: net.prefix,
            };
            let end = moved.base as u64 + moved.size() - 1;
            if end > (FABRIC_BLOCK.base as u64 + FABRIC_BLOCK.size() - 1) {
                continue 'shift;
            }
            if let Some(place) = inv.user_of(&moved) {
                last_conflict = format!("{moved} is in use ({place})");
                continue 'shift;
            }
        }
        return Ok(k as u8);
    }
    Err(format!(
        "no free place in {FABRIC_BLOCK} for the lab's fabric networks {}: {last_conflict}",
        spec_nets
            .iter()
            .map(Net::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// How a lab's addresses relate to its spec's: the management /24 it took and the shift of the
/// spec's fabric addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addressing {
    /// Third octet of the management /24 (198.18.N.0/24).
    pub mgmt: u8,
    /// Fabric shift in /24 steps: the spec's 198.19.X.Y is the lab's 198.19.(X+shift).Y.
    pub fabric_shift: u8,
}

impl Addressing {
    pub fn mgmt_ip(&self, host: u8) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.mgmt, host)
    }

    /// The spec's fabric address `ip` in the lab (addresses outside 198.19.0.0/16, or that would
    /// leave it, are returned unchanged).
    pub fn fabric_ip(&self, ip: Ipv4Addr) -> Ipv4Addr {
        let o = ip.octets();
        match o[2].checked_add(self.fabric_shift) {
            Some(third) if o[0] == 198 && o[1] == 19 => Ipv4Addr::new(198, 19, third, o[3]),
            _ => ip,
        }
    }

    /// Every `198.19.x.y` in `text` translated with [`Addressing::fabric_ip`] (prefix lengths,
    /// ports and everything else untouched).
    pub fn translate(&self, text: &str) -> String {
        const NEEDLE: &str = "198.19.";
        if self.fabric_shift == 0 {
            return text.to_string();
        }
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            let boundary = i == 0 || !(bytes[i - 1].is_ascii_digit() || bytes[i - 1] == b'.');
            if boundary && rest.starts_with(NEEDLE) {
                let tail = &rest[NEEDLE.len()..];
                let third_len = tail.bytes().take_while(u8::is_ascii_digit).count();
                let after_third = &tail[third_len..];
                let fourth_len = after_third
                    .strip_prefix('.')
                    .map(|t| t.bytes().take_while(u8::is_ascii_digit).count())
                    .unwrap_or(0);
                if (1..=3).contains(&third_len) && (1..=3).contains(&fourth_len) {
                    let len = NEEDLE.len() + third_len + 1 + fourth_len;
                    if let Ok(ip) = rest[..len].parse::<Ipv4Addr>() {
                        out.push_str(&self.fabric_ip(ip).to_string());
                        i += len;
                        continue;
                    }
                }
            }
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
        out
    }
}
