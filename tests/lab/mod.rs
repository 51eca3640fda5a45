//! The lab: real hosts on one machine for end-to-end tests of fabricplan.
//!
//! A [`LabSpec`] describes hosts, direct cables, switches and inter-switch links; [`Lab::build`]
//! turns it into network namespaces with a real sshd each (own hostname, own mount namespace with
//! a GB10-like `/sys/class/infiniband`, the stand-in tools on `/usr/local/bin`, a private `/tmp`
//! and `/root`), veth cables named like ConnectX-7 netdevs at MTU 9000, switch bridges and
//! `tbf`-shaped ISLs. Dropping the [`Lab`] tears down exactly what it created, also on panic.
//! Labs are serialised by a process-wide mutex plus `flock` on [`LOCK_PATH`], and never assume
//! they are alone: names and addresses are taken only where free ([`space`]), and only what a
//! lab provably created is ever removed ([`owner`]). [`LabSpec::slurm`] adds a real Slurm
//! cluster ([`slurm`]).
#![allow(dead_code)]

pub mod login;
pub mod owner;
pub mod run;
mod sh;
pub mod slurm;
pub mod space;
mod sysfs;
pub mod twin;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use owner::Created;
use space::{Addressing, Inventory, Net};

/// Whether lab tests run here: they need root (network namespaces, veth, sshd, mounts).
/// Without root they fail with this explanation, unless `FABRICPLAN_SKIP_LAB=1` is set, in which
/// case they are skipped with a note.
#[allow(dead_code)]
pub fn lab_enabled() -> bool {
    if std::env::var("FABRICPLAN_SKIP_LAB").as_deref() == Ok("1") {
        eprintln!("note: FABRICPLAN_SKIP_LAB=1: lab test skipped");
        return false;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("");
    assert_eq!(
        uid, "0",
        "lab tests need root (network namespaces, veth, sshd, mounts); run them as root, \
         or set FABRICPLAN_SKIP_LAB=1 to skip them"
    );
    true
}

#[allow(unused_imports)]
pub use sh::{cmdline, run, wait_for as wait};
#[allow(unused_imports)]
pub use sysfs::{GB10_DEVICES, HW_COUNTERS, PORT_COUNTERS, PcieLink};

/// Every lab name starts with this (namespaces `fpl<tag>-...`, root links `fpl<tag>...`; when
/// those are taken, `fpl<tag>_<n>`).
pub const FAMILY: &str = "fpl";
/// The cross-process lock file every lab holds while it exists.
pub const LOCK_PATH: &str = "/run/fabricplan-lab.lock";
/// Where lab directories live (not under /tmp: hosts get a private /tmp).
pub const LAB_BASE: &str = "/var/tmp/fabricplan-lab";
/// Management network: a free /24 of 198.18.0.0/16 (198.18.0.0/24 on an idle machine); the
/// bridge in the root namespace holds `.254`, host N gets `.N`.
pub const MGMT_BRIDGE_HOST: u8 = 254;

const STANDIN_NAMES: [&str; 5] = [
    "ib_write_bw",
    "ib_write_lat",
    "all_reduce_perf",
    "all_gather_perf",
    "sendrecv_perf",
];

/// Faults the stand-ins read at run time, per host (files `.faults/<hostname>/<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The bw/lat server prints the waiting box, then exits before accepting.
    ServerDiesBeforeConnect,
    /// The bw/lat client connects and exchanges addresses, then sleeps forever (no row).
    ClientHangs,
    /// The stand-ins never advance the RDMA counters on this host.
    NoCounters,
    /// Hostile tools (a bw client): killed by SIGKILL as it starts, as the OOM killer does.
    KilledAtStart,
    /// Prints 200 MB in lines of 100 bytes before it measures.
    FloodOutput,
    /// Prints one 200 MB line before it measures.
    FloodLine,
    /// Prints without end.
    EndlessOutput,
    /// Leaves a `sleep 600` child in its process group.
    LeavesChild,
    /// Leaves a child that made itself a session of its own.
    SetsidChild,
    /// Leaves a daemon (two forks, setsid, its parent gone).
    Daemonizes,
    /// Kills its parent (the remote `timeout`) with SIGKILL after a complete measurement.
    KillsParent,
    /// The host's `lldpcli` (which discovery's probe runs) takes 3 s first: a window inside
    /// discovery to strike in.
    SlowProbe,
}

impl Fault {
    fn file_name(self) -> &'static str {
        match self {
            Fault::ServerDiesBeforeConnect => "ServerDiesBeforeConnect",
            Fault::ClientHangs => "ClientHangs",
            Fault::NoCounters => "NoCounters",
            Fault::KilledAtStart => "KilledAtStart",
            Fault::FloodOutput => "FloodOutput",
            Fault::FloodLine => "FloodLine",
            Fault::EndlessOutput => "EndlessOutput",
            Fault::LeavesChild => "LeavesChild",
            Fault::SetsidChild => "SetsidChild",
            Fault::Daemonizes => "Daemonizes",
            Fault::KillsParent => "KillsParent",
            Fault::SlowProbe => "SlowProbe",
        }
    }
}

/// One host of the spec.
#[derive(Debug, Clone)]
pub struct HostSpec {
    pub name: String,
    /// Index of the RoCE v2 GID entry that maps each half's IPv4 (3 unless overridden).
    pub gid_index: u32,
    /// RDMA devices forced to `1: DOWN` whatever their netdev does.
    pub down_devices: Vec<String>,
    /// The firmware of every device of the host (`fw_ver`).
    pub firmware: String,
    /// PCIe links other than the lab's default, per device.
    pub pcie: BTreeMap<String, sysfs::PcieLink>,
}

/// One end of a cable: the host, the netdev the plan names, the address the site configured.
#[derive(Debug, Clone)]
pub struct LinkEnd {
    pub host: String,
    pub netdev: String,
    /// `198.19.x.y/prefix`, configured on `netdev`.
    pub cidr: String,
    /// A crossed cable: the cable really landed on this other netdev (which stays unaddressed),
    /// while `netdev` keeps the address but has no carrier.
    pub plugged_into: Option<String>,
}

impl LinkEnd {
    fn wired_netdev(&self) -> &str {
        self.plugged_into.as_deref().unwrap_or(&self.netdev)
    }
}

/// A direct cable (one half) between two hosts.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    pub a: LinkEnd,
    pub b: LinkEnd,
}

/// A host netdev cabled to a switch.
#[derive(Debug, Clone)]
pub struct SwitchPort {
    pub switch: String,
    pub end: LinkEnd,
}

/// An inter-switch link, optionally shaped to a capacity on both ends (`tbf rate`).
#[derive(Debug, Clone)]
pub struct IslSpec {
    pub a: String,
    pub b: String,
    pub rate: Option<String>,
}

/// The description of a lab, built in Rust by a test.
#[derive(Debug, Clone, Default)]
pub struct LabSpec {
    /// Short tag (1-4 chars of [a-z0-9]) making the lab's names: `fpl<tag>`.
    pub tag: String,
    pub hosts: Vec<HostSpec>,
    pub links: Vec<LinkSpec>,
    pub switches: Vec<String>,
    pub switch_ports: Vec<SwitchPort>,
    pub isls: Vec<IslSpec>,
    /// Hosts only: no GB10 netdevs without a cable (cheap hosts for fan-out: sshd, sysfs and
    /// the management network, nothing else).
    pub hosts_only: bool,
    /// Every host's cabled fabric port shaped (tbf, egress) to this rate, e.g. `"4gbit"`: the
    /// line rate of a lab-sized profile. Unshaped, a veth runs as fast as the CPU copies, and
    /// one such flow starves the others of a round on 2 cores.
    pub port_rate: Option<String>,
    /// A real Slurm cluster over the hosts (see [`LabSpec::slurm`]).
    pub slurm: bool,
    /// The stand-ins' start-up and exit delays (see [`LabSpec::tool_delays`]); `None`: from
    /// `FABRICPLAN_LAB_TOOL_START_MS` / `FABRICPLAN_LAB_TOOL_EXIT_MS`, else none.
    pub tool_delays: Option<ToolDelays>,
    /// What a login shell costs on every host, ms (see [`login`]); `None`: from
    /// `FABRICPLAN_LAB_LOGIN_MS`, else 0.
    pub login_ms: Option<u64>,
    /// Every host runs a real lldpd on its fabric netdevs (see [`LabSpec::lldp`]).
    pub lldp: bool,
    /// The PCIe link of every device without its own ([`sysfs::PcieLink::gb10`] unless set).
    pub pcie_default: Option<sysfs::PcieLink>,
}

/// How long every stand-in tool (perftest and nccl-tests) waits, really (a sleep), before it
/// does anything, and before it exits (normally or on SIGTERM): a heavier tool's start-up and
/// teardown. Read by the stand-ins from `bin/.delays` at each start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolDelays {
    pub start_ms: u64,
    pub exit_ms: u64,
}

impl ToolDelays {
    /// From `FABRICPLAN_LAB_TOOL_START_MS` and `FABRICPLAN_LAB_TOOL_EXIT_MS` (each 0 when unset);
    /// a value that is not a whole number of ms is refused.
    pub fn from_env() -> Result<ToolDelays, String> {
        let var = |name: &str| match std::env::var(name) {
            Ok(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|e| format!("{name}={v:?}: {e}")),
            Err(_) => Ok(0),
        };
        Ok(ToolDelays {
            start_ms: var("FABRICPLAN_LAB_TOOL_START_MS")?,
            exit_ms: var("FABRICPLAN_LAB_TOOL_EXIT_MS")?,
        })
    }
}

impl LabSpec {
    pub fn new(tag: &str) -> Self {
        LabSpec {
            tag: tag.to_string(),
            ..Default::default()
        }
    }

    /// Hosts only, no fabric: skips the cable-less GB10 netdevs every host otherwise gets (four
    /// veths per host), so a lab of dozens of hosts builds in seconds. Cables and switches
    /// declared anyway are still built.
    pub fn hosts_only(mut self) -> Self {
        self.hosts_only = true;
        self
    }

    /// Also runs a real Slurm cluster: munged, slurmctld, one slurmd per host (node name = host
    /// name, partition [`slurm::PARTITION`]); see [`Lab::slurm`].
    pub fn slurm(mut self) -> Self {
        self.slurm = true;
        self
    }

    /// Every host runs Debian's real `lldpd` on its fabric netdevs (`en*`), started by the lab in
    /// the host's namespaces with its own `/run` (so its control socket is at the standard
    /// `/run/lldpd.socket` there, and `lldpcli` on the host needs no option), transmitting every
    /// second; stopped by its pid at teardown. [`Lab::wait_lldp`] polls until every cable's far
    /// end is seen.
    pub fn lldp(mut self) -> Self {
        self.lldp = true;
        self
    }

    /// Every device of `host` runs firmware `version` (`fw_ver`).
    pub fn firmware(mut self, host: &str, version: &str) -> Self {
        if let Some(h) = self.hosts.iter_mut().find(|h| h.name == host) {
            h.firmware = version.to_string();
        }
        self
    }

    /// The PCIe link of every device that has none of its own.
    pub fn pcie_all(mut self, link: sysfs::PcieLink) -> Self {
        self.pcie_default = Some(link);
        self
    }

    /// The PCIe link under one device of `host` (e.g. trained at x2 of x4).
    pub fn pcie(mut self, host: &str, dev: &str, link: sysfs::PcieLink) -> Self {
        if let Some(h) = self.hosts.iter_mut().find(|h| h.name == host) {
            h.pcie.insert(dev.to_string(), link);
        }
        self
    }

    /// The spec's fabric networks (every configured cable or switch port address).
    pub fn fabric_nets(&self) -> Vec<Net> {
        let mut nets: Vec<Net> = self
            .links
            .iter()
            .flat_map(|l| [&l.a, &l.b])
            .chain(self.switch_ports.iter().map(|p| &p.end))
            .filter_map(|e| Net::parse(&e.cidr))
            .collect();
        nets.sort();
        nets.dedup();
        nets
    }

    /// Adds a host (GID index 3, all devices following their netdevs).
    pub fn host(mut self, name: &str) -> Self {
        self.hosts.push(HostSpec {
            name: name.to_string(),
            gid_index: 3,
            down_devices: Vec::new(),
            firmware: sysfs::DEFAULT_FIRMWARE.to_string(),
            pcie: BTreeMap::new(),
        });
        self
    }

    /// A direct cable between `a_netdev` on host `a` and `b_netdev` on host `b`.
    pub fn cable(
        mut self,
        a: &str,
        a_netdev: &str,
        a_cidr: &str,
        b: &str,
        b_netdev: &str,
        b_cidr: &str,
    ) -> Self {
        let end = |host: &str, netdev: &str, cidr: &str| LinkEnd {
            host: host.to_string(),
            netdev: netdev.to_string(),
            cidr: cidr.to_string(),
            plugged_into: None,
        };
        self.links.push(LinkSpec {
            a: end(a, a_netdev, a_cidr),
            b: end(b, b_netdev, b_cidr),
        });
        self
    }

    /// Both halves of port f0 between two hosts: `198.19.<n>.1/30`-`.2/30` on
    /// `enp1s0f0np0` and `198.19.<n>.5/30`-`.6/30` on `enP2p1s0f0np0`.
    pub fn direct_pair(self, a: &str, b: &str, n: u8) -> Self {
        self.cable(
            a,
            "enp1s0f0np0",
            &format!("198.19.{n}.1/30"),
            b,
            "enp1s0f0np0",
            &format!("198.19.{n}.2/30"),
        )
        .cable(
            a,
            "enP2p1s0f0np0",
            &format!("198.19.{n}.5/30"),
            b,
            "enP2p1s0f0np0",
            &format!("198.19.{n}.6/30"),
        )
    }

    /// Puts the RoCE v2 IPv4 GID of every device of `host` at `index`.
    pub fn gid_index(mut self, host: &str, index: u32) -> Self {
        if let Some(h) = self.hosts.iter_mut().find(|h| h.name == host) {
            h.gid_index = index;
        }
        self
    }

    /// Forces an RDMA device of `host` DOWN in its sysfs.
    pub fn device_down(mut self, host: &str, dev: &str) -> Self {
        if let Some(h) = self.hosts.iter_mut().find(|h| h.name == host) {
            h.down_devices.push(dev.to_string());
        }
        self
    }

    /// Crosses a cable: on `host`, the cable the plan puts on `planned` is plugged into `actual`.
    pub fn cross(mut self, host: &str, planned: &str, actual: &str) -> Self {
        for l in &mut self.links {
            for end in [&mut l.a, &mut l.b] {
                if end.host == host && end.netdev == planned {
                    end.plugged_into = Some(actual.to_string());
                }
            }
        }
        for p in &mut self.switch_ports {
            if p.end.host == host && p.end.netdev == planned {
                p.end.plugged_into = Some(actual.to_string());
            }
        }
        self
    }

    pub fn switch(mut self, name: &str) -> Self {
        self.switches.push(name.to_string());
        self
    }

    /// Cables `netdev` of `host` to switch `switch`.
    pub fn switch_port(mut self, switch: &str, host: &str, netdev: &str, cidr: &str) -> Self {
        self.switch_ports.push(SwitchPort {
            switch: switch.to_string(),
            end: LinkEnd {
                host: host.to_string(),
                netdev: netdev.to_string(),
                cidr: cidr.to_string(),
                plugged_into: None,
            },
        });
        self
    }

    /// Every stand-in tool waits `start_ms` (a real sleep) before it does anything and `exit_ms`
    /// before it exits, normally or on SIGTERM: a heavier tool's start-up and teardown (see
    /// [`ToolDelays`]; [`Lab::set_tool_delays`] changes them on a built lab).
    pub fn tool_delays(mut self, start_ms: u64, exit_ms: u64) -> Self {
        self.tool_delays = Some(ToolDelays { start_ms, exit_ms });
        self
    }

    /// Every host's login shell (its `~/.bashrc`) takes `ms` of the host's time (see
    /// [`login`]; [`Lab::set_login_cost`] changes it on a built lab).
    pub fn login_cost(mut self, ms: u64) -> Self {
        self.login_ms = Some(ms);
        self
    }

    /// Shape every cabled fabric port of every host to `rate` (tbf on its egress).
    pub fn port_rate(mut self, rate: &str) -> Self {
        self.port_rate = Some(rate.to_string());
        self
    }

    /// An ISL between two switches, shaped to `rate` (e.g. `"2gbit"`) on both ends if given.
    pub fn isl(mut self, a: &str, b: &str, rate: Option<&str>) -> Self {
        self.isls.push(IslSpec {
            a: a.to_string(),
            b: b.to_string(),
            rate: rate.map(str::to_string),
        });
        self
    }
}

/// A host of a built lab.
pub struct Host {
    pub name: String,
    /// The network namespace (`<prefix>-<name>`, prefix `fpl<tag>` unless taken).
    pub ns: String,
    pub mgmt_ip: Ipv4Addr,
    /// (netdev, cidr) configured on this host: the spec's, translated to the lab's fabric
    /// addresses (see [`Lab::addr`]).
    pub fabric: Vec<(String, String)>,
    dir: PathBuf,
    /// `cat` holding the host's UTS and mount namespaces (and, through its stdin, our life).
    keeper: Option<Child>,
    keeper_pid: u32,
    sshd_pid: u32,
    /// The host's lldpd (its monitor process), when the lab runs LLDP.
    lldpd: Option<Child>,
}

impl Host {
    /// The IPv4 (without prefix) configured on `netdev`, if any.
    pub fn fabric_ip(&self, netdev: &str) -> Option<Ipv4Addr> {
        self.fabric
            .iter()
            .find(|(n, _)| n == netdev)
            .and_then(|(_, cidr)| cidr.split('/').next()?.parse().ok())
    }
}

/// Holds the in-process mutex and the cross-process flock while a lab exists.
struct LabLock {
    _guard: MutexGuard<'static, ()>,
    /// `flock -x LOCK_PATH cat`: holds the lock until its stdin closes (our drop or our death).
    holder: Child,
    _stdin: Option<ChildStdin>,
}

static LAB_MUTEX: Mutex<()> = Mutex::new(());

impl LabLock {
    fn take() -> Result<LabLock, String> {
        let guard = LAB_MUTEX.lock().unwrap_or_else(|e| e.into_inner());
        let mut holder = Command::new("flock")
            .args([
                "-x",
                LOCK_PATH,
                "sh",
                "-c",
                "echo locked; exec cat >/dev/null",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run flock: {e}"))?;
        let stdin = holder.stdin.take();
        let stdout = holder.stdout.take().ok_or("flock: no stdout")?;
        let mut line = String::new();
        // Blocks until the lock is ours (another test binary may hold it for a while).
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("flock: {e}"))?;
        if line.trim() != "locked" {
            let _ = holder.kill();
            let _ = holder.wait();
            return Err(format!("could not take {LOCK_PATH}"));
        }
        Ok(LabLock {
            _guard: guard,
            holder,
            _stdin: stdin,
        })
    }
}

impl Drop for LabLock {
    fn drop(&mut self) {
        let t = std::time::Instant::now();
        self._stdin.take();
        let _ = self.holder.wait();
        trace(&format!("lock released in {:?}", t.elapsed()));
    }
}

/// A built lab. Dropping it removes every namespace, link, process and file it created.
pub struct Lab {
    /// Every name of the lab starts with it: `fpl<tag>`, or `fpl<tag>_<n>` when those names
    /// were taken on this machine.
    pub prefix: String,
    /// The shaping of every cabled fabric port (see [`LabSpec::port_rate`]).
    port_rate: Option<String>,
    dir: PathBuf,
    /// Marks every namespace (`lo` alias) and root link (alias) this lab created.
    token: String,
    addressing: Addressing,
    hosts: Vec<Host>,
    switch_ns: BTreeMap<String, String>,
    /// Each ISL's two switch namespaces, in the spec's order (its veth is `isl<k>` in both).
    isl_ns: Vec<(String, String)>,
    void_ns: String,
    /// Namespaces this lab created (only those are ever deleted).
    created_ns: Vec<String>,
    root_links: Vec<String>,
    slurm: Option<slurm::Cluster>,
    /// Per cabled host netdev, the host LLDP must see at its far end (labs with LLDP).
    lldp_expected: Vec<(String, String, String)>,
    /// Listening ports seen before the build (for Slurm's ports).
    listening: std::collections::BTreeSet<u16>,
    _lock: LabLock,
}

/// What a lab created, to check after it is dropped that none of it is left.
#[derive(Debug, Clone)]
pub struct Footprint {
    pub dir: PathBuf,
    /// The lab's token (see [`owner`]).
    pub token: String,
    pub created: Vec<Created>,
}

impl Footprint {
    /// Everything of the lab still present: its namespaces (same inode and token), root links
    /// (same index and token), daemons (same start time), any process still inside one of its
    /// network namespaces (even a deleted one), and its directory (with its owner marker).
    /// The inodes of the network namespaces the lab created.
    pub fn netns_inodes(&self) -> Vec<u64> {
        self.created
            .iter()
            .filter_map(|c| match c {
                Created::Netns(_, ino) => Some(*ino),
                _ => None,
            })
            .collect()
    }

    pub fn remaining(&self) -> Vec<String> {
        let mut left: Vec<String> = self
            .created
            .iter()
            .filter(|c| c.exists(&self.token))
            .map(|c| format!("{c:?}"))
            .collect();
        let inodes = self.netns_inodes();
        if let Ok(dir) = fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                    continue;
                };
                // nsfs inodes are reused: the namespace must also carry the lab's token.
                if space::ns_inode(&e.path().join("ns/net")).is_some_and(|i| inodes.contains(&i))
                    && owner::lo_alias_of_pid(pid).as_deref() == Some(self.token.as_str())
                {
                    left.push(format!(
                        "process {pid} in a lab namespace: {}",
                        cmdline(pid)
                    ));
                }
            }
        }
        // The same path may hold a newer lab's directory by now: ours only with our marker.
        if self.dir.exists() && owner::token(&self.dir).as_deref() == Some(self.token.as_str()) {
            left.push(format!("directory {}", self.dir.display()));
        }
        left
    }
}

/// Step timings on stderr when `FABRICPLAN_LAB_TRACE=1`.
fn trace(msg: &str) {
    if std::env::var("FABRICPLAN_LAB_TRACE").as_deref() == Ok("1") {
        eprintln!("lab: {msg}");
    }
}

fn tbf_args(rate: &str) -> Vec<String> {
    // burst: ~4 ms of the rate, at least 256 KiB (enough for the kernel tick at these rates).
    let bits = parse_rate(rate).unwrap_or(1_000_000_000);
    let burst = (bits / 8 / 250).max(256 * 1024);
    vec![
        "tbf".into(),
        "rate".into(),
        rate.into(),
        "burst".into(),
        burst.to_string(),
        "latency".into(),
        "50ms".into(),
    ]
}

fn parse_rate(rate: &str) -> Option<u64> {
    let r = rate.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = r.strip_suffix("gbit") {
        (n, 1_000_000_000)
    } else if let Some(n) = r.strip_suffix("mbit") {
        (n, 1_000_000)
    } else if let Some(n) = r.strip_suffix("kbit") {
        (n, 1_000)
    } else {
        (r.strip_suffix("bit").unwrap_or(&r), 1)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| (v * mult as f64) as u64)
}

fn ip_of(cidr: &str) -> Result<Ipv4Addr, String> {
    cidr.split('/')
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad address {cidr}"))
}

impl Lab {
    /// Builds the lab described by `spec` (taking the lab lock first, and clearing leftovers of
    /// a crashed run). On error, everything created so far is torn down.
    pub fn build(spec: &LabSpec) -> Result<Lab, String> {
        if spec.tag.is_empty()
            || spec.tag.len() > 4
            || !spec
                .tag
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return Err(format!("lab tag {:?} must be 1-4 chars [a-z0-9]", spec.tag));
        }
        if spec.hosts.is_empty() || spec.hosts.len() > 200 {
            return Err("a lab needs 1..200 hosts".into());
        }
        let t = std::time::Instant::now();
        let lock = LabLock::take()?;
        trace(&format!("lock taken after {:?}", t.elapsed()));
        for gone in owner::clear_stale(Path::new(LAB_BASE)) {
            trace(&format!("removed a crashed lab's {gone}"));
        }
        trace(&format!("leftovers cleared after {:?}", t.elapsed()));
        let inv = Inventory::scan();
        let host_names: Vec<String> = spec.hosts.iter().map(|h| h.name.clone()).collect();
        let prefix = space::choose_prefix(
            FAMILY,
            &spec.tag,
            &host_names,
            spec.switches.len(),
            &inv,
            Path::new(LAB_BASE),
        )?;
        let addressing = Addressing {
            mgmt: space::choose_mgmt(&inv)?,
            fabric_shift: space::choose_fabric_shift(&spec.fabric_nets(), &inv)?,
        };
        trace(&format!(
            "machine scanned after {:?}: prefix {prefix}, {addressing:?}",
            t.elapsed()
        ));
        let dir = PathBuf::from(LAB_BASE).join(&prefix);
        // create_dir, not create_dir_all: a directory that appeared since the scan is not ours.
        fs::create_dir_all(LAB_BASE)
            .and_then(|_| fs::create_dir(&dir))
            .map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let token = match owner::claim(&dir) {
            Ok(token) => token,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut lab = Lab {
            prefix: prefix.clone(),
            port_rate: spec.port_rate.clone(),
            dir,
            token,
            addressing,
            hosts: Vec::new(),
            switch_ns: BTreeMap::new(),
            isl_ns: Vec::new(),
            void_ns: format!("{prefix}-void"),
            created_ns: Vec::new(),
            root_links: Vec::new(),
            slurm: None,
            lldp_expected: Vec::new(),
            listening: inv.tcp_listen.clone(),
            _lock: lock,
        };
        // On error `lab` is dropped here, which tears down whatever was built.
        lab.build_all(spec)?;
        trace(&format!("lab {} built after {:?}", lab.prefix, t.elapsed()));
        Ok(lab)
    }

    fn build_all(&mut self, spec: &LabSpec) -> Result<(), String> {
        fs::create_dir_all(self.dir.join("bin/.faults"))
            .map_err(|e| format!("mkdir lab dir: {e}"))?;
        fs::create_dir_all(self.dir.join("ssh")).map_err(|e| format!("mkdir ssh: {e}"))?;
        fs::create_dir_all("/run/sshd").map_err(|e| format!("mkdir /run/sshd: {e}"))?;
        self.install_standins()?;
        let delays = match spec.tool_delays {
            Some(d) => d,
            None => ToolDelays::from_env()?,
        };
        self.set_tool_delays(delays)?;
        let login_ms = match spec.login_ms {
            Some(ms) => ms,
            None => login::from_env()?,
        };
        self.set_login_cost(login_ms)?;

        // Management bridge in the root namespace.
        let br = format!("{}br", self.prefix);
        self.add_root_link(&["ip", "link", "add", &br, "type", "bridge"], &br)?;
        sh::run_ok(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", self.mgmt_bridge_ip()),
            "dev",
            &br,
        ])?;
        sh::run_ok(&["ip", "link", "set", &br, "up"])?;
        let void = self.void_ns.clone();
        self.add_netns(&void)?;

        for (i, hs) in spec.hosts.iter().enumerate() {
            let idx = i + 1;
            let ns = format!("{}-{}", self.prefix, hs.name);
            self.add_netns(&ns)?;
            let host_dir = self.dir.join("hosts").join(&hs.name);
            self.hosts.push(Host {
                name: hs.name.clone(),
                ns: ns.clone(),
                mgmt_ip: self.addressing.mgmt_ip(idx as u8),
                fabric: Vec::new(),
                dir: host_dir.clone(),
                keeper: None,
                keeper_pid: 0,
                sshd_pid: 0,
                lldpd: None,
            });
            fs::create_dir_all(host_dir.join("realclass"))
                .and_then(|_| fs::create_dir_all(host_dir.join("ib")))
                .and_then(|_| fs::create_dir_all(host_dir.join("dotssh")))
                .and_then(|_| fs::create_dir_all(self.dir.join("bin/.faults").join(&hs.name)))
                .map_err(|e| format!("mkdir host dir: {e}"))?;
            // Both halves of a box share one switch (L2) on a switched fabric, in two subnets:
            // like a correctly set-up multi-rail host, answer ARP only for an interface's own
            // address and announce from the sending interface. Without it ARP replies leave by
            // whichever half answers first (ARP flux) and a ping or flow may miss its half.
            for (key, value) in [("arp_ignore", "1"), ("arp_announce", "2")] {
                sh::run_ok(&[
                    "ip",
                    "netns",
                    "exec",
                    &ns,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv4.conf.all.{key}={value}"),
                ])?;
            }
            let root_end = format!("{}m{idx}", self.prefix);
            self.add_root_link(
                &[
                    "ip", "link", "add", &root_end, "type", "veth", "peer", "name", "mgmt",
                    "netns", &ns,
                ],
                &root_end,
            )?;
            sh::run_ok(&["ip", "link", "set", &root_end, "master", &br, "up"])?;
            sh::run_ok(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", self.addressing.mgmt_ip(idx as u8)),
                "dev",
                "mgmt",
            ])?;
            sh::run_ok(&["ip", "-n", &ns, "link", "set", "mgmt", "up"])?;
        }

        for l in &spec.links {
            self.add_link(l)?;
        }
        for (k, sw) in spec.switches.iter().enumerate() {
            let ns = format!("{}-sw{k}", self.prefix);
            self.add_netns(&ns)?;
            self.switch_ns.insert(sw.clone(), ns.clone());
            sh::run_ok(&["ip", "-n", &ns, "link", "add", "br0", "type", "bridge"])?;
            sh::run_ok(&["ip", "-n", &ns, "link", "set", "br0", "mtu", "9000", "up"])?;
        }
        for (k, p) in spec.switch_ports.iter().enumerate() {
            self.add_switch_port(k, p)?;
        }
        for (k, isl) in spec.isls.iter().enumerate() {
            self.add_isl(k, isl)?;
        }
        if !spec.hosts_only {
            self.add_unused_netdevs()?;
        }
        self.write_sysfs(spec)?;
        trace("links and sysfs done");
        self.write_ssh_files()?;
        self.write_hosts_view(spec)?;
        trace("keys and configs written");
        for i in 0..self.hosts.len() {
            self.start_sshd(i)?;
            trace(&format!("sshd of {} up", self.hosts[i].name));
        }
        if spec.lldp {
            for i in 0..self.hosts.len() {
                self.start_lldpd(i)?;
            }
            self.lldp_expected = spec
                .links
                .iter()
                .flat_map(|l| {
                    [
                        (
                            l.a.host.clone(),
                            l.a.wired_netdev().to_string(),
                            l.b.host.clone(),
                        ),
                        (
                            l.b.host.clone(),
                            l.b.wired_netdev().to_string(),
                            l.a.host.clone(),
                        ),
                    ]
                })
                .collect();
        }
        if spec.slurm {
            self.start_slurm()?;
        }
        Ok(())
    }

    /// Starts host `i`'s lldpd in its namespaces (net, mount with its own `/run`, UTS: the
    /// chassis name is the hostname), transmitting every second, records its pid, and waits
    /// until its control socket answers with that configuration.
    fn start_lldpd(&mut self, i: usize) -> Result<(), String> {
        let h = &self.hosts[i];
        let log = fs::File::create(h.dir.join("lldpd.log")).map_err(|e| e.to_string())?;
        // the interval goes in the configuration lldpd's own lldpcli reads as it starts (`-O`):
        // set later by a second lldpcli, racing that first one, it left the transmit timer
        // unarmed after the first frame now and then
        let conf = self.dir.join("lldpd.conf");
        fs::write(&conf, "configure lldp tx-interval 1\n")
            .map_err(|e| format!("write {}: {e}", conf.display()))?;
        let conf = conf.display().to_string();
        let child = Command::new("nsenter")
            .args(["-t", &h.keeper_pid.to_string(), "-n", "-m", "-u", "--"])
            .args([
                "/usr/sbin/lldpd",
                "-d",
                "-I",
                "en*",
                "-S",
                "fabricplan lab host",
            ])
            .args(["-O", &conf])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawn lldpd for {}: {e}", h.name))?;
        if let Some(start) = owner::start_time(child.id()) {
            owner::record(&self.dir, &Created::Pid(child.id(), start));
        }
        let name = h.name.clone();
        self.hosts[i].lldpd = Some(child);
        // ready once its configuration says the interval
        let mut last = String::new();
        let up = sh::wait_for(Duration::from_secs(10), || {
            let out = self.exec(&name, "lldpcli show configuration");
            last = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            out.status.success() && last.contains("Transmit delay: 1\n")
        });
        if !up {
            return Err(format!("lldpd of {name} did not answer: {last}"));
        }
        Ok(())
    }

    /// What `lldpcli -f json0 show neighbors` prints on `host` (its lldpd, its socket).
    pub fn lldp_neighbours(&self, host: &str) -> String {
        let out = self.exec(host, "lldpcli -f json0 show neighbors");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls every host's lldpd until each cabled netdev has heard its far end's chassis (LLDP
    /// needs a few seconds after start), or fails after `within` naming what is missing.
    pub fn wait_lldp(&self, within: Duration) -> Result<(), String> {
        let mut missing: Vec<String> = Vec::new();
        let seen = sh::wait_for(within, || {
            missing = self
                .lldp_expected
                .iter()
                .filter(|(host, netdev, peer)| {
                    !lldp_heard(&self.lldp_neighbours(host), netdev, peer)
                })
                .map(|(host, netdev, peer)| format!("{host}.{netdev} -> {peer}"))
                .collect();
            missing.is_empty()
        });
        if seen {
            return Ok(());
        }
        let heard: Vec<String> = self
            .hosts
            .iter()
            .map(|h| {
                let log = fs::read_to_string(h.dir.join("lldpd.log")).unwrap_or_default();
                let more = self.exec(
                    &h.name,
                    "lldpcli show interfaces; lldpcli show statistics; ip -o link",
                );
                format!(
                    "{}: {}\n{log}\n{}",
                    h.name,
                    self.lldp_neighbours(&h.name),
                    String::from_utf8_lossy(&more.stdout)
                )
            })
            .collect();
        Err(format!(
            "LLDP did not see: {}\n{}",
            missing.join(", "),
            heard.join("\n")
        ))
    }

    /// Creates a named network namespace (`lo` up, the lab's token as its alias) and records
    /// it as the lab's.
    fn add_netns(&mut self, name: &str) -> Result<(), String> {
        sh::run_ok(&["ip", "netns", "add", name])?;
        self.created_ns.push(name.to_string());
        let ino = space::ns_inode(&Path::new("/run/netns").join(name))
            .ok_or_else(|| format!("netns {name} has no /run/netns file"))?;
        owner::record(&self.dir, &Created::Netns(name.to_string(), ino));
        sh::run_ok(&[
            "ip",
            "-n",
            name,
            "link",
            "set",
            "lo",
            "up",
            "alias",
            &self.token,
        ])?;
        Ok(())
    }

    /// Runs `argv`, which creates the root-namespace link `name`, gives it the lab's token as
    /// its alias and records it as the lab's.
    fn add_root_link(&mut self, argv: &[&str], name: &str) -> Result<(), String> {
        sh::run_ok(argv)?;
        self.root_links.push(name.to_string());
        let index = owner::link_index(name).ok_or_else(|| format!("link {name} vanished"))?;
        owner::record(&self.dir, &Created::Link(name.to_string(), index));
        sh::run_ok(&["ip", "link", "set", "dev", name, "alias", &self.token])?;
        Ok(())
    }

    /// The lab's own `/etc/hosts` (every host by name at its management address, the Slurm
    /// controller at the bridge) and an `nsswitch.conf` with `hosts: files`: bind-mounted in
    /// every host's mount namespace, Slurm's daemons and clients, so that no lab name is ever
    /// looked up in DNS.
    fn write_hosts_view(&self, spec: &LabSpec) -> Result<(), String> {
        let etc = self.dir.join("etc");
        fs::create_dir_all(&etc).map_err(|e| format!("mkdir {}: {e}", etc.display()))?;
        let mut hosts =
            String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
        if spec.slurm {
            hosts.push_str(&format!(
                "{}\t{}\n",
                self.mgmt_bridge_ip(),
                self.slurm_ctl_host()
            ));
        }
        for h in &self.hosts {
            hosts.push_str(&format!("{}\t{}\n", h.mgmt_ip, h.name));
        }
        let system = fs::read_to_string("/etc/nsswitch.conf").unwrap_or_default();
        let mut nss: String = system
            .lines()
            .filter(|l| !l.trim_start().starts_with("hosts:"))
            .map(|l| format!("{l}\n"))
            .collect();
        nss.push_str("hosts: files\n");
        fs::write(etc.join("hosts"), hosts)
            .and_then(|_| fs::write(etc.join("nsswitch.conf"), nss))
            .map_err(|e| format!("write {}: {e}", etc.display()))?;
        login::write_views(&etc)
    }

    fn view(&self) -> slurm::View {
        slurm::View {
            hosts: self.dir.join("etc/hosts"),
            nsswitch: self.dir.join("etc/nsswitch.conf"),
        }
    }

    /// The Slurm cluster's name: the lab prefix without `_`.
    fn slurm_cluster_name(&self) -> String {
        self.prefix.replace('_', "")
    }

    /// `SlurmctldHost`: the controller's hostname (in the lab's /etc/hosts, at the bridge).
    fn slurm_ctl_host(&self) -> String {
        format!("{}-ctl", self.slurm_cluster_name())
    }

    fn start_slurm(&mut self) -> Result<(), String> {
        let ctl = self.slurm_ctl_host();
        if self.hosts.iter().any(|h| h.name == ctl) {
            return Err(format!("a lab host may not be called {ctl}"));
        }
        let nodes = self
            .hosts
            .iter()
            .map(|h| slurm::Node {
                name: h.name.clone(),
                addr: h.mgmt_ip,
                keeper_pid: h.keeper_pid,
            })
            .collect();
        let cluster = slurm::Cluster::new(
            &self.dir,
            self.view(),
            &self.slurm_cluster_name(),
            &ctl,
            self.mgmt_bridge_ip(),
            slurm::choose_ports(&self.listening)?,
            nodes,
        );
        // Kept before it starts: on error the lab's teardown stops whatever did start.
        self.slurm = Some(cluster);
        self.slurm.as_mut().expect("just set").start()
    }

    /// The stand-ins: `labtool.py` as a module, compiled once, and per tool name a three-line
    /// launcher that imports it. A script is compiled at every start, a module is not: with
    /// `-S` (no site-packages scan) and the rarely needed imports deferred, a stand-in server
    /// listens ~25 ms after its start instead of ~60 (perftest itself: a few ms).
    fn install_standins(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lab/standins/labtool.py");
        let bin = self.dir.join("bin");
        let module = bin.join("labtool.py");
        fs::copy(&src, &module).map_err(|e| format!("copy {}: {e}", src.display()))?;
        sh::run_ok(&[
            "python3",
            "-S",
            "-m",
            "py_compile",
            &module.display().to_string(),
        ])?;
        let launcher =
            "#!/usr/bin/python3 -S\nimport sys\n\nimport labtool\n\nsys.exit(labtool.main())\n";
        for name in STANDIN_NAMES {
            let dst = bin.join(name);
            fs::write(&dst, launcher).map_err(|e| format!("write {}: {e}", dst.display()))?;
            fs::set_permissions(&dst, fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("chmod {}: {e}", dst.display()))?;
        }
        // `lldpcli` as discovery's probe runs it: the real one, 3 s late on a host with the
        // SlowProbe fault (a window inside discovery for a test to strike in)
        let shim = bin.join("lldpcli");
        fs::write(
            &shim,
            "#!/bin/sh\n[ -e \"$(dirname \"$0\")/.faults/$(hostname)/SlowProbe\" ] && sleep 3\nexec /usr/sbin/lldpcli \"$@\"\n",
        )
        .and_then(|_| fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("install {}: {e}", shim.display()))?;
        // `ethtool -S NETDEV` as an mlx5 port answers it: the physical-layer counters of
        // `.ethtool/HOST/NETDEV.COUNTER` (see `set_phy_counter`), 0 where none was set
        let ethtool = bin.join("ethtool");
        fs::write(
            &ethtool,
            "#!/bin/sh\n[ \"$1\" = -S ] && [ -n \"$2\" ] || { echo \"ethtool (lab): only -S NETDEV\" >&2; exit 1; }\n\
             [ -e \"/sys/class/net/$2\" ] || { echo \"netlink error: No such device\" >&2; exit 1; }\n\
             f=\"$(dirname \"$0\")/.ethtool/$(hostname)/$2\"\necho 'NIC statistics:'\n\
             for c in rx_crc_errors_phy rx_symbol_err_phy rx_corrected_bits_phy link_down_events_phy; do\n\
             \x20 v=0; [ -r \"$f.$c\" ] && read -r v < \"$f.$c\"; echo \"     $c: $v\"\ndone\n",
        )
        .and_then(|_| fs::set_permissions(&ethtool, fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("install {}: {e}", ethtool.display()))?;
        // A real MPI program (libmpi through ctypes) for launcher tests.
        let hello = bin.join("mpi_hello");
        fs::copy(src.with_file_name("mpi_hello.py"), &hello)
            .and_then(|_| fs::set_permissions(&hello, fs::Permissions::from_mode(0o755)))
            .map_err(|e| format!("install {}: {e}", hello.display()))?;
        Ok(())
    }

    fn host_index(&self, name: &str) -> Result<usize, String> {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .ok_or_else(|| format!("no host {name} in the lab"))
    }

    /// Configures one cable end inside its host, after the veth end `wired` arrived there.
    fn configure_end(&mut self, end: &LinkEnd) -> Result<(), String> {
        let hi = self.host_index(&end.host)?;
        let ns = self.hosts[hi].ns.clone();
        let wired = end.wired_netdev().to_string();
        let cidr = self.addressing.translate(&end.cidr);
        sh::run_ok(&["ip", "-n", &ns, "link", "set", &wired, "mtu", "9000", "up"])?;
        if let Some(rate) = self.port_rate.clone() {
            self.shape(&ns, &wired, &rate)?;
        }
        if end.plugged_into.is_some() {
            // The planned netdev exists with its address but no cable (its peer sits in the void).
            self.add_dangling(&ns, &end.netdev, true)?;
        }
        sh::run_ok(&["ip", "-n", &ns, "addr", "add", &cidr, "dev", &end.netdev])?;
        self.hosts[hi].fabric.push((end.netdev.clone(), cidr));
        Ok(())
    }

    /// A netdev in `ns` whose veth peer lies down in the void namespace: no carrier.
    fn add_dangling(&mut self, ns: &str, netdev: &str, admin_up: bool) -> Result<(), String> {
        let peer = format!("v{}", self.void_count());
        sh::run_ok(&[
            "ip",
            "-n",
            &self.void_ns,
            "link",
            "add",
            &peer,
            "type",
            "veth",
            "peer",
            "name",
            netdev,
            "netns",
            ns,
        ])?;
        if admin_up {
            sh::run_ok(&["ip", "-n", ns, "link", "set", netdev, "mtu", "9000", "up"])?;
        }
        Ok(())
    }

    fn void_count(&self) -> usize {
        String::from_utf8_lossy(&sh::run(&["ip", "-n", &self.void_ns, "-o", "link"]).stdout)
            .lines()
            .count()
    }

    fn add_link(&mut self, l: &LinkSpec) -> Result<(), String> {
        let na = self.hosts[self.host_index(&l.a.host)?].ns.clone();
        let nb = self.hosts[self.host_index(&l.b.host)?].ns.clone();
        sh::run_ok(&[
            "ip",
            "link",
            "add",
            l.a.wired_netdev(),
            "netns",
            &na,
            "type",
            "veth",
            "peer",
            "name",
            l.b.wired_netdev(),
            "netns",
            &nb,
        ])?;
        self.configure_end(&l.a)?;
        self.configure_end(&l.b)?;
        Ok(())
    }

    fn add_switch_port(&mut self, k: usize, p: &SwitchPort) -> Result<(), String> {
        let sw = self
            .switch_ns
            .get(&p.switch)
            .cloned()
            .ok_or_else(|| format!("no switch {}", p.switch))?;
        let hns = self.hosts[self.host_index(&p.end.host)?].ns.clone();
        let port = format!("p{k}");
        sh::run_ok(&[
            "ip",
            "-n",
            &sw,
            "link",
            "add",
            &port,
            "type",
            "veth",
            "peer",
            "name",
            p.end.wired_netdev(),
            "netns",
            &hns,
        ])?;
        sh::run_ok(&[
            "ip", "-n", &sw, "link", "set", &port, "mtu", "9000", "master", "br0", "up",
        ])?;
        self.configure_end(&p.end)
    }

    fn add_isl(&mut self, k: usize, isl: &IslSpec) -> Result<(), String> {
        let a = self
            .switch_ns
            .get(&isl.a)
            .cloned()
            .ok_or_else(|| format!("no switch {}", isl.a))?;
        let b = self
            .switch_ns
            .get(&isl.b)
            .cloned()
            .ok_or_else(|| format!("no switch {}", isl.b))?;
        let name = format!("isl{k}");
        sh::run_ok(&[
            "ip", "-n", &a, "link", "add", &name, "type", "veth", "peer", "name", &name, "netns",
            &b,
        ])?;
        self.isl_ns.push((a.clone(), b.clone()));
        for ns in [&a, &b] {
            sh::run_ok(&[
                "ip", "-n", ns, "link", "set", &name, "mtu", "9000", "master", "br0", "up",
            ])?;
            if let Some(rate) = &isl.rate {
                let mut argv: Vec<String> = ["tc", "-n", ns, "qdisc", "replace", "dev", &name]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                argv.push("root".into());
                argv.extend(tbf_args(rate));
                let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
                sh::run_ok(&refs)?;
            }
        }
        Ok(())
    }

    /// Every GB10 netdev without a cable still exists (no carrier), as on a real box.
    fn add_unused_netdevs(&mut self) -> Result<(), String> {
        for i in 0..self.hosts.len() {
            let ns = self.hosts[i].ns.clone();
            for (_, netdev) in GB10_DEVICES {
                if !self.netdev_exists(&ns, netdev) {
                    self.add_dangling(&ns, netdev, false)?;
                }
            }
        }
        Ok(())
    }

    fn netdev_exists(&self, ns: &str, netdev: &str) -> bool {
        sh::run(&["ip", "-n", ns, "link", "show", "dev", netdev])
            .status
            .success()
    }

    /// Whether `netdev` in `ns` is up with a carrier (what RoCE calls ACTIVE).
    fn netdev_running(&self, ns: &str, netdev: &str) -> bool {
        let out = sh::run(&["ip", "-n", ns, "-o", "link", "show", "dev", netdev]);
        let text = String::from_utf8_lossy(&out.stdout);
        out.status.success() && text.contains(",UP") && text.contains("LOWER_UP")
    }

    fn write_sysfs(&self, spec: &LabSpec) -> Result<(), String> {
        let default_pcie = spec
            .pcie_default
            .clone()
            .unwrap_or_else(sysfs::PcieLink::gb10);
        for (hi, (host, hs)) in self.hosts.iter().zip(&spec.hosts).enumerate() {
            let root = host.dir.join("ib");
            for (di, (dev, netdev)) in GB10_DEVICES.iter().enumerate() {
                let active = self.netdev_running(&host.ns, netdev)
                    && !hs.down_devices.iter().any(|d| d == dev);
                let ipv4 = host.fabric_ip(netdev);
                sysfs::write_device(
                    &root,
                    &sysfs::DeviceState {
                        dev,
                        netdev,
                        active,
                        ipv4,
                        gid_index: hs.gid_index,
                        mac_seed: ((hi as u32 + 1) << 8) | di as u32,
                        firmware: &hs.firmware,
                        pcie: hs.pcie.get(*dev).unwrap_or(&default_pcie),
                    },
                )?;
            }
        }
        Ok(())
    }

    fn write_ssh_files(&self) -> Result<(), String> {
        let ssh = self.dir.join("ssh");
        let key = ssh.join("client_key");
        sh::run_ok(&[
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "fabricplan-lab",
            "-f",
            &key.to_string_lossy(),
        ])?;
        let pubkey = fs::read_to_string(ssh.join("client_key.pub"))
            .map_err(|e| format!("read client key: {e}"))?;
        fs::write(ssh.join("authorized_keys"), &pubkey)
            .map_err(|e| format!("write authorized_keys: {e}"))?;
        let mut known = String::new();
        let mut config = String::new();
        let mut inner_config = String::new();
        for h in &self.hosts {
            let hk = h.dir.join("ssh_host_ed25519_key");
            sh::run_ok(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                &h.name,
                "-f",
                &hk.to_string_lossy(),
            ])?;
            let hpub = fs::read_to_string(h.dir.join("ssh_host_ed25519_key.pub"))
                .map_err(|e| format!("read host key: {e}"))?;
            let keypart: Vec<&str> = hpub.split_whitespace().take(2).collect();
            let mut names = vec![h.name.clone(), h.mgmt_ip.to_string()];
            names.extend(
                h.fabric
                    .iter()
                    .filter_map(|(_, c)| c.split('/').next().map(str::to_string)),
            );
            known.push_str(&format!("{} {}\n", names.join(","), keypart.join(" ")));
            config.push_str(&format!(
                "Host {}\n  HostName {}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n\n",
                h.name,
                h.mgmt_ip,
                key.display(),
                ssh.join("known_hosts").display()
            ));
            inner_config.push_str(&format!("Host {}\n  HostName {}\n\n", h.name, h.mgmt_ip));
        }
        inner_config.push_str(
            "Host *\n  User root\n  IdentityFile /root/.ssh/id_ed25519\n  IdentitiesOnly yes\n  UserKnownHostsFile /root/.ssh/known_hosts\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n",
        );
        fs::write(ssh.join("known_hosts"), &known).map_err(|e| format!("known_hosts: {e}"))?;
        fs::write(ssh.join("ssh_config"), &config).map_err(|e| format!("ssh_config: {e}"))?;
        let private = fs::read(&key).map_err(|e| format!("read client key: {e}"))?;
        for h in &self.hosts {
            let d = h.dir.join("dotssh");
            fs::write(d.join("id_ed25519"), &private)
                .and_then(|_| fs::write(d.join("id_ed25519.pub"), &pubkey))
                .and_then(|_| fs::write(d.join("known_hosts"), &known))
                .and_then(|_| fs::write(d.join("config"), &inner_config))
                .map_err(|e| format!("write {}: {e}", d.display()))?;
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(d.join("id_ed25519"), fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("chmod: {e}"))?;
            let sshd_config = format!(
                "Port 22\nListenAddress 0.0.0.0\nHostKey {hk}\nPidFile none\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\nPermitRootLogin prohibit-password\nAuthorizedKeysFile {ak}\nSetEnv OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\nUseDNS no\nMaxStartups 100:30:200\nMaxSessions 100\nSubsystem sftp internal-sftp\nLogLevel ERROR\n",
                hk = h.dir.join("ssh_host_ed25519_key").display(),
                ak = ssh.join("authorized_keys").display(),
            );
            fs::write(h.dir.join("sshd_config"), sshd_config)
                .map_err(|e| format!("sshd_config: {e}"))?;
        }
        Ok(())
    }

    /// Starts host `i`'s sshd in its own UTS + mount namespace (hostname, sysfs, stand-ins,
    /// private /tmp and /root) and waits until it accepts TCP on the management address.
    fn start_sshd(&mut self, i: usize) -> Result<(), String> {
        let h = &self.hosts[i];
        let hd = h.dir.display().to_string();
        let script = format!(
            "set -e\n\
             hostname {name}\n\
             mount --bind /sys/class {hd}/realclass\n\
             mount -t tmpfs -o mode=755 fplsys /sys/class\n\
             mkdir /sys/class/net /sys/class/infiniband\n\
             mount --bind {hd}/realclass/net /sys/class/net\n\
             mount --bind {hd}/ib /sys/class/infiniband\n\
             mount --bind {bin} /usr/local/bin\n\
             mount --bind {etc}/hosts /etc/hosts\n\
             mount --bind {etc}/nsswitch.conf /etc/nsswitch.conf\n\
             mount --bind {etc}/passwd /etc/passwd\n\
             mount -t tmpfs -o mode=1777 fpltmp /tmp\n\
             mount -t tmpfs -o mode=755 fplrun /run\n\
             mkdir -m 755 /run/sshd\n\
             mount -t tmpfs -o mode=700 fplroot /root\n\
             mkdir -m 700 /root/.ssh\n\
             cp {hd}/dotssh/* /root/.ssh/\n\
             cp {etc}/bashrc /root/.bashrc\n\
             chmod 600 /root/.ssh/id_ed25519\n\
             /usr/sbin/sshd -D -f {hd}/sshd_config -E {hd}/sshd.log </dev/null &\n\
             echo $! > {hd}/sshd.pid\n\
             exec cat >/dev/null\n",
            name = h.name,
            bin = self.dir.join("bin").display(),
            etc = self.dir.join("etc").display(),
        );
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &h.ns,
                "unshare",
                "--uts",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                &script,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(fs::File::create(h.dir.join("start.log")).map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| format!("spawn sshd for {}: {e}", h.name))?;
        let addr = SocketAddr::from((h.mgmt_ip, 22));
        let pid_file = h.dir.join("sshd.pid");
        let h = &mut self.hosts[i];
        h.keeper_pid = child.id();
        h.keeper = Some(child);
        let up = sh::wait_for(Duration::from_secs(15), || {
            TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        });
        h.sshd_pid = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        for pid in [h.keeper_pid, h.sshd_pid] {
            if let Some(start) = owner::start_time(pid).filter(|_| pid != 0) {
                owner::record(&self.dir, &Created::Pid(pid, start));
            }
        }
        if !up {
            let log = fs::read_to_string(h.dir.join("start.log")).unwrap_or_default();
            let slog = fs::read_to_string(h.dir.join("sshd.log")).unwrap_or_default();
            return Err(format!(
                "sshd of {} did not come up: {log} {slog}",
                self.hosts[i].name
            ));
        }
        Ok(())
    }

    // ------------------------------------------------------------------ accessors

    pub fn host(&self, name: &str) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name} in the lab"))
    }

    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The lab's directory (keys, configs, sysfs trees, stand-ins).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ssh_config with one `Host <alias>` per host, for `--ssh-config` / `ssh -F`.
    pub fn ssh_config_path(&self) -> PathBuf {
        self.dir.join("ssh/ssh_config")
    }

    /// Namespaces this lab created (hosts, switches, the void for cable-less netdevs).
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.hosts.iter().map(|h| h.ns.clone()).collect();
        v.extend(self.switch_ns.values().cloned());
        v.push(self.void_ns.clone());
        v
    }

    /// The namespace of switch `name`.
    pub fn switch_ns(&self, name: &str) -> &str {
        &self.switch_ns[name]
    }

    /// Links this lab created in the root namespace (the management bridge and host ends).
    pub fn root_links(&self) -> &[String] {
        &self.root_links
    }

    /// What this lab created (from its manifest), to check after drop that nothing is left.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            dir: self.dir.clone(),
            token: self.token.clone(),
            created: owner::manifest(&self.dir),
        }
    }

    // ------------------------------------------------------------------ addresses

    /// The management bridge's address (`198.18.N.254`).
    pub fn mgmt_bridge_ip(&self) -> Ipv4Addr {
        self.addressing.mgmt_ip(MGMT_BRIDGE_HOST)
    }

    /// The management subnet the lab took (`198.18.N.0/24`).
    pub fn mgmt_subnet(&self) -> String {
        space::mgmt_net(self.addressing.mgmt).to_string()
    }

    /// How far the spec's fabric addresses moved (in /24 steps; 0 on an idle machine).
    pub fn fabric_shift(&self) -> u8 {
        self.addressing.fabric_shift
    }

    /// A spec fabric address or CIDR (`198.19.1.2`, `198.19.1.0/30`) as it is in this lab.
    pub fn addr(&self, spec: &str) -> String {
        self.addressing.translate(spec)
    }

    /// `text` (a command, a plan) with every spec fabric address `198.19.x.y` translated.
    pub fn translate(&self, text: &str) -> String {
        self.addressing.translate(text)
    }

    // ------------------------------------------------------------------ Slurm

    fn cluster(&self) -> &slurm::Cluster {
        self.slurm
            .as_ref()
            .expect("this lab runs no Slurm cluster: build it with LabSpec::slurm()")
    }

    /// What a Slurm client needs in its environment (`SLURM_CONF`). Panics without Slurm.
    pub fn slurm_env(&self) -> Vec<(String, String)> {
        self.cluster().env()
    }

    /// The lab's slurm.conf.
    pub fn slurm_conf(&self) -> PathBuf {
        self.cluster().conf_path()
    }

    /// The partition holding every host.
    pub fn partition(&self) -> &'static str {
        slurm::PARTITION
    }

    /// Runs `sh -c cmd` as a Slurm client would run: root network namespace, [`Lab::slurm_env`],
    /// and a private mount namespace with the lab's /etc/hosts and `hosts: files`.
    pub fn slurm(&self, cmd: &str) -> Output {
        self.cluster().run(&["sh", "-c", cmd])
    }

    /// `argv` set up like [`Lab::slurm`], to spawn (a background `srun`, `salloc`, or a program
    /// that runs them, e.g. fabricplan with a Slurm launcher). Its pid is the program's own.
    pub fn slurm_command(&self, argv: &[&str]) -> Command {
        self.cluster().client(argv)
    }

    /// SIGKILLs the host's slurmd (like a crash: the controller is not told) and reaps it.
    pub fn stop_slurmd(&self, host: &str) -> Result<(), String> {
        self.cluster().stop_slurmd(host)
    }

    /// Starts the host's slurmd again (in the host's namespaces) and waits until the
    /// controller hears from it.
    pub fn start_slurmd(&self, host: &str) -> Result<(), String> {
        self.cluster().start_slurmd(host)
    }

    /// `sinfo`'s state of the host's node (`idle`, `mixed`, `idle*`, `down*`, `drained`, ...).
    pub fn slurm_state(&self, host: &str) -> String {
        self.cluster().sinfo_state(host)
    }

    /// Pids of the Slurm daemons running now (munged, slurmctld and its helper, slurmd's).
    pub fn slurm_daemons(&self) -> Vec<u32> {
        self.slurm
            .as_ref()
            .map(slurm::Cluster::daemon_pids)
            .unwrap_or_default()
    }

    // ------------------------------------------------------------------ running things

    /// Runs `cmd` with `ssh -F <lab ssh_config> <host>` (the system client, like a user would).
    pub fn ssh(&self, host: &str, cmd: &str) -> Output {
        sh::run(&[
            "ssh",
            "-F",
            &self.ssh_config_path().to_string_lossy(),
            host,
            cmd,
        ])
    }

    /// Runs `sh -c cmd` inside the host's namespaces (net, mount, uts: what its sshd sees), as
    /// root; works after [`Lab::stop_sshd`] too.
    pub fn exec(&self, host: &str, cmd: &str) -> Output {
        let h = self.host(host);
        sh::run(&[
            "nsenter",
            "-t",
            &h.keeper_pid.to_string(),
            "-n",
            "-m",
            "-u",
            "--",
            "sh",
            "-c",
            cmd,
        ])
    }

    /// Command lines of the processes running in the host's namespace, except its sshd
    /// listener and session processes, its slurmd (Slurm steps are listed) and its lldpd.
    pub fn processes(&self, host: &str) -> Vec<String> {
        let h = self.host(host);
        let slurmd = self.slurm.as_ref().and_then(|c| c.slurmd_pid(host));
        let lldpd = h.lldpd.as_ref().map(Child::id);
        sh::netns_pids(&h.ns)
            .into_iter()
            .filter(|pid| *pid != h.sshd_pid && *pid != h.keeper_pid && Some(*pid) != slurmd)
            .filter(|pid| lldpd.is_none_or(|l| *pid != l && parent_pid(*pid) != Some(l)))
            .map(sh::cmdline)
            .filter(|c| {
                !c.is_empty() && !c.starts_with("sshd:") && !c.starts_with("/usr/sbin/sshd")
            })
            .collect()
    }

    /// What is still running on any host (`host: command line`), after giving it up to
    /// `within` to go: processes that were killed may take a moment to be reaped.
    pub fn leftovers(&self, within: Duration) -> Vec<String> {
        let mut left = Vec::new();
        wait(within, || {
            left = self
                .hosts
                .iter()
                .flat_map(|h| {
                    self.processes(&h.name)
                        .into_iter()
                        .map(move |p| format!("{}: {p}", h.name))
                })
                .collect();
            left.is_empty()
        });
        left
    }

    // ------------------------------------------------------------------ faults

    /// Shapes the host's `netdev` egress with tbf at `rate` (e.g. `"1gbit"`).
    pub fn throttle(&self, host: &str, netdev: &str, rate: &str) -> Result<(), String> {
        self.shape(&self.host(host).ns, netdev, rate)
    }

    /// Removes a throttle set by [`Lab::throttle`]: back to the lab's port rate, or unshaped.
    pub fn unthrottle(&self, host: &str, netdev: &str) -> Result<(), String> {
        let ns = &self.host(host).ns;
        match &self.port_rate {
            Some(rate) => self.shape(ns, netdev, rate),
            None => {
                sh::run_ok(&["tc", "-n", ns, "qdisc", "del", "dev", netdev, "root"]).map(|_| ())
            }
        }
    }

    /// tbf on `netdev`'s egress in `ns`, replacing whatever root qdisc it had.
    fn shape(&self, ns: &str, netdev: &str, rate: &str) -> Result<(), String> {
        let mut argv: Vec<String> = ["tc", "-n", ns, "qdisc", "replace", "dev", netdev, "root"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend(tbf_args(rate));
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        sh::run_ok(&refs).map(|_| ())
    }

    /// Sets the MTU of ISL `k` (the k-th of the spec's ISLs), both ends: 1500 is the hop that
    /// drops every jumbo frame crossing the switches.
    pub fn set_isl_mtu(&self, k: usize, mtu: u32) -> Result<(), String> {
        let (a, b) = self.isl_ns.get(k).ok_or_else(|| format!("no ISL {k}"))?;
        let name = format!("isl{k}");
        for ns in [a, b] {
            sh::run_ok(&[
                "ip",
                "-n",
                ns,
                "link",
                "set",
                "dev",
                &name,
                "mtu",
                &mtu.to_string(),
            ])?;
        }
        Ok(())
    }

    /// Sets the MTU of the host's `netdev`.
    pub fn set_mtu(&self, host: &str, netdev: &str, mtu: u32) -> Result<(), String> {
        let ns = &self.host(host).ns;
        sh::run_ok(&[
            "ip",
            "-n",
            ns,
            "link",
            "set",
            "dev",
            netdev,
            "mtu",
            &mtu.to_string(),
        ])
        .map(|_| ())
    }

    /// Stops the host's sshd (existing sessions and detached processes keep running).
    pub fn stop_sshd(&self, host: &str) {
        let i = self.host_index(host).expect("host");
        let h = &self.hosts[i];
        if h.sshd_pid != 0 {
            sh::run(&["kill", "-TERM", &h.sshd_pid.to_string()]);
            let addr = SocketAddr::from((h.mgmt_ip, 22));
            sh::wait_for(Duration::from_secs(5), || {
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err()
            });
        }
    }

    /// Sets every stand-in's start-up and exit delays (read by each tool as it starts).
    pub fn set_tool_delays(&self, d: ToolDelays) -> Result<(), String> {
        let p = self.dir.join("bin/.delays");
        fs::write(&p, format!("{} {}\n", d.start_ms, d.exit_ms))
            .map_err(|e| format!("write {}: {e}", p.display()))
    }

    /// Sets what a login shell costs on every host from now on, ms (see [`login`]).
    pub fn set_login_cost(&self, ms: u64) -> Result<(), String> {
        login::set_cost(&self.dir.join("bin"), ms)
    }

    /// What each login shell on `host` ran for so far (bash's `-c` string, its first 200
    /// characters), oldest first: one line per login shell.
    pub fn login_shells(&self, host: &str) -> Vec<String> {
        let o = self.exec(host, &format!("cat {} 2>/dev/null", login::SHELLS_FILE));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Switches a fault on for the tools a host runs on one RDMA device (`-d DEV`) only.
    pub fn fault_on_device(&self, host: &str, dev: &str, fault: Fault) {
        let dir = self.dir.join("bin/.faults").join(host);
        let _ = fs::create_dir_all(&dir);
        let _ = fs::write(dir.join(format!("{}@{dev}", fault.file_name())), "");
    }

    /// Switches every fault of a host off, per device ones included.
    pub fn clear_faults(&self, host: &str) {
        let dir = self.dir.join("bin/.faults").join(host);
        if let Ok(entries) = fs::read_dir(&dir) {
            for e in entries.flatten() {
                let _ = fs::remove_file(e.path());
            }
        }
    }

    /// Switches a fault on for a host (read by the stand-ins at run time).
    pub fn fault(&self, host: &str, fault: Fault) {
        let dir = self.dir.join("bin/.faults").join(host);
        let _ = fs::create_dir_all(&dir);
        let _ = fs::write(dir.join(fault.file_name()), "");
    }

    /// Switches a fault off again.
    pub fn clear_fault(&self, host: &str, fault: Fault) {
        let _ = fs::remove_file(
            self.dir
                .join("bin/.faults")
                .join(host)
                .join(fault.file_name()),
        );
    }

    /// Sets a device's port state in the host's sysfs (`4: ACTIVE` / `1: DOWN`).
    pub fn set_port_active(&self, host: &str, dev: &str, active: bool) -> Result<(), String> {
        let port = self.host(host).dir.join("ib").join(dev).join("ports/1");
        let (state, phys) = sysfs::state_text(active);
        fs::write(port.join("state"), format!("{state}\n"))
            .and_then(|_| fs::write(port.join("phys_state"), format!("{phys}\n")))
            .map_err(|e| format!("set port state: {e}"))
    }

    /// Sets the firmware of every device of `host` (`fw_ver`), as an update would.
    pub fn set_firmware(&self, host: &str, version: &str) -> Result<(), String> {
        let root = self.host(host).dir.join("ib");
        for (dev, _) in GB10_DEVICES {
            fs::write(root.join(dev).join("fw_ver"), format!("{version}\n"))
                .map_err(|e| format!("set firmware: {e}"))?;
        }
        Ok(())
    }

    /// Sets the PCIe link under `dev` of `host` (a link that retrained at another width).
    pub fn set_pcie(&self, host: &str, dev: &str, link: &sysfs::PcieLink) -> Result<(), String> {
        sysfs::write_pcie(&self.host(host).dir.join("ib"), dev, link)
    }

    /// Sets a physical-layer counter of `netdev` on `host` as the lab's `ethtool -S` prints it
    /// (`rx_symbol_err_phy`, `rx_corrected_bits_phy`, `rx_crc_errors_phy`,
    /// `link_down_events_phy`; 0 until set).
    pub fn set_phy_counter(&self, host: &str, netdev: &str, name: &str, value: u64) {
        let dir = self.dir.join("bin/.ethtool").join(host);
        let _ = fs::create_dir_all(&dir);
        let _ = fs::write(dir.join(format!("{netdev}.{name}")), format!("{value}\n"));
    }

    /// Reads a counter of `dev` on `host`: `counters/<name>` or `hw_counters/<name>`.
    pub fn counter(&self, host: &str, dev: &str, name: &str) -> u64 {
        let port = self.host(host).dir.join("ib").join(dev).join("ports/1");
        let sub = if HW_COUNTERS.contains(&name) {
            "hw_counters"
        } else {
            "counters"
        };
        fs::read_to_string(port.join(sub).join(name))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Writes a counter of `dev` on `host` (e.g. to make `packet_seq_err` grow).
    pub fn set_counter(&self, host: &str, dev: &str, name: &str, value: u64) {
        let port = self.host(host).dir.join("ib").join(dev).join("ports/1");
        let sub = if HW_COUNTERS.contains(&name) {
            "hw_counters"
        } else {
            "counters"
        };
        if let Ok(mut f) = fs::File::create(port.join(sub).join(name)) {
            let _ = writeln!(f, "{value}");
        }
    }

    fn teardown(&mut self) {
        if let Some(mut cluster) = self.slurm.take() {
            cluster.stop();
        }
        let t = std::time::Instant::now();
        self.stop_lldpd();
        for h in &mut self.hosts {
            if let Some(mut child) = h.keeper.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        trace(&format!("keepers stopped in {:?}", t.elapsed()));
        for ns in self.created_ns.drain(..).rev() {
            sh::kill_netns_processes(&ns);
            sh::run(&["ip", "netns", "del", &ns]);
        }
        trace(&format!("namespaces deleted in {:?}", t.elapsed()));
        for link in self.root_links.drain(..).rev() {
            sh::run(&["ip", "link", "del", &link]);
        }
        trace(&format!("root links deleted in {:?}", t.elapsed()));
        let dir = self.dir.clone();
        let mut last_err = None;
        let gone = sh::wait_for(Duration::from_secs(5), || match fs::remove_dir_all(&dir) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => {
                last_err = Some(e);
                false
            }
        });
        if !gone {
            eprintln!("lab: cannot remove {}: {last_err:?}", dir.display());
        }
        trace(&format!("directory removed in {:?}", t.elapsed()));
    }
}

impl Lab {
    /// Stops every host's lldpd by its pid: SIGTERM (its monitor takes its privilege-separated
    /// child with it), SIGKILL after 5 s, then reaped.
    fn stop_lldpd(&mut self) {
        let running: Vec<Child> = self
            .hosts
            .iter_mut()
            .filter_map(|h| h.lldpd.take())
            .collect();
        for c in &running {
            sh::run(&["kill", "-TERM", &c.id().to_string()]);
        }
        for mut c in running {
            let gone = sh::wait_for(Duration::from_secs(5), || {
                matches!(c.try_wait(), Ok(Some(_)))
            });
            if !gone {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// The parent of `pid` (`/proc/PID/stat`, the field after the command's closing paren).
fn parent_pid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a `lldpcli -f json0 show neighbors` text has a neighbour on `netdev` whose chassis is
/// named `peer`.
fn lldp_heard(json: &str, netdev: &str, peer: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
        return false;
    };
    let interfaces = v["lldp"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|l| l["interface"].as_array().into_iter().flatten());
    interfaces.into_iter().any(|i| {
        i["name"] == netdev
            && i["chassis"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| c["name"].as_array().into_iter().flatten())
                .any(|n| n["value"] == peer)
    })
}

impl Drop for Lab {
    fn drop(&mut self) {
        let t = std::time::Instant::now();
        self.teardown();
        trace(&format!(
            "lab {} torn down in {:?}",
            self.prefix,
            t.elapsed()
        ));
    }
}
