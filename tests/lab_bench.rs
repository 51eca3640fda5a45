//! Orchestration overhead of `fabricplan run` / `fabricplan detect` on the lab (issue #8).
//!
//! Every test here is `#[ignore]`d: they build labs (root), take minutes and print figures
//! (`BENCH ...` lines, read by `scripts/lab-bench.sh`). They assert behaviour only (every job
//! measured, nothing left running, every host answered), never wall-clock time. Run them with
//!
//! ```text
//! cargo test --release --test lab_bench -- --ignored --nocapture --test-threads=1
//! ```
//!
//! Figures:
//! * overhead ratio: the run's wall time (the process, start to exit) over the critical path of
//!   the tools' own durations: per round the longest client/launcher, each measured from its
//!   remote start mark (the host's clock when the command really started) to the step's finish
//!   (when its output and exit status had arrived), summed over rounds;
//! * the same jobs through `scripts/sequential-runner.sh` (one `ssh` per step, `sleep 2`
//!   before each client), and fabricplan's speed-up over it;
//! * launch skew: `rounds[].launch_skew_ms` of rounds of 4 concurrent flows on 8 hosts;
//! * fan-out: `fabricplan detect` over 1, 8 and 32 hosts, beside a sequential `ssh` loop (and a
//!   naive parallel one) running the same probe;
//! * stand-in delays (issue #16): the overhead bench with every stand-in waiting 20 ms, 150 ms
//!   and 1 s at its start and before its exit, the per-round medians of each phase of
//!   `rounds[].phases`, the medians of `before_rounds` (discovery, pings, the launch check and
//!   its own run), and at 150 ms the sequential script over the same jobs (`bench_delays_*`);
//! * one session per host (issue #24, `lab_bench/sessions.rs`): the switched-6 twin at login-shell
//!   costs of 0, 150 and 500 ms, the ring3 twin through Slurm, and `detect` on 32 hosts whose
//!   login shell costs 150 ms (`bench_sessions_*`).
//!
//! `FABRICPLAN_BENCH_REPS` (default 2) repeats each fabricplan run.

mod support;

mod lab;

#[path = "lab_bench/sessions.rs"]
mod sessions;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lab::{Lab, LabSpec};
use serde_json::Value;

fn lab_enabled() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("");
    assert_eq!(uid, "0", "lab benchmarks need root");
    true
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn twin_path(name: &str) -> PathBuf {
    manifest()
        .join("tests/lab/plans")
        .join(format!("{name}.toml"))
}

fn reps() -> usize {
    std::env::var("FABRICPLAN_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
        .max(1)
}

/// A scratch directory under /var/tmp (hosts have a private /tmp), emptied first.
fn work(name: &str) -> PathBuf {
    let p = PathBuf::from("/var/tmp/fabricplan-bench").join(name);
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).expect("work dir");
    p
}

/// Writes `base` with every `from` replaced by `to` (each must occur).
fn variant(base: &Path, dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(base).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{} has no {from:?}", base.display());
        text = text.replace(from, to);
    }
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// One `fabricplan run`: process wall time and results.json.
struct Run {
    wall: Duration,
    results: Value,
    /// What it said on stderr (with `-v`, a line per round's phases).
    stderr: String,
}

fn fabricplan_run(lab: &Lab, plan: &Path, out: &Path) -> Run {
    let mut c = lab::run::run_command(lab, plan, out);
    c.args(["--format", "json"]);
    timed(c, out)
}

/// `c` (a `fabricplan run ... --out OUT --format json`) to its end: its wall time and
/// results.json, every job of which must have measured.
fn timed(mut c: Command, out: &Path) -> Run {
    let t = Instant::now();
    let o = c.output().expect("run fabricplan");
    let wall = t.elapsed();
    let text = std::fs::read_to_string(out.join("results.json")).unwrap_or_else(|e| {
        panic!(
            "no results.json ({e}): {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let results: Value = serde_json::from_str(&text).expect("results.json is JSON");
    for j in results["jobs"].as_array().expect("jobs") {
        assert_eq!(
            j["status"], "measured",
            "{} did not measure: {}",
            j["job"], j["reason"]
        );
    }
    Run {
        wall,
        results,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// What one run's records say about where the time went.
#[derive(Debug, Default, Clone)]
struct Figures {
    /// The process, start to exit.
    wall_s: f64,
    /// results.json started .. finished.
    run_s: f64,
    /// Sum over rounds of the longest tool (remote start mark .. step finished).
    critical_s: f64,
    /// Sum over rounds of `longest_tool_s` (fabricplan's own figure: command sent .. finished).
    longest_tool_s: f64,
    /// Run start .. first round start (discovery, preflight).
    before_rounds_s: f64,
    /// results.json `before_rounds`: (total, the launch check's own run, beyond it), s.
    before: Option<(f64, Option<f64>, f64)>,
    /// The tools' own time on the critical path that `critical_s` leaves out, s: each round's
    /// servers' start-up (`phases.server_tool_start_ms`) and the launch check's own run.
    other_tools_s: f64,
    /// Per round: (name, round wall, tool, start overhead, tail overhead, skew ms).
    rounds: Vec<(String, f64, f64, f64, f64, Option<f64>)>,
}

impl Figures {
    fn of(run: &Run) -> Figures {
        let r = &run.results;
        let run_start = ms(&r["started_unix_ms"]);
        let run_end = ms(&r["finished_unix_ms"]);
        let jobs = r["jobs"].as_array().cloned().unwrap_or_default();
        let mut f = Figures {
            wall_s: run.wall.as_secs_f64(),
            run_s: (run_end - run_start) / 1000.0,
            ..Default::default()
        };
        let rounds = r["rounds"].as_array().cloned().unwrap_or_default();
        if let Some(first) = rounds.first() {
            f.before_rounds_s = (ms(&first["started_unix_ms"]) - run_start) / 1000.0;
        }
        let b = &r["before_rounds"];
        if b.is_object() {
            f.before = Some((
                ms(&b["total_ms"]) / 1000.0,
                b["launch_check_tool_ms"].as_f64().map(|v| v / 1000.0),
                ms(&b["beyond_launch_check_ms"]) / 1000.0,
            ));
        }
        f.other_tools_s = f.before.and_then(|b| b.1).unwrap_or(0.0)
            + rounds
                .iter()
                .map(|r| ms(&r["phases"]["server_tool_start_ms"]) / 1000.0)
                .sum::<f64>();
        for round in &rounds {
            let ids: Vec<&str> = round["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|j| j.as_str())
                .collect();
            let fg: Vec<&Value> = jobs
                .iter()
                .filter(|j| ids.contains(&j["job"].as_str().unwrap_or("")))
                .flat_map(|j| j["steps"].as_array().into_iter().flatten())
                .filter(|s| s["role"] != "server")
                .collect();
            let tool = fg
                .iter()
                .map(|s| ms(&s["finished_unix_ms"]) - ms(&s["remote_started_unix_ms"]))
                .fold(0.0, f64::max)
                / 1000.0;
            let first_start = fg
                .iter()
                .map(|s| ms(&s["remote_started_unix_ms"]))
                .fold(f64::MAX, f64::min);
            let last_end = fg
                .iter()
                .map(|s| ms(&s["finished_unix_ms"]))
                .fold(0.0, f64::max);
            let (rs, re) = (
                ms(&round["started_unix_ms"]),
                ms(&round["finished_unix_ms"]),
            );
            f.critical_s += tool;
            f.longest_tool_s += round["longest_tool_s"].as_f64().unwrap_or(0.0);
            f.rounds.push((
                round["name"].as_str().unwrap_or("").to_string(),
                (re - rs) / 1000.0,
                tool,
                (first_start - rs) / 1000.0,
                (re - last_end) / 1000.0,
                round["launch_skew_ms"].as_f64(),
            ));
        }
        f
    }

    fn ratio(&self) -> f64 {
        self.wall_s / self.critical_s
    }

    /// The wall over every tool's own time on the critical path: the clients' runs, the
    /// servers' start-up and the launch check's own run.
    fn ratio_all_tools(&self) -> f64 {
        self.wall_s / (self.critical_s + self.other_tools_s)
    }

    fn print(&self, label: &str) {
        println!(
            "BENCH {label}: wall {:.2} s, run {:.2} s, critical path {:.2} s, ratio {:.3} \
             (with the servers' start-up and the launch check's own run as tool time, {:.2} s: \
             {:.3}) (run/critical {:.3}); before rounds {:.2} s; longest_tool_s sum {:.2} s",
            self.wall_s,
            self.run_s,
            self.critical_s,
            self.ratio(),
            self.other_tools_s,
            self.ratio_all_tools(),
            self.run_s / self.critical_s,
            self.before_rounds_s,
            self.longest_tool_s
        );
        if let Some((total, own, beyond)) = self.before {
            println!(
                "  before the first round (results.json): {total:.3} s, the launch check's own \
                 run {own:?} s, beyond it {beyond:.3} s"
            );
        }
        for (name, wall, tool, head, tail, skew) in &self.rounds {
            println!(
                "  round {name:<28} wall {wall:.3} s  tool {tool:.3} s  overhead {:.3} s \
                 (to clients' start {head:.3}, after last client {tail:.3})  skew {skew:?} ms",
                wall - tool
            );
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The steps of a run's jobs as the sequential runner's job list (same commands, same order).
fn jobs_tsv(run: &Run) -> String {
    let mut s = String::new();
    for j in run.results["jobs"].as_array().into_iter().flatten() {
        for st in j["steps"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "{}\t{}\t{}\t{}",
                j["job"].as_str().unwrap_or(""),
                st["role"].as_str().unwrap_or(""),
                st["host"].as_str().unwrap_or(""),
                st["command"]
                    .as_str()
                    .unwrap_or("")
                    .replace(['\t', '\n'], " ")
            );
        }
    }
    s
}

/// `scripts/sequential-runner.sh` over `tsv`: its wall time.
fn sequential(lab: &Lab, dir: &Path, tsv: &str) -> f64 {
    let jobs = dir.join("jobs.tsv");
    std::fs::write(&jobs, tsv).unwrap();
    let t = Instant::now();
    let o = Command::new("bash")
        .arg(manifest().join("scripts/sequential-runner.sh"))
        .arg(lab.ssh_config_path())
        .arg(&jobs)
        .arg(dir.join("out"))
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::null())
        .output()
        .expect("run the sequential runner");
    let wall = t.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && text.contains("sequential: "),
        "sequential runner: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // every client really produced a result row (same measurements, not a no-op)
    for e in std::fs::read_dir(dir.join("out")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".out") {
            let body = std::fs::read_to_string(e.path()).unwrap_or_default();
            assert!(
                body.lines()
                    .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())),
                "{name}: no result row:\n{body}"
            );
        }
    }
    wall
}

/// Nothing left running on any host.
fn assert_no_leftovers(lab: &Lab) {
    let left = lab.leftovers(Duration::from_secs(5));
    assert!(left.is_empty(), "processes left on the hosts: {left:#?}");
}

/// Overhead ratio and the sequential baseline on one twin, at 2 s and 6 s tool durations, with
/// and without preflight.
fn overhead(name: &str, tag: &str, durations: &[(&str, &str)]) {
    let twin = twin_path(name);
    let plan = support::load_plan(&twin);
    let t0 = Instant::now();
    let lab = Lab::build(&lab::twin::lab_spec(tag, &plan)).expect("lab builds");
    println!("{name}: lab built in {:?}", t0.elapsed());
    let dir = work(name);
    // the twin with the lab's addresses (it may have moved off space another lab holds)
    let twin = lab::twin::plan_file(&lab, &twin).expect("twin plan file");
    for (dlabel, edits) in [("2s", vec![]), ("6s", durations.to_vec())] {
        let with = variant(&twin, &dir, &format!("{dlabel}-preflight"), &edits);
        // the same plan with `[tests] preflight = false` (before the first `[tests.` table)
        let without = {
            let p = variant(&twin, &dir, &format!("{dlabel}-nopreflight"), &edits);
            let text = std::fs::read_to_string(&p).unwrap();
            let text = text.replacen("[tests.", "[tests]\npreflight = false\n\n[tests.", 1);
            std::fs::write(&p, text).unwrap();
            p
        };
        for (plabel, p) in [("preflight", &with), ("no preflight", &without)] {
            let mut ratios = Vec::new();
            let mut walls = Vec::new();
            let mut runs = Vec::new();
            for i in 0..reps() {
                let out = dir.join(format!("{dlabel}-{}-{i}", plabel.replace(' ', "")));
                let r = fabricplan_run(&lab, p, &out);
                assert_no_leftovers(&lab);
                let f = Figures::of(&r);
                f.print(&format!("{name} {dlabel} {plabel} #{i}"));
                ratios.push(f.ratio());
                walls.push(f.wall_s);
                runs.push(r);
            }
            let (medians, n) = phase_medians(&runs);
            println!(
                "BENCH-SUMMARY {name} {dlabel} {plabel}: median wall {:.2} s, median ratio {:.3}; \
                 per-round phase medians over {n} rounds (ms): {}",
                median(&mut walls),
                median(&mut ratios),
                medians
                    .iter()
                    .map(|(k, v)| format!("{} {v:.1}", k.trim_end_matches("_ms")))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if plabel == "preflight" {
                let r = runs.pop().expect("a run");
                let sdir = dir.join(format!("seq-{dlabel}"));
                std::fs::create_dir_all(&sdir).unwrap();
                let seq = sequential(&lab, &sdir, &jobs_tsv(&r));
                assert_no_leftovers(&lab);
                let fp = median(&mut walls);
                println!(
                    "BENCH-SUMMARY {name} {dlabel} sequential: wall {seq:.2} s; fabricplan \
                     (with preflight) {fp:.2} s: {:.2}x faster",
                    seq / fp
                );
            }
        }
    }
}

#[test]
#[ignore]
fn bench_overhead_switched6() {
    if !lab_enabled() {
        return;
    }
    overhead(
        "switched-6",
        "bs6",
        &[
            ("duration-s = 2", "duration-s = 6"),
            ("timeout-s = 8", "timeout-s = 16"),
        ],
    );
}

#[test]
#[ignore]
fn bench_overhead_two_spark() {
    if !lab_enabled() {
        return;
    }
    overhead(
        "two-spark",
        "bts",
        &[
            ("duration-s = 2", "duration-s = 6"),
            ("timeout-s = 8", "timeout-s = 16"),
        ],
    );
}

/// The phases results.json records per round (`rounds[].phases`), in the order a round runs.
const PHASES: [&str; 16] = [
    "prepare_ms",
    "counters_before_ms",
    "server_start_ms",
    "readiness_ms",
    "server_tool_start_ms",
    "staging_ms",
    "setup_ms",
    "release_ms",
    "longest_tool_ms",
    "tools_ms",
    "server_stop_and_logs_ms",
    "counters_after_ms",
    "judge_ms",
    "wall_ms",
    "overhead_ms",
    "fabricplan_ms",
];

/// Per phase, the median over every round of `runs` (ms), and the rounds counted.
fn phase_medians(runs: &[Run]) -> (Vec<(&'static str, f64)>, usize) {
    let rounds: Vec<&Value> = runs
        .iter()
        .flat_map(|r| r.results["rounds"].as_array().into_iter().flatten())
        .collect();
    for round in &rounds {
        assert!(
            round["phases"].is_object(),
            "a round without phases: {round}"
        );
    }
    let medians = PHASES
        .iter()
        .map(|k| {
            let mut v: Vec<f64> = rounds
                .iter()
                .filter_map(|r| r["phases"][*k].as_f64())
                .collect();
            (*k, median(&mut v))
        })
        .collect();
    (medians, rounds.len())
}

/// What results.json says of the time before the first round (`before_rounds`), the median of
/// each figure over `runs` (ms), and the runs counted.
fn before_medians(runs: &[Run]) -> (Vec<(&'static str, f64)>, usize) {
    const KEYS: [&str; 7] = [
        "open_ms",
        "discovery_ms",
        "pings_ms",
        "launch_checks_ms",
        "launch_check_tool_ms",
        "total_ms",
        "beyond_launch_check_ms",
    ];
    let before: Vec<&Value> = runs.iter().map(|r| &r.results["before_rounds"]).collect();
    for b in &before {
        assert!(b.is_object(), "a run without before_rounds");
    }
    let medians = KEYS
        .iter()
        .map(|k| {
            let mut v: Vec<f64> = before.iter().filter_map(|b| b[*k].as_f64()).collect();
            (*k, median(&mut v))
        })
        .collect();
    (medians, before.len())
}

/// The overhead across the stand-ins' start-up and exit delays: the same twin (2 s tools, with
/// preflight) with every tool waiting 20 ms, 150 ms and 1 s at its start and before its exit
/// (on top of its own ~20 ms of Python start-up). Prints the per-round phase medians from
/// results.json: fabricplan's share (`overhead_ms`) should not grow with the delays.
fn overhead_across_delays(name: &str, tag: &str) {
    let twin = twin_path(name);
    let plan = support::load_plan(&twin);
    let t0 = Instant::now();
    let lab = Lab::build(&lab::twin::lab_spec(tag, &plan)).expect("lab builds");
    println!("{name}: lab built in {:?}", t0.elapsed());
    let dir = work(&format!("{name}-delays"));
    let twin = lab::twin::plan_file(&lab, &twin).expect("twin plan file");
    for delay in [20u64, 150, 1000] {
        lab.set_tool_delays(lab::ToolDelays {
            start_ms: delay,
            exit_ms: delay,
        })
        .expect("delays set");
        let mut runs = Vec::new();
        let mut ratios = Vec::new();
        let mut all_tools = Vec::new();
        for i in 0..reps() {
            let r = fabricplan_run(&lab, &twin, &dir.join(format!("d{delay}-{i}")));
            assert_no_leftovers(&lab);
            let f = Figures::of(&r);
            f.print(&format!("{name} delays {delay} ms #{i}"));
            ratios.push(f.ratio());
            all_tools.push(f.ratio_all_tools());
            runs.push(r);
        }
        let (medians, n) = phase_medians(&runs);
        let (bm, bn) = before_medians(&runs);
        println!(
            "BENCH-SUMMARY {name} stand-in delays {delay} ms: before the first round, medians over \
             {bn} runs (ms): {}",
            bm.iter()
                .map(|(k, v)| format!("{} {v:.1}", k.trim_end_matches("_ms")))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if delay == 150 {
            // the seed-style sequential script over the same jobs, the same stand-ins
            let r = runs.last().expect("a run");
            let sdir = dir.join(format!("seq-d{delay}"));
            std::fs::create_dir_all(&sdir).unwrap();
            let seq = sequential(&lab, &sdir, &jobs_tsv(r));
            assert_no_leftovers(&lab);
            let mut walls: Vec<f64> = runs.iter().map(|r| r.wall.as_secs_f64()).collect();
            let fp = median(&mut walls);
            println!(
                "BENCH-SUMMARY {name} stand-in delays {delay} ms sequential: wall {seq:.2} s; \
                 fabricplan {fp:.2} s: {:.2}x faster",
                seq / fp
            );
        }
        let line: Vec<String> = medians
            .iter()
            .map(|(k, v)| format!("{} {v:.1}", k.trim_end_matches("_ms")))
            .collect();
        println!(
            "BENCH-SUMMARY {name} stand-in delays {delay} ms: median ratio {:.3} (over every \
             tool's own time on the critical path {:.3}); per-round phase medians over {n} rounds \
             (ms): {}",
            median(&mut ratios),
            median(&mut all_tools),
            line.join(", ")
        );
    }
    lab.set_tool_delays(lab::ToolDelays::default())
        .expect("delays cleared");
}

#[test]
#[ignore]
fn bench_delays_switched6() {
    if !lab_enabled() {
        return;
    }
    overhead_across_delays("switched-6", "bd6");
}

#[test]
#[ignore]
fn bench_delays_two_spark() {
    if !lab_enabled() {
        return;
    }
    overhead_across_delays("two-spark", "bdt");
}

/// Eight hosts on one switch, rounds of four concurrent flows.
fn skew_plan() -> String {
    let mut s = String::from(
        "format-version = 1\nname = \"skew-8\"\n\n[[profile]]\nname = \"lab-veth\"\n\
         half-rate-gbps = 4.0\nport-rate-gbps = 8.0\n[[profile.port]]\nname = \"f0\"\n\
         half = [{ name = \"a\", device = \"rocep1s0f0\", netdev = \"enp1s0f0np0\" }, \
         { name = \"b\", device = \"roceP2p1s0f0\", netdev = \"enP2p1s0f0np0\" }]\n\n",
    );
    for i in 1..=8 {
        let _ = writeln!(s, "[[node]]\nname = \"h{i:02}\"\nprofile = \"lab-veth\"\n");
    }
    s.push_str("[[switch]]\nname = \"sw\"\n\n[[cable]]\nkind = \"switched\"\nname = \"fabric\"\nattach = { ");
    let attach: Vec<String> = (1..=8)
        .map(|i| format!("\"h{i:02}.f0\" = \"sw\""))
        .collect();
    s.push_str(&attach.join(", "));
    s.push_str(" }\nsubnets = { a = \"198.19.100.0/24\", b = \"198.19.101.0/24\" }\n\n");
    s.push_str("[gates.rdma-bw]\npass = \"1%\"\nwarn = \"0.5%\"\n\n[tests]\npreflight = false\n\n");
    s.push_str("[tests.rdma-bw]\nschedule = \"rounds\"\nduration-s = 1\nsize-bytes = 65536\ntimeout-s = 8\n");
    for r in 1..=5 {
        let _ = writeln!(
            s,
            "\n[[tests.rdma-bw.round]]\nname = \"S{r}\"\nflows = [\"h02 -> h01\", \"h04 -> h03\", \"h06 -> h05\", \"h08 -> h07\"]"
        );
    }
    s
}

#[test]
#[ignore]
fn bench_launch_skew_8() {
    if !lab_enabled() {
        return;
    }
    let dir = work("skew-8");
    let p = dir.join("skew-8.toml");
    std::fs::write(&p, skew_plan()).unwrap();
    let plan = support::load_plan(&p);
    let t0 = Instant::now();
    let lab = Lab::build(&lab::twin::lab_spec("bsk", &plan)).expect("lab builds");
    println!("skew-8: lab built in {:?}", t0.elapsed());
    std::fs::write(&p, lab.translate(&skew_plan())).unwrap();
    let mut skews = Vec::new();
    for i in 0..reps() {
        let r = fabricplan_run(&lab, &p, &dir.join(format!("run-{i}")));
        assert_no_leftovers(&lab);
        let f = Figures::of(&r);
        f.print(&format!("skew-8 #{i}"));
        for round in r.results["rounds"].as_array().into_iter().flatten() {
            assert_eq!(round["launch_skew_source"], "remote");
            assert_eq!(round["jobs"].as_array().map(Vec::len), Some(4));
            skews.push(round["launch_skew_ms"].as_f64().expect("skew"));
        }
    }
    let max = skews.iter().cloned().fold(0.0, f64::max);
    println!(
        "BENCH-SUMMARY skew-8: {} rounds of 4 flows: launch skew median {:.2} ms, max {:.2} ms, all {:?}",
        skews.len(),
        median(&mut skews.clone()),
        max,
        skews
    );
}

/// Busy CPU seconds of the whole machine so far (`/proc/stat`: every state but idle and iowait).
fn machine_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let busy: f64 = ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .sum();
    // SAFETY: sysconf reads a constant.
    busy / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// A finished process's CPU seconds: (its own user + system time, its reaped children's), read
/// from `/proc/PID/stat` while it is a zombie (waited for with `WNOWAIT`, reaped after).
fn run_measured(mut c: Command) -> (std::process::Output, f64, f64) {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    // read both pipes to their end (stderr on a thread of its own), then wait without reaping
    let (mut o, mut e) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut v).ok();
        v
    });
    let mut stdout = Vec::new();
    std::io::Read::read_to_end(&mut o, &mut stdout).ok();
    let stderr = err.join().unwrap();
    // SAFETY: waitid fills the zeroed siginfo we own; WNOWAIT leaves the child to reap.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    assert_eq!(rc, 0, "waitid");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let status = child.wait().expect("reap");
    let output = std::process::Output {
        status,
        stdout,
        stderr,
    };
    // fields after the command's closing parenthesis: state is 3, utime 14 ... cstime 17
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let at = |i: usize| f.get(i - 3).copied().unwrap_or(0.0) / hz;
    (output, at(14) + at(15), at(16) + at(17))
}

/// What one `fabricplan detect` cost.
struct DetectRun {
    wall: f64,
    /// CPU seconds the whole machine was busy (fabricplan, every host's sshd, shell and probe,
    /// and anything else running).
    machine: f64,
    /// The fabricplan process's own CPU seconds.
    own: f64,
    /// Its children's (`ssh -G` per node, to evaluate ssh_config).
    children: f64,
}

/// `fabricplan detect` over `hosts`.
fn detect(lab: &Lab, hosts: &[String]) -> DetectRun {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabricplan"));
    c.arg("detect")
        .arg("--ssh-config")
        .arg(lab.ssh_config_path())
        .args(["--format", "json"])
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::null());
    for h in hosts {
        c.arg("--host").arg(h);
    }
    let m0 = machine_cpu();
    let t = Instant::now();
    let (o, own, children) = run_measured(c);
    let wall = t.elapsed().as_secs_f64();
    let machine = machine_cpu() - m0;
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "detect output is not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let reports = v.as_array().expect("reports");
    assert_eq!(reports.len(), hosts.len());
    for r in reports {
        assert_eq!(r["reachable"], true, "{r}");
    }
    assert!(o.status.success());
    DetectRun {
        wall,
        machine,
        own,
        children,
    }
}

/// `script` on every host through the SSH transport itself (in process, a fresh transport:
/// connections included): wall time. Separates the transport's cost from the probe's.
fn transport_fanout(lab: &Lab, hosts: &[String], script: &str) -> f64 {
    use fabricplan::exec::Transport;
    use fabricplan::launchers::ssh::exec::{SshOptions, SshTransport};
    use fabricplan::plan::{Node, NodeId};
    let nodes: Vec<Node> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| Node::alias(NodeId(i), h))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    rt.block_on(async {
        let tr = SshTransport::new(SshOptions {
            config: Some(lab.ssh_config_path()),
            ..Default::default()
        });
        let outs = futures::future::join_all(
            nodes
                .iter()
                .map(|n| tr.exec(n, script, Duration::from_secs(60))),
        )
        .await;
        tr.close().await;
        for (n, o) in nodes.iter().zip(outs) {
            let o = o.unwrap_or_else(|e| panic!("{}: {e}", n.name));
            assert_eq!(o.status, 0, "{}: {o:?}", n.name);
        }
    });
    t.elapsed().as_secs_f64()
}

/// The discovery probe as it was before it read sysfs with shell builtins (`cat` per attribute,
/// `grep -H . | sed` per directory: about 50 processes per GB10 host). Kept to measure what the
/// builtin probe saves, and checked to parse to exactly the same [`Probe`].
const PROBE_FORKING: &str = include_str!("fixtures/probe-forking.sh");

/// The same probe with the system ssh, host after host (or all at once with `&`).
fn ssh_loop(lab: &Lab, dir: &Path, hosts: &[String], parallel: bool) -> f64 {
    let probe = dir.join("probe.sh");
    std::fs::write(&probe, fabricplan::discover::PROBE_SCRIPT).unwrap();
    let sep = if parallel { "&" } else { ";" };
    let script = format!(
        "for h in {}; do ssh -F {} $h sh -s < {} > {}/probe.$h.out {sep} done; wait",
        hosts.join(" "),
        lab.ssh_config_path().display(),
        probe.display(),
        dir.display()
    );
    let t = Instant::now();
    let o = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::null())
        .output()
        .expect("ssh loop");
    let wall = t.elapsed().as_secs_f64();
    assert!(o.status.success(), "{o:?}");
    for h in hosts {
        let out = std::fs::read_to_string(dir.join(format!("probe.{h}.out"))).unwrap();
        assert!(out.contains("@end"), "{h}: {out}");
    }
    wall
}

#[test]
#[ignore]
fn bench_fanout_detect() {
    if !lab_enabled() {
        return;
    }
    let n = 32;
    let names: Vec<String> = (1..=n).map(|i| format!("n{i:02}")).collect();
    let mut spec = LabSpec::new("bfo").hosts_only();
    for h in &names {
        spec = spec.host(h);
    }
    let t0 = Instant::now();
    let lab = Lab::build(&spec).expect("lab builds");
    println!("fan-out: {n}-host lab built in {:?}", t0.elapsed());
    let dir = work("fanout");
    // warm the page cache and every sshd once
    ssh_loop(&lab, &dir, &names, true);
    // the forking probe of before reads the same: devices, states, netdevs, GIDs, counters
    let full = lab.exec("n01", fabricplan::discover::PROBE_SCRIPT);
    let lite = lab.exec("n01", PROBE_FORKING);
    let parse = |o: &std::process::Output| {
        serde_json::to_value(fabricplan::discover::probe::parse(
            &String::from_utf8_lossy(&o.stdout),
        ))
        .unwrap()
    };
    assert_eq!(
        parse(&full),
        parse(&lite),
        "the forking probe reads differently"
    );
    assert!(!parse(&full)["devices"].as_array().unwrap().is_empty());
    let tries = 3.max(reps());
    let mut base = f64::NAN;
    let mut base_t = f64::NAN;
    for k in [1usize, 8, 32] {
        let hosts = &names[..k];
        let runs: Vec<DetectRun> = (0..tries).map(|_| detect(&lab, hosts)).collect();
        let mut d: Vec<f64> = runs.iter().map(|r| r.wall).collect();
        let mut machine: Vec<f64> = runs.iter().map(|r| r.machine).collect();
        let mut own: Vec<f64> = runs.iter().map(|r| r.own).collect();
        let mut children: Vec<f64> = runs.iter().map(|r| r.children).collect();
        let mut lab_cpu: Vec<f64> = runs
            .iter()
            .map(|r| r.machine - r.own - r.children)
            .collect();
        let mut s: Vec<f64> = (0..tries)
            .map(|_| ssh_loop(&lab, &dir, hosts, false))
            .collect();
        let mut p: Vec<f64> = (0..tries)
            .map(|_| ssh_loop(&lab, &dir, hosts, true))
            .collect();
        let mut tt: Vec<f64> = (0..tries)
            .map(|_| transport_fanout(&lab, hosts, "true"))
            .collect();
        let mut tp: Vec<f64> = (0..tries)
            .map(|_| transport_fanout(&lab, hosts, fabricplan::discover::PROBE_SCRIPT))
            .collect();
        let mut tl: Vec<f64> = (0..tries)
            .map(|_| transport_fanout(&lab, hosts, PROBE_FORKING))
            .collect();
        let dm = median(&mut d);
        if k == 1 {
            base = dm;
            base_t = median(&mut tt.clone());
        }
        println!(
            "BENCH-SUMMARY fan-out {k} hosts: detect median {dm:.3} s ({:.2}x one host; runs {d:?}), \
             machine CPU busy {:.3} s: fabricplan's own {:.3} s, its `ssh -G` children {:.3} s, \
             the rest (the lab's sshd, shells and probes) {:.3} s; \
             sequential ssh loop {:.3} s; parallel ssh loop {:.3} s; \
             in-process transport: `true` {:.3} s ({:.2}x one host), the probe {:.3} s, \
             the forking probe of before {:.3} s",
            dm / base,
            median(&mut machine),
            median(&mut own),
            median(&mut children),
            median(&mut lab_cpu),
            median(&mut s),
            median(&mut p),
            median(&mut tt),
            median(&mut tt.clone()) / base_t,
            median(&mut tp),
            median(&mut tl),
        );
    }
}
