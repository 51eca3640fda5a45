//! Blame only on evidence, at every moment of a run. On the lab twin of the two-node plan, over
//! real SSH and through a real Slurm cluster, a fault strikes one node (spark-b, not the first
//! rank: the first rank is never evidence by itself) at one moment of the run: during discovery,
//! preflight, an rdma-bw round or the NCCL round. Each run must end with exactly one finding, about
//! the broken part; no finding about the healthy node; exit 1; `--drain` taking out at most that
//! node; and, 30 s after, nothing of the run left on any host (no tool, session loop, srun or
//! slurmstepd; no session directory in /tmp), whatever signal ended what.
//!
//! The cases are generated from the lists of faults and moments. The suite runs each fault at one
//! moment; `FABRICPLAN_LAB_MATRIX=all` runs every fault at every moment (`scripts/lab-fault-matrix.sh`),
//! `FABRICPLAN_LAB_CASE=slurm-session-preflight` the cases whose name holds that.
//! A fault that strikes after the run last used what it breaks (sshd or slurmd killed while the
//! NCCL round runs: its ranks are started, no later step or login needs them) leaves nothing to
//! see: the run is then green, and says so.
//!
//! Root is required; `FABRICPLAN_SKIP_LAB=1` skips it elsewhere.

mod support;

mod lab;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lab::run::{Run, Work};
use lab::twin::lab_spec;
use lab::{Fault, Lab, lab_enabled};

/// The node each fault strikes, and its netdev of half a.
const TARGET: &str = "spark-b";
const NETDEV: &str = "enp1s0f0np0";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launch {
    Ssh,
    Slurm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    Discovery,
    Preflight,
    RdmaBw,
    Nccl,
}

const MOMENTS: [Moment; 4] = [
    Moment::Discovery,
    Moment::Preflight,
    Moment::RdmaBw,
    Moment::Nccl,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strike {
    /// sshd's listener killed (over SSH): no new login, the sessions go on.
    Sshd,
    /// slurmd killed (under Slurm): no new step, the steps go on.
    Slurmd,
    /// The node's session loop killed with SIGKILL.
    Session,
    /// The rdma-bw server killed with SIGKILL (only while an rdma-bw round runs).
    Server,
    /// The half's netdev taken down and up again: a flap.
    Link,
    /// The half's netdev set to MTU 1500.
    Mtu,
}

impl Strike {
    fn on(self, l: Launch) -> bool {
        !matches!(
            (self, l),
            (Strike::Sshd, Launch::Slurm) | (Strike::Slurmd, Launch::Ssh)
        )
    }

    fn at(self, m: Moment) -> bool {
        self != Strike::Server || m == Moment::RdmaBw
    }

    /// The one finding this fault must give, by name; `None`: the run used nothing it broke
    /// after it struck, and is green.
    fn finding(self, l: Launch, m: Moment) -> Option<&'static [&'static str]> {
        match (self, l) {
            (Strike::Sshd | Strike::Slurmd, _) if m == Moment::Nccl => None,
            (Strike::Sshd, _) => Some(&["sshd on spark-b"]),
            (Strike::Slurmd, _) => Some(&["slurmd on spark-b"]),
            (Strike::Session, Launch::Ssh) => Some(&["sshd on spark-b"]),
            (Strike::Session, Launch::Slurm) => Some(&["slurmd on spark-b"]),
            (Strike::Server, _) => Some(&["test tools on spark-b"]),
            (Strike::Link, _) => Some(&["cable spark-a.f0 -- spark-b.f0", "spark-b.f0.a"]),
            (Strike::Mtu, _) => Some(&["spark-b.f0.a"]),
        }
    }
}

const STRIKES: [Strike; 6] = [
    Strike::Sshd,
    Strike::Slurmd,
    Strike::Session,
    Strike::Server,
    Strike::Link,
    Strike::Mtu,
];

/// The moment each fault strikes at in the suite (the script runs them all).
fn in_suite(s: Strike, l: Launch) -> Option<Moment> {
    // each fault once, each moment and each launcher at least once: the suite's share of the
    // matrix (the rest is `scripts/lab-fault-matrix.sh`)
    match (s, l) {
        (Strike::Sshd, Launch::Ssh) => Some(Moment::RdmaBw),
        (Strike::Slurmd, Launch::Slurm) => Some(Moment::RdmaBw),
        (Strike::Session, Launch::Slurm) => Some(Moment::Nccl),
        (Strike::Server, Launch::Ssh) => Some(Moment::RdmaBw),
        (Strike::Link, Launch::Slurm) => Some(Moment::Preflight),
        (Strike::Mtu, Launch::Ssh) => Some(Moment::Discovery),
        _ => None,
    }
}

fn twin() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lab/plans/two-spark.toml")
}

/// The run of the twin on `lab` by `l`, with `--drain --dry-run`'s sibling: `--drain` asked of
/// a run whose Slurm is the lab's (over SSH, the drains are printed, not done).
fn command(lab: &Lab, l: Launch, plan: &Path, out: &Path) -> Command {
    let mut argv: Vec<String> = vec![
        env!("CARGO_BIN_EXE_fabricplan").into(),
        "run".into(),
        plan.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--format".into(),
        "json".into(),
        "--launcher".into(),
        match l {
            Launch::Ssh => "ssh",
            Launch::Slurm => "slurm",
        }
        .into(),
        "--exclude-file".into(),
        out.with_extension("exclude").display().to_string(),
    ];
    if l == Launch::Ssh {
        argv.push("--ssh-config".into());
        argv.push(lab.ssh_config_path().display().to_string());
    }
    let mut c = match l {
        Launch::Slurm => {
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            lab.slurm_command(&refs)
        }
        Launch::Ssh => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]).env_remove("SSH_AUTH_SOCK");
            c
        }
    };
    // outputs to files: a pipe nobody reads while the run goes on would stall it
    let file = |ext: &str| std::fs::File::create(out.with_extension(ext)).expect("output file");
    c.env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"));
    c
}

/// Wait, while `child` runs, until a process on one of `hosts` whose command line `is` runs.
fn until_running(lab: &Lab, hosts: &[&str], is: impl Fn(&str) -> bool, child: &mut Child) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(120) {
        if hosts.iter().any(|h| lab.processes(h).iter().any(|p| is(p))) {
            return true;
        }
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// The pids in `host`'s network namespace whose command line holds `needle`.
fn pids(lab: &Lab, host: &str, needle: &str) -> Vec<u32> {
    let out = lab::run(&["ip", "netns", "pids", &lab.host(host).ns]);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| lab::cmdline(*p).contains(needle))
        .collect()
}

fn parent(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| {
            st[st.rfind(')')? + 1..]
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Strike `s` on the target, now.
fn strike(lab: &Lab, s: Strike) {
    let ns = lab.host(TARGET).ns.clone();
    match s {
        Strike::Sshd => lab.stop_sshd(TARGET),
        Strike::Slurmd => lab.stop_slurmd(TARGET).expect("slurmd stops"),
        Strike::Session => {
            // the loop itself: its forks carry its command line, and their parent is it
            let loops: Vec<u32> = pids(lab, TARGET, "fabricplan-session")
                .into_iter()
                .filter(|p| !lab::cmdline(parent(*p)).contains("fabricplan-session"))
                .collect();
            assert_eq!(loops.len(), 1, "the target's session loops: {loops:?}");
            lab::run(&["kill", "-KILL", &loops[0].to_string()]);
        }
        Strike::Server => {
            // the server: its stand-in has no peer address among its arguments
            let servers: Vec<u32> = pids(lab, TARGET, "ib_write_bw")
                .into_iter()
                .filter(|p| !lab::cmdline(*p).contains("198.19."))
                .collect();
            assert!(!servers.is_empty(), "no rdma-bw server on the target");
            for p in servers {
                lab::run(&["kill", "-KILL", &p.to_string()]);
            }
        }
        Strike::Link => {
            for state in ["down", "up"] {
                let o = lab::run(&["ip", "-n", &ns, "link", "set", NETDEV, state]);
                assert!(o.status.success(), "{o:?}");
            }
        }
        Strike::Mtu => lab.set_mtu(TARGET, NETDEV, 1500).expect("mtu"),
    }
}

/// Run one case on a lab of its own and check it; `Err` says what went wrong.
fn case(l: Launch, s: Strike, m: Moment, work: &Path) -> Result<(), String> {
    let plan = support::load_plan(twin());
    let tag = format!(
        "fm{}",
        match l {
            Launch::Ssh => "s",
            Launch::Slurm => "l",
        }
    );
    let spec = lab_spec(&tag, &plan);
    let spec = if l == Launch::Slurm {
        spec.slurm()
    } else {
        spec
    };
    let lab = Lab::build(&spec).map_err(|e| format!("lab: {e}"))?;
    let file = lab::twin::plan_file(&lab, &twin()).map_err(|e| format!("twin: {e}"))?;
    let out = work.join(format!("{l:?}-{s:?}-{m:?}").to_lowercase());
    if m == Moment::Discovery {
        lab.fault(TARGET, Fault::SlowProbe);
    }
    let t = Instant::now();
    let mut child = command(&lab, l, &file, &out)
        .spawn()
        .map_err(|e| e.to_string())?;
    let both = ["spark-a", TARGET];
    let reached = match (m, s) {
        (Moment::Discovery, _) => {
            until_running(&lab, &[TARGET], |p| p.contains("lldpcli"), &mut child)
        }
        (Moment::Preflight, _) => {
            until_running(&lab, &both, |p| p.starts_with("ping "), &mut child)
        }
        // a server on the target (its stand-in names no peer address)
        (Moment::RdmaBw, Strike::Server) => until_running(
            &lab,
            &[TARGET],
            |p| p.contains("ib_write_bw") && !p.contains("198.19."),
            &mut child,
        ),
        (Moment::RdmaBw, _) => {
            until_running(&lab, &[TARGET], |p| p.contains("ib_write_bw"), &mut child)
        }
        (Moment::Nccl, _) => until_running(
            &lab,
            &[TARGET],
            |p| p.contains("all_reduce_perf"),
            &mut child,
        ),
    };
    if reached {
        strike(&lab, s);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let read = |ext: &str| std::fs::read(out.with_extension(ext)).unwrap_or_default();
    let o = std::process::Output {
        status,
        stdout: read("stdout"),
        stderr: read("stderr"),
    };
    let r = Run::finish(o, &out, t.elapsed());
    eprintln!(
        "{l:?} {s:?} at {m:?}: exit {:?} in {:?}: {}",
        r.code,
        r.wall,
        r.verdict()
    );
    if !reached {
        return Err(format!("the run never reached {m:?}:\n{}", r.story()));
    }
    if (s, m) == (Strike::Link, Moment::RdmaBw) {
        // the counters read around each round's jobs saw the flap: its verdict says where
        let placed = r.results["preflight"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| {
                v["gate"] == "changed spark-b.f0.a"
                    && v["detail"]
                        .as_str()
                        .is_some_and(|d| d.contains("; first seen in round `"))
            });
        if !placed {
            return Err(format!(
                "the flap is not placed in its round:\n{}",
                r.story()
            ));
        }
    }
    check(&lab, &r, &out, s.finding(l, m))
}

fn check(lab: &Lab, r: &Run, out: &Path, want: Option<&[&str]>) -> Result<(), String> {
    let findings: Vec<String> = r.results["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["name"].as_str().unwrap_or("").to_string())
        .collect();
    match want {
        None => {
            if r.code != Some(0) || !findings.is_empty() {
                return Err(format!("expected green, got {findings:?}\n{}", r.story()));
            }
        }
        Some(names) => {
            if r.code != Some(1) {
                return Err(format!("exit {:?}\n{}", r.code, r.story()));
            }
            if findings.len() != 1 || !names.contains(&findings[0].as_str()) {
                return Err(format!(
                    "expected one finding of {names:?}, got {findings:?}\n{}",
                    r.story()
                ));
            }
        }
    }
    // --drain would take out at most the struck node
    let exclude = std::fs::read_to_string(out.with_extension("exclude")).unwrap_or_default();
    if exclude
        .lines()
        .any(|n| n.trim() != TARGET && !n.trim().is_empty())
    {
        return Err(format!(
            "--drain would take out a healthy node: {exclude:?}"
        ));
    }
    // 30 s after the run: nothing of it on any host
    let left = lab.leftovers(Duration::from_secs(30));
    if !left.is_empty() {
        return Err(format!("left running: {left:#?}"));
    }
    for h in ["spark-a", "spark-b"] {
        let o = lab.exec(h, "ls -A /tmp");
        let tmp = String::from_utf8_lossy(&o.stdout).into_owned();
        if tmp.contains("fabricplan-session") {
            return Err(format!("{h}'s /tmp keeps a session directory: {tmp}"));
        }
    }
    Ok(())
}

#[test]
fn a_fault_at_any_moment_is_one_finding_about_its_part() {
    if !lab_enabled() {
        return;
    }
    let all = std::env::var("FABRICPLAN_LAB_MATRIX").is_ok_and(|v| v == "all");
    // `FABRICPLAN_LAB_CASE=slurm-session-preflight` runs the cases whose name holds it
    let only = std::env::var("FABRICPLAN_LAB_CASE").unwrap_or_default();
    let work = Work::new("fabricplan-fault-moments", "two-spark");
    let mut wrong = Vec::new();
    let mut ran = 0;
    for l in [Launch::Ssh, Launch::Slurm] {
        for s in STRIKES.iter().copied().filter(|s| s.on(l)) {
            let moments: Vec<Moment> = if all || !only.is_empty() {
                MOMENTS.iter().copied().filter(|m| s.at(*m)).collect()
            } else {
                in_suite(s, l).into_iter().collect()
            };
            for m in moments {
                if !format!("{l:?}-{s:?}-{m:?}").to_lowercase().contains(&only) {
                    continue;
                }
                ran += 1;
                if let Err(e) = case(l, s, m, work.path()) {
                    wrong.push(format!("{l:?} {s:?} at {m:?}: {e}"));
                }
            }
        }
    }
    eprintln!("{ran} cases, {} wrong", wrong.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
