//! One session per host (issue #24): what a run costs beyond its tools when every command a host
//! runs would otherwise pay a login shell (sshd runs each through the user's shell, and bash reads
//! `~/.bashrc`, where real GPU hosts set up conda, pyenv or Lmod) or a Slurm step.
//!
//! * `bench_sessions_switched6`: the switched-6 twin (3 s tools, stand-ins taking 150 ms to
//!   start, preflight on) with the hosts' login shell costing 0, 150 and 500 ms (a sleep: host
//!   time), and the seed-style sequential script over the same jobs at each cost;
//! * `bench_sessions_slurm`: the ring3 twin through Slurm (`--launcher slurm`: one session step
//!   per node), the same stand-ins;
//! * `bench_sessions_detect`: `detect` on 1, 8 and 32 hosts whose login shell costs 150 ms,
//!   fabricplan's own CPU apart.
//!
//! Per cost they print (`BENCH-SUMMARY`): per round, fabricplan's share beyond the tools' own
//! start to exit (`phases.fabricplan_ms`, the servers' start-up counted as the tools'), its
//! median; before the first round, the total, the launch check's own run and what is beyond it;
//! wall over the sum of the rounds' longest client runs, and over that sum plus the servers'
//! start-up and the launch check's own run; the sequential script's wall over fabricplan's.
//! They assert behaviour only: every job measured, nothing left on any host, and (over SSH)
//! exactly one login shell of fabricplan's per host per run, whatever the rounds and commands.

use super::*;
use lab::twin::{lab_spec, plan_file};

/// What every stand-in waits before it does anything: a tool's own start-up.
const STANDIN_START_MS: u64 = 150;

/// The login-shell costs the switched-6 twin runs at, ms.
const LOGIN_COSTS: [u64; 3] = [0, 150, 500];

/// fabricplan's login shells so far on each host of `lab` (its sessions' shells: the loop's
/// `fabricplan-session` directory is in bash's `-c` string), and all the others.
fn logins(lab: &Lab) -> Vec<(usize, usize)> {
    lab.hosts()
        .iter()
        .map(|h| {
            let all = lab.login_shells(&h.name);
            let ours = all
                .iter()
                .filter(|l| l.contains("fabricplan-session"))
                .count();
            (ours, all.len() - ours)
        })
        .collect()
}

/// One run over SSH with `-v`: every host started exactly one login shell of fabricplan's.
fn ssh_run(lab: &Lab, plan: &Path, out: &Path) -> Run {
    let before = logins(lab);
    let mut c = lab::run::run_command(lab, plan, out);
    c.args(["--format", "json", "-v"]);
    let r = timed(c, out);
    let after = logins(lab);
    for ((h, b), a) in lab.hosts().iter().zip(&before).zip(&after) {
        assert_eq!(
            a.0 - b.0,
            1,
            "{}: fabricplan started {} login shells in one run",
            h.name,
            a.0 - b.0
        );
    }
    r
}

/// One run through Slurm with `-v`, as a Slurm client of the lab.
fn slurm_run(lab: &Lab, plan: &Path, out: &Path) -> Run {
    let argv: Vec<String> = vec![
        env!("CARGO_BIN_EXE_fabricplan").into(),
        "run".into(),
        plan.display().to_string(),
        "--launcher".into(),
        "slurm".into(),
        "--out".into(),
        out.display().to_string(),
        "--format".into(),
        "json".into(),
        "-v".into(),
    ];
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut c = lab.slurm_command(&refs);
    c.env("NO_COLOR", "1").stdin(Stdio::null());
    timed(c, out)
}

/// The medians of a set of runs of one plan, in seconds (per round: ms).
struct Medians {
    wall: f64,
    fabricplan_ms: f64,
    overhead_ms: f64,
    rounds: usize,
    before_total: f64,
    before_own: f64,
    before_beyond: f64,
    ratio: f64,
    ratio_all: f64,
}

impl Medians {
    fn of(runs: &[Run]) -> Medians {
        let figures: Vec<Figures> = runs.iter().map(Figures::of).collect();
        let (phases, rounds) = phase_medians(runs);
        let phase = |k: &str| {
            phases
                .iter()
                .find(|(n, _)| *n == k)
                .map_or(f64::NAN, |p| p.1)
        };
        let (before, _) = before_medians(runs);
        let before = |k: &str| {
            before
                .iter()
                .find(|(n, _)| *n == k)
                .map_or(f64::NAN, |p| p.1)
        };
        let of =
            |f: &dyn Fn(&Figures) -> f64| median(&mut figures.iter().map(f).collect::<Vec<_>>());
        Medians {
            wall: of(&|f| f.wall_s),
            fabricplan_ms: phase("fabricplan_ms"),
            overhead_ms: phase("overhead_ms"),
            rounds,
            before_total: before("total_ms") / 1000.0,
            before_own: before("launch_check_tool_ms") / 1000.0,
            before_beyond: before("beyond_launch_check_ms") / 1000.0,
            ratio: of(&|f| f.ratio()),
            ratio_all: of(&|f| f.ratio_all_tools()),
        }
    }

    fn summary(&self, label: &str, login_ms: u64, seq: Option<f64>) -> String {
        let seq = seq.map_or(String::new(), |s| {
            format!(
                "; sequential script {s:.2} s: fabricplan {:.2}x faster",
                s / self.wall
            )
        });
        format!(
            "{label}: per round beyond the tools (fabricplan_ms) median {:.1} ms over {} rounds \
             (with the servers' start-up {:.1} ms); before the first round {:.3} s, the launch \
             check's own run {:.3} s, beyond it {:.3} s (bound: one login shell + 0.5 s = \
             {:.3} s); wall {:.2} s, / longest client runs {:.3}, / every tool's own time on the \
             critical path {:.3}{seq}",
            self.fabricplan_ms,
            self.rounds,
            self.overhead_ms,
            self.before_total,
            self.before_own,
            self.before_beyond,
            login_ms as f64 / 1000.0 + 0.5,
            self.wall,
            self.ratio,
            self.ratio_all,
        )
    }
}

/// `run -v`'s phase lines (the line before the first round, one per round).
fn phase_lines(r: &Run) -> String {
    r.stderr
        .lines()
        .filter(|l| l.starts_with("before the first round") || l.starts_with("round "))
        .map(|l| format!("  {l}\n"))
        .collect()
}

#[test]
#[ignore]
fn bench_sessions_switched6() {
    if !lab_enabled() {
        return;
    }
    let twin = twin_path("switched-6");
    let plan = support::load_plan(&twin);
    let t0 = Instant::now();
    let spec = lab_spec("bss", &plan)
        .tool_delays(STANDIN_START_MS, 0)
        .login_cost(0);
    let lab = Lab::build(&spec).expect("lab builds");
    println!("switched-6: lab built in {:?}", t0.elapsed());
    let dir = work("switched-6-sessions");
    let file = plan_file(&lab, &twin).expect("twin plan file");
    let p = variant(
        &file,
        &dir,
        "switched-6-3s",
        &[
            ("duration-s = 2", "duration-s = 3"),
            ("timeout-s = 8", "timeout-s = 12"),
        ],
    );
    for login in LOGIN_COSTS {
        lab.set_login_cost(login).expect("login cost set");
        let mut runs = Vec::new();
        for i in 0..reps() {
            let r = ssh_run(&lab, &p, &dir.join(format!("l{login}-{i}")));
            assert_no_leftovers(&lab);
            Figures::of(&r).print(&format!("switched-6 login {login} ms #{i}"));
            print!("{}", phase_lines(&r));
            runs.push(r);
        }
        let sdir = dir.join(format!("seq-l{login}"));
        std::fs::create_dir_all(&sdir).unwrap();
        let seq = sequential(&lab, &sdir, &jobs_tsv(runs.last().expect("a run")));
        assert_no_leftovers(&lab);
        let label = format!(
            "switched-6, 3 s tools, stand-ins {STANDIN_START_MS} ms, login shell {login} ms"
        );
        println!(
            "BENCH-SUMMARY {}",
            Medians::of(&runs).summary(&label, login, Some(seq))
        );
    }
    lab.set_login_cost(0).expect("login cost cleared");
}

#[test]
#[ignore]
fn bench_sessions_slurm() {
    if !lab_enabled() {
        return;
    }
    let twin = twin_path("ring3");
    let plan = support::load_plan(&twin);
    let t0 = Instant::now();
    let spec = lab_spec("bsr", &plan)
        .slurm()
        .tool_delays(STANDIN_START_MS, 0)
        .login_cost(0);
    let lab = Lab::build(&spec).expect("slurm lab builds");
    println!("ring3 with Slurm: lab built in {:?}", t0.elapsed());
    let dir = work("ring3-slurm-sessions");
    let p = plan_file(&lab, &twin).expect("twin plan file");
    let mut runs = Vec::new();
    for i in 0..reps() {
        let r = slurm_run(&lab, &p, &dir.join(format!("run-{i}")));
        assert_no_leftovers(&lab);
        Figures::of(&r).print(&format!("ring3 slurm #{i}"));
        print!("{}", phase_lines(&r));
        runs.push(r);
    }
    let label = format!("ring3 through Slurm, 2 s tools, stand-ins {STANDIN_START_MS} ms");
    println!(
        "BENCH-SUMMARY {}",
        Medians::of(&runs).summary(&label, 0, None)
    );
}

#[test]
#[ignore]
fn bench_sessions_detect() {
    if !lab_enabled() {
        return;
    }
    const LOGIN_MS: u64 = 150;
    let names: Vec<String> = (1..=32).map(|i| format!("n{i:02}")).collect();
    let mut spec = LabSpec::new("bsd").hosts_only().login_cost(LOGIN_MS);
    for h in &names {
        spec = spec.host(h);
    }
    let t0 = Instant::now();
    let lab = Lab::build(&spec).expect("lab builds");
    println!("fan-out: 32-host lab built in {:?}", t0.elapsed());
    // every sshd and the page cache warmed once
    detect(&lab, &names);
    let tries = 3.max(reps());
    let mut base = f64::NAN;
    for k in [1usize, 8, 32] {
        let hosts = &names[..k];
        let before = logins(&lab);
        let runs: Vec<DetectRun> = (0..tries).map(|_| detect(&lab, hosts)).collect();
        let after = logins(&lab);
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            let want = if i < k { tries } else { 0 };
            assert_eq!(a.0 - b.0, want, "{}: fabricplan's login shells", names[i]);
        }
        let m = |f: &dyn Fn(&DetectRun) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
        let wall = m(&|r| r.wall);
        if k == 1 {
            base = wall;
        }
        println!(
            "BENCH-SUMMARY detect, login shell {LOGIN_MS} ms, {k} hosts: median {wall:.3} s \
             ({:.2}x one host; runs {:?}); machine CPU busy {:.3} s: fabricplan's own {:.3} s, \
             its `ssh -G` children {:.3} s, the rest (the lab) {:.3} s",
            wall / base,
            runs.iter().map(|r| r.wall).collect::<Vec<_>>(),
            m(&|r| r.machine),
            m(&|r| r.own),
            m(&|r| r.children),
            m(&|r| r.machine - r.own - r.children),
        );
    }
}
