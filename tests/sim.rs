//! The runner against the simulated fabric: the shipped plans run green, switched-6 reproduces
//! the six-node report, and every fault yields the verdict and trap it yields on hardware.
//! Everything answers at once: no sleeps, no network, no processes (except the CLI binary).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use fabricplan::discover;
use fabricplan::exec::{Transport, TransportError};
use fabricplan::gate::judge::Outcome;
use fabricplan::gate::trap::Trap;
use fabricplan::plan::Plan;
use fabricplan::results::{JobResult, JobStatus, RunResults};
use fabricplan::sim::SimTransport;
use fabricplan::tools::nccl_tests::parse::NcclReport;

use support::plan_path;

fn load(name: &str) -> Plan {
    support::load_plan(plan_path(name))
}

async fn run_plan(plan: &Plan, faults: &[&str]) -> RunResults {
    support::sim_results(plan, faults).await
}

async fn run(name: &str, faults: &[&str]) -> RunResults {
    run_plan(&load(name), faults).await
}

/// Every verdict of the run (preflight and jobs).
fn verdicts(r: &RunResults) -> Vec<&fabricplan::gate::judge::Verdict> {
    r.preflight
        .iter()
        .chain(r.jobs.iter().flat_map(|j| j.verdicts.iter()))
        .collect()
}

fn jobs_in<'a>(r: &'a RunResults, round: &str) -> Vec<&'a JobResult> {
    r.jobs.iter().filter(|j| j.round_name == round).collect()
}

fn value(j: &JobResult) -> f64 {
    j.main_value()
        .unwrap_or_else(|| panic!("{} measured nothing: {:#?}", j.label, j.verdicts))
}

fn within(v: f64, want: f64, pct: f64) -> bool {
    (v - want).abs() <= want * pct / 100.0
}

/// The nccl-tests report of an NCCL job.
fn nccl_report(j: &JobResult) -> &NcclReport {
    j.parsed
        .as_ref()
        .and_then(|p| p.get::<NcclReport>())
        .expect("an nccl-tests report")
}

#[tokio::test]
async fn two_spark_is_all_green_and_labelled_simulated() {
    let r = run("two-spark", &[]).await;
    assert_eq!(r.summary.verdict, "ALL GREEN", "{:#?}", verdicts(&r));
    assert_eq!(r.summary.exit_code, 0);
    assert!(r.simulated);
    assert_eq!(r.transport, "sim");
    assert!(
        r.preflight
            .iter()
            .any(|v| v.gate.starts_with("mpirun launch") && v.outcome == Outcome::Ok)
    );
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Measured));
    for j in r.jobs.iter().filter(|j| j.kind == "rdma-bw") {
        assert!(within(value(j), 111.9, 1.0), "{} {}", j.label, value(j));
    }
    for j in r.jobs.iter().filter(|j| j.kind == "rdma-bw-both") {
        assert!(within(value(j), 98.0, 1.0), "{} {}", j.label, value(j));
    }
    for j in r.jobs.iter().filter(|j| j.kind == "rdma-lat") {
        assert!((1.3..1.6).contains(&value(j)), "{} {}", j.label, value(j));
    }
    // the discovered names reached the command lines, and the counters moved for NCCL
    let nccl = r.jobs.iter().find(|j| j.kind == "nccl").unwrap();
    assert!(
        nccl.steps[0]
            .command
            .contains("NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0")
    );
    assert!(
        nccl.counters
            .iter()
            .any(|c| c.counter == "port_xmit_data" && c.delta > 0)
    );
    assert_eq!(nccl_report(nccl).transport.as_deref(), Some("NET/IB"));
}

#[tokio::test]
async fn ring3_runs_green() {
    let r = run("ring3", &[]).await;
    assert_eq!(r.summary.verdict, "ALL GREEN", "{:#?}", verdicts(&r));
    let nccl = r.jobs.iter().find(|j| j.kind == "nccl").unwrap();
    let busbw = nccl_report(nccl).avg_busbw_gbs.unwrap();
    assert!(busbw > 10.0, "ring all_gather avg busbw {busbw}");
}

#[tokio::test]
async fn switched_6_reproduces_the_report_within_3_percent() {
    let r = run("switched-6", &[]).await;
    assert_eq!(r.summary.verdict, "ALL GREEN", "{:#?}", verdicts(&r));
    let sum = |js: &[&JobResult]| js.iter().map(|j| value(j)).sum::<f64>();
    let r1 = jobs_in(&r, "R1");
    assert_eq!(r1.len(), 3);
    for j in &r1 {
        assert!(within(value(j), 109.3, 3.0), "R1 {} {}", j.label, value(j));
    }
    assert!(within(sum(&r1), 327.8, 3.0), "R1 aggregate {}", sum(&r1));
    let r2a = jobs_in(&r, "R2a");
    assert_eq!(r2a.len(), 1);
    assert!(within(value(r2a[0]), 109.3, 3.0), "R2a {}", value(r2a[0]));
    let r2b = jobs_in(&r, "R2b");
    assert_eq!(r2b.len(), 2);
    for j in &r2b {
        assert!(within(value(j), 81.9, 3.0), "R2b {} {}", j.label, value(j));
    }
    let r3 = jobs_in(&r, "R3");
    assert_eq!(r3.len(), 3);
    assert!(within(sum(&r3), 327.0, 3.0), "R3 aggregate {}", sum(&r3));
    for j in r1.iter().chain(&r2a).chain(&r2b).chain(&r3) {
        assert_eq!(j.verdicts[0].outcome, Outcome::Ok, "{:#?}", j.verdicts);
    }
}

#[tokio::test]
async fn same_seed_same_numbers_other_seed_other_noise() {
    let plan = load("two-spark");
    let a = run_plan(&plan, &[]).await;
    let b = run_plan(&plan, &[]).await;
    let vals = |r: &RunResults| {
        r.jobs
            .iter()
            .filter_map(|j| j.main_value())
            .collect::<Vec<_>>()
    };
    assert_eq!(vals(&a), vals(&b));
    let mut other = plan.clone();
    other.sim.seed += 1;
    let c = run_plan(&other, &[]).await;
    assert_ne!(vals(&a), vals(&c));
    assert_eq!(c.summary.verdict, "ALL GREEN");
}

#[tokio::test]
async fn throttled_half_fails_with_the_firmware_trap() {
    let r = run("two-spark", &["throttle:spark-a.f0.a"]).await;
    assert_eq!(r.summary.exit_code, 1);
    let j = r
        .jobs
        .iter()
        .find(|j| j.kind == "rdma-bw" && j.label.ends_with("spark-a.f0.a"))
        .unwrap();
    assert!((8.0..=25.0).contains(&value(j)), "{}", value(j));
    assert_eq!(j.verdicts[0].outcome, Outcome::Fail);
    assert_eq!(j.verdicts[0].trap, Some(Trap::FirmwareThrottle));
    // the other half is fine on its own
    let b = r
        .jobs
        .iter()
        .find(|j| j.kind == "rdma-bw" && j.label.ends_with("spark-a.f0.b"))
        .unwrap();
    assert_eq!(b.verdicts[0].outcome, Outcome::Ok);
    // both halves together: the sum is short, the trap named
    assert!(verdicts(&r).iter().any(
        |v| v.gate.starts_with("rdma-bw-both spark-b.f0 -> spark-a.f0")
            && v.outcome != Outcome::Ok
            && v.trap == Some(Trap::HalfDeadOrThrottled)
    ));
}

/// Two throttled halves: two findings, each its own group in report.html's what-to-fix with its
/// part and fix command, and each gate that follows says which of the two it follows.
#[tokio::test]
async fn two_causes_in_one_group_say_which_each_follower_follows() {
    let r = run(
        "switched-6",
        &["throttle:gb10-02.f0.a", "throttle:gb10-04.f0.a"],
    )
    .await;
    let names: Vec<&str> = r.findings.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["gb10-02.f0.a", "gb10-04.f0.a"], "{:#?}", r.findings);
    assert_eq!(r.summary.verdict, "2 FAIL: gb10-02.f0.a, gb10-04.f0.a");
    let html = fabricplan::report::html::render(&fabricplan::report::html::Inputs {
        results: &r,
        plan: None,
        plan_note: None,
        baseline: None,
    })
    .expect("the page renders");
    let start = html.find("<section id=\"fix\">").unwrap();
    let fix = &html[start..start + html[start..].find("</section>").unwrap()];
    // a command's words are spans that never break: read as the text they copy as
    let fix = &fix.replace("<span class=\"t\">", "").replace("</span>", "");
    let esc = fabricplan::report::html::esc;
    for f in &r.findings {
        assert!(
            fix.contains(&format!("<b class=\"part\">{}</b>: ", esc(&f.label))),
            "{fix}"
        );
        let node = f.name.split('.').next().unwrap();
        assert!(
            fix.contains(&format!(
                "<code class=\"cmd\">ssh {node} sudo mlxfwmanager --online -u</code>"
            )),
            "{fix}"
        );
    }
    // every failing gate is a finding's evidence or follows one of them, by its part
    for v in r.jobs.iter().flat_map(|j| &j.verdicts) {
        if v.outcome == Outcome::Ok {
            continue;
        }
        let of = r
            .findings
            .iter()
            .filter(|f| f.evidence.contains(&v.gate) || f.follows.contains(&v.gate))
            .count();
        assert!(of >= 1, "{} belongs to no finding", v.gate);
        if let Some(p) = &v.follows {
            assert!(names.contains(&p.as_str()), "{}: follows {p}", v.gate);
        }
    }
    // each finding has something following it
    for f in &r.findings {
        assert!(!f.follows.is_empty(), "{f:#?}");
    }
}

#[tokio::test]
async fn switched_throttle_and_blocked_isl_fail_with_their_traps() {
    let r = run("switched-6", &["throttle:gb10-02.f0.a"]).await;
    let r1 = jobs_in(&r, "R1");
    let throttled = r1.iter().find(|j| j.label.starts_with("gb10-02")).unwrap();
    assert_eq!(throttled.verdicts[0].outcome, Outcome::Fail);
    assert_eq!(throttled.verdicts[0].trap, Some(Trap::FirmwareThrottle));
    assert!(
        r1.iter()
            .filter(|j| !j.label.starts_with("gb10-02"))
            .all(|j| j.verdicts[0].outcome == Outcome::Ok)
    );
    // one finding, the half; every failing flow through it and NCCL's bus bandwidth, which
    // the half holds down, are its evidence or follow it
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    let f = &r.findings[0];
    assert_eq!(f.name, "gb10-02.f0.a");
    assert_eq!(f.host.as_deref(), Some("gb10-02"));
    let half: Vec<&JobResult> = r
        .jobs
        .iter()
        .filter(|j| j.kind == "rdma-bw" && j.label.contains("gb10-02.f0.a"))
        .filter(|j| j.verdicts[0].outcome == Outcome::Fail)
        .collect();
    assert!(half.len() >= 3, "{half:#?}");
    for j in &half {
        let v = &j.verdicts[0];
        assert!(
            f.evidence.contains(&v.gate) || v.follows.as_deref() == Some("gb10-02.f0.a"),
            "{}",
            j.label
        );
    }
    let busbw = r
        .jobs
        .iter()
        .flat_map(|j| &j.verdicts)
        .find(|v| v.trap == Some(Trap::SlowBusBandwidth))
        .expect("NCCL's bus bandwidth is below the model");
    assert_eq!(busbw.outcome, Outcome::Fail);
    assert_eq!(busbw.follows.as_deref(), Some("gb10-02.f0.a"));
    assert_eq!(r.summary.fail, 1);
    // report.html's what-to-fix: one group, the half, its fix command; what follows named
    let html = fabricplan::report::html::render(&fabricplan::report::html::Inputs {
        results: &r,
        plan: None,
        plan_note: None,
        baseline: None,
    })
    .expect("the page renders");
    let start = html
        .find("<section id=\"fix\">")
        .expect("a what-to-fix section");
    let fix = &html[start..start + html[start..].find("</section>").unwrap()];
    assert_eq!(fix.matches("<div class=\"fix-group").count(), 1, "{fix}");
    let fix = &fix.replace("<span class=\"t\">", "").replace("</span>", "");
    assert!(
        fix.contains("<code class=\"cmd\">ssh gb10-02 sudo mlxfwmanager --online -u</code>"),
        "{fix}"
    );
    let esc = fabricplan::report::html::esc;
    assert!(fix.contains(&esc(&busbw.gate)), "{fix}");

    let r = run("switched-6", &["rstp-block:sw-a-sw-b"]).await;
    assert_eq!(r.summary.exit_code, 1);
    for round in ["R2a", "R2b"] {
        for j in jobs_in(&r, round) {
            assert!(value(j) < 10.0, "{round} {} {}", j.label, value(j));
            assert_eq!(j.verdicts[0].outcome, Outcome::Fail);
            assert_eq!(j.verdicts[0].trap, Some(Trap::IslBlockedRstp));
            assert!(
                j.counters
                    .iter()
                    .any(|c| c.counter == "packet_seq_err" && c.delta > 0),
                "{:#?}",
                j.counters
            );
        }
    }
    // intra-switch pairs are untouched
    for j in jobs_in(&r, "R1") {
        assert_eq!(j.verdicts[0].outcome, Outcome::Ok, "{:#?}", j.verdicts);
    }
    let r3 = jobs_in(&r, "R3");
    let intra = r3.iter().find(|j| j.label.starts_with("gb10-04")).unwrap();
    assert_eq!(intra.verdicts[0].outcome, Outcome::Ok);
}

#[tokio::test]
async fn mtu1500_fails_preflight_with_the_mtu_trap() {
    let plan = load("two-spark");
    let r = run_plan(&plan, &["mtu1500:spark-a.f0.b"]).await;
    assert_eq!(r.summary.exit_code, 1);
    let mtu = r
        .preflight
        .iter()
        .find(|v| v.gate == "mtu spark-a.f0.b")
        .unwrap();
    assert_eq!(mtu.outcome, Outcome::Fail);
    assert_eq!(mtu.trap, Some(Trap::MtuMismatch));
    let small = r
        .preflight
        .iter()
        .find(|v| v.gate == "ping spark-b.f0.b -> spark-a.f0.b")
        .unwrap();
    assert_eq!(small.outcome, Outcome::Ok);
    let jumbo = r
        .preflight
        .iter()
        .find(|v| v.gate == "jumbo ping spark-b.f0.b -> spark-a.f0.b")
        .unwrap();
    assert_eq!(jumbo.outcome, Outcome::Fail);
    assert_eq!(jumbo.trap, Some(Trap::MtuMismatch));
    assert!(jumbo.detail.contains("Frag needed"), "{}", jumbo.detail);
    // the measurements on that half wait for the fix
    let bw = r
        .jobs
        .iter()
        .find(|j| j.kind == "rdma-bw" && j.label.ends_with("spark-a.f0.b"))
        .unwrap();
    assert_eq!(bw.status, JobStatus::Skipped);

    // on the box itself: the probe shows 1500, the jumbo DF ping is refused locally,
    // perftest runs at MTU 1024
    let t = SimTransport::new(&plan, &["mtu1500:spark-a.f0.b".to_string()]).unwrap();
    let a = plan.node_by_name("spark-a").unwrap();
    let probe = t
        .exec(a, discover::PROBE_SCRIPT, Duration::from_secs(5))
        .await
        .unwrap();
    let p = discover::probe::parse(&probe.stdout);
    assert_eq!(p.interface("enP2p1s0f0np0").unwrap().mtu, Some(1500));
    assert_eq!(p.interface("enp1s0f0np0").unwrap().mtu, Some(9000));
    let ping = t
        .exec(
            a,
            "ping -c 3 -W 2 -I enP2p1s0f0np0 -M do -s 8972 203.0.113.2",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(ping.status, 1);
    assert!(
        ping.stderr
            .contains("ping: local error: message too long, mtu=1500"),
        "{ping:?}"
    );
    let small = t
        .exec(
            a,
            "ping -c 3 -W 2 -I enP2p1s0f0np0 203.0.113.2",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(small.status, 0, "{small:?}");
    let b = plan.node_by_name("spark-b").unwrap();
    let start = fabricplan::render::wrap::server(
        30,
        &BTreeMap::new(),
        "ib_write_bw -d roceP2p1s0f0 -i 1 -x 3 -F --report_gbits -D 6 -s 65536 -q 1 -p 18515",
    );
    t.spawn(b, "rdma-bw-r002-j01", &start).await.unwrap();
    let client = t
        .exec(
            a,
            "ib_write_bw -d roceP2p1s0f0 -i 1 -x 3 -F --report_gbits -D 6 -s 65536 -q 1 -p 18515 203.0.113.2",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert!(
        client.stdout.contains(" Mtu             : 1024[B]"),
        "{client:?}"
    );
}

#[tokio::test]
async fn crossed_cable_fails_the_cabling_check() {
    let plan = load("two-spark");
    let r = run_plan(&plan, &["crossed:spark-a.f0"]).await;
    assert_eq!(r.summary.exit_code, 1);
    let ping = r
        .preflight
        .iter()
        .find(|v| v.gate == "ping spark-b.f0.a -> spark-a.f0.a")
        .unwrap();
    assert_eq!(ping.outcome, Outcome::Fail);
    assert_eq!(ping.trap, Some(Trap::CrossedCable));
    let disc = r
        .preflight
        .iter()
        .find(|v| v.gate == "discover spark-a.f0.a")
        .unwrap();
    assert_eq!(disc.outcome, Outcome::Fail);
    assert_eq!(disc.trap, Some(Trap::PortDown));
    let cabling = r
        .preflight
        .iter()
        .find(|v| v.gate == "cabling spark-a.f0.a")
        .unwrap();
    assert_eq!(cabling.outcome, Outcome::Fail);
    assert_eq!(cabling.trap, Some(Trap::CrossedCable));
    assert!(cabling.detail.contains("lands on f1"), "{}", cabling.detail);
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Skipped));
    // the planned address is still there, the other port is the live one
    let t = SimTransport::new(&plan, &["crossed:spark-a.f0".to_string()]).unwrap();
    let a = plan.node_by_name("spark-a").unwrap();
    let p = discover::probe::parse(
        &t.exec(a, discover::PROBE_SCRIPT, Duration::from_secs(5))
            .await
            .unwrap()
            .stdout,
    );
    assert!(p.interface_with("198.51.100.1".parse().unwrap()).is_some());
    assert!(!p.device("rocep1s0f0").unwrap().active());
    assert!(p.device("rocep1s0f1").unwrap().active());
}

#[tokio::test]
async fn dead_host_is_one_fail_and_the_run_goes_on() {
    let plan = load("two-spark");
    let r = run_plan(&plan, &["dead-host:spark-b"]).await;
    assert_eq!(r.summary.exit_code, 1);
    assert!(
        r.preflight
            .iter()
            .any(|v| v.gate == "reach spark-b" && v.trap == Some(Trap::Unreachable))
    );
    // one root cause, one FAIL: its jobs are skipped naming it, and no ping into the dead host
    // is read as a cabling fault
    assert_eq!(r.summary.fail, 1, "{:#?}", r.summary);
    assert!(
        r.jobs
            .iter()
            .all(|j| j.status == JobStatus::Skipped && j.verdicts.is_empty()),
        "{:#?}",
        r.jobs
    );
    assert!(
        !r.preflight
            .iter()
            .any(|v| v.trap == Some(Trap::CrossedCable))
    );
    let t = SimTransport::new(&plan, &["dead-host:spark-b".to_string()]).unwrap();
    let b = plan.node_by_name("spark-b").unwrap();
    assert!(matches!(
        t.exec(b, "true", Duration::from_secs(1)).await,
        Err(TransportError::Unreachable { .. })
    ));
}

#[tokio::test]
async fn server_that_dies_names_the_detached_server_trap() {
    let r = run("two-spark", &["server-dies:spark-a"]).await;
    assert_eq!(r.summary.exit_code, 1);
    // the jobs whose server is on spark-a (hosts are server, client); the other way is healthy
    let served_by_a: Vec<_> = r
        .jobs
        .iter()
        .filter(|j| j.kind.starts_with("rdma") && j.hosts[0] == "spark-a")
        .collect();
    assert!(!served_by_a.is_empty());
    for j in served_by_a {
        assert_eq!(j.verdicts[0].outcome, Outcome::Fail, "{:#?}", j.verdicts);
        assert_eq!(j.verdicts[0].trap, Some(Trap::ServerGoneOrFirewall));
        // no client was launched against the dead server
        assert!(
            j.steps.iter().all(|s| s.host == "spark-a"),
            "{:#?}",
            j.steps
        );
        assert!(
            j.reason
                .as_deref()
                .unwrap_or("")
                .contains("exited before listening")
        );
    }
    // NCCL has no servers: unaffected
    let nccl = r.jobs.iter().find(|j| j.kind == "nccl").unwrap();
    assert!(nccl.verdicts.iter().all(|v| v.outcome == Outcome::Ok));
}

#[tokio::test]
async fn nccl_socket_fallback_is_caught() {
    let r = run("two-spark", &["nccl-socket:spark-b"]).await;
    assert_eq!(r.summary.exit_code, 1);
    let nccl = r.jobs.iter().find(|j| j.kind == "nccl").unwrap();
    let parsed = nccl_report(nccl);
    assert_eq!(parsed.transport.as_deref(), Some("NET/Socket"));
    let busbw = parsed.avg_busbw_gbs.unwrap();
    assert!(busbw < 3.0, "{busbw}");
    let trap = |t| {
        nccl.verdicts
            .iter()
            .any(|v| v.outcome == Outcome::Fail && v.trap == Some(t))
    };
    assert!(trap(Trap::TcpFallback), "{:#?}", nccl.verdicts);
    assert!(trap(Trap::FabricNotUsed), "{:#?}", nccl.verdicts);
    // the RDMA measurements are unaffected
    assert!(
        r.jobs
            .iter()
            .filter(|j| j.kind != "nccl")
            .all(|j| j.verdicts.iter().all(|v| v.outcome == Outcome::Ok))
    );
}

#[test]
fn unknown_fault_targets_are_refused() {
    let plan = load("two-spark");
    for bad in [
        "throttle:spark-z.f0.a",
        "throttle:spark-a.f9",
        "rstp-block:a-b",
        "melt:spark-a",
    ] {
        assert!(
            SimTransport::new(&plan, &[bad.to_string()]).is_err(),
            "{bad}"
        );
    }
}

fn cli(args: &[&str]) -> (i32, serde_json::Value) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(args)
        .args(["--sim", "--out"])
        .arg(out_dir.path())
        .args(["--format", "json"])
        .output()
        .expect("the binary runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(out_dir.path().join("results.json").exists());
    assert!(out_dir.path().join("junit.xml").exists());
    (out.status.code().unwrap_or(-1), json)
}

#[test]
fn cli_two_spark_sim_is_green() {
    let plan = plan_path("two-spark");
    let (code, json) = cli(&["run", plan.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(json["simulated"], true);
    assert_eq!(json["transport"], "sim");
    assert_eq!(json["summary"]["verdict"], "ALL GREEN");
}

#[test]
fn cli_sim_fault_throttle_and_rstp_name_their_traps() {
    let plan = plan_path("two-spark");
    let (code, json) = cli(&[
        "run",
        plan.to_str().unwrap(),
        "--sim-fault",
        "throttle:spark-b.f0.b",
    ]);
    assert_eq!(code, 1);
    let traps: Vec<String> = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["verdicts"].as_array().unwrap().iter())
        .filter(|v| v["outcome"] == "FAIL")
        .filter_map(|v| v["trap"].as_str().map(str::to_string))
        .collect();
    assert!(
        traps.contains(&"firmware-throttle".to_string()),
        "{traps:?}"
    );

    let plan = plan_path("switched-6");
    let (code, json) = cli(&[
        "run",
        plan.to_str().unwrap(),
        "--sim-fault",
        "rstp-block:sw-a-sw-b",
        "--only",
        "R2a",
    ]);
    assert_eq!(code, 1);
    let v = &json["jobs"][0]["verdicts"][0];
    assert_eq!(v["trap"], "isl-blocked-rstp", "{v:#}");
}

/// `run --verbose` prints one phase line per round on stderr (text and JSON alike: stdout stays
/// the results), and results.json carries the same phases, consistent with the round's wall.
#[test]
fn cli_verbose_prints_each_rounds_phases() {
    let plan = plan_path("two-spark");
    for format in ["text", "json"] {
        let out_dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
            .args([
                "run",
                plan.to_str().unwrap(),
                "--sim",
                "-v",
                "--format",
                format,
            ])
            .arg("--out")
            .arg(out_dir.path())
            .env("NO_COLOR", "1")
            .env_remove("CI")
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let text = std::fs::read_to_string(out_dir.path().join("results.json")).unwrap();
        let r = fabricplan::compare::parse_results(&text).unwrap();
        // the time before the first round: one line first, and in results.json
        let before = r.before_rounds.as_ref().expect("before_rounds");
        assert!(
            before.total_ms >= before.open_ms + before.discovery_ms,
            "{before:?}"
        );
        let first = err
            .lines()
            .position(|l| l.starts_with("before the first round: open "))
            .unwrap_or_else(|| {
                panic!("{format}: no line for the time before the first round: {err}")
            });
        let round1 = err.lines().position(|l| l.starts_with("round 1/")).unwrap();
        assert!(first < round1, "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(" phases")).collect();
        assert_eq!(lines.len(), r.rounds.len(), "{format}: {err}");
        for (i, (l, round)) in lines.iter().zip(&r.rounds).enumerate() {
            assert!(
                l.starts_with(&format!(
                    "round {}/{} phases: counters ",
                    i + 1,
                    r.rounds.len()
                )),
                "{l}"
            );
            for part in [
                "| servers ",
                "| ready ",
                "| staged ",
                "| release n/a |",
                "| tool ",
                "| stop+logs ",
                "| judge ",
                "| overhead ",
            ] {
                assert!(l.contains(part), "{part}: {l}");
            }
            let p = round.phases.as_ref().expect("phases");
            assert_eq!(p.attempts, 1);
            // the simulator reports no start marks: the tool runs from its sending
            assert_eq!(p.tool_source, "sent");
            assert!(p.longest_tool_ms <= p.tools_ms + 0.01, "{p:#?}");
            let serial = p.prepare_ms
                + p.setup_ms
                + p.tools_ms
                + p.server_stop_and_logs_ms.max(p.counters_after_ms)
                + p.judge_ms;
            assert!(serial <= p.wall_ms + 0.01, "{p:#?}");
            assert!(p.overhead_ms >= 0.0 && p.overhead_ms <= p.wall_ms, "{p:#?}");
        }
        if format == "json" {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
            assert!(v["rounds"][0]["phases"]["wall_ms"].is_number());
        }
    }
    // without --verbose, no phase line
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(["run", plan.to_str().unwrap(), "--sim", "--format", "json"])
        .arg("--out")
        .arg(out_dir.path())
        .output()
        .expect("the binary runs");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(" phases"));
}

#[test]
fn cli_refuses_a_bad_fault() {
    let plan = plan_path("two-spark");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args([
            "run",
            plan.to_str().unwrap(),
            "--sim",
            "--sim-fault",
            "throttle:nowhere",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Regression: two-spark measured spark-b -> spark-a only: a transmit fault on spark-a was never
/// seen and half the matrix stayed empty.
#[tokio::test]
async fn both_directions_by_default_and_bidirectional_on_request() {
    let r = run("two-spark", &[]).await;
    let bw: Vec<&str> = r
        .jobs
        .iter()
        .filter(|j| j.kind == "rdma-bw")
        .map(|j| j.label.as_str())
        .collect();
    for half in ["a", "b"] {
        for (c, s) in [("spark-b", "spark-a"), ("spark-a", "spark-b")] {
            let label = format!("{c}.f0.{half} -> {s}.f0.{half}");
            assert!(bw.contains(&label.as_str()), "{label} not in {bw:?}");
        }
    }
    let m: Vec<(&str, &str)> = fabricplan::kinds::view::matrix(&r)
        .iter()
        .map(|c| (c.client, c.server))
        .collect();
    for key in [("spark-a", "spark-b"), ("spark-b", "spark-a")] {
        assert!(m.contains(&key), "{key:?} missing from {m:?}");
    }
    assert_eq!(r.summary.verdict, "ALL GREEN");
    // bidirectional: one job per half, both ways at once (-b), judged on the sum
    let text = std::fs::read_to_string(plan_path("two-spark"))
        .unwrap()
        .replace(
            "[tests.rdma-bw]",
            "[tests.rdma-bw]\ndirection = \"bidirectional\"",
        );
    let plan = support::load_plan_text(plan_path("two-spark"), &text);
    let r = run_plan(&plan, &[]).await;
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.kind == "rdma-bw").collect();
    assert_eq!(jobs.len(), 2, "{jobs:#?}");
    for j in jobs {
        assert!(j.label.contains(" <-> "), "{}", j.label);
        assert!(j.steps.iter().all(|s| s.command.contains(" -b ")));
        let expected = j.expected_gbps.unwrap();
        assert!((expected - 2.0 * 111.9).abs() < 1.0, "{expected}");
        assert_eq!(j.worst(), Some(Outcome::Ok));
    }
    // near miss: an unknown direction is a plan error
    let bad = text.replace("\"bidirectional\"", "\"sideways\"");
    assert!(fabricplan::kinds::load_str(&plan_path("two-spark"), &bad, Path::new(".")).is_err());
}

/// Green says what it covered: switched-6's rounds name nodes, so only the a halves are
/// measured, and the results say the b halves never were.
#[tokio::test]
async fn green_says_what_it_covered() {
    let plan = load("switched-6");
    let r = run_plan(&plan, &[]).await;
    assert_eq!(r.summary.verdict, "ALL GREEN");
    let c = r.coverage.as_ref().expect("coverage");
    assert_eq!((c.halves.declared, c.halves.measured), (12, 6), "{c:?}");
    assert_eq!((c.isls.declared, c.isls.measured), (1, 1), "{c:?}");
    assert_eq!(
        c.not_measured,
        (1..=6)
            .map(|i| format!("gb10-0{i}.f0.b"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        c.line(),
        "6 of 12 halves, 6 of 6 cables, 1 of 1 ISL measured"
    );
    // a plan that measures every half says so
    let r = run_plan(&load("two-spark"), &[]).await;
    let c = r.coverage.as_ref().expect("coverage");
    assert!(c.complete(), "{c:?}");
    assert_eq!(c.line(), "4 of 4 halves, 1 of 1 cable measured");
}

/// A plan with no test: its run discovers every node and checks every link (preflight), writes
/// its whole run directory, results.jsonl included, and says that no test ran; green when
/// preflight is, one FAIL when a half is wrong.
#[test]
fn a_plan_without_tests_runs_discovery_and_preflight() {
    let dir = tempfile::tempdir().unwrap();
    let plan = "tests/fixtures/warnings/no-tests.toml";
    let (out, o) = support::sim_run(dir.path(), "green", plan, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    for f in [
        "results.json",
        "results.jsonl",
        "summary.md",
        "junit.xml",
        "report.html",
        "plan.toml",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let r = support::json(&out.join("results.json"));
    assert_eq!(r["discovery"].as_array().map(Vec::len), Some(2));
    assert!(r["preflight"].as_array().is_some_and(|p| p.len() > 4));
    assert_eq!(r["jobs"].as_array().map(Vec::len), Some(0));
    let verdict = r["summary"]["verdict"].as_str().unwrap();
    assert_eq!(verdict, "PREFLIGHT ONLY, NO TEST RAN: ALL GREEN");
    assert!(
        support::stdout(&o).contains(verdict),
        "{}",
        support::stdout(&o)
    );
    let (out, o) = support::sim_run(
        dir.path(),
        "mtu",
        plan,
        &["--sim-fault", "mtu1500:spark-b.f0.a"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", support::stderr(&o));
    let r = support::json(&out.join("results.json"));
    assert_eq!(
        r["summary"]["verdict"],
        "PREFLIGHT ONLY, NO TEST RAN: 1 FAIL: spark-b.f0.a"
    );
    let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(lines.contains("\"finding\""), "{lines}");
}

/// A fault on halves no cable of the plan carries would change nothing: it is refused with the
/// node's planned halves, not accepted and ignored (all-pairs cables half a only).
#[test]
fn a_fault_on_an_unplanned_half_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, o) = support::sim_run(
        tmp.path(),
        "x",
        "examples/all-pairs.toml",
        &["--sim-fault", "mtu1500:spark-b.f0.b"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", support::stdout(&o));
    let err = support::stderr(&o);
    assert!(
        err.contains("no cable of the plan carries `spark-b.f0.b`")
            && err.contains("the planned halves of `spark-b` are spark-b.f0.a"),
        "{err}"
    );
    // a node's fault reaches the halves it has that are planned
    let (_, o) = support::sim_run(
        tmp.path(),
        "y",
        "examples/all-pairs.toml",
        &["--sim-fault", "mtu1500:spark-b"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", support::stderr(&o));
}
