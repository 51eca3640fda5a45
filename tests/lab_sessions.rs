//! One session per host per run, on the lab (real sshd, the two-spark twin), with hosts whose
//! login shell costs 150 ms (their `~/.bashrc` sleeps, and records what it ran for):
//!
//! * a healthy run starts exactly one login shell per host, whatever the number of rounds and
//!   commands (mpirun's own logins to its ranks are the tool's, and are all the others);
//! * a session killed mid-run (its shell on the host, SIGKILL) is one FAIL for that host naming
//!   its sshd, the round's failures on that host follow it, the session is opened again and the
//!   run goes on: every later job measured;
//! * SIGINT mid-round ends with nothing left running on any host and no child of fabricplan
//!   alive on this machine.
//!
//! Needs root, like every lab test.

mod support;

mod lab;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use lab::run::{Run, Work};
use lab::twin::lab_spec;
use lab::{Lab, lab_enabled};
use serde_json::Value;

/// What a login shell costs on the lab's hosts in these tests.
const LOGIN_MS: u64 = 150;

fn twin_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lab/plans")
        .join(format!("{name}.toml"))
}

/// The login shells a host started so far: (fabricplan's sessions, the others).
fn logins(lab: &Lab, host: &str) -> (Vec<String>, Vec<String>) {
    lab.login_shells(host)
        .into_iter()
        .partition(|l| l.contains("fabricplan-session"))
}

fn spawn(lab: &Lab, twin: &Path, out: &Path) -> Child {
    lab::run::run_command(lab, twin, out)
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fabricplan")
}

/// Processes of this machine whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|st| {
                    let after = &st[st.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| st.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// Wait until round 2 runs (round 1's job streamed, round 2's server up on spark-a), noting
/// every child fabricplan has meanwhile.
fn inside_round_two(lab: &Lab, out: &Path, child: &mut Child, seen: &mut Vec<u32>) {
    let jsonl = out.join("results.jsonl");
    let pid = child.id();
    let inside = lab::wait(Duration::from_secs(90), || {
        seen.extend(children_of(pid));
        let lines = std::fs::read_to_string(&jsonl)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0);
        lines >= 1
            && lab
                .processes("spark-a")
                .iter()
                .any(|p| p.contains("ib_write_bw"))
    });
    assert!(inside, "round 2 never started");
}

/// The pid of spark-b's session shell: the process of fabricplan's session in the host whose
/// parent is sshd (its helpers are forks of it, children of it).
fn session_shell(lab: &Lab, host: &str) -> u32 {
    let ns = &lab.host(host).ns;
    let out = lab::run(&["ip", "netns", "pids", ns]);
    let pids: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    let parent = |p: u32| -> u32 {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|st| {
                let after = &st[st.rfind(')')? + 1..];
                after.split_whitespace().nth(1)?.parse().ok()
            })
            .unwrap_or(0)
    };
    let shells: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|p| lab::cmdline(*p).contains("fabricplan-session"))
        .filter(|p| lab::cmdline(parent(*p)).starts_with("sshd:"))
        .collect();
    assert_eq!(shells.len(), 1, "{host}: session shells {shells:?}");
    shells[0]
}

#[test]
fn one_session_per_host_survives_a_killed_one_and_an_interrupt() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let twin = twin_path("two-spark");
    let plan = support::load_plan(&twin);
    let lab = Lab::build(&lab_spec("ses", &plan).login_cost(LOGIN_MS)).expect("lab builds");
    let work = Work::new("fabricplan-sessions", "two-spark");
    eprintln!("lab built in {:?}", t0.elapsed());

    healthy_run_pays_one_login_per_host(&lab, &twin, work.path());
    killed_session_is_one_finding(&lab, &twin, work.path());
    interrupt_leaves_nothing(&lab, &twin, work.path());
    eprintln!("sessions: {:?}", t0.elapsed());
}

fn healthy_run_pays_one_login_per_host(lab: &Lab, twin: &Path, work: &Path) {
    let out = work.join("healthy");
    let t = Instant::now();
    let o = spawn(lab, twin, &out).wait_with_output().unwrap();
    let r = Run::finish(o, &out, t.elapsed());
    assert_eq!(r.verdict(), "ALL GREEN", "{}", r.story());
    let rounds = r.results["rounds"].as_array().unwrap().len();
    let steps: usize = r
        .jobs()
        .iter()
        .map(|j| j["steps"].as_array().unwrap().len())
        .sum();
    for host in ["spark-a", "spark-b"] {
        let (ours, others) = logins(lab, host);
        eprintln!(
            "{host}: {} fabricplan login(s), {} other(s) over {rounds} rounds and {steps} steps",
            ours.len(),
            others.len()
        );
        assert_eq!(ours.len(), 1, "{host}: {ours:#?}");
        // mpirun's own logins to its ranks (orted) are the tool's; nothing else logs in
        for o in &others {
            assert!(o.contains("orted"), "{host}: a login of fabricplan's: {o}");
        }
    }
    assert!(rounds >= 5 && steps >= 20, "{}", r.story());
    assert!(lab.leftovers(Duration::from_secs(3)).is_empty());
}

fn killed_session_is_one_finding(lab: &Lab, twin: &Path, work: &Path) {
    let before_b = logins(lab, "spark-b").0.len();
    let before_a = logins(lab, "spark-a").0.len();
    let out = work.join("killed");
    let t = Instant::now();
    let mut child = spawn(lab, twin, &out);
    let mut seen = Vec::new();
    inside_round_two(lab, &out, &mut child, &mut seen);
    let shell = session_shell(lab, "spark-b");
    assert!(
        lab::run(&["kill", "-KILL", &shell.to_string()])
            .status
            .success()
    );
    let o = child.wait_with_output().unwrap();
    let r = Run::finish(o, &out, t.elapsed());
    eprintln!("killed session: exit {:?}, {}", r.code, r.verdict());
    assert_eq!(r.code, Some(1), "{}", r.story());
    assert_eq!(r.verdict(), "1 FAIL: sshd on spark-b", "{}", r.story());
    let fail = r
        .preflight()
        .iter()
        .find(|v| v["gate"] == "session spark-b")
        .unwrap_or_else(|| panic!("no session verdict:\n{}", r.story()));
    let detail = fail["detail"].as_str().unwrap_or("");
    eprintln!("session spark-b: {detail}");
    assert_eq!(fail["outcome"], "FAIL");
    assert!(
        detail.contains("killed by signal KILL") && detail.contains("opened again"),
        "{detail}"
    );
    assert_eq!(
        fail["implicates"],
        serde_json::json!([{"part": "software", "node": "spark-b", "software": "sshd"}]),
        "{fail}"
    );
    // every other FAIL follows it; the jobs after the round it died in all measured
    let died_in = detail
        .split("during round ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("{detail}"));
    let mut after = false;
    for round in r.results["rounds"].as_array().unwrap() {
        for id in round["jobs"].as_array().unwrap() {
            let j = r.job(id.as_str().unwrap());
            if after {
                assert_eq!(j["status"], "measured", "{}", r.story());
            }
            for v in j["verdicts"].as_array().unwrap() {
                if v["outcome"] == "FAIL" {
                    assert_eq!(v["follows"], "sshd on spark-b", "{v}");
                }
            }
        }
        after |= round["name"] == died_in;
    }
    assert!(after, "the round it died in ({died_in}) is not a round");
    // opened once more on spark-b, never again elsewhere
    assert_eq!(logins(lab, "spark-b").0.len(), before_b + 2);
    assert_eq!(logins(lab, "spark-a").0.len(), before_a + 1);
    let left = lab.leftovers(Duration::from_secs(5));
    assert!(left.is_empty(), "left on the hosts: {left:#?}");
}

fn interrupt_leaves_nothing(lab: &Lab, twin: &Path, work: &Path) {
    let before: Vec<usize> = ["spark-a", "spark-b"]
        .iter()
        .map(|h| logins(lab, h).0.len())
        .collect();
    let out = work.join("interrupted");
    let t = Instant::now();
    let mut child = spawn(lab, twin, &out);
    let mut seen = Vec::new();
    inside_round_two(lab, &out, &mut child, &mut seen);
    let pid = child.id();
    assert!(
        lab::run(&["kill", "-INT", &pid.to_string()])
            .status
            .success()
    );
    let o = child.wait_with_output().unwrap();
    let r = Run::finish(o, &out, t.elapsed());
    assert_eq!(r.code, Some(130), "{}", r.story());
    let left = lab.leftovers(Duration::from_secs(5));
    assert!(left.is_empty(), "left on the hosts: {left:#?}");
    let alive_children: Vec<u32> = seen.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        alive_children.is_empty(),
        "children of fabricplan outlived it: {alive_children:?}"
    );
    let jobs: Vec<&Value> = r.jobs().iter().collect();
    assert!(jobs.iter().any(|j| j["status"] == "skipped"));
    for (h, b) in ["spark-a", "spark-b"].iter().zip(before) {
        assert_eq!(logins(lab, h).0.len(), b + 1, "{h}");
    }
}
