//! End to end through Slurm: the real `fabricplan run --launcher slurm` against lab twins whose
//! hosts are the nodes of a real Slurm cluster (munge, slurmctld, one slurmd per lab host; see
//! tests/lab/README.md). Every command is a job step of one allocation fabricplan makes (or is
//! given), and nothing of it is left when the run ends: no step, no process on a host, no
//! allocation (unless it was given, then it is left as it was).
//!
//! fabricplan runs as a Slurm client of the lab (`Lab::slurm_command`: the lab's hosts view and
//! `SLURM_CONF`), over no SSH at all. Root is required; without root these tests fail with a
//! clear message unless `FABRICPLAN_SKIP_LAB=1` is set (then they are skipped with a note).

mod support;

mod lab;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lab::run::{Run, Work};
use lab::twin::lab_spec;
use lab::{Lab, lab_enabled};

fn twin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lab/plans")
        .join(format!("{name}.toml"))
}

/// A twin's lab with a Slurm cluster over its hosts: the plan file to run (with the lab's
/// addresses), the lab, and the test's work directory.
fn build(name: &str, tag: &str) -> (PathBuf, Lab, Work) {
    let t0 = Instant::now();
    let plan = support::load_plan(twin(name));
    let lab = Lab::build(&lab_spec(tag, &plan).slurm()).expect("slurm lab builds");
    let file = lab::twin::plan_file(&lab, &twin(name)).expect("twin plan file");
    eprintln!("{name} lab with Slurm built in {:?}", t0.elapsed());
    (file, lab, Work::new("fabricplan-slurm-e2e", name))
}

/// `fabricplan run PLAN --launcher slurm --out DIR --format FORMAT EXTRA...`, as a Slurm client
/// of the lab.
fn fabricplan(lab: &Lab, plan: &Path, out: &Path, format: &str, extra: &[&str]) -> Command {
    let mut argv: Vec<String> = vec![
        env!("CARGO_BIN_EXE_fabricplan").into(),
        "run".into(),
        plan.display().to_string(),
        "--launcher".into(),
        "slurm".into(),
        "--out".into(),
        out.display().to_string(),
        "--format".into(),
        format.into(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut c = lab.slurm_command(&refs);
    c.env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .stdin(Stdio::null());
    c
}

/// How long one run may take before the test gives up on it (and kills it with all it
/// started). A healthy two-spark run takes under 20 s on an idle 2-core machine; CI is slower
/// and runs other labs beside this one, so the bound is generous: it only ends a hang.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// How long Slurm and the hosts get to settle after a run (steps gone, jobs released):
/// polled, so a generous bound costs nothing when they settle at once.
const SETTLE: Duration = Duration::from_secs(60);

/// A fabricplan the test started. Its output is read as it comes (a full pipe never stalls
/// it); it is waited for within a deadline; and on every other path (a failed assertion, a
/// missed deadline) it is killed, with every process it started (the `srun`s run in process
/// groups of their own, so they are found by parent, not by group), and reaped.
struct Started {
    child: Option<Child>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Started {
    fn spawn(mut c: Command) -> Started {
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fabricplan");
        let reader = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = r.read_to_end(&mut b);
                b
            })
        };
        let stdout = child.stdout.take().map(|o| reader(Box::new(o)));
        let stderr = child.stderr.take().map(|e| reader(Box::new(e)));
        Started {
            child: Some(child),
            stdout,
            stderr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("started").id()
    }

    /// Whether it has exited (it is not reaped: `wait` still reads its status).
    fn exited(&mut self) -> bool {
        let child = self.child.as_mut().expect("started");
        // try_wait reaps it, and std keeps the status for `wait`'s next try_wait
        matches!(child.try_wait(), Ok(Some(_)))
    }

    /// Its output once it exits; a panic (after which `Drop` kills it) if it has not exited
    /// within `deadline`.
    fn wait(mut self, deadline: Duration) -> Output {
        let mut status = None;
        let child = self.child.as_mut().expect("started");
        let exited = lab::wait(deadline, || {
            status = child.try_wait().expect("try_wait fabricplan");
            status.is_some()
        });
        assert!(exited, "fabricplan did not finish within {deadline:?}");
        self.child = None;
        let join = |h: Option<JoinHandle<Vec<u8>>>| {
            h.map(|h| h.join().expect("output reader"))
                .unwrap_or_default()
        };
        Output {
            status: status.expect("exited"),
            stdout: join(self.stdout.take()),
            stderr: join(self.stderr.take()),
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        // the whole tree, gathered before any of it dies (orphans are re-parented away)
        let mut tree = vec![child.id()];
        let mut i = 0;
        while i < tree.len() {
            tree.extend(children_of(tree[i]));
            i += 1;
        }
        for pid in &tree[1..] {
            let _ = lab::run(&["kill", "-KILL", &pid.to_string()]);
        }
        let _ = child.kill();
        let _ = child.wait();
        eprintln!(
            "fabricplan (pid {}) killed with {} process(es) it started",
            tree[0],
            tree.len() - 1
        );
    }
}

/// The pids whose parent is `pid` (from /proc/PID/stat; the command name in parentheses may
/// hold spaces, so the fields are read after its closing one).
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

fn run(lab: &Lab, plan: &Path, out: &Path, format: &str, extra: &[&str]) -> Run {
    let t = Instant::now();
    let o = Started::spawn(fabricplan(lab, plan, out, format, extra)).wait(RUN_DEADLINE);
    let r = Run::finish(o, out, t.elapsed());
    eprintln!(
        "run --launcher slurm {extra:?}: exit {:?} in {:?}: {}",
        r.code,
        t.elapsed(),
        r.verdict()
    );
    r
}

/// Slurm's jobs now (`JOBID STATE NODES`), and their steps.
fn queue(lab: &Lab) -> (String, String) {
    let jobs = lab.slurm("squeue -h -o '%i %T %N'");
    let steps = lab.slurm("squeue -h -s -o '%i %j %N'");
    (
        String::from_utf8_lossy(&jobs.stdout).trim().to_string(),
        String::from_utf8_lossy(&steps.stdout).trim().to_string(),
    )
}

/// Nothing fabricplan started is left: no process on a host (steps, tools, slurmstepd), no
/// step, and no job but those in `keep`.
fn assert_nothing_left(lab: &Lab, keep: &[String], when: &str) {
    let left = lab.leftovers(SETTLE);
    assert!(
        left.is_empty(),
        "{when}: processes left on the hosts: {left:#?}"
    );
    let mut q = queue(lab);
    lab::wait(SETTLE, || {
        q = queue(lab);
        q.1.is_empty()
            && q.0
                .lines()
                .all(|l| keep.iter().any(|k| l.starts_with(&format!("{k} "))))
    });
    assert!(q.1.is_empty(), "{when}: steps left: {}", q.1);
    for l in q.0.lines() {
        assert!(
            keep.iter().any(|k| l.starts_with(&format!("{k} "))),
            "{when}: a job left in Slurm: {l}"
        );
    }
}

/// The guard itself, with no lab: a child that started a process in a process group (and
/// session) of its own, as fabricplan starts its `srun`s, and then hangs: a missed deadline is
/// a panic, and by the time it is caught both processes are gone.
#[test]
fn a_started_run_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("setsid sleep 600 & echo $$ $! > \"$1\"; sleep 600")
        .arg("sh")
        .arg(&pids)
        .stdin(Stdio::null());
    let started = Started::spawn(c);
    let mut written = String::new();
    assert!(lab::wait(Duration::from_secs(60), || {
        written = std::fs::read_to_string(&pids).unwrap_or_default();
        written.ends_with('\n')
    }));
    let t = Instant::now();
    let missed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        started.wait(Duration::from_millis(200))
    }));
    assert!(missed.is_err(), "a hang must not pass");
    assert!(t.elapsed() < Duration::from_secs(60));
    for pid in written.split_whitespace() {
        let gone = lab::wait(Duration::from_secs(60), || {
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                    st.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                })
        });
        assert!(
            gone,
            "pid {pid} ({}) outlived the guard",
            lab::cmdline(pid.parse().unwrap())
        );
    }
}

// ------------------------------------------------------------------ two-spark

/// The two-spark twin through Slurm: every gate OK, every command a step of the allocation
/// fabricplan made, NCCL one `srun --mpi=pmix` step over both ranks; then in an allocation it
/// was given, which it leaves as it found it; nothing left running after either.
#[test]
fn two_spark_twin_runs_green_through_slurm() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let (plan, lab, work) = build("two-spark", "s2s");

    let r = run(&lab, &plan, &work.path().join("healthy"), "json", &[]);
    assert_eq!(r.verdict(), "ALL GREEN", "{}", r.story());
    assert_eq!(r.code, Some(0), "{}", r.story());
    assert_eq!(r.results["transport"], "slurm", "{}", r.story());
    assert_eq!(r.jobs().len(), 11, "{}", r.story());
    for j in r.jobs() {
        assert_eq!(j["status"], "measured", "{}", r.story());
    }
    // the allocation: granted on both nodes, released at the end
    let alloc = r
        .preflight()
        .iter()
        .find(|v| v["gate"] == "slurm allocation")
        .unwrap_or_else(|| panic!("no allocation verdict:\n{}", r.story()));
    assert_eq!(alloc["outcome"], "OK", "{}", r.story());
    let detail = alloc["detail"].as_str().unwrap();
    assert!(
        detail.contains("on 2 node(s): spark-a,spark-b") && detail.contains("salloc --no-shell"),
        "{detail}"
    );
    let job: String = detail
        .trim_start_matches("job ")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    // every node's command ran in its session step (the SSH launcher's scripts), and NCCL's
    // ranks were one PMIx step of that allocation
    for j in r.jobs() {
        for s in j["steps"].as_array().unwrap() {
            let script = s["script"].as_str().unwrap();
            if j["kind"] == "nccl" {
                assert!(
                    script.starts_with(&format!("srun --overlap --jobid={job} ")),
                    "{script}"
                );
            } else {
                assert!(!script.contains("srun"), "{script}");
            }
        }
    }
    let nccl = r.jobs().iter().find(|j| j["kind"] == "nccl").unwrap();
    let line = nccl["steps"][0]["script"].as_str().unwrap();
    assert!(
        line.contains(" --mpi=pmix ") && line.contains(" -w spark-a,spark-b -N2 -n2 "),
        "{line}"
    );
    assert_eq!(nccl["parsed"]["transport"], "NET/IB", "{}", r.story());
    // one step per node carried its commands: each node's slurmd launched, for this job, that
    // step and the tasks of the two steps over the ranks (the launch check and NCCL), nothing
    // else, over 11 jobs in 9 rounds
    let mut steps: Vec<Vec<String>> = Vec::new();
    for node in ["spark-a", "spark-b"] {
        let log = std::fs::read_to_string(lab.dir().join(format!("slurm/nodes/{node}/slurmd.log")))
            .unwrap_or_default();
        let launched: Vec<String> = log
            .lines()
            .filter_map(|l| l.split("launch task StepId=").nth(1))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|id| id.starts_with(&format!("{job}.")))
            .map(str::to_string)
            .collect();
        eprintln!("{node}: steps launched for job {job}: {launched:?}");
        steps.push(launched);
    }
    let own = |i: usize| {
        steps[i]
            .iter()
            .filter(|s| !steps[1 - i].contains(s))
            .count()
    };
    assert_eq!((own(0), own(1)), (1, 1), "{steps:?}");
    assert_eq!(steps[0].len(), 3, "{steps:?}");
    assert_eq!(steps[1].len(), 3, "{steps:?}");
    // clients of a round were released together, from the hosts' own clocks
    let both = r.results["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["jobs"].as_array().unwrap().len() > 1)
        .expect("a round of two jobs");
    assert_eq!(both["launch_skew_source"], "remote", "{both}");
    let skew = both["launch_skew_ms"].as_f64().unwrap();
    assert!(skew < 100.0, "launch skew {skew} ms");
    assert_nothing_left(&lab, &[], "healthy run");

    // An allocation the test made: fabricplan runs in it and leaves it as it was.
    // granted at once on an idle lab; refused rather than waited for if it is not
    let out = lab.slurm("salloc --no-shell --immediate=120 -N2 -w spark-a,spark-b");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let given: String = said
        .split("Granted job allocation ")
        .nth(1)
        .unwrap_or_else(|| panic!("{said}"))
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let r = run(
        &lab,
        &plan,
        &work.path().join("given"),
        "json",
        &[
            "--allocation",
            &given,
            "--only",
            "rdma-lat",
            "--only",
            "nccl",
        ],
    );
    assert_eq!(r.verdict(), "ALL GREEN", "{}", r.story());
    let alloc = r
        .preflight()
        .iter()
        .find(|v| v["gate"] == "slurm allocation")
        .unwrap();
    assert!(
        alloc["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("job {given} (given) is RUNNING")),
        "{alloc}"
    );
    assert_nothing_left(
        &lab,
        std::slice::from_ref(&given),
        "run in a given allocation",
    );
    let (jobs, _) = queue(&lab);
    assert!(
        jobs.starts_with(&format!("{given} RUNNING")),
        "the given allocation is gone: {jobs:?}"
    );
    let out = lab.slurm(&format!("scancel {given}"));
    assert!(out.status.success());

    interrupted_run(&lab, &plan, work.path());
    eprintln!("two-spark through Slurm: {:?}", t0.elapsed());
}

/// SIGINT a moment into a round: the round in flight finishes and is cleaned up, the rest is
/// skipped, exit 130, and the allocation fabricplan made is released.
fn interrupted_run(lab: &Lab, plan: &Path, work: &Path) {
    let out = work.join("interrupted");
    let t = Instant::now();
    let mut child = Started::spawn(fabricplan(lab, plan, &out, "json", &[]));
    let jsonl = out.join("results.jsonl");
    let lines = || {
        std::fs::read_to_string(&jsonl)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0)
    };
    // round 1 finished, and round 2's server is up on spark-b: we are inside round 2
    let mut inside = false;
    let mut seen: Vec<u32> = Vec::new();
    let fp = child.pid();
    lab::wait(RUN_DEADLINE, || {
        seen.extend(children_of(fp));
        inside = lines() >= 1
            && lab
                .processes("spark-b")
                .iter()
                .any(|p| p.contains("ib_write_bw"));
        inside || child.exited()
    });
    assert!(inside, "round 2 never started (or the run ended before it)");
    let pid = child.pid().to_string();
    assert!(lab::run(&["kill", "-INT", &pid]).status.success());
    lab::wait(RUN_DEADLINE, || {
        seen.extend(children_of(fp));
        child.exited()
    });
    let r = Run::finish(child.wait(RUN_DEADLINE), &out, t.elapsed());
    // every srun it started (a session step per node, at least) exited and was waited for
    let alive: Vec<u32> = seen.iter().copied().filter(|p| running(*p)).collect();
    assert!(
        !seen.is_empty() && alive.is_empty(),
        "children {seen:?}, alive {alive:?}"
    );
    eprintln!("interrupted run: exit {:?}: {}", r.code, r.verdict());
    assert_eq!(r.code, Some(130), "{}", r.story());
    assert_eq!(r.results["interrupted"], true);
    assert!(
        r.jobs()
            .iter()
            .any(|j| j["reason"].as_str().unwrap_or("").contains("interrupted")),
        "{}",
        r.story()
    );
    assert_nothing_left(lab, &[], "interrupted run");
}

// ------------------------------------------------------------------ ring3, a node's slurmd down

/// spark-3's slurmd is stopped (a crash: the controller is not told) and the controller has
/// noticed (the node is not responding): one FAIL, `reach spark-3`, naming Slurm's state of the
/// node; the allocation holds the other two, and the link between them is measured each way.
#[test]
fn ring3_twin_with_a_dead_slurmd_is_one_fail() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let (plan, lab, work) = build("ring3", "s3r");
    lab.stop_slurmd("spark-3").unwrap();
    let mut state = String::new();
    let noticed = lab::wait(Duration::from_secs(180), || {
        state = lab.slurm_state("spark-3");
        state.ends_with('*') || state.starts_with("down")
    });
    assert!(
        noticed,
        "the controller never noticed: spark-3 is {state:?}"
    );
    eprintln!(
        "spark-3's slurmd stopped; after {:?} Slurm says it is {state}",
        t0.elapsed()
    );

    let r = run(&lab, &plan, &work.path().join("slurmd-down"), "text", &[]);
    eprintln!("--- terminal output of the run:\n{}", r.stdout);
    assert_eq!(r.code, Some(1), "{}", r.story());
    // one finding: spark-3's slurmd, with the command that brings it back
    assert_eq!(r.verdict(), "1 FAIL: slurmd on spark-3", "{}", r.story());
    assert!(
        r.stdout
            .contains("what to fix (1):\n  1. FAIL slurmd on spark-3"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("scontrol update nodename=spark-3 state=resume"),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.not_ok(),
        [(
            "reach spark-3".to_string(),
            "FAIL".to_string(),
            "slurm-node-unavailable".to_string()
        )],
        "{}",
        r.story()
    );
    let reach = r
        .preflight()
        .iter()
        .find(|v| v["gate"] == "reach spark-3")
        .unwrap();
    let detail = reach["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("Slurm reports node `spark-3` `{state}`"))
            && detail.contains("not responding"),
        "{detail}"
    );
    // the FAIL, its trap and its fix, as a person reads them
    assert!(r.stdout.contains("reach spark-3"), "{}", r.stdout);
    assert!(
        r.stdout.contains("Slurm node not available"),
        "{}",
        r.stdout
    );
    let alloc = r
        .preflight()
        .iter()
        .find(|v| v["gate"] == "slurm allocation")
        .unwrap();
    assert_eq!(alloc["outcome"], "OK");
    assert!(
        alloc["detail"]
            .as_str()
            .unwrap()
            .contains("on 2 node(s): spark-1,spark-2"),
        "{alloc}"
    );
    let mut measured = 0;
    for j in r.jobs() {
        let hosts = lab::run::hosts_of(j);
        if hosts.contains(&"spark-3") {
            assert_eq!(j["status"], "skipped", "{}", r.story());
            assert!(
                j["reason"]
                    .as_str()
                    .unwrap_or("")
                    .contains("spark-3 is unreachable"),
                "{}",
                r.story()
            );
        } else {
            assert_eq!(j["status"], "measured", "{}", r.story());
            measured += 1;
        }
    }
    assert_eq!(measured, 4, "{}", r.story());
    assert_nothing_left(&lab, &[], "slurmd-down run");
    eprintln!("ring3 with a dead slurmd: {:?}", t0.elapsed());
}

/// Whether `pid` still runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// spark-2's slurmd is killed (SIGKILL, a crash) while round 2 runs. The run goes on and ends;
/// when fabricplan exits, every `srun` it started has exited and been waited for (none is left
/// to pid 1), and nothing of it is left on any host: no step task, no slurmstepd. Once the
/// slurmd is back, Slurm holds no step and no job of the run.
#[test]
fn ring3_twin_with_a_slurmd_killed_mid_run_leaves_nothing() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let (plan, lab, work) = build("ring3", "s3k");
    let out = work.path().join("killed");
    let mut child = Started::spawn(fabricplan(&lab, &plan, &out, "json", &[]));
    let pid = child.pid();
    let mut seen: Vec<u32> = Vec::new();
    let jsonl = out.join("results.jsonl");
    let inside = lab::wait(RUN_DEADLINE, || {
        seen.extend(children_of(pid));
        let lines = std::fs::read_to_string(&jsonl)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0);
        lines >= 1
            && ["spark-1", "spark-2", "spark-3"]
                .iter()
                .any(|h| lab.processes(h).iter().any(|p| p.contains("ib_write_bw")))
    });
    assert!(inside, "round 2 never started");
    lab.stop_slurmd("spark-2").unwrap();
    eprintln!("spark-2's slurmd killed after {:?}", t0.elapsed());
    lab::wait(RUN_DEADLINE, || {
        seen.extend(children_of(pid));
        child.exited()
    });
    let r = Run::finish(child.wait(RUN_DEADLINE), &out, t0.elapsed());
    let exited = Instant::now();
    eprintln!(
        "run with a slurmd killed: exit {:?}: {}; not OK: {:#?}",
        r.code,
        r.verdict(),
        r.not_ok()
    );
    // spark-2's session step: srun was told the node failed, so the step runs on with nobody
    // to close it; it is one FAIL naming spark-2's slurmd, and the run went on without it
    assert_eq!(r.code, Some(1), "{}", r.story());
    // one finding: slurmd on spark-2, with the commands that bring it back; no healthy node
    // is blamed
    assert_eq!(r.verdict(), "1 FAIL: slurmd on spark-2", "{}", r.story());
    let f = &r.results["findings"][0];
    assert_eq!(
        f["fix_command"], "ssh spark-2 sudo systemctl start slurmd",
        "{f}"
    );
    assert!(
        f["fix"]
            .as_str()
            .is_some_and(|c| c.contains("scontrol update nodename=spark-2 state=resume")),
        "{f}"
    );
    let fail = r
        .preflight()
        .iter()
        .find(|v| v["gate"] == "session spark-2")
        .unwrap_or_else(|| panic!("no session verdict:\n{}", r.story()));
    assert_eq!(
        fail["implicates"],
        serde_json::json!([{"part": "software", "node": "spark-2", "software": "slurmd"}]),
        "{fail}"
    );
    for (gate, outcome, _) in r.not_ok() {
        if gate != "session spark-2" {
            let v = r
                .jobs()
                .iter()
                .flat_map(|j| j["verdicts"].as_array().unwrap())
                .find(|v| v["gate"] == gate)
                .unwrap();
            assert!(
                outcome != "FAIL" || v["follows"] == "slurmd on spark-2",
                "{gate} does not follow the lost session's slurmd: {v}"
            );
        }
    }
    seen.sort();
    seen.dedup();
    let alive: Vec<String> = seen
        .iter()
        .filter(|p| running(**p))
        .map(|p| format!("{p}: {}", lab::cmdline(*p)))
        .collect();
    assert!(
        alive.is_empty(),
        "children of fabricplan outlived it: {alive:#?}"
    );
    assert!(
        seen.iter().any(|p| !running(*p)),
        "fabricplan started no srun"
    );
    // what ran on spark-2 is ended there by the session's own watchdog (no heartbeat for two
    // 10 s windows), and its slurmstepd with it
    let left = lab.leftovers(SETTLE);
    assert!(left.is_empty(), "left on the hosts: {left:#?}");
    eprintln!(
        "the hosts were clean {:?} after fabricplan exited",
        exited.elapsed()
    );
    lab.start_slurmd("spark-2").unwrap();
    assert_nothing_left(&lab, &[], "after the slurmd came back");
    eprintln!("ring3 with a slurmd killed mid-run: {:?}", t0.elapsed());
}

// ------------------------------------------------------------------ out of service

/// Slurm's state and reason of `node` (`drained|fabricplan ...`).
fn state_of(lab: &Lab, node: &str) -> String {
    let o = lab.slurm(&format!("sinfo -h -N -n {node} -o '%T|%E'"));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `fabricplan run PLAN --launcher ssh ...` as a Slurm client of the lab: its commands over
/// SSH, its `scontrol` and `sinfo` through the lab's Slurm.
fn over_ssh(lab: &Lab, plan: &Path, out: Option<&Path>, extra: &[&str]) -> Run {
    let conf = lab.ssh_config_path();
    let mut argv: Vec<String> = vec![
        env!("CARGO_BIN_EXE_fabricplan").into(),
        "run".into(),
        plan.display().to_string(),
        "--launcher".into(),
        "ssh".into(),
        "--ssh-config".into(),
        conf.display().to_string(),
    ];
    if let Some(out) = out {
        argv.extend(["--out".to_string(), out.display().to_string()]);
    }
    argv.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut c = lab.slurm_command(&refs);
    c.env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::null());
    let t = Instant::now();
    let o = Started::spawn(c).wait(RUN_DEADLINE);
    let Some(out) = out else {
        return Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            results: serde_json::Value::Null,
            wall: t.elapsed(),
        };
    };
    Run::finish(o, out, t.elapsed())
}

/// A throttled half under Slurm with `--drain`: exactly its node is drained, with the reason
/// `fabricplan RUN-ID: TRAP PART`, and `--exclude-file` holds it. Then, healed, a node drained
/// by someone else beside it: `--dry-run` says what would become of each, and a re-run over SSH
/// with `--resume-passed` resumes the node fabricplan drained and leaves the other drained.
#[test]
fn drain_the_blamed_node_and_resume_it_when_healthy() {
    if !lab_enabled() {
        return;
    }
    let (plan, lab, work) = build("two-spark", "s2d");
    let exclude = work.path().join("exclude");
    let exclude_arg = exclude.display().to_string();
    let drain_args = [
        "--only",
        "rdma-bw",
        "--drain",
        "--exclude-file",
        exclude_arg.as_str(),
    ];

    // spark-b's sending shaped (tc on its netdev's egress): spark-b -> spark-a fails, the
    // reverse passes and vouches for both ends alike. The evidence cannot tell spark-b's
    // sending from spark-a's receiving: one finding about both, and nobody drained.
    lab.throttle("spark-b", "enp1s0f0np0", "800mbit").unwrap();
    let r = run(
        &lab,
        &plan,
        &work.path().join("ambiguous"),
        "text",
        &drain_args,
    );
    lab.unthrottle("spark-b", "enp1s0f0np0").unwrap();
    assert_eq!(r.code, Some(1), "{}", r.story());
    let findings = r.results["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{}", r.story());
    assert_eq!(
        findings[0]["among"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.story()
    );
    assert_eq!(state_of(&lab, "spark-a"), "idle|none");
    assert_eq!(state_of(&lab, "spark-b"), "idle|none");
    assert_eq!(std::fs::read_to_string(&exclude).unwrap(), "");

    // spark-b's half at MTU 1500: its own discovery names it, and only it is drained
    lab.set_mtu("spark-b", "enp1s0f0np0", 1500).unwrap();
    let r = run(&lab, &plan, &work.path().join("drain"), "text", &drain_args);
    lab.set_mtu("spark-b", "enp1s0f0np0", 9000).unwrap();
    assert_eq!(r.code, Some(1), "{}", r.story());
    let findings = r.results["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{}", r.story());
    assert_eq!(findings[0]["name"], "spark-b.f0.a", "{}", r.story());
    let run_id = r.results["run_id"].as_str().unwrap().to_string();
    let reason = format!(
        "fabricplan {run_id}: {} spark-b.f0.a",
        findings[0]["trap_name"].as_str().unwrap()
    );
    assert_eq!(state_of(&lab, "spark-b"), format!("drained|{reason}"));
    assert_eq!(state_of(&lab, "spark-a"), "idle|none");
    let service = &r.results["service"];
    assert_eq!(service["hostlist"], "spark-b", "{service}");
    assert_eq!(service["actions"][0]["done"], "done", "{service}");
    assert!(
        r.stdout.contains(&format!("drained spark-b: {reason}")),
        "{}",
        r.stdout
    );
    assert_eq!(std::fs::read_to_string(&exclude).unwrap(), "spark-b\n");
    assert_eq!(
        std::fs::read_to_string(format!("{exclude_arg}.hostlist")).unwrap(),
        "spark-b\n"
    );
    assert_nothing_left(&lab, &[], "the drained run");

    // healed; someone else drains spark-a
    let o = lab.slurm("scontrol update nodename=spark-a state=drain reason='PSU swap'");
    assert!(o.status.success(), "{o:?}");
    let dry = over_ssh(&lab, &plan, None, &["--dry-run", "--resume-passed"]);
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let ours = format!(
        "spark-b drained ({reason}): drained by fabricplan: resumed if this run finds it healthy"
    );
    let theirs = "spark-a drained (PSU swap): drained by someone else: left alone";
    for said in [ours.as_str(), theirs] {
        assert!(dry.stdout.contains(said), "{said}\n{}", dry.stdout);
    }
    assert!(state_of(&lab, "spark-b").starts_with("drained|"));
    let r = over_ssh(
        &lab,
        &plan,
        Some(&work.path().join("resume")),
        &[
            "--only",
            "rdma-bw",
            "--resume-passed",
            "--format",
            "json",
            "--exclude-file",
            &exclude_arg,
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.story());
    // a resumed node is pinged by the controller: `idle*` until its slurmd answers
    let mut b = String::new();
    lab::wait(SETTLE, || {
        b = state_of(&lab, "spark-b");
        b == "idle|none"
    });
    assert_eq!(b, "idle|none");
    let a = state_of(&lab, "spark-a");
    assert!(a.starts_with("drained") && a.ends_with("|PSU swap"), "{a}");
    let actions: Vec<(&str, &str, &str)> = r.results["service"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["node"].as_str().unwrap(),
                a["action"].as_str().unwrap(),
                a["done"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("spark-a", "leave", "nothing"),
            ("spark-b", "resume", "done")
        ]
    );
    // nobody blamed: the lists are emptied
    assert_eq!(std::fs::read_to_string(&exclude).unwrap(), "");
    let _ = lab.slurm("scontrol update nodename=spark-a state=resume");
}
