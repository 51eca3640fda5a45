//! A real Slurm cluster in the lab (`LabSpec::slurm`): steps run inside the lab hosts (their
//! network namespace, hostname, sysfs, stand-ins and private /tmp), allocations, overlapping
//! steps, cancelling a step, PMIx-launched MPI and the NCCL stand-in, and the failures a Slurm
//! launcher must recognise: a drained node, a dead slurmd, a job time limit. Every observed
//! failure text is printed (run with `--nocapture` to read them).
//!
//! They need root (namespaces, daemons). Without root they fail with a clear message, unless
//! `FABRICPLAN_SKIP_LAB=1` is set, in which case they are skipped with a note.

mod lab;

use lab::{Lab, LabSpec, lab_enabled};
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a Slurm client command line and requires success; returns stdout.
fn slurm_ok(lab: &Lab, cmd: &str) -> String {
    let out = lab.slurm(cmd);
    assert!(out.status.success(), "{cmd}: {}", text(&out));
    stdout(&out)
}

/// A client running in the background, its stdout and stderr in files of the lab directory.
struct Bg {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
}

impl Bg {
    fn spawn(lab: &Lab, name: &str, cmd: &str) -> Bg {
        let out = lab.dir().join(format!("{name}.out"));
        let err = lab.dir().join(format!("{name}.err"));
        let child = lab
            .slurm_command(&["sh", "-c", &format!("exec {cmd}")])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("spawn a Slurm client");
        Bg {
            child,
            out,
            err,
            started: Instant::now(),
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Waits until stderr contains `needle`; returns it.
    fn wait_stderr(&self, needle: &str, timeout: Duration) -> String {
        let mut seen = String::new();
        let found = lab::wait(timeout, || {
            seen = self.stderr();
            seen.contains(needle)
        });
        assert!(found, "never saw {needle:?} on stderr; it holds:\n{seen}");
        seen
    }

    /// Waits for the client to exit: (exit code, stdout + stderr, time since spawn).
    fn finish(mut self, timeout: Duration) -> (Option<i32>, String, Duration) {
        let mut code = None;
        let exited = lab::wait(timeout, || match self.child.try_wait() {
            Ok(Some(status)) => {
                code = status.code();
                true
            }
            _ => false,
        });
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("client still running after {timeout:?}:\n{}", self.stderr());
        }
        let all = std::fs::read_to_string(&self.out).unwrap_or_default() + &self.stderr();
        (code, all, self.started.elapsed())
    }
}

impl Drop for Bg {
    /// A client still running when its test fails is killed with it.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `scontrol show node`'s State= of a node (e.g. `IDLE`, `DOWN+NOT_RESPONDING`, `IDLE+DRAIN`).
fn node_state(lab: &Lab, host: &str) -> String {
    let out = lab.slurm(&format!("scontrol show node {host}"));
    let t = stdout(&out);
    t.split_whitespace()
        .find_map(|w| w.strip_prefix("State="))
        .unwrap_or("")
        .to_string()
}

/// The job id in `salloc: Granted job allocation N`.
fn granted_job(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.split("Granted job allocation ").nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| panic!("no granted allocation in:\n{stderr}"))
}

/// After a lab is dropped: nothing it created is left (daemons, steps, namespaces, links,
/// directory).
fn assert_gone(footprint: &lab::Footprint) {
    let left = footprint.remaining();
    assert!(left.is_empty(), "left after drop: {left:#?}");
}

fn two_host_spec(tag: &str) -> LabSpec {
    LabSpec::new(tag)
        .host("host-a")
        .host("host-b")
        .direct_pair("host-a", "host-b", 1)
        .slurm()
}

#[test]
fn slurm_steps_run_inside_the_lab_hosts() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let lab = Lab::build(&two_host_spec("sl")).expect("slurm lab builds");
    eprintln!("bring-up (lab + slurm): {:?}", t0.elapsed());
    let footprint = lab.footprint();
    assert_eq!(lab.partition(), "lab");
    let conf = lab.slurm_conf();
    assert!(
        lab.slurm_env()
            .contains(&("SLURM_CONF".to_string(), conf.display().to_string()))
    );
    let sinfo = slurm_ok(&lab, "sinfo -h -N -o '%N %P %T'");
    assert_eq!(
        sinfo.trim(),
        "host-a lab* idle\nhost-b lab* idle",
        "{sinfo}"
    );

    // A step runs in the host: its hostname, its sysfs, its fabric address, its /tmp, its hosts.
    let t = Instant::now();
    assert_eq!(slurm_ok(&lab, "srun -w host-a hostname").trim(), "host-a");
    eprintln!("srun -w host-a hostname: {:?}", t.elapsed());
    assert_eq!(
        slurm_ok(
            &lab,
            "srun -w host-b cat /sys/class/infiniband/rocep1s0f0/ports/1/state"
        )
        .trim(),
        "4: ACTIVE"
    );
    let ip_a = lab.host("host-a").fabric_ip("enp1s0f0np0").unwrap();
    let addr = slurm_ok(&lab, "srun -w host-a ip -4 -o addr show dev enp1s0f0np0");
    assert!(addr.contains(&format!("inet {ip_a}/30")), "{addr}");
    slurm_ok(&lab, "srun -w host-a touch /tmp/from-a-step");
    assert!(
        lab.exec("host-a", "test -e /tmp/from-a-step")
            .status
            .success()
    );
    assert!(
        !lab.exec("host-b", "test -e /tmp/from-a-step")
            .status
            .success()
    );
    assert!(!std::path::Path::new("/tmp/from-a-step").exists());
    let hosts = slurm_ok(&lab, "srun -w host-a getent hosts host-b");
    assert!(
        hosts.starts_with(&lab.host("host-b").mgmt_ip.to_string()),
        "{hosts}"
    );
    // Both hosts in one step, ranks in order.
    let both = slurm_ok(&lab, "srun -N2 -n2 -l hostname | sort");
    assert_eq!(both, "0: host-a\n1: host-b\n");

    // An allocation, then steps inside it with --overlap.
    let out = lab.slurm("salloc --no-shell -N2 -w host-a,host-b");
    assert!(out.status.success(), "salloc: {}", text(&out));
    let job = granted_job(&String::from_utf8_lossy(&out.stderr));
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let o = slurm_ok(
            &lab,
            &format!("srun --jobid={job} --overlap -w host-a -N1 -n1 hostname"),
        );
        times.push(t.elapsed());
        assert_eq!(o.trim(), "host-a");
    }
    times.sort();
    eprintln!(
        "srun --overlap -N1 in allocation {job}: median {:?}",
        times[2]
    );

    // A background step, cancelled by its step id: its processes are gone.
    let bg = Bg::spawn(
        &lab,
        "sleeper",
        &format!("srun --jobid={job} --overlap -w host-b -N1 -n1 sleep 300"),
    );
    let mut step = String::new();
    assert!(
        lab::wait(Duration::from_secs(60), || {
            step = stdout(&lab.slurm(&format!("squeue -h -s -j {job} -o %i")))
                .lines()
                .map(str::trim)
                .find(|s| !s.ends_with(".extern") && s.contains('.'))
                .unwrap_or("")
                .to_string();
            !step.is_empty()
                && lab
                    .processes("host-b")
                    .iter()
                    .any(|p| p.contains("sleep 300"))
        }),
        "background step never ran: {:?}",
        lab.processes("host-b")
    );
    let t = Instant::now();
    slurm_ok(&lab, &format!("scancel {step}"));
    assert!(
        lab::wait(Duration::from_secs(60), || !lab
            .processes("host-b")
            .iter()
            .any(|p| p.contains("sleep 300"))),
        "step {step} still running: {:?}",
        lab.processes("host-b")
    );
    let gone = t.elapsed();
    let (code, said, _) = bg.finish(Duration::from_secs(60));
    eprintln!("scancel {step}: processes gone after {gone:?}; its srun exited {code:?}:\n{said}");
    assert_ne!(code, Some(0));
    slurm_ok(&lab, &format!("scancel {job}"));

    // MPI through PMIx: a real Open MPI program gets its rank from Slurm's PMIx server, and
    // OMPI_COMM_WORLD_* is not in its environment.
    let mgmt = lab.mgmt_subnet();
    let t = Instant::now();
    let hello = slurm_ok(
        &lab,
        &format!(
            "OMPI_MCA_btl_tcp_if_include={mgmt} OMPI_MCA_oob_tcp_if_include={mgmt} \
             srun --mpi=pmix -N2 -n2 -w host-a,host-b mpi_hello | sort"
        ),
    );
    eprintln!("srun --mpi=pmix mpi_hello: {:?}\n{hello}", t.elapsed());
    assert_eq!(
        hello,
        "mpi_hello host-a rank 0 of 2 env OMPI_COMM_WORLD_RANK=-\n\
         mpi_hello host-b rank 1 of 2 env OMPI_COMM_WORLD_RANK=-\n"
    );
    // Without PMIx (`--mpi=none`, the lab's MpiDefault) Open MPI refuses to start under srun;
    // the NCCL stand-in, an MPI program too, does the same.
    for prog in ["mpi_hello", "all_reduce_perf -b 8 -e 8 -g 1"] {
        let out = lab.slurm(&format!("srun --mpi=none -w host-a {prog}"));
        let said = text(&out);
        eprintln!(
            "srun --mpi=none {prog}: exit {:?}\n{said}",
            out.status.code()
        );
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(
            said.contains("but OMPI was not built with SLURM's PMI support and therefore cannot")
                && said.contains("srun: error: host-a: task 0: Exited with exit code 1"),
            "{said}"
        );
    }

    // The NCCL stand-in under srun --mpi=pmix: two ranks, a ring over the fabric, NET/IB.
    let before_a = lab.counter("host-a", "rocep1s0f0", "port_xmit_data");
    let before_b = lab.counter("host-b", "rocep1s0f0", "port_xmit_data");
    let t = Instant::now();
    let out = lab.slurm(
        "NCCL_NET_PLUGIN=none NCCL_IB_HCA=rocep1s0f0 NCCL_SOCKET_IFNAME=enp1s0f0np0 \
         NCCL_IB_GID_INDEX=3 NCCL_DEBUG=INFO \
         srun --mpi=pmix -N2 -n2 -w host-a,host-b all_reduce_perf -b 8 -e 1M -f 2 -g 1 -w 2 -n 5",
    );
    let nccl = text(&out);
    eprintln!("srun --mpi=pmix all_reduce_perf: {:?}\n{nccl}", t.elapsed());
    assert!(out.status.success(), "{nccl}");
    assert!(nccl.contains(" on     host-a device  0"), "{nccl}");
    assert!(nccl.contains(" on     host-b device  0"), "{nccl}");
    assert!(nccl.contains("[send] via NET/IB/0"), "{nccl}");
    assert!(nccl.contains("# Out of bounds values : 0 OK"), "{nccl}");
    assert_eq!(
        nccl.matches("# Collective test starting").count(),
        1,
        "one job of two ranks, not two singletons:\n{nccl}"
    );
    assert!(lab.counter("host-a", "rocep1s0f0", "port_xmit_data") > before_a);
    assert!(lab.counter("host-b", "rocep1s0f0", "port_xmit_data") > before_b);

    // A drained node: srun --immediate fails at once; plain srun waits in the queue.
    slurm_ok(
        &lab,
        "scontrol update nodename=host-b state=drain reason='lab drain test'",
    );
    // "draining" until the step before has fully completed on host-b (its epilog), then
    // "drained": waited for, not assumed.
    let mut state = String::new();
    let drained = lab::wait(Duration::from_secs(60), || {
        state = lab.slurm_state("host-b");
        state == "drained"
    });
    assert!(drained, "host-b never drained; sinfo says {state:?}");
    eprintln!(
        "drained: scontrol State={}; sinfo -R:\n{}",
        node_state(&lab, "host-b"),
        stdout(&lab.slurm("sinfo -R"))
    );
    let t = Instant::now();
    let out = lab.slurm("srun -I -w host-b hostname");
    eprintln!(
        "srun -I to a drained node: exit {:?} after {:?}:\n{}",
        out.status.code(),
        t.elapsed(),
        text(&out)
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains(
            "srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)"
        ),
        "{}",
        text(&out)
    );
    let pending = Bg::spawn(&lab, "pending", "srun -J fpl-pending -w host-b hostname");
    let said = pending.wait_stderr("queued and waiting for resources", Duration::from_secs(60));
    eprintln!("srun to a drained node (no -I), pending:\n{said}");
    assert!(
        said.contains("srun: Required node not available (down, drained or reserved)"),
        "{said}"
    );
    slurm_ok(&lab, "scancel -n fpl-pending");
    let (code, said, _) = pending.finish(Duration::from_secs(60));
    eprintln!("... after scancel: exit {code:?}:\n{said}");
    slurm_ok(&lab, "scontrol update nodename=host-b state=resume");
    assert!(lab::wait(Duration::from_secs(60), || lab
        .slurm_state("host-b")
        == "idle"));

    // Nothing of any step is left on the hosts; then nothing of the lab at all.
    let left = lab.leftovers(Duration::from_secs(60));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
    let t = Instant::now();
    drop(lab);
    eprintln!("teardown (slurm + lab): {:?}", t.elapsed());
    assert_gone(&footprint);
}

#[test]
fn slurm_failures_dead_slurmd_and_time_limit() {
    if !lab_enabled() {
        return;
    }
    let spec = LabSpec::new("sf")
        .host("a")
        .host("b")
        .host("c")
        .hosts_only()
        .slurm();
    let t0 = Instant::now();
    let lab = Lab::build(&spec).expect("slurm lab builds");
    eprintln!("bring-up (3 hosts + slurm): {:?}", t0.elapsed());
    let footprint = lab.footprint();

    // A job with a 1-minute limit (the smallest: Slurm keeps limits in minutes, and the
    // controller checks them every 30 s), running while the rest of the test goes on.
    let limited = Bg::spawn(&lab, "limited", "srun -t 1 -w c sleep 300");
    assert!(lab::wait(Duration::from_secs(60), || lab
        .processes("c")
        .iter()
        .any(|p| p.contains("sleep 300"))));

    // A dead slurmd: the first srun to it fails after the launch times out.
    let t_kill = Instant::now();
    lab.stop_slurmd("b").unwrap();
    let out = lab.slurm("srun -w b hostname");
    let failed_after = t_kill.elapsed();
    eprintln!(
        "srun to a node whose slurmd was just killed: exit {:?} after {failed_after:?}:\n{}",
        out.status.code(),
        text(&out)
    );
    assert_eq!(out.status.code(), Some(233), "{}", text(&out));
    assert!(
        text(&out).contains("failed on node b: Communication connection failure"),
        "{}",
        text(&out)
    );
    // The controller notices: NOT_RESPONDING, then DOWN.
    let mut seen: Vec<(Duration, String)> = Vec::new();
    let down = lab::wait(Duration::from_secs(60), || {
        let s = node_state(&lab, "b");
        if seen.last().map(|(_, l)| l != &s).unwrap_or(true) {
            seen.push((t_kill.elapsed(), s.clone()));
        }
        s.starts_with("DOWN")
    });
    eprintln!("node b states after the kill: {seen:?}");
    assert!(down, "node b never went DOWN: {seen:?}");
    assert!(seen.iter().any(|(_, s)| s.contains("NOT_RESPONDING")));
    let reason = stdout(&lab.slurm("sinfo -R -h -n b -o '%E'"));
    eprintln!("sinfo -R for b: {reason}");
    // srun --immediate to a DOWN node fails at once; plain srun would wait in the queue.
    let t = Instant::now();
    let out = lab.slurm("srun -I -w b hostname");
    eprintln!(
        "srun -I to a DOWN node: exit {:?} after {:?}:\n{}",
        out.status.code(),
        t.elapsed(),
        text(&out)
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("Required node not available (down, drained or reserved)"),
        "{}",
        text(&out)
    );
    let pending = Bg::spawn(&lab, "pending", "srun -J fpl-pending -w b hostname");
    let said = pending.wait_stderr("queued and waiting for resources", Duration::from_secs(60));
    eprintln!("srun to a DOWN node (no -I), pending:\n{said}");
    slurm_ok(&lab, "scancel -n fpl-pending");
    pending.finish(Duration::from_secs(60));

    // Back: a restarted slurmd makes the node usable again.
    let t = Instant::now();
    lab.start_slurmd("b").unwrap();
    eprintln!(
        "restarted slurmd: node b {} after {:?}",
        lab.slurm_state("b"),
        t.elapsed()
    );
    assert_eq!(slurm_ok(&lab, "srun -w b hostname").trim(), "b");

    // The time limit: the controller cancels the step, srun says so.
    let (code, said, after) = limited.finish(Duration::from_secs(150));
    eprintln!("srun -t 1 sleep 300: exit {code:?} after {after:?}:\n{said}");
    assert!(said.contains("DUE TO TIME LIMIT"), "{said}");
    assert!(
        after >= Duration::from_secs(60),
        "killed before its limit: {after:?}"
    );
    let left = lab.leftovers(Duration::from_secs(60));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
    let t = Instant::now();
    drop(lab);
    eprintln!("teardown (slurm + lab): {:?}", t.elapsed());
    assert_gone(&footprint);
}

/// Set for the helper process of [`a_crashed_slurm_labs_leftovers_go_at_the_next_build`]: the
/// file where the helper writes its lab directory once the lab runs.
const CRASH_HELPER: &str = "FABRICPLAN_LAB_CRASH_HELPER";

#[test]
#[ignore = "helper of a_crashed_slurm_labs_leftovers_go_at_the_next_build (run in a child process)"]
fn crash_helper_builds_a_slurm_lab_and_waits_to_be_killed() {
    let Ok(report) = std::env::var(CRASH_HELPER) else {
        return;
    };
    let lab = Lab::build(&LabSpec::new("cr").host("a").host("b").hosts_only().slurm())
        .expect("slurm lab builds");
    // A batch job running on b too (sbatch: no client left behind in the root namespace).
    slurm_ok(&lab, "sbatch -w b -o /dev/null --wrap 'sleep 300'");
    assert!(lab::wait(Duration::from_secs(60), || lab
        .processes("b")
        .iter()
        .any(|p| p.contains("sleep 300"))));
    std::fs::write(&report, lab.dir().display().to_string()).unwrap();
    // Waits to be killed, but never outlives the test that started it: once that test is gone
    // (this process re-parented), or after ten minutes, it takes its lab down and ends.
    let parent = std::os::unix::process::parent_id();
    let orphaned = lab::wait(Duration::from_secs(600), || {
        std::os::unix::process::parent_id() != parent
    });
    eprintln!("crash helper: ending on its own (orphaned: {orphaned})");
    drop(lab);
    std::process::exit(1);
}

/// The crash helper's process, killed and reaped however the test ends (a failed assertion
/// included), so no helper outlives the test binary.
struct Helper(Child);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_crashed_slurm_labs_leftovers_go_at_the_next_build() {
    if !lab_enabled() {
        return;
    }
    let report = PathBuf::from(format!(
        "/var/tmp/fabricplan-lab-crash-helper-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&report);
    // Its output goes to a file (read back when it fails), never to the pipes the test
    // runner reads: a process that held those would keep the whole test run from ending.
    let log_path = PathBuf::from(format!(
        "/var/tmp/fabricplan-lab-crash-helper-{}.log",
        std::process::id()
    ));
    let log = std::fs::File::create(&log_path).expect("the helper's log");
    let mut helper = Helper(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "crash_helper_builds_a_slurm_lab_and_waits_to_be_killed",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_HELPER, &report)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn the helper"),
    );
    let mut dir = String::new();
    // Building a Slurm lab takes seconds on an idle machine, much longer on a loaded 2-core
    // one with other labs building beside it: the deadline is generous, the wait a poll.
    let ready = lab::wait(Duration::from_secs(600), || {
        dir = std::fs::read_to_string(&report).unwrap_or_default();
        !dir.is_empty() || !matches!(helper.0.try_wait(), Ok(None))
    });
    let _ = std::fs::remove_file(&report);
    let helper_log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    assert!(
        ready && !dir.is_empty(),
        "the helper never built its lab; it printed:\n{helper_log}"
    );
    let dir = PathBuf::from(dir);
    let crashed = lab::Footprint {
        created: lab::owner::manifest(&dir),
        token: lab::owner::token(&dir).expect("the crashed lab's owner marker"),
        dir,
    };
    // The crash: no teardown runs. Its daemons, steps and namespaces stay.
    drop(helper);
    let daemons = crashed
        .created
        .iter()
        .filter(|c| matches!(c, lab::owner::Created::Pid(..)) && c.exists(&crashed.token))
        .count();
    assert!(daemons >= 5, "{:?}", crashed.remaining());
    // The next lab clears exactly that and takes the same names again.
    let t = Instant::now();
    let lab = Lab::build(&LabSpec::new("cr").host("a").hosts_only()).expect("next lab builds");
    eprintln!("next build, clearing the crashed lab: {:?}", t.elapsed());
    assert!(
        crashed.remaining().is_empty(),
        "left of the crashed lab: {:#?}",
        crashed.remaining()
    );
    assert_eq!(lab.prefix, "fplcr");
    let footprint = lab.footprint();
    drop(lab);
    assert_gone(&footprint);
}
