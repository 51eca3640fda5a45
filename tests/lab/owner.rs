//! Which lab left what: every lab directory holds an `owner` marker (the pid and start time of
//! the process that built it) and a `created` manifest (each namespace, root link and daemon the
//! lab created, appended as soon as it exists). Each namespace and root link the lab creates
//! also carries the lab's token (its `lo`'s / its own interface alias), because names, nsfs
//! inodes and interface indexes are all reused by the kernel. A crashed lab's leftovers are
//! removed only when its owner is provably gone, and only the things its manifest names, each
//! checked to still be the very object created (namespace: same inode and token; link: same
//! index and token; process: same start time). A directory without a marker, or whose owner
//! still runs, is never touched: it may be another live lab.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::{sh, space};

const OWNER: &str = "owner";
const CREATED: &str = "created";

/// The start time of a process (`/proc/PID/stat` field 22, clock ticks since boot), if it runs.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `pid` that started at `start` still runs (not a later one with its pid).
pub fn alive(pid: u32, start: u64) -> bool {
    start_time(pid) == Some(start) && !is_zombie(pid)
}

fn is_zombie(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s[s.rfind(')')? + 1..].to_string();
            after.split_whitespace().next().map(|st| st == "Z")
        })
        .unwrap_or(false)
}

/// One thing a lab created, as its manifest line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A named network namespace and the inode of its nsfs file.
    Netns(String, u64),
    /// A link in the root namespace and its interface index.
    Link(String, u32),
    /// A process (daemon) the lab started, by pid and start time.
    Pid(u32, u64),
}

impl Created {
    pub fn line(&self) -> String {
        match self {
            Created::Netns(name, ino) => format!("netns {name} {ino}"),
            Created::Link(name, index) => format!("link {name} {index}"),
            Created::Pid(pid, start) => format!("pid {pid} {start}"),
        }
    }

    fn parse(line: &str) -> Option<Created> {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["netns", name, ino] => Some(Created::Netns(name.to_string(), ino.parse().ok()?)),
            ["link", name, index] => Some(Created::Link(name.to_string(), index.parse().ok()?)),
            ["pid", pid, start] => Some(Created::Pid(pid.parse().ok()?, start.parse().ok()?)),
            _ => None,
        }
    }

    /// Whether this is still the very object created by the lab whose token is `token`.
    pub fn exists(&self, token: &str) -> bool {
        match self {
            Created::Netns(name, ino) => {
                space::ns_inode(&Path::new("/run/netns").join(name)) == Some(*ino)
                    && lo_alias(&["-n", name]).as_deref() == Some(token)
            }
            Created::Link(name, index) => {
                link_index(name) == Some(*index) && link_alias(name).as_deref() == Some(token)
            }
            Created::Pid(pid, start) => alive(*pid, *start),
        }
    }
}

/// The alias of `lo` in a namespace (`ns_args`: `["-n", NAME]`).
pub fn lo_alias(ns_args: &[&str]) -> Option<String> {
    let mut argv = vec!["ip"];
    argv.extend_from_slice(ns_args);
    argv.extend_from_slice(&["-d", "-o", "link", "show", "dev", "lo"]);
    alias_of(&sh::run(&argv))
}

/// The alias of `lo` in the network namespace of process `pid`.
pub fn lo_alias_of_pid(pid: u32) -> Option<String> {
    let net = format!("--net=/proc/{pid}/ns/net");
    alias_of(&sh::run(&[
        "nsenter", &net, "--", "ip", "-d", "-o", "link", "show", "dev", "lo",
    ]))
}

/// The alias of a root-namespace link.
pub fn link_alias(name: &str) -> Option<String> {
    alias_of(&sh::run(&["ip", "-d", "-o", "link", "show", "dev", name]))
}

fn alias_of(out: &std::process::Output) -> Option<String> {
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut words = text.split_whitespace();
    words.find(|w| *w == "alias")?;
    words.next().map(str::to_string)
}

/// The interface index of a root-namespace link.
pub fn link_index(name: &str) -> Option<u32> {
    fs::read_to_string(format!("/sys/class/net/{name}/ifindex"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .or_else(|| {
            // /sys/class/net of this mount namespace may not be the root namespace's.
            let out = sh::run(&["ip", "-o", "link", "show", "dev", name]);
            String::from_utf8_lossy(&out.stdout)
                .split(':')
                .next()
                .and_then(|i| i.trim().parse().ok())
        })
}

/// Marks `dir` as the lab of this process; returns the lab's token (for the aliases of the
/// namespaces and links it creates).
pub fn claim(dir: &Path) -> Result<String, String> {
    let pid = std::process::id();
    let start = start_time(pid).ok_or("cannot read my own start time")?;
    fs::write(dir.join(OWNER), format!("{pid} {start}\n"))
        .map_err(|e| format!("write {}: {e}", dir.join(OWNER).display()))?;
    token(dir).ok_or_else(|| format!("cannot read {}", dir.join(OWNER).display()))
}

/// The token of the lab in `dir`, from its owner marker: `fabricplan-lab:<dir name>:<pid>:<start>`.
pub fn token(dir: &Path) -> Option<String> {
    let (pid, start) = owner(dir)?;
    let name = dir.file_name()?.to_string_lossy().into_owned();
    Some(format!("fabricplan-lab:{name}:{pid}:{start}"))
}

/// Appends one created thing to the lab's manifest.
pub fn record(dir: &Path, what: &Created) {
    let path = dir.join(CREATED);
    let res = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{}", what.line()));
    if let Err(e) = res {
        eprintln!(
            "lab: cannot record {} in {}: {e}",
            what.line(),
            path.display()
        );
    }
}

/// The manifest of a lab directory: everything it recorded as created.
pub fn manifest(dir: &Path) -> Vec<Created> {
    fs::read_to_string(dir.join(CREATED))
        .unwrap_or_default()
        .lines()
        .filter_map(Created::parse)
        .collect()
}

/// The owner of a lab directory, if it has a marker.
fn owner(dir: &Path) -> Option<(u32, u64)> {
    let text = fs::read_to_string(dir.join(OWNER)).ok()?;
    let mut w = text.split_whitespace();
    Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
}

/// Removes the leftovers of every lab under `base` whose owner is gone: exactly what its
/// manifest names (still the same objects), then its directory. Returns what was removed.
pub fn clear_stale(base: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(base) else {
        return removed;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let (Some((pid, start)), Some(token)) = (owner(&dir), token(&dir)) else {
            continue; // no marker: not provably a lab of ours
        };
        if alive(pid, start) {
            continue; // its owner runs: a live lab
        }
        let created = manifest(&dir);
        // Daemons first (so nothing restarts or holds a namespace), then namespaces, then links.
        for c in &created {
            if let Created::Pid(p, _) = c {
                if c.exists(&token) {
                    sh::run(&["kill", "-KILL", &p.to_string()]);
                    removed.push(c.line());
                }
            }
        }
        for c in &created {
            if let Created::Netns(name, _) = c {
                if c.exists(&token) {
                    sh::kill_netns_processes(name);
                    sh::run(&["ip", "netns", "del", name]);
                    removed.push(c.line());
                }
            }
        }
        for c in created.iter().rev() {
            if let Created::Link(name, _) = c {
                if c.exists(&token) {
                    sh::run(&["ip", "link", "del", name]);
                    removed.push(c.line());
                }
            }
        }
        sh::wait_for(Duration::from_secs(5), || {
            fs::remove_dir_all(&dir).is_ok() || !dir.exists()
        });
        removed.push(format!("dir {}", dir.display()));
    }
    removed
}
