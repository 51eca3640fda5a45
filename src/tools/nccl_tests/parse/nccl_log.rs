//! NCCL debug log lines (`NCCL_DEBUG=INFO`): which network transport NCCL really used, RoCE vs
//! native IB, GPUDirect RDMA on/off, the HCAs in use, the NCCL version, `set by environment`
//! echoes and every WARN line.
//!
//! The lines can come from any rank, in any order, behind any launcher prefix, interleaved with
//! the nccl-tests table; [`scan`] therefore looks at every line independently and only combines
//! the evidence at the end.
//!
//! Transport classification (the judgement calls are here, because NCCL silently falls back to TCP
//! sockets and the numbers still look plausible):
//! * per-peer connection lines (`Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA`, old
//!   `Ring 00 : 3 -> 4 [send] via NET/IB/0`) are the strongest evidence: they say what a
//!   connection actually went over;
//! * `Using network IB|Socket|<plugin>` says what a rank selected at init;
//! * `NET/IB : Using [0]dev:1/RoCE ...`, `NET/Socket : Using ...` and `NET/IB : No device found.`
//!   only say what was available.
//!
//! A single rank that fell back to sockets makes the run a socket run: any Socket evidence at the
//! strongest level present wins over IB and sets `mixed_transport`. When per-peer lines exist and
//! none of them goes over NET (P2P/SHM only, e.g. a single node), the transport is `None` even if
//! `Using network IB` was logged, because no byte crossed the network.

use crate::parse::MAX_STORED_NOTES;
use crate::parse::text::push_capped;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the NCCL log lines in a capture say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NcclLog {
    /// `"NET/IB"`, `"NET/Socket"` or `None` (no NET traffic seen, or a non-IB plugin: see `net_name`).
    pub transport: Option<String>,
    /// Both IB and Socket were seen at the deciding evidence level (reported as `NET/Socket`).
    pub mixed_transport: bool,
    /// The network name NCCL chose or used (`IB`, `Socket`, `IBext_v8`, `AWS Libfabric`, ...).
    pub net_name: Option<String>,
    /// Per-peer lines were seen and all of them were P2P/SHM (no network crossed).
    pub intra_node_only: bool,
    /// `true` if any device NCCL listed on NET/IB is RoCE, `false` if all are native IB.
    pub roce: Option<bool>,
    /// GPUDirect RDMA: `true` only if every NET/IB connection and every `GDR <n>` flag says on.
    pub gdr: Option<bool>,
    /// Devices from `NET/IB : Using [0]dev:port/...`, e.g. `rocep1s0f0:1`, distinct, in order.
    pub net_devices: Vec<String>,
    /// Interfaces from `NET/Socket : Using [0]eth0:10.0.0.1<0>`, e.g. `eth0`.
    pub socket_devices: Vec<String>,
    /// `NET/IB : No device found.` or libibverbs could not be opened.
    pub ib_unavailable: bool,
    /// e.g. `2.29.7+cuda13.0`.
    pub nccl_version: Option<String>,
    /// `NCCL_X set by environment to Y.` echoes (last value wins).
    pub env: BTreeMap<String, String>,
    /// Every `NCCL WARN` line, launcher prefix removed.
    pub warnings: Vec<String>,
    /// Number of NCCL INFO/WARN/TRACE lines seen.
    pub lines: usize,
    /// Ranks of the communicator, from `nranks N` (`comm ... rank R nranks N ... Init COMPLETE`)
    /// or `nRanks N` (`ncclCommInitRank ... Init START`) lines; the largest seen.
    pub nranks: Option<u64>,
    /// Hosts that printed NCCL debug lines (`<host>:<pid>:<tid> [<dev>] NCCL ...`), in order.
    pub hosts: Vec<String>,
    /// Hosts whose own lines show why the run fell back: `NET/IB : No device found` there (the
    /// cause: the other ranks then follow it onto sockets); when no host says so, the hosts
    /// whose lines chose sockets (`Using network Socket`, a connection `via NET/Socket`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback_hosts: Vec<String>,
    /// Warnings, devices and env echoes read past the caps (not stored).
    pub not_stored: usize,
}

/// Remove what launchers and pastes put in front of a line (Open MPI `--tag-output`, `[155] `
/// rank tags, `HH:MM:SS LEVEL| ` harness stamps, markdown quotes and indents) and trailing
/// whitespace / backticks.
pub(crate) fn clean(line: &str) -> &str {
    let mut s = crate::parse::text::clean_line(line)
        .trim_end()
        .trim_end_matches('`')
        .trim_end();
    loop {
        let before = s;
        s = crate::parse::text::clean_line(s.trim_start());
        if let Some(rest) = strip_rank_tag(s) {
            s = rest;
        }
        if let Some(rest) = strip_clock_stamp(s) {
            s = rest;
        }
        if s == before {
            return s;
        }
    }
}

/// `[155] rest` -> `rest` (only digits inside the brackets, so NCCL's `[2025-03-12 10:00:00] `
/// timestamps and `[0]` device tags that follow a host stay).
fn strip_rank_tag(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('[')?;
    let end = inner.find(']')?;
    let digits = inner.get(..end)?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let rest = inner.get(end + 1..)?;
    rest.strip_prefix(' ').or_else(|| rest.strip_prefix('\t'))
}

/// `12:34:56 DEBUG| rest` -> `rest`.
fn strip_clock_stamp(s: &str) -> Option<&str> {
    let bar = s.find("| ")?;
    let head = s.get(..bar)?;
    let mut parts = head.split_whitespace();
    let clock = parts.next()?;
    let level = parts.next()?;
    if parts.next().is_some() || level.is_empty() || !level.chars().all(|c| c.is_ascii_alphabetic())
    {
        return None;
    }
    let fields: Vec<&str> = clock.split(':').collect();
    if fields.len() != 3
        || !fields
            .iter()
            .all(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit() || c == '.'))
    {
        return None;
    }
    s.get(bar + 2..)
}

/// The level and message of an NCCL debug line, whatever precedes `NCCL INFO` etc.
pub(crate) fn nccl_message(line: &str) -> Option<(&'static str, &str)> {
    for (tag, level) in [
        ("NCCL INFO ", "INFO"),
        ("NCCL WARN ", "WARN"),
        ("NCCL TRACE ", "TRACE"),
    ] {
        if let Some(pos) = line.find(tag) {
            return line.get(pos + tag.len()..).map(|m| (level, m.trim()));
        }
    }
    if line.ends_with("NCCL INFO") || line.ends_with("NCCL WARN") {
        return Some(("INFO", ""));
    }
    None
}

/// `NCCL version 2.29.7+cuda13.0` anywhere in a line (bare or inside an INFO message).
pub(crate) fn version_in(line: &str) -> Option<String> {
    let pos = line.find("NCCL version ")?;
    let tok = line
        .get(pos + "NCCL version ".len()..)?
        .split_whitespace()
        .next()?;
    if tok.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        Some(tok.to_string())
    } else {
        None
    }
}

/// `KEY set by environment to VALUE.` -> (KEY, VALUE).
pub(crate) fn env_echo(msg: &str) -> Option<(String, String)> {
    let pos = msg.find(" set by environment to ")?;
    let key = msg.get(..pos)?.split_whitespace().last()?;
    let value = msg.get(pos + " set by environment to ".len()..)?.trim();
    let value = value.strip_suffix('.').unwrap_or(value);
    if key.is_empty() {
        return None;
    }
    Some((key.to_string(), value.to_string()))
}

#[derive(Default)]
struct Evidence {
    peer_ib: bool,
    peer_socket: bool,
    peer_other_net: Option<String>,
    peer_local: bool,
    using_ib: bool,
    using_socket: bool,
    using_other: Option<String>,
    listed_ib: bool,
    listed_socket: bool,
    gdr_on: bool,
    gdr_off: bool,
}

fn is_ib_name(name: &str) -> bool {
    // the internal transport is "IB"; IB plugins are named IBext, IBext_v8, ...
    name.starts_with("IB")
}

/// Scan every line of `text` for NCCL log evidence.
pub fn scan(text: &str) -> NcclLog {
    let mut sc = LogScanner::default();
    for raw in text.lines() {
        sc.line(clean(raw));
    }
    sc.finish()
}

/// Line-by-line reader behind [`scan`]; [`super`] feeds it the lines it reads.
#[derive(Default)]
pub struct LogScanner {
    log: NcclLog,
    ev: Evidence,
    /// Ranks a comm said it has (`nranks N` / `nRanks N`), largest seen.
    nranks: Option<u64>,
    hosts: Vec<String>,
    /// Hosts that said `NET/IB : No device found`, and hosts that went over sockets.
    no_device: Vec<String>,
    on_sockets: Vec<String>,
}

impl LogScanner {
    /// Read one line, already passed through [`clean`]; `true` if it is an NCCL debug line.
    pub fn line(&mut self, line: &str) -> bool {
        if line.len() > crate::parse::MAX_LINE_BYTES {
            return false;
        }
        let log = &mut self.log;
        if log.nccl_version.is_none() {
            if let Some(v) = version_in(line) {
                log.nccl_version = Some(v);
            }
        }
        let Some((level, msg)) = nccl_message(line) else {
            return false;
        };
        log.lines += 1;
        if level == "WARN" {
            push_capped(
                &mut log.warnings,
                line.trim().to_string(),
                MAX_STORED_NOTES,
                &mut log.not_stored,
            );
        }
        if let Some((k, v)) = env_echo(msg) {
            if log.env.len() < MAX_STORED_NOTES || log.env.contains_key(&k) {
                log.env.insert(k, v);
            } else {
                log.not_stored = log.not_stored.saturating_add(1);
            }
        }
        if let Some(n) = nranks_in(msg) {
            self.nranks = Some(self.nranks.map_or(n, |m| m.max(n)));
        }
        if let Some(h) = host_of(line) {
            let list = if msg.contains("No device found") {
                Some(&mut self.no_device)
            } else if falls_back(msg) {
                Some(&mut self.on_sockets)
            } else {
                None
            };
            if let Some(list) = list
                && !list.iter().any(|x| x == h)
            {
                push_capped(list, h.to_string(), MAX_STORED_NOTES, &mut log.not_stored);
            }
        }
        if let Some(h) = host_of(line) {
            if !self.hosts.iter().any(|x| x == h) {
                push_capped(
                    &mut self.hosts,
                    h.to_string(),
                    MAX_STORED_NOTES,
                    &mut log.not_stored,
                );
            }
        }
        read_message(msg, log, &mut self.ev);
        true
    }

    /// The evidence combined, once every line was read.
    pub fn finish(mut self) -> NcclLog {
        decide(&mut self.log, &self.ev);
        self.log.nranks = self.nranks;
        self.log.hosts = self.hosts;
        self.log.fallback_hosts = if self.no_device.is_empty() {
            self.on_sockets
        } else {
            self.no_device
        };
        self.log
    }
}

/// Whether a message shows its rank without the IB network: sockets chosen, or a connection
/// over sockets. (`NET/Socket : Using IF` is not: NCCL names its bootstrap interface so on
/// every rank, IB or not.)
fn falls_back(msg: &str) -> bool {
    msg.starts_with("Using network Socket") || msg.contains("via NET/Socket")
}

/// `nranks N` in `comm 0x.. rank R nranks N ... - Init COMPLETE` (and `Destroy COMPLETE`), or
/// `nRanks N` in `ncclCommInitRank comm 0x.. rank R nRanks N ...` / `Init START` lines.
fn nranks_in(msg: &str) -> Option<u64> {
    let mut words = msg.split_whitespace();
    while let Some(w) = words.next() {
        if w.eq_ignore_ascii_case("nranks") {
            let n = words.next()?.trim_end_matches([',', '.']);
            return n.parse().ok().filter(|n| *n > 0);
        }
    }
    None
}

/// The host of an NCCL debug line: `[<stamp>] <host>:<pid>:<tid> [<dev>] NCCL ...`.
fn host_of(line: &str) -> Option<&str> {
    let mut s = line.trim_start();
    // NCCL's own `[2025-03-12 10:00:00] ` timestamp
    if s.starts_with('[')
        && s.get(1..5)
            .is_some_and(|y| y.bytes().all(|b| b.is_ascii_digit()))
    {
        s = s.split_once("] ").map(|(_, r)| r)?;
    }
    let head = s.split_whitespace().next()?;
    let mut parts = head.split(':');
    let host = parts.next()?;
    let pid = parts.next()?;
    let tid = parts.next()?;
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    (host_ok && digits(pid) && digits(tid) && parts.next().is_none()).then_some(host)
}

/// One NCCL message (the part after the rank prefix): what it says about the transport, GDR,
/// the devices in use, goes into `log` and `ev`.
fn read_message(msg: &str, log: &mut NcclLog, ev: &mut Evidence) {
    // per-peer connection lines
    if (msg.starts_with("Channel ") || msg.starts_with("Ring ")) && msg.contains(" via ") {
        if let Some(via) = msg.split(" via ").nth(1) {
            read_peer_via(via.trim(), log, ev);
        }
        return;
    }
    if let Some(name) = msg.strip_prefix("Using network ") {
        let name = name.trim();
        if is_ib_name(name) {
            ev.using_ib = true;
        } else if name == "Socket" {
            ev.using_socket = true;
        } else if !name.is_empty() {
            ev.using_other = Some(name.to_string());
        }
        if log.net_name.is_none() && !name.is_empty() {
            log.net_name = Some(name.to_string());
        }
        return;
    }
    if let Some(pos) = msg.find("GDR ") {
        if msg.starts_with("Connected all rings") {
            match msg.get(pos + 4..).and_then(|r| r.split_whitespace().next()) {
                Some("0") => ev.gdr_off = true,
                Some("1") => ev.gdr_on = true,
                _ => {}
            }
        }
    }
    if msg.contains("GPU Direct RDMA Disabled") {
        ev.gdr_off = true;
    } else if msg.contains("GPU Direct RDMA Enabled") {
        ev.gdr_on = true;
    }
    let mut compact = msg.chars().filter(|c| !c.is_whitespace());
    let no_device = "NET/IB:Nodevicefound"
        .chars()
        .all(|want| compact.next() == Some(want));
    if no_device || msg.contains("Failed to open libibverbs") {
        log.ib_unavailable = true;
        return;
    }
    read_device_lists(msg, log, ev);
}

/// The transport after ` via ` on a per-peer connection line (`NET/IB/0/GDRDMA`, `NET/Socket/1`,
/// `P2P/IPC`, ...): which network the peers talk over and whether GPUDirect RDMA is on.
fn read_peer_via(via: &str, log: &mut NcclLog, ev: &mut Evidence) {
    if let Some(net) = via.strip_prefix("NET/") {
        let name = net.split('/').next().unwrap_or("");
        if is_ib_name(name) {
            ev.peer_ib = true;
            if via.contains("/GDRDMA") {
                ev.gdr_on = true;
            } else {
                ev.gdr_off = true;
            }
        } else if name == "Socket" {
            ev.peer_socket = true;
        } else if !name.is_empty() {
            ev.peer_other_net = Some(name.to_string());
            if via.contains("/GDRDMA") {
                ev.gdr_on = true;
            }
        }
        if log.net_name.is_none() && !name.is_empty() {
            log.net_name = Some(name.to_string());
        }
    } else if via.starts_with("P2P") || via.starts_with("SHM") || via.starts_with("NVLS") {
        ev.peer_local = true;
    }
}

/// The `NET/IB : Using ...` and `NET/Socket : Using ...` lines: the HCAs (and whether they are
/// RoCE or IB) and the socket interfaces NCCL opened.
fn read_device_lists(msg: &str, log: &mut NcclLog, ev: &mut Evidence) {
    if let Some(list) = device_list(msg, "NET/IB") {
        ev.listed_ib = true;
        for (dev, kind) in list {
            if kind.eq_ignore_ascii_case("RoCE") {
                log.roce = Some(true);
            } else if kind.eq_ignore_ascii_case("IB") && log.roce.is_none() {
                log.roce = Some(false);
            }
            if !log.net_devices.contains(&dev) {
                push_capped(
                    &mut log.net_devices,
                    dev,
                    MAX_STORED_NOTES,
                    &mut log.not_stored,
                );
            }
        }
        return;
    }
    if let Some(list) = device_list(msg, "NET/Socket") {
        ev.listed_socket = true;
        for (dev, _) in list {
            let iface = dev.split(':').next().unwrap_or("").to_string();
            if !iface.is_empty() && !log.socket_devices.contains(&iface) {
                push_capped(
                    &mut log.socket_devices,
                    iface,
                    MAX_STORED_NOTES,
                    &mut log.not_stored,
                );
            }
        }
    }
}

/// `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/RoCE [RO]; OOB eth0:10.0.0.1<0>` ->
/// `[("mlx5_0:1", "IB"), ("mlx5_2:1", "RoCE")]`. Socket lists give `("eth0:10.0.0.1<0>", "")`.
fn device_list(msg: &str, net: &str) -> Option<Vec<(String, String)>> {
    let rest = msg.strip_prefix(net)?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix("Using")?;
    let rest = rest.split("; OOB").next().unwrap_or(rest);
    let rest = rest.split(";OOB").next().unwrap_or(rest);
    let mut out = Vec::new();
    for tok in rest.split_whitespace() {
        // "[0]mlx5_0:1/RoCE" ; skip "[RO]" and anything not starting with "[<digits>]"
        let Some(inner) = tok.strip_prefix('[') else {
            continue;
        };
        let Some(end) = inner.find(']') else { continue };
        let idx = inner.get(..end).unwrap_or("");
        if idx.is_empty() || !idx.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let body = inner.get(end + 1..).unwrap_or("");
        if body.is_empty() {
            continue;
        }
        let mut parts = body.splitn(2, '/');
        let dev = parts.next().unwrap_or("").to_string();
        let kind = parts
            .next()
            .unwrap_or("")
            .split(['/', ':'])
            .next()
            .unwrap_or("")
            .trim_end_matches(';')
            .to_string();
        out.push((dev, kind));
    }
    Some(out)
}

fn decide(log: &mut NcclLog, ev: &Evidence) {
    let ib = "NET/IB".to_string();
    let socket = "NET/Socket".to_string();
    if ev.peer_ib || ev.peer_socket || ev.peer_other_net.is_some() {
        // Connection lines exist for the network: they decide. A rank that selected Socket at
        // init is still a fallback even if its own connection lines were not captured.
        let any_socket = ev.peer_socket || ev.using_socket;
        let any_ib = ev.peer_ib;
        if any_socket {
            log.transport = Some(socket);
            log.mixed_transport = any_ib;
        } else if any_ib {
            log.transport = Some(ib);
        }
    } else if ev.peer_local {
        // every connection we saw stayed inside the node
        log.intra_node_only = true;
    } else if ev.using_socket || ev.using_ib || ev.using_other.is_some() {
        if ev.using_socket {
            log.transport = Some(socket);
            log.mixed_transport = ev.using_ib;
        } else if ev.using_ib {
            log.transport = Some(ib);
        }
    } else if ev.listed_ib {
        log.transport = Some(ib);
    } else if ev.listed_socket || log.ib_unavailable {
        log.transport = Some(socket);
    }
    if log.transport.as_deref() == Some("NET/Socket") && log.net_name.is_none() {
        log.net_name = Some("Socket".into());
    }
    log.gdr = match (ev.gdr_on, ev.gdr_off) {
        (_, true) => Some(false),
        (true, false) => Some(true),
        (false, false) => None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ib_roce_gdr_off() {
        let t = "spark-a:1:2 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [RO]; OOB enp1s0f0np0:10.0.0.1<0>\n\
                 spark-a:1:2 [0] NCCL INFO Using network IB\n\
                 spark-a:1:3 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
                 spark-a:1:3 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0\n\
                 spark-a:1:3 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.\n";
        let l = scan(t);
        assert_eq!(l.transport.as_deref(), Some("NET/IB"));
        assert_eq!(l.roce, Some(true));
        assert_eq!(l.gdr, Some(false));
        assert_eq!(l.net_devices, vec!["rocep1s0f0:1"]);
        assert_eq!(
            l.env.get("NCCL_IB_GID_INDEX").map(String::as_str),
            Some("3")
        );
    }

    #[test]
    fn socket_on_one_rank_is_a_fallback() {
        let t = "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n\
                 b:2:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n";
        let l = scan(t);
        assert_eq!(l.transport.as_deref(), Some("NET/Socket"));
        assert!(l.mixed_transport);
    }

    #[test]
    fn p2p_only_is_not_net() {
        let t = "a:1:1 [0] NCCL INFO Using network IB\n\
                 a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n";
        let l = scan(t);
        assert_eq!(l.transport, None);
        assert!(l.intra_node_only);
    }

    #[test]
    fn prefixes_and_versions() {
        assert_eq!(clean("[1,0]<stdout>:[155] x"), "x");
        assert_eq!(
            clean("12:00:01 DEBUG| NCCL version 2.18.1+cuda12.1"),
            "NCCL version 2.18.1+cuda12.1"
        );
        assert_eq!(
            clean("[2025-03-12 10:00:00] h:1:1 [0] x"),
            "[2025-03-12 10:00:00] h:1:1 [0] x"
        );
        assert_eq!(
            version_in("h:1:1 [0] NCCL INFO NCCL version 2.29.7+cuda13.0").as_deref(),
            Some("2.29.7+cuda13.0")
        );
        assert_eq!(version_in("# nccl-tests version 2.20.0"), None);
    }

    #[test]
    fn old_ring_lines() {
        let t = "h:1:1 [3] NCCL INFO Ring 00 : 3 -> 4 [send] via NET/IB/0/GDRDMA\n";
        let l = scan(t);
        assert_eq!(l.transport.as_deref(), Some("NET/IB"));
        assert_eq!(l.gdr, Some(true));
    }
}
