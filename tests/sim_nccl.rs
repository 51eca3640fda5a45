//! The simulated mpirun + nccl-tests, byte for byte: the sim is deterministic for a plan, its
//! faults and its seed, so what it prints for a launch line is pinned here as insta snapshots
//! (`tests/snapshots/sim_nccl__*.snap`).
//!
//! Two sources: the NCCL jobs of whole simulated runs (`fabricplan run --sim`: the launcher's
//! saved stdout and stderr, and the bytes the ring moved per device as the job's counters
//! saw them), and launch lines no shipped plan makes, sent to the sim transport directly (the
//! launch check, a host that does not answer, too many GPUs, a ring hop with no RDMA path, a
//! crossed cable and a small MTU, several app contexts, an excluded device, variables exported
//! by the script, `-c 0` and a byte step, a single rank).
//!
//! A change to the sim's output shows here as a snapshot diff. When the change is meant (a new
//! nccl-tests format, a new capacity constant), review it and accept it (`cargo insta review`,
//! or `INSTA_UPDATE=always cargo test --test sim_nccl`).

mod support;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use fabricplan::exec::Transport;
use fabricplan::sim::SimTransport;
use support::{json, sim_run};

/// The NCCL jobs of a simulated run of `plan` with `faults`: every step's saved output, then
/// the bytes each device sent and received during the job.
fn nccl_jobs_of_run(plan: &str, faults: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut extra = Vec::new();
    for f in faults {
        extra.push("--sim-fault");
        extra.push(*f);
    }
    let (run, _) = sim_run(dir.path(), "run", plan, &extra);
    let results = json(&run.join("results.json"));
    let mut out = String::new();
    let jobs = results["jobs"].as_array().expect("jobs");
    for job in jobs.iter().filter(|j| j["kind"] == "nccl") {
        let _ = writeln!(out, "=== job {} ({})", job["job"], job["label"]);
        for step in job["steps"].as_array().expect("steps") {
            let _ = writeln!(
                out,
                "--- {} {} exit {}",
                step["host"], step["role"], step["exit_status"]
            );
            for key in ["stdout_file", "stderr_file"] {
                let Some(file) = step[key].as_str() else {
                    continue;
                };
                let text = std::fs::read_to_string(run.join(file)).unwrap_or_default();
                let _ = writeln!(out, "--- {file}\n{text}");
            }
        }
        let _ = writeln!(out, "--- bytes moved (counters)");
        for c in job["counters"].as_array().expect("counters") {
            let counter = c["counter"].as_str().unwrap_or("");
            if matches!(counter, "port_xmit_data" | "port_rcv_data") && c["delta"] != 0 {
                let _ = writeln!(
                    out,
                    "{} {} {counter} {}",
                    c["host"].as_str().unwrap_or(""),
                    c["device"].as_str().unwrap_or(""),
                    c["delta"]
                );
            }
        }
    }
    assert!(!out.is_empty(), "{plan} {faults:?} ran no NCCL job");
    out
}

#[test]
fn two_spark() {
    insta::assert_snapshot!(nccl_jobs_of_run("plans/two-spark.toml", &[]));
}

#[test]
fn two_spark_one_node_on_sockets() {
    insta::assert_snapshot!(nccl_jobs_of_run(
        "plans/two-spark.toml",
        &["nccl-socket:spark-b"]
    ));
}

#[test]
fn ring3() {
    insta::assert_snapshot!(nccl_jobs_of_run("plans/ring3.toml", &[]));
}

#[test]
fn ring3_one_node_on_sockets() {
    insta::assert_snapshot!(nccl_jobs_of_run(
        "plans/ring3.toml",
        &["nccl-socket:spark-3"]
    ));
}

#[test]
fn switched_6() {
    insta::assert_snapshot!(nccl_jobs_of_run("plans/switched-6.toml", &[]));
}

#[test]
fn switched_6_rstp_blocked_isl() {
    insta::assert_snapshot!(nccl_jobs_of_run(
        "plans/switched-6.toml",
        &["rstp-block:sw-a-sw-b"]
    ));
}

#[test]
fn switched_6_throttled_port() {
    insta::assert_snapshot!(nccl_jobs_of_run(
        "plans/switched-6.toml",
        &["throttle:gb10-05.f0"]
    ));
}

#[test]
fn rails8_eight_devices_per_rank() {
    insta::assert_snapshot!(nccl_jobs_of_run("examples/rails8.toml", &[]));
}

/// What the sim answers `script` on the plan's node `on`, with `faults`.
fn launch(plan: &str, faults: &[&str], on: &str, script: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(plan);
    let plan = fabricplan::kinds::load(&path).expect("valid plan").plan;
    let faults: Vec<String> = faults.iter().map(|f| f.to_string()).collect();
    let sim = SimTransport::new(&plan, &faults).expect("faults parse");
    let node = plan.node_by_name(on).expect("node of the plan");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let o = rt
        .block_on(sim.exec(node, script, Duration::from_secs(60)))
        .expect("the sim answers");
    format!(
        "$ {script}\nstatus {}\n--- stdout\n{}--- stderr\n{}",
        o.status, o.stdout, o.stderr
    )
}

const TWO_SPARK_HOSTS: &str = "-np 2 -H 198.51.100.1,198.51.100.2";
const ENV: &str = "-x NCCL_IB_GID_INDEX=3 -x NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0 -x NCCL_SOCKET_IFNAME=enp1s0f0np0";

#[test]
fn launch_check_prints_each_rank_host() {
    insta::assert_snapshot!(launch(
        "plans/two-spark.toml",
        &[],
        "spark-a",
        &format!("mpirun {TWO_SPARK_HOSTS} --map-by slot hostname"),
    ));
}

#[test]
fn launch_on_an_unknown_host_fails_to_start_daemons() {
    insta::assert_snapshot!(launch(
        "plans/two-spark.toml",
        &[],
        "spark-a",
        "mpirun -np 2 -H 198.51.100.1,192.0.2.77 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 1M -f 2",
    ));
}

#[test]
fn two_gpus_per_rank_are_refused() {
    insta::assert_snapshot!(launch(
        "plans/two-spark.toml",
        &[],
        "spark-a",
        &format!("mpirun {TWO_SPARK_HOSTS} {ENV} /opt/nccl-tests/build/all_reduce_perf -g 2"),
    ));
}

#[test]
fn ring_hop_without_rdma_path_never_connects() {
    // only the f0 devices: spark-1.f0 faces spark-2.f1, so the first hop has no lane
    insta::assert_snapshot!(launch(
        "plans/ring3.toml",
        &[],
        "spark-1",
        "mpirun -np 3 -H spark-1,spark-2,spark-3 -x NCCL_IB_GID_INDEX=3 -x NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0 /opt/nccl-tests/build/all_reduce_perf -b 1M -e 4M -f 2",
    ));
}

#[test]
fn crossed_cable_and_small_mtu_lanes() {
    insta::assert_snapshot!(launch(
        "plans/ring3.toml",
        &["crossed:spark-2.f0", "mtu1500:spark-3.f1.a"],
        "spark-1",
        "mpirun -np 3 -H spark-1,spark-2,spark-3 -x NCCL_IB_GID_INDEX=3 /opt/nccl-tests/build/all_reduce_perf -b 1M -e 4M -f 2",
    ));
}

#[test]
fn exported_variables_byte_steps_and_no_check() {
    insta::assert_snapshot!(launch(
        "plans/two-spark.toml",
        &[],
        "spark-a",
        &format!(
            "export NCCL_IB_HCA==roceP2p1s0f0 NCCL_SOCKET_IFNAME=enP2p1s0f0np0 && env NCCL_DEBUG=INFO timeout -k 5 60 mpirun {TWO_SPARK_HOSTS} --mca btl ^openib -x NCCL_IB_HCA -x NCCL_SOCKET_IFNAME -x NCCL_IB_GID_INDEX=3 /opt/nccl-tests/build/all_gather_perf -b 1M -e 4M -i 1M -c 0 -d half -w 2 -n 5 -m 2"
        ),
    ));
}

#[test]
fn app_contexts_and_an_excluded_device() {
    insta::assert_snapshot!(launch(
        "plans/two-spark.toml",
        &[],
        "spark-b",
        "mpirun --mca pml ob1 -np 1 -H spark-a -x NCCL_IB_HCA=^rocep1s0f0 /b/sendrecv_perf -b 8 -e 64 -f 4 -o max : -np 1 -H spark-b -x NCCL_IB_HCA=^rocep1s0f0 /b/sendrecv_perf -b 8 -e 64 -f 4 -o max",
    ));
}

#[test]
fn one_rank_of_an_unmodelled_collective() {
    insta::assert_snapshot!(launch(
        "plans/two-spark.toml",
        &[],
        "spark-a",
        "mpirun -np 1 -H spark-a /b/broadcast_perf -b 64 -e 64 -d double",
    ));
}
