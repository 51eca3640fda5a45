//! A real Slurm cluster in a lab ([`super::LabSpec::slurm`]): one `munged`, one `slurmctld`, one
//! `slurmd` per lab host, all started by the lab and stopped by it (exactly the pids it started).
//!
//! Where things run:
//! * `munged` (own key from `mungekey -c`, own socket, pid file, log and seed in the lab's
//!   `slurm/munge`, socket directory mode 711) runs in the root namespace and serves every host:
//!   network namespaces do not isolate filesystem sockets. slurm.conf names it with
//!   `AuthInfo=socket=PATH`.
//! * `slurmctld -D -i` runs in the root network namespace under `unshare --uts --mount`: its
//!   hostname is `SlurmctldHost` (it refuses to start otherwise) and it sees the lab's
//!   `/etc/hosts` and an `nsswitch.conf` with `hosts: files`. Nodes and clients reach it on the
//!   management bridge address, at a port free on this machine.
//! * each `slurmd -D -N HOST` is started with `nsenter` into the namespaces of the host's keeper
//!   (network, mount, UTS: what its sshd sees), so a step runs in the host's network namespace
//!   with its hostname, its `/sys/class/infiniband`, the stand-ins on `/usr/local/bin`, its
//!   private `/tmp` and the lab's `/etc/hosts`.
//! * clients (`srun`, `sinfo`, ...) run in the root network namespace, under `unshare --mount`
//!   with the same hosts view, with `SLURM_CONF` set: without it Slurm falls back to a DNS SRV
//!   lookup ("configless"), and no lab name is ever resolved through DNS.
//!
//! Readiness is polled (munge socket, controller port, every node `idle` in `sinfo`), never
//! slept for.

use std::collections::BTreeMap;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::owner::{self, Created};
use super::sh;

/// The one partition of a lab cluster, holding every host.
pub const PARTITION: &str = "lab";

/// PATH for the daemons (the steps get srun's environment, not this).
const DAEMON_PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// Runs `"$@"` after bind-mounting `$1` on /etc/hosts and `$2` on /etc/nsswitch.conf (inside a
/// private mount namespace made by the caller's `unshare --mount`).
const VIEW_SCRIPT: &str = "mount --bind \"$1\" /etc/hosts && mount --bind \"$2\" /etc/nsswitch.conf && shift 2 && exec \"$@\"";

/// A lab host as the cluster sees it.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub addr: Ipv4Addr,
    /// The process holding the host's network, mount and UTS namespaces.
    pub keeper_pid: u32,
}

/// The lab's hosts view: files bind-mounted over /etc/hosts and /etc/nsswitch.conf.
#[derive(Debug, Clone)]
pub struct View {
    pub hosts: PathBuf,
    pub nsswitch: PathBuf,
}

impl View {
    /// `argv` in a private mount namespace that sees the lab's hosts files (same network
    /// namespace as the caller).
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut c = Command::new("unshare");
        c.args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            VIEW_SCRIPT,
            "sh",
        ])
        .arg(&self.hosts)
        .arg(&self.nsswitch)
        .args(argv);
        c
    }
}

/// A running cluster. [`Cluster::stop`] (called by the lab's teardown) ends it.
pub struct Cluster {
    dir: PathBuf,
    /// The lab directory (its manifest records every daemon started).
    lab_dir: PathBuf,
    view: View,
    pub name: String,
    /// `SlurmctldHost`: the controller's hostname, in the lab's /etc/hosts.
    pub ctl_host: String,
    pub ctl_addr: Ipv4Addr,
    pub ctld_port: u16,
    pub slurmd_port: u16,
    nodes: Vec<Node>,
    munged: Option<Child>,
    slurmctld: Option<Child>,
    /// Processes slurmctld forked (slurmscriptd): (pid, start time).
    ctld_children: Vec<(u32, u64)>,
    slurmd: Mutex<BTreeMap<String, Child>>,
}

/// A controller port (and the slurmd port after it) not listening on this machine.
pub fn choose_ports(listening: &std::collections::BTreeSet<u16>) -> Result<(u16, u16), String> {
    std::iter::once(6817u16)
        .chain((0..200u16).map(|k| 16817 + 10 * k))
        .find(|p| !listening.contains(p) && !listening.contains(&(p + 1)))
        .map(|p| (p, p + 1))
        .ok_or_else(|| "no free port pair for slurmctld/slurmd".to_string())
}

impl Cluster {
    /// Describes the cluster (nothing started yet: see [`Cluster::start`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lab_dir: &Path,
        view: View,
        name: &str,
        ctl_host: &str,
        ctl_addr: Ipv4Addr,
        ports: (u16, u16),
        nodes: Vec<Node>,
    ) -> Cluster {
        Cluster {
            dir: lab_dir.join("slurm"),
            lab_dir: lab_dir.to_path_buf(),
            view,
            name: name.to_string(),
            ctl_host: ctl_host.to_string(),
            ctl_addr,
            ctld_port: ports.0,
            slurmd_port: ports.1,
            nodes,
            munged: None,
            slurmctld: None,
            ctld_children: Vec::new(),
            slurmd: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn conf_path(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    /// The environment a Slurm client needs.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(
            "SLURM_CONF".to_string(),
            self.conf_path().display().to_string(),
        )]
    }

    /// A Slurm client (or anything that runs one) in the root network namespace with the lab's
    /// hosts view and [`Cluster::env`].
    pub fn client(&self, argv: &[&str]) -> Command {
        let mut c = self.view.command(argv);
        c.envs(self.env());
        c
    }

    /// Runs a client to completion (stdin from /dev/null).
    pub fn run(&self, argv: &[&str]) -> Output {
        match self.client(argv).stdin(Stdio::null()).output() {
            Ok(out) => out,
            Err(e) => sh::failed(&format!("cannot run {}: {e}", argv.join(" "))),
        }
    }

    /// Writes the key, slurm.conf and cgroup.conf, then starts munged, slurmctld and every
    /// slurmd, and waits until every node is idle.
    pub fn start(&mut self) -> Result<(), String> {
        let t = Instant::now();
        self.write_files()?;
        self.start_munged()?;
        super::trace(&format!("munged up after {:?}", t.elapsed()));
        self.start_slurmctld()?;
        super::trace(&format!("slurmctld up after {:?}", t.elapsed()));
        let names: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        for n in &names {
            self.spawn_slurmd(n)?;
        }
        self.wait_nodes(&names, Duration::from_secs(30), |state| state == "idle")?;
        super::trace(&format!("slurm nodes idle after {:?}", t.elapsed()));
        Ok(())
    }

    fn write_files(&self) -> Result<(), String> {
        let munge = self.dir.join("munge");
        let ctld = self.dir.join("ctld");
        for d in [&munge, &ctld.join("state")] {
            fs::create_dir_all(d).map_err(|e| format!("mkdir {}: {e}", d.display()))?;
        }
        fs::set_permissions(&munge, fs::Permissions::from_mode(0o711))
            .map_err(|e| format!("chmod {}: {e}", munge.display()))?;
        for n in &self.nodes {
            let nd = self.dir.join("nodes").join(&n.name);
            for sub in ["spool", "tmp"] {
                fs::create_dir_all(nd.join(sub))
                    .map_err(|e| format!("mkdir {}: {e}", nd.display()))?;
            }
        }
        sh::run_ok(&[
            "mungekey",
            "--create",
            "--keyfile",
            &munge.join("munge.key").display().to_string(),
        ])?;
        let d = self.dir.display();
        let mut conf = format!(
            "# slurm.conf of one fabricplan lab (written by tests/lab/slurm.rs)\n\
             ClusterName={name}\n\
             SlurmctldHost={ctl}({addr})\n\
             SlurmctldPort={cport}\n\
             SlurmdPort={dport}\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={d}/munge/munge.sock\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             StateSaveLocation={d}/ctld/state\n\
             SlurmctldPidFile={d}/ctld/slurmctld.pid\n\
             SlurmctldLogFile={d}/ctld/slurmctld.log\n\
             SlurmdSpoolDir={d}/nodes/%n/spool\n\
             SlurmdPidFile={d}/nodes/%n/slurmd.pid\n\
             SlurmdLogFile={d}/nodes/%n/slurmd.log\n\
             TmpFS={d}/nodes/%n/tmp\n\
             SlurmdParameters=config_overrides\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\n\
             SwitchType=switch/none\n\
             MpiDefault=none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             ReturnToService=2\n\
             SlurmdTimeout=10\n\
             MessageTimeout=5\n\
             KillWait=5\n\
             MailProg=/bin/true\n",
            name = self.name,
            ctl = self.ctl_host,
            addr = self.ctl_addr,
            cport = self.ctld_port,
            dport = self.slurmd_port,
        );
        for n in &self.nodes {
            conf.push_str(&format!(
                "NodeName={0} NodeAddr={1} NodeHostname={0} CPUs=2 RealMemory=1000 State=UNKNOWN\n",
                n.name, n.addr
            ));
        }
        let all: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        conf.push_str(&format!(
            "PartitionName={PARTITION} Nodes={} Default=YES MaxTime=INFINITE State=UP\n",
            all.join(",")
        ));
        fs::write(self.conf_path(), conf).map_err(|e| format!("write slurm.conf: {e}"))?;
        // slurmd 22.05 always loads a cgroup plugin; the hosts' /sys was remounted by `ip netns
        // exec` (no cgroup hierarchy under it), where v1 loads and stays unused.
        fs::write(self.dir.join("cgroup.conf"), "CgroupPlugin=cgroup/v1\n")
            .map_err(|e| format!("write cgroup.conf: {e}"))
    }

    fn record(&self, pid: u32) {
        if let Some(start) = owner::start_time(pid) {
            owner::record(&self.lab_dir, &Created::Pid(pid, start));
        }
    }

    fn log_file(&self, name: &str) -> Result<fs::File, String> {
        let path = self.dir.join(name);
        fs::File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))
    }

    fn start_munged(&mut self) -> Result<(), String> {
        let m = self.dir.join("munge");
        let p = |f: &str| m.join(f).display().to_string();
        let child = Command::new("munged")
            .args([
                "--foreground",
                "--force",
                &format!("--socket={}", p("munge.sock")),
                &format!("--origin={}", self.ctl_addr),
                &format!("--key-file={}", p("munge.key")),
                &format!("--log-file={}", p("munged.log")),
                &format!("--pid-file={}", p("munged.pid")),
                &format!("--seed-file={}", p("munged.seed")),
                "--num-threads=2",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(self.log_file("munge/munged.stderr")?)
            .spawn()
            .map_err(|e| format!("spawn munged: {e}"))?;
        self.record(child.id());
        self.munged = Some(child);
        let sock = m.join("munge.sock");
        if !sh::wait_for(Duration::from_secs(10), || {
            UnixStream::connect(&sock).is_ok()
        }) {
            return Err(format!(
                "munged did not come up: {}",
                tail(&m.join("munged.stderr")) + &tail(&m.join("munged.log"))
            ));
        }
        Ok(())
    }

    fn start_slurmctld(&mut self) -> Result<(), String> {
        let script = format!(
            "hostname {} && mount --bind \"$1\" /etc/hosts && mount --bind \"$2\" /etc/nsswitch.conf && exec slurmctld -D -i",
            self.ctl_host
        );
        let child = Command::new("unshare")
            .args([
                "--uts",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                &script,
                "sh",
            ])
            .arg(&self.view.hosts)
            .arg(&self.view.nsswitch)
            .env_clear()
            .env("PATH", DAEMON_PATH)
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(self.log_file("ctld/stderr.log")?)
            .spawn()
            .map_err(|e| format!("spawn slurmctld: {e}"))?;
        let pid = child.id();
        self.record(pid);
        self.slurmctld = Some(child);
        let addr = SocketAddr::from((self.ctl_addr, self.ctld_port));
        let up = sh::wait_for(Duration::from_secs(15), || {
            TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        });
        if !up {
            return Err(format!(
                "slurmctld did not listen on {addr}: {}",
                tail(&self.dir.join("ctld/stderr.log"))
            ));
        }
        // slurmscriptd, forked at start: started by us, so stopped by us.
        self.ctld_children = children_of(pid);
        for (child, start) in &self.ctld_children {
            owner::record(&self.lab_dir, &Created::Pid(*child, *start));
        }
        Ok(())
    }

    fn node(&self, name: &str) -> Result<&Node, String> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| format!("no slurm node {name} in the lab"))
    }

    fn spawn_slurmd(&self, name: &str) -> Result<(), String> {
        let node = self.node(name)?;
        let log = self.log_file(&format!("nodes/{name}/stderr.log"))?;
        let child = Command::new("nsenter")
            .args([
                "-t",
                &node.keeper_pid.to_string(),
                "-n",
                "-m",
                "-u",
                "--",
                "slurmd",
                "-D",
                "-N",
                name,
            ])
            .env_clear()
            .env("PATH", DAEMON_PATH)
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawn slurmd of {name}: {e}"))?;
        self.record(child.id());
        let mut map = self.slurmd.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut old) = map.insert(name.to_string(), child) {
            let _ = old.kill();
            let _ = old.wait();
        }
        Ok(())
    }

    /// The pid of a host's slurmd, if the lab started one that still runs.
    pub fn slurmd_pid(&self, name: &str) -> Option<u32> {
        let mut map = self.slurmd.lock().unwrap_or_else(|e| e.into_inner());
        let child = map.get_mut(name)?;
        match child.try_wait() {
            Ok(None) => Some(child.id()),
            _ => None,
        }
    }

    /// Every daemon pid the cluster runs now (munged, slurmctld and its children, slurmd's).
    pub fn daemon_pids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.munged.iter().map(Child::id).collect();
        v.extend(self.slurmctld.iter().map(Child::id));
        v.extend(self.ctld_children.iter().map(|(p, _)| *p));
        let names: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        v.extend(names.iter().filter_map(|n| self.slurmd_pid(n)));
        v
    }

    /// Kills the host's slurmd with SIGKILL (a crash: the controller is not told) and reaps it.
    pub fn stop_slurmd(&self, name: &str) -> Result<(), String> {
        self.node(name)?;
        let child = self
            .slurmd
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        match child {
            Some(mut c) => {
                let _ = c.kill();
                c.wait()
                    .map_err(|e| format!("wait slurmd of {name}: {e}"))?;
                Ok(())
            }
            None => Err(format!("slurmd of {name} is not running")),
        }
    }

    /// Starts the host's slurmd again and waits until the controller hears from it (node
    /// state without `*`, not down).
    pub fn start_slurmd(&self, name: &str) -> Result<(), String> {
        self.spawn_slurmd(name)?;
        self.wait_nodes(&[name.to_string()], Duration::from_secs(30), |state| {
            !state.ends_with('*') && !state.starts_with("down") && state != "unknown"
        })
    }

    /// `sinfo`'s state of one node (`idle`, `alloc`, `idle*`, `down*`, `drained`, ...).
    pub fn sinfo_state(&self, name: &str) -> String {
        let out = self.run(&["sinfo", "-h", "-N", "-n", name, "-o", "%T"]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Waits until `ok` holds for the `sinfo` state of every node in `names`.
    fn wait_nodes(
        &self,
        names: &[String],
        timeout: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> Result<(), String> {
        let mut last = String::new();
        let ready = sh::wait_for(timeout, || {
            let out = self.run(&["sinfo", "-h", "-N", "-o", "%N %T"]);
            last = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            let states: BTreeMap<&str, &str> =
                last.lines().filter_map(|l| l.split_once(' ')).collect();
            names
                .iter()
                .all(|n| states.get(n.as_str()).is_some_and(|s| ok(s)))
        });
        if ready {
            return Ok(());
        }
        let logs: String = names
            .iter()
            .map(|n| {
                let nd = self.dir.join("nodes").join(n);
                format!(
                    "\n--- {n}: {}{}",
                    tail(&nd.join("stderr.log")),
                    tail(&nd.join("slurmd.log"))
                )
            })
            .collect();
        Err(format!(
            "slurm nodes {names:?} not ready after {timeout:?}; sinfo: {last}{logs}\n--- slurmctld: {}",
            tail(&self.dir.join("ctld/slurmctld.log"))
        ))
    }

    /// Stops everything the cluster started: every slurmd and slurmctld get SIGTERM at once
    /// (a slurmd takes ~1.5 s to go), then munged; what is still there after a bound gets
    /// SIGKILL. Only the pids this cluster started are signalled.
    pub fn stop(&mut self) {
        let t = Instant::now();
        let mut slurmd: Vec<Child> =
            std::mem::take(&mut *self.slurmd.lock().unwrap_or_else(|e| e.into_inner()))
                .into_values()
                .collect();
        let mut daemons: Vec<&mut Child> = slurmd.iter_mut().collect();
        daemons.extend(self.slurmctld.as_mut());
        stop_all(daemons, Duration::from_secs(5));
        for (pid, start) in self.ctld_children.drain(..) {
            if owner::alive(pid, start) {
                signal(pid, libc::SIGKILL);
            }
        }
        self.slurmctld = None;
        stop_all(
            self.munged.as_mut().into_iter().collect(),
            Duration::from_secs(5),
        );
        self.munged = None;
        super::trace(&format!("slurm stopped in {:?}", t.elapsed()));
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid this lab started and has not reaped yet (a zombie at worst).
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// SIGTERM to every child, SIGKILL to those still running after `grace`; all reaped.
fn stop_all(mut children: Vec<&mut Child>, grace: Duration) {
    let names: Vec<String> = children.iter().map(|c| sh::cmdline(c.id())).collect();
    for c in children.iter_mut() {
        if let Ok(None) = c.try_wait() {
            signal(c.id(), libc::SIGTERM);
        }
    }
    let t = Instant::now();
    let mut exited: Vec<Option<Duration>> = vec![None; children.len()];
    sh::wait_for(grace, || {
        for (c, when) in children.iter_mut().zip(exited.iter_mut()) {
            if when.is_none() && !matches!(c.try_wait(), Ok(None)) {
                *when = Some(t.elapsed());
            }
        }
        exited.iter().all(Option::is_some)
    });
    super::trace(&format!(
        "SIGTERM: {:?}",
        names
            .iter()
            .zip(&exited)
            .map(|(name, w)| format!(
                "{name} {}",
                w.map_or("still running".into(), |d| format!("{d:?}"))
            ))
            .collect::<Vec<_>>()
    ));
    for c in children.iter_mut() {
        if let Ok(None) = c.try_wait() {
            let _ = c.kill();
        }
        let _ = c.wait();
    }
}

/// Children of `pid` (from /proc/*/stat), with their start times.
fn children_of(pid: u32) -> Vec<(u32, u64)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let after = s[s.rfind(')')? + 1..].to_string();
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .filter_map(|p| Some((p, owner::start_time(p)?)))
        .collect()
}

/// The last lines of a log, for error messages.
fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
