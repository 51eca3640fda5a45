//! The SSH launcher at scale, on a real 64-host lab (tests/lab): 64 sshd's in network
//! namespaces, 32 direct cables (half `a` of port f0 between n01-n02, n03-n04, ...), and a plan
//! whose `[ssh]` table caps the connections being set up at once at 4 and retries a refusing
//! node once after a short backoff. Three hosts' sshd are stopped before the run (their port 22
//! refuses): the run completes, each of them is exactly one FAIL (`reach NODE`, unreachable),
//! the job of each of their cables is skipped with that cause, and the other 29 are measured.
//! Nothing is left running on any host, and nothing of the lab after it is dropped.
//!
//! That at most `max-connections` handshakes are in flight at once is asserted exactly on the
//! transport's connect loop with a fake connector (`exec::ssh`'s unit tests); here the hosts'
//! sshd's are watched during the run (monitors titled `[accepted]` in the lab's namespaces),
//! which shows the cap holding within one handshake's lag (cap 4: at most 4 seen; uncapped ~27).
//!
//! Root is required; `FABRICPLAN_SKIP_LAB=1` skips. Run: `cargo test --test lab_scale --
//! --nocapture` (~1-2 min on 2 cores, most of it building and tearing down the 64 hosts).

mod lab;
mod support;

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lab::run::Work;
use lab::twin::{lab_spec, plan_file};
use lab::{Lab, lab_enabled};
use serde_json::Value;

const HOSTS: usize = 64;
/// The hosts whose sshd is stopped before the run: on three different cables.
const REFUSING: [&str; 3] = ["n05", "n20", "n41"];
const MAX_CONNECTIONS: u32 = 4;
/// Flows per declared round (8 rounds of 4 would be slower; 32 at once is too much python for
/// 2 cores).
const PER_ROUND: usize = 8;

fn name(i: usize) -> String {
    format!("n{i:02}")
}

/// The plan: 64 nodes, a direct cable per pair on half `a` of f0 (one /30 each, all in
/// 198.19.1.0/24), `rdma-bw` in declared rounds of 8 flows for 1 s, lab-sized gates.
fn plan_text() -> String {
    let mut t = String::from(
        r#"#:schema ../../../schemas/plan.schema.json
format-version = 1
name = "scale-64-lab"
description = "64 hosts on 32 direct cables, the SSH launcher capped at 4 connections being set up"

[ssh]
connect-timeout-s = 5
"#,
    );
    t.push_str(&format!(
        "max-connections = {MAX_CONNECTIONS}\nconnect-attempts = 2\nretry-backoff-ms = 100\n"
    ));
    t.push_str(
        r#"
[[profile]]
name = "lab-slow"
half-rate-gbps = 0.05
unified-memory = true
[[profile.port]]
name = "f0"
half = [{ name = "a", device = "rocep1s0f0", netdev = "enp1s0f0np0" }]
"#,
    );
    for i in 1..=HOSTS {
        t.push_str(&format!(
            "\n[[node]]\nname = \"{}\"\nprofile = \"lab-slow\"\n",
            name(i)
        ));
    }
    for k in 0..HOSTS / 2 {
        t.push_str(&format!(
            "\n[[cable]]\nkind = \"direct\"\nname = \"c{:02}\"\nends = [\"{}.f0\", \"{}.f0\"]\nhalves = [\"a\"]\nsubnets = {{ a = \"198.19.1.{}/30\" }}\n",
            k + 1,
            name(2 * k + 1),
            name(2 * k + 2),
            4 * k
        ));
    }
    t.push_str(
        r#"
[gates.rdma-bw]
min-pct-of-expected = 10
warn-pct-of-expected = 5

[tests.rdma-bw]
duration-s = 1
size-bytes = 65536
timeout-s = 30
schedule = "rounds"
"#,
    );
    for (r, pairs) in (0..HOSTS / 2)
        .collect::<Vec<_>>()
        .chunks(PER_ROUND)
        .enumerate()
    {
        let flows: Vec<String> = pairs
            .iter()
            .map(|k| format!("\"{}.f0.a -> {}.f0.a\"", name(2 * k + 2), name(2 * k + 1)))
            .collect();
        t.push_str(&format!(
            "\n[[tests.rdma-bw.round]]\nname = \"R{}\"\nflows = [{}]\n",
            r + 1,
            flows.join(", ")
        ));
    }
    t
}

/// A child killed and reaped on every path out of the test.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// `fabricplan run PLAN` to its end (polled, with a generous deadline; killed if it passes),
/// its output in files. Returns the exit code, stderr and results.json.
fn run(lab: &Lab, plan: &Path, out: &Path, logs: &Path) -> (Option<i32>, String, Value) {
    let stdout = std::fs::File::create(logs.join("stdout")).unwrap();
    let stderr = std::fs::File::create(logs.join("stderr")).unwrap();
    let mut child = Guard(
        lab::run::run_command(lab, plan, out)
            .args(["--format", "json", "--only", "rdma-bw"])
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("start fabricplan"),
    );
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("poll fabricplan") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "fabricplan still running after 300 s (killed); stderr:\n{}",
            std::fs::read_to_string(logs.join("stderr")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = std::fs::read_to_string(logs.join("stderr")).unwrap_or_default();
    let text = std::fs::read_to_string(out.join("results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}); exit {status:?}\n{err}"));
    (
        status.code(),
        err,
        serde_json::from_str(&text).expect("results.json is JSON"),
    )
}

/// Watches the lab's sshd's for connections being set up: OpenSSH titles a connection's
/// monitor `sshd: [accepted]` from the accept until authentication succeeds (then `sshd: USER
/// [priv]`), and its pre-authentication child carries that title for a moment after its fork:
/// the processes so titled inside the lab's namespaces whose parent is not, are the handshakes
/// in flight (slightly more: see the assertion). Polled every 5 ms while the run goes: the peak
/// seen and how many distinct handshakes were seen at all (a 30-100 ms handshake is rarely
/// missed).
struct Handshakes {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(usize, usize)>>,
}

impl Handshakes {
    fn watch(inodes: Vec<u64>) -> Handshakes {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut peak, mut seen) = (0, BTreeSet::new());
            while !s.load(Ordering::SeqCst) {
                // (pid, parent) of every `[accepted]` process in the lab's namespaces
                let mut found: Vec<(u32, u32)> = Vec::new();
                for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok())
                    else {
                        continue;
                    };
                    let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                        continue;
                    };
                    if !String::from_utf8_lossy(&cmd).contains("[accepted]") {
                        continue;
                    }
                    let ino = std::fs::metadata(e.path().join("ns/net")).map(|m| m.ino());
                    if !ino.is_ok_and(|i| inodes.contains(&i)) {
                        continue;
                    }
                    // `pid (comm) state ppid ...`; comm may hold spaces, so after the last ')'
                    let ppid = std::fs::read_to_string(e.path().join("stat"))
                        .ok()
                        .and_then(|st| {
                            st.rsplit_once(')')
                                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                                .and_then(|p| p.parse().ok())
                        })
                        .unwrap_or(0);
                    found.push((pid, ppid));
                }
                // the monitor's privilege-separated child carries its title until it renames
                // itself `[net]`: one connection, counted once (by its monitor)
                let pids: BTreeSet<u32> = found.iter().map(|f| f.0).collect();
                let monitors: Vec<u32> = found
                    .iter()
                    .filter(|(_, ppid)| !pids.contains(ppid))
                    .map(|f| f.0)
                    .collect();
                let now = monitors.len();
                seen.extend(monitors);
                peak = peak.max(now);
                std::thread::sleep(Duration::from_millis(5));
            }
            (peak, seen.len())
        });
        Handshakes {
            stop,
            thread: Some(thread),
        }
    }

    /// (peak in flight, distinct handshakes seen).
    fn finish(mut self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .map(|t| t.join().expect("watcher"))
            .unwrap_or_default()
    }
}

impl Drop for Handshakes {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn story(r: &Value) -> String {
    let mut s = format!("verdict {}\n", r["summary"]["verdict"]);
    for v in r["preflight"].as_array().into_iter().flatten() {
        if v["outcome"] != "OK" {
            s.push_str(&format!(
                "  preflight {} {} trap={} {}\n",
                v["outcome"], v["gate"], v["trap"], v["detail"]
            ));
        }
    }
    for j in r["jobs"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "  {} {} {} reason={}\n",
            j["job"], j["status"], j["label"], j["reason"]
        ));
        for v in j["verdicts"].as_array().into_iter().flatten() {
            s.push_str(&format!(
                "    {} {} measured={} trap={} detail={}\n",
                v["outcome"], v["gate"], v["measured"], v["trap"], v["detail"]
            ));
        }
    }
    s
}

#[test]
fn sixty_four_hosts_three_refusing_each_one_fail_the_rest_measured() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let work = Work::new("fabricplan-e2e", "scale-64");
    let source = work.path().join("scale-64.toml");
    std::fs::write(&source, plan_text()).unwrap();
    let plan = support::load_plan(&source);
    assert_eq!(plan.nodes.len(), HOSTS);
    assert_eq!(plan.ssh.max_connections, MAX_CONNECTIONS);

    let lab = Lab::build(&lab_spec("s64", &plan).hosts_only()).expect("lab builds");
    let built = t0.elapsed();
    eprintln!("{HOSTS}-host lab built in {built:?}");
    let footprint = lab.footprint();
    let twin = plan_file(&lab, &source).expect("the plan in the lab's addresses");

    for h in REFUSING {
        lab.stop_sshd(h);
    }
    // they refuse now (port 22 closed), the others answer
    for h in REFUSING {
        let o = lab.ssh(h, "true");
        assert!(!o.status.success(), "{h}'s sshd still answers");
    }

    let inodes = footprint.netns_inodes();
    let watcher = Handshakes::watch(inodes);
    let t1 = Instant::now();
    let out = work.path().join("run");
    let (code, stderr, r) = run(&lab, &twin, &out, work.path());
    let wall = t1.elapsed();
    let (peak, seen) = watcher.finish();
    eprintln!(
        "run: exit {code:?} in {wall:?}: {}; handshakes seen in the hosts' sshd: {seen}, at most {peak} at once",
        r["summary"]["verdict"]
    );
    let s = story(&r);
    for v in r["preflight"].as_array().into_iter().flatten() {
        if v["outcome"] != "OK" {
            eprintln!("  {} {}: {}", v["outcome"], v["gate"], v["detail"]);
        }
    }
    // The cap, seen from the servers' side. sshd retitles a connection's monitor only after the
    // client has seen its authentication succeed and handed its slot to the next node, so a
    // sample may catch a finished handshake beside `max-connections` new ones: one more is
    // allowed; the exact bound is the transport's unit test. (Seen: at most 4 with a cap of 4;
    // uncapped, `max-connections = 64`, ~27 at once on 2 cores, counted before the
    // pre-authentication children were told apart.) And the watch saw enough handshakes for
    // this to mean something.
    assert!(
        peak <= MAX_CONNECTIONS as usize + 1,
        "{peak} handshakes at once, the cap is {MAX_CONNECTIONS}"
    );
    assert!(
        seen >= 16 && peak >= 2,
        "the watch saw too little ({seen} handshakes, peak {peak}) to check the cap"
    );

    // one FAIL per refusing host, at `reach NODE`, unreachable, and nothing else is not OK
    let mut fails: Vec<(String, String)> = r["preflight"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            r["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|j| j["verdicts"].as_array().into_iter().flatten()),
        )
        .filter(|v| v["outcome"] != "OK")
        .map(|v| {
            (
                format!(
                    "{} {}",
                    v["outcome"].as_str().unwrap_or(""),
                    v["gate"].as_str().unwrap_or("")
                ),
                v["trap"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    fails.sort();
    // each names its host and why: the last attempt's error
    for h in REFUSING {
        let reach = r["preflight"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["gate"] == format!("reach {h}"))
            .unwrap_or_else(|| panic!("no `reach {h}`:\n{s}"));
        let detail = reach["detail"].as_str().unwrap_or("");
        assert!(
            detail.starts_with(&format!("{h}: unreachable"))
                && detail.contains("Connection refused"),
            "{h}: {detail}"
        );
    }
    let expected: Vec<(String, String)> = REFUSING
        .iter()
        .map(|h| (format!("FAIL reach {h}"), "unreachable".to_string()))
        .collect();
    assert_eq!(fails, expected, "{s}\n{stderr}");
    // each refusing host is one finding, its sshd: the host is up, nothing listens on 22
    assert_eq!(
        r["summary"]["verdict"],
        format!(
            "3 FAIL: {}",
            REFUSING
                .iter()
                .map(|h| format!("sshd on {h}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "{s}\n{:#}\n{:#}",
        r["findings"],
        r["preflight"]
    );
    assert_eq!(code, Some(1), "{s}\n{stderr}");

    let discovery = r["discovery"].as_array().expect("discovery");
    assert_eq!(discovery.len(), HOSTS, "{s}");
    for d in discovery {
        let node = d["node"].as_str().unwrap();
        assert_eq!(
            d["reachable"],
            !REFUSING.contains(&node),
            "{node}: {d}\n{s}"
        );
    }

    // the refusing hosts' jobs are skipped with their cause; every other job is measured, OK
    let jobs = r["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), HOSTS / 2, "{s}");
    let mut measured = 0;
    for j in jobs {
        let id = j["job"].as_str().unwrap();
        let hosts = lab::run::hosts_of(j);
        match REFUSING.iter().find(|h| hosts.contains(h)) {
            Some(h) => {
                assert_eq!(j["status"], "skipped", "{id}:\n{s}");
                let reason = j["reason"].as_str().unwrap_or("");
                assert!(
                    reason.contains(&format!("{h} is unreachable")),
                    "{id}: {reason}"
                );
            }
            None => {
                assert_eq!(j["status"], "measured", "{id}:\n{s}");
                measured += 1;
            }
        }
    }
    assert_eq!(measured, HOSTS / 2 - REFUSING.len(), "{s}");

    // nothing fabricplan started is left on any host
    let left = lab.leftovers(Duration::from_secs(10));
    assert!(left.is_empty(), "processes left on the hosts: {left:#?}");

    let t2 = Instant::now();
    drop(lab);
    let torn = t2.elapsed();
    let remaining = footprint.remaining();
    assert!(remaining.is_empty(), "left of the lab: {remaining:#?}");
    eprintln!(
        "lab_scale: built {built:?}, run {wall:?}, torn down {torn:?}, total {:?}",
        t0.elapsed()
    );
}
