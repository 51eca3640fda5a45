//! The runner against the recording fake transport: order (servers ready before any client,
//! clients released together, cleanup after, counters around each job), partial failure,
//! unreachable hosts and the verdicts that come out.

mod support;

use std::sync::Arc;
use std::time::Duration;

use fabricplan::exec::evidence::Evidence;
use fabricplan::exec::fake::FakeTransport;
use fabricplan::exec::runner::{self, RunConfig, RunOptions};
use fabricplan::exec::{Output, TransportError};
use fabricplan::gate::judge::Outcome;
use fabricplan::gate::trap::Trap;
use fabricplan::results::{Event, JobStatus};

const PLAN: &str = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
name = "stack"
ends = ["spark-a.f0", "spark-b.f0"]
halves = ["a"]
subnets = { a = "198.51.100.0/30" }
[tests.rdma-bw]
duration-s = 2
direction = "one"
"#;

fn probe(host: &str, ip: &str, gid_hex: &str) -> String {
    format!(
        "@host {host}
@dev rocep1s0f0
@state 4: ACTIVE
@phys 5: LinkUp
@rate 200 Gb/sec (4X HDR)
@layer Ethernet
@netdev enp1s0f0np0
@gid /sys/class/infiniband/rocep1s0f0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:{gid_hex}
@gidtype /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3:RoCE v2
@counter /sys/class/infiniband/rocep1s0f0/ports/1/counters/port_xmit_data:100
@counter /sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/packet_seq_err:0
@ip
2: enp1s0f0np0    inet {ip}/30 brd 198.51.100.3 scope global enp1s0f0np0
@link
2: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT
@route
@end
"
    )
}

fn bw_output(gbps: f64) -> String {
    format!(
        " WARNING: BW peak won't be measured in this run.
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : rocep1s0f0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1039716          0.00               {gbps:.2} \t\t     0.207862
---------------------------------------------------------------------------------------
"
    )
}

fn fake(client_gbps: f64) -> FakeTransport {
    FakeTransport::new()
        .on("spark-a", "@host", Ok(Output::ok(probe("spark-a", "198.51.100.1", "c633:6401"))))
        .on("spark-b", "@host", Ok(Output::ok(probe("spark-b", "198.51.100.2", "c633:6402"))))
        .on("*", "/proc/net/tcp", Ok(Output::ok("4242\n")))
        .on("*", "ping -c", Ok(Output::ok("PING 198.51.100.1 (198.51.100.1) 56(84) bytes of data.\n64 bytes from 198.51.100.1: icmp_seq=1 ttl=64 time=0.05 ms\n\n--- 198.51.100.1 ping statistics ---\n3 packets transmitted, 3 received, 0% packet loss, time 2002ms\nrtt min/avg/max/mdev = 0.040/0.050/0.060/0.010 ms\n")))
        .on("spark-b", "ib_write_bw", Ok(Output::ok(bw_output(client_gbps))))
}

async fn run_with(t: FakeTransport) -> (fabricplan::results::RunResults, Arc<FakeTransport>) {
    run_with_parallel(t, 8).await
}

async fn run_with_parallel(
    t: FakeTransport,
    max_parallel: usize,
) -> (fabricplan::results::RunResults, Arc<FakeTransport>) {
    run_plan(PLAN, t, max_parallel).await
}

async fn run_plan(
    text: &str,
    t: FakeTransport,
    max_parallel: usize,
) -> (fabricplan::results::RunResults, Arc<FakeTransport>) {
    let loaded = fabricplan::kinds::load_str(
        std::path::Path::new("pair.toml"),
        text,
        std::path::Path::new("."),
    )
    .expect("valid plan");
    let plan = loaded.plan;
    let t = Arc::new(t);
    let opts = RunOptions {
        run_id: "test".into(),
        only: vec![],
        skip: vec![],
        max_parallel,
        keep_evidence: None,
    };
    let r = runner::results(&RunConfig::new(
        Arc::new(plan.clone()),
        Arc::new(fabricplan::launchers::ssh::exec::launcher::SshLauncher::new(t.clone())),
        opts,
        &Evidence::none(),
    ))
    .await;
    (r, t)
}

#[tokio::test]
async fn healthy_pair_is_green_and_ordered() {
    let (r, t) = run_with(fake(109.0)).await;
    assert_eq!(r.summary.verdict, "ALL GREEN", "{:#?}", r.summary);
    assert_eq!(r.summary.exit_code, 0);
    let job = &r.jobs[0];
    assert_eq!(job.status, JobStatus::Measured);
    assert!((job.main_value().unwrap() - 109.0).abs() < 1e-9);
    // the gate carries the flow it measured, as data
    let flow = job.verdicts[0].flow.as_ref().expect("the verdict's flow");
    assert_eq!(
        (flow.src_endpoint(), flow.dst_endpoint()),
        ("spark-b.f0.a".to_string(), "spark-a.f0.a".to_string())
    );
    let calls = t.calls();
    let pos = |needle: &str| {
        calls
            .iter()
            .position(|c| c.script.contains(needle))
            .unwrap_or_else(|| panic!("no call with {needle}"))
    };
    let server = pos(fabricplan::exec::fake::SPAWN_CALL);
    let ready = pos("/proc/net/tcp");
    let client = calls
        .iter()
        .position(|c| c.host == "spark-b" && c.script.contains("ib_write_bw"))
        .unwrap();
    let kill = pos(&fabricplan::exec::fake::stop_call(4242));
    assert!(
        server < ready && ready < client && client < kill,
        "order: server {server}, ready {ready}, client {client}, kill {kill}"
    );
    // the resolved names reached the command lines: device and GID per box
    assert!(calls[client].script.contains("-d rocep1s0f0 -i 1 -x 3"));
    assert!(calls[server].script.contains("exec timeout -k 5 "));
    // counters read before and after
    let counter_reads: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.script.contains("hw_counters") && !c.script.contains("@host"))
        .map(|(i, _)| i)
        .collect();
    assert!(counter_reads.iter().any(|i| *i < server) && counter_reads.iter().any(|i| *i > client));
    // never by name
    assert!(!calls.iter().any(|c| c.script.contains("pkill")));
}

#[tokio::test(start_paused = true)]
async fn staging_never_starves_the_setup_it_waits_for() {
    // clients are staged while the round's servers start; with one or two command slots the
    // setup must still get one, and every job is measured
    for slots in [1, 2, 3] {
        let (r, _) = tokio::time::timeout(
            Duration::from_secs(600),
            run_with_parallel(fake(109.0), slots),
        )
        .await
        .unwrap_or_else(|_| panic!("deadlock with {slots} slot(s)"));
        assert_eq!(
            r.summary.verdict, "ALL GREEN",
            "{slots} slot(s): {:#?}",
            r.summary
        );
        assert!(r.jobs.iter().all(|j| j.status == JobStatus::Measured));
    }
}

#[tokio::test]
async fn throttled_half_fails_with_the_firmware_trap() {
    let (r, _) = run_with(fake(12.74)).await;
    assert_eq!(r.summary.exit_code, 1);
    let v = &r.jobs[0].verdicts[0];
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.trap, Some(Trap::FirmwareThrottle));
}

#[tokio::test]
async fn unreachable_host_is_one_fail_and_its_jobs_are_skipped() {
    let t = FakeTransport::new()
        .on(
            "spark-b",
            "@host",
            Err(TransportError::Unreachable {
                host: "spark-b".into(),
                reason: "connection refused".into(),
            }),
        )
        .rule(|_, _| None);
    let t = t.on(
        "spark-a",
        "@host",
        Ok(Output::ok(probe("spark-a", "198.51.100.1", "c633:6401"))),
    );
    let (r, _) = run_with(t).await;
    assert_eq!(r.summary.exit_code, 1);
    assert!(
        r.preflight
            .iter()
            .any(|v| v.trap == Some(Trap::Unreachable))
    );
    // one root cause, one FAIL: `reach spark-b`, about its sshd (the host refused: it is up,
    // nothing listens); its jobs are skipped naming it
    assert_eq!(r.summary.fail, 1, "{:#?}", r.summary);
    assert_eq!(
        r.summary.verdict, "1 FAIL: sshd on spark-b",
        "{:#?}",
        r.findings
    );
    assert!(!r.jobs.is_empty());
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Skipped, "{j:#?}");
        assert!(j.verdicts.is_empty());
        assert!(
            j.reason
                .as_deref()
                .unwrap_or("")
                .contains("`reach spark-b` failed"),
            "{:?}",
            j.reason
        );
    }
}

#[tokio::test]
async fn server_that_dies_names_the_detached_server_trap() {
    let t = FakeTransport::new()
        .on("spark-a", "@host", Ok(Output::ok(probe("spark-a", "198.51.100.1", "c633:6401"))))
        .on("spark-b", "@host", Ok(Output::ok(probe("spark-b", "198.51.100.2", "c633:6402"))))
        .on("*", "ping -c", Ok(Output::ok("3 packets transmitted, 3 received, 0% packet loss, time 2002ms\n")))
        // spark-a's server never listens; spark-b's does (its own loopback measures)
        .on("spark-b", "/proc/net/tcp", Ok(Output::ok("4242\n")))
        .on("spark-b", "ib_write_bw", Ok(Output::ok(bw_output(109.0))))
        .on("*", "/proc/net/tcp", Ok(Output { status: 3, ..Output::default() }))
        .on("spark-a", &fabricplan::exec::fake::stop_call(4242), Ok(Output::ok("\n************************************\n* Waiting for client to connect... *\n************************************\n")));
    let (r, t) = run_with(t).await;
    let v = &r.jobs[0].verdicts[0];
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.trap, Some(Trap::ServerGoneOrFirewall));
    // no client was launched against a dead server (spark-b's loopback, against its own
    // address, is another job)
    assert!(!t.calls().iter().any(|c| c.host == "spark-b"
        && c.script.contains("ib_write_bw")
        && c.script.contains("198.51.100.1")));
    // one finding: the tools on spark-a, whose server never listened
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert!(r.findings[0].name.contains("spark-a"), "{:#?}", r.findings);
}

#[tokio::test(start_paused = true)]
async fn hung_client_times_out_and_is_reported() {
    let t = fake(109.0).delay(
        "ib_write_bw -d rocep1s0f0 -i 1 -x 3 -F --report_gbits -D 2 -s 65536 -q 1 -p 18515 198",
        Duration::from_secs(3600),
    );
    let (r, _) = tokio::time::timeout(Duration::from_secs(120), run_with(t))
        .await
        .expect("the runner must not hang");
    let v = &r.jobs[0].verdicts[0];
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.trap, Some(Trap::Timeout));
}

#[tokio::test]
async fn interrupt_before_a_round_skips_it_and_exits_130() {
    let plan = support::load_plan_text("pair.toml", PLAN);
    let t = Arc::new(fake(109.0));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // Ctrl-C arrived during discovery: nothing is launched after it
    let (c, cancel) = tokio::sync::watch::channel(false);
    c.send(true).unwrap();
    let opts = RunOptions {
        run_id: "test".into(),
        only: vec![],
        skip: vec![],
        max_parallel: 8,
        keep_evidence: None,
    };
    runner::run(
        &RunConfig::new(
            Arc::new(plan.clone()),
            Arc::new(fabricplan::launchers::ssh::exec::launcher::SshLauncher::new(t.clone())),
            opts,
            &Evidence::none(),
        ),
        tx,
        cancel,
    )
    .await;
    let events: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert!(
        matches!(events.first(), Some(Event::Started(_))),
        "the run says its start first"
    );
    let Some(Event::Finished(r)) = events.last() else {
        panic!("the run says its end last: {events:?}");
    };
    assert!(r.interrupted);
    assert_eq!(r.summary.exit_code, 130);
    assert_eq!(r.jobs[0].status, JobStatus::Skipped);
    assert!(
        r.jobs[0]
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("interrupted")
    );
    assert!(
        !t.calls().iter().any(|c| c.script.contains("ib_write_bw")),
        "no tool started after the interrupt"
    );
}

/// A healthy pair whose client prints `values` in turn.
fn cycling(values: [f64; 3]) -> FakeTransport {
    let n = std::sync::atomic::AtomicUsize::new(0);
    FakeTransport::new()
        .rule(move |host, script| {
            (host == "spark-b" && script.contains("ib_write_bw")).then(|| {
                let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(Output::ok(bw_output(values[i % values.len()])))
            })
        })
        .on(
            "spark-a",
            "@host",
            Ok(Output::ok(probe("spark-a", "198.51.100.1", "c633:6401"))),
        )
        .on(
            "spark-b",
            "@host",
            Ok(Output::ok(probe("spark-b", "198.51.100.2", "c633:6402"))),
        )
        .on("*", "/proc/net/tcp", Ok(Output::ok("4242\n")))
        .on(
            "*",
            "ping -c",
            Ok(Output::ok(
                "3 packets transmitted, 3 received, 0% packet loss, time 2002ms\n",
            )),
        )
}

/// Regression: `attempts = 3, pass-if = 2` was accepted and every job ran once.
#[tokio::test]
async fn attempts_run_again_with_a_fresh_server_and_pass_if_decides() {
    let text = format!("{PLAN}[gates.rdma-bw]\nattempts = 3\npass-if = 2\n");
    // one noisy attempt among three
    let (r, t) = run_plan(&text, cycling([109.0, 12.7, 108.5]), 8).await;
    let clients = t
        .calls()
        .iter()
        .filter(|c| c.host == "spark-b" && c.script.contains("ib_write_bw"))
        .count();
    assert_eq!(clients, 3);
    let j = &r.jobs[0];
    assert_eq!(j.attempts.len(), 3, "{j:#?}");
    let outcomes: Vec<Outcome> = j.attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [Outcome::Ok, Outcome::Fail, Outcome::Ok]);
    assert_eq!(j.attempts[1].measured, Some(12.7));
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Ok, "{v:#?}");
    assert!(
        v.detail.starts_with("2/3 attempts >= 89.52 Gb/s"),
        "{}",
        v.detail
    );
    assert_eq!(r.summary.verdict, "ALL GREEN");
    // a fresh server for each attempt, each started before its client
    let calls = t.calls();
    let starts = calls
        .iter()
        .filter(|c| c.script.starts_with(fabricplan::exec::fake::SPAWN_CALL))
        .count();
    assert_eq!(starts, 3);
    assert_eq!(
        j.steps.iter().map(|s| s.attempt).collect::<Vec<_>>(),
        [1, 1, 2, 2, 3, 3]
    );
    // near miss: two noisy attempts of three fail the gate
    let (r, _) = run_plan(&text, cycling([109.0, 12.7, 12.6]), 8).await;
    let v = &r.jobs[0].verdicts[0];
    assert_eq!(v.outcome, Outcome::Fail, "{v:#?}");
    assert!(v.detail.starts_with("1/3 attempts"), "{}", v.detail);
    assert_eq!(v.trap, Some(Trap::FirmwareThrottle));
}

/// A round's phases are consistent: none negative, none longer than the round, the overlapping
/// setup phases within the setup, and the serial parts (prepare, setup, tools, teardown, judge)
/// within the wall. No time is asserted: only how the phases relate.
fn assert_phases_consistent(round: &fabricplan::results::RoundRecord, attempts: u32) {
    let p = round.phases.as_ref().expect("a round records its phases");
    assert_eq!(p.attempts, attempts, "{p:#?}");
    // every figure is floored to the microsecond: sums may lose up to 1 us per term
    let eps = 0.01;
    let all = [
        p.prepare_ms,
        p.counters_before_ms,
        p.server_start_ms,
        p.readiness_ms,
        p.staging_ms,
        p.setup_ms,
        p.longest_tool_ms,
        p.tools_ms,
        p.server_stop_and_logs_ms,
        p.counters_after_ms,
        p.judge_ms,
        p.overhead_ms,
    ];
    for v in all
        .iter()
        .chain(p.release_first_ms.iter())
        .chain(p.release_ms.iter())
    {
        assert!(*v >= 0.0 && *v <= p.wall_ms + eps, "{v} of {p:#?}");
    }
    assert!(p.counters_before_ms <= p.setup_ms + eps, "{p:#?}");
    assert!(
        p.server_start_ms + p.readiness_ms <= p.setup_ms + eps,
        "{p:#?}"
    );
    assert!(p.staging_ms <= p.setup_ms + eps, "{p:#?}");
    assert!(p.longest_tool_ms <= p.tools_ms + eps, "{p:#?}");
    if let (Some(first), Some(last)) = (p.release_first_ms, p.release_ms) {
        assert!(first <= last + eps && last <= p.tools_ms + eps, "{p:#?}");
    }
    let teardown = p.server_stop_and_logs_ms.max(p.counters_after_ms);
    let serial = p.prepare_ms + p.setup_ms + p.tools_ms + teardown + p.judge_ms;
    assert!(serial <= p.wall_ms + eps, "{serial} > wall: {p:#?}");
    assert!(
        (p.overhead_ms - (p.wall_ms - p.longest_tool_ms)).abs() <= eps,
        "{p:#?}"
    );
}

/// The healthy pair's fake, its client reporting its start mark (the host's clock: here, now).
fn fake_with_marks() -> FakeTransport {
    FakeTransport::new()
        .rule(|host, script| {
            (host == "spark-b" && script.contains("ib_write_bw")).then(|| {
                let ns = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                Ok(Output {
                    status: 0,
                    stdout: bw_output(109.0),
                    stderr: format!("@fabricplan-start {ns}\n"),
                    ..Output::default()
                })
            })
        })
        .on(
            "spark-a",
            "@host",
            Ok(Output::ok(probe("spark-a", "198.51.100.1", "c633:6401"))),
        )
        .on(
            "spark-b",
            "@host",
            Ok(Output::ok(probe("spark-b", "198.51.100.2", "c633:6402"))),
        )
        .on("*", "ping -c", Ok(Output::ok("PING 198.51.100.1 (198.51.100.1) 56(84) bytes of data.\n64 bytes from 198.51.100.1: icmp_seq=1 ttl=64 time=0.05 ms\n\n--- 198.51.100.1 ping statistics ---\n3 packets transmitted, 3 received, 0% packet loss, time 2002ms\nrtt min/avg/max/mdev = 0.040/0.050/0.060/0.010 ms\n")))
        .on("*", "/proc/net/tcp", Ok(Output::ok("4242\n")))
}

#[tokio::test]
async fn every_round_records_consistent_phases() {
    let (r, _) = run_with(fake_with_marks()).await;
    assert_eq!(r.summary.verdict, "ALL GREEN", "{:#?}", r.summary);
    assert_eq!(r.rounds.len(), 1);
    assert_phases_consistent(&r.rounds[0], 1);
    let p = r.rounds[0].phases.as_ref().unwrap();
    // the client's start mark was there: release and tool time come from it
    assert_eq!(p.tool_source, "remote");
    assert!(p.release_ms.is_some() && p.release_first_ms.is_some());
    // the mark made it into the step too, and out of the client's stderr
    let client = r.jobs[0]
        .steps
        .iter()
        .find(|s| s.role == fabricplan::render::job::Role::Client)
        .unwrap();
    assert!(client.remote_started_unix_ms.is_some());
    // and the record reads back, with and without phases (an older results.json)
    let json = serde_json::to_value(&r.rounds[0]).unwrap();
    assert!(json["phases"]["overhead_ms"].is_number(), "{json}");
    let back: fabricplan::results::RoundRecord = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, r.rounds[0]);
    let mut old = json;
    old.as_object_mut().unwrap().remove("phases");
    let back: fabricplan::results::RoundRecord = serde_json::from_value(old).unwrap();
    assert_eq!(back.phases, None);
}

#[tokio::test]
async fn repeated_attempts_sum_their_phases() {
    let text = format!("{PLAN}[gates.rdma-bw]\nattempts = 3\npass-if = 2\n");
    let (r, _) = run_plan(&text, cycling([109.0, 108.0, 108.5]), 8).await;
    assert_eq!(r.rounds.len(), 1);
    assert_phases_consistent(&r.rounds[0], 3);
    // the fake's clients report no start mark: the tool runs from its sending
    let p = r.rounds[0].phases.as_ref().unwrap();
    assert_eq!(p.tool_source, "sent");
    assert_eq!(p.release_ms, None);
}

/// A server's readiness is polled as soon as its own start answered: it does not wait for the
/// round's counters (a slow snapshot here), which only have to be in before the release.
#[tokio::test(start_paused = true)]
async fn readiness_does_not_wait_for_the_counters() {
    use std::sync::Arc as A;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let snapshots = A::new(AtomicUsize::new(0));
    let seen_by_ready = A::new(std::sync::Mutex::new(Vec::new()));
    let needle = "dump counter \"$p\"/ports/1/counters/*";
    let (s1, s2, seen) = (snapshots.clone(), snapshots.clone(), seen_by_ready.clone());
    let t = FakeTransport::new()
        .rule(move |_, script| {
            (script.contains(needle) && !script.contains("@host")).then(|| {
                s1.fetch_add(1, Ordering::SeqCst);
                Ok(Output::default())
            })
        })
        .rule(move |_, script| {
            script.contains("/proc/net/tcp").then(|| {
                seen.lock().unwrap().push(s2.load(Ordering::SeqCst));
                Ok(Output::ok("4242\n"))
            })
        })
        .on(
            "spark-a",
            "@host",
            Ok(Output::ok(probe("spark-a", "198.51.100.1", "c633:6401"))),
        )
        .on(
            "spark-b",
            "@host",
            Ok(Output::ok(probe("spark-b", "198.51.100.2", "c633:6402"))),
        )
        .on("spark-b", "ib_write_bw", Ok(Output::ok(bw_output(109.0))))
        .on("*", "ping -c", Ok(Output::ok("PING 198.51.100.1 (198.51.100.1) 56(84) bytes of data.\n64 bytes from 198.51.100.1: icmp_seq=1 ttl=64 time=0.05 ms\n\n--- 198.51.100.1 ping statistics ---\n3 packets transmitted, 3 received, 0% packet loss, time 2002ms\nrtt min/avg/max/mdev = 0.040/0.050/0.060/0.010 ms\n")))
        .delay(needle, Duration::from_secs(5));
    let (r, _) = run_with(t).await;
    assert!(
        r.jobs.iter().all(|j| j.status == JobStatus::Measured),
        "{r:#?}"
    );
    // the round's one readiness poll ran while its counters before were still being read
    assert_eq!(*seen_by_ready.lock().unwrap(), vec![0]);
    // both snapshots (before and after, one script per host) were still read
    assert_eq!(snapshots.load(Ordering::SeqCst), 4);
}

/// `run --setup`: the setup stage runs in the run, before anything is measured, on every node
/// of the plan (those a run's jobs do not need too); one verdict per node with the preflight's,
/// in the events as they come; a node whose setup failed is one finding naming it.
#[tokio::test]
async fn the_setup_stage_runs_first_in_the_run_and_its_failure_is_a_finding() {
    let text = format!("{PLAN}[[node]]\nname = \"spark-c\"\n[setup]\npackages = [\"perftest\"]\n");
    let plan = support::load_plan_text("pair.toml", &text);
    let t = Arc::new(
        fake(109.0)
            .on("spark-a", "apt-get install", Ok(Output::ok("setup-ok\n")))
            .on("spark-c", "apt-get install", Ok(Output::ok("setup-ok\n")))
            .on(
                "spark-b",
                "apt-get install",
                Ok(Output {
                    status: 100,
                    stdout: String::new(),
                    stderr: "E: Unable to locate package perftest\n".into(),
                    ..Output::default()
                }),
            ),
    );
    let evidence = Evidence::none();
    let mut cfg = RunConfig::new(
        Arc::new(plan),
        Arc::new(fabricplan::launchers::ssh::exec::launcher::SshLauncher::new(t.clone())),
        RunOptions {
            run_id: "test".into(),
            only: vec![],
            skip: vec![],
            max_parallel: 8,
            keep_evidence: None,
        },
        &evidence,
    );
    cfg.setup = true;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (_c, cancel) = tokio::sync::watch::channel(false);
    runner::run(&cfg, tx, cancel).await;
    let events: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let Some(Event::Finished(r)) = events.last() else {
        panic!("the run says its end last");
    };
    let setup: Vec<(&str, Outcome)> = r
        .preflight
        .iter()
        .filter(|v| v.gate.starts_with("setup "))
        .map(|v| (v.gate.as_str(), v.outcome))
        .collect();
    assert_eq!(
        setup,
        [
            ("setup spark-a", Outcome::Ok),
            ("setup spark-b", Outcome::Fail),
            ("setup spark-c", Outcome::Ok)
        ],
        "every node of the plan is set up, spark-c too"
    );
    let said = events
        .iter()
        .filter(|e| matches!(e, Event::Preflight(v) if v.gate.starts_with("setup ")))
        .count();
    assert_eq!(said, 3, "each setup verdict is an event as it comes");
    // nothing is measured before the setup stage is over
    let calls = t.calls();
    let last_setup = calls
        .iter()
        .filter(|c| c.script.contains("apt-get install"))
        .map(|c| c.seq)
        .max()
        .expect("setup ran");
    assert!(
        calls
            .iter()
            .filter(|c| c.script.contains("ib_write_bw") || c.script.contains("@host"))
            .all(|c| c.seq > last_setup),
        "discovery and the tools wait for the setup stage"
    );
    assert_eq!(r.summary.exit_code, 1, "{:#?}", r.summary);
    let blamed: Vec<&str> = r.findings.iter().map(|f| f.name.as_str()).collect();
    assert!(
        blamed.iter().any(|n| n.contains("spark-b")),
        "the failed setup is a finding about spark-b: {blamed:?}"
    );
}

/// `run --baseline`: the run starts by saying what it is judged against, and ends judged
/// against it: a flow that dropped more than the plan allows is a regression WARN beside its
/// gate, and a finding, while the gate itself still passes.
#[tokio::test]
async fn a_run_is_judged_against_its_baseline_before_it_ends() {
    let (before, _) = run_with(fake(109.0)).await;
    assert_eq!(before.summary.verdict, "ALL GREEN");
    let plan = support::load_plan_text("pair.toml", PLAN);
    let baseline = fabricplan::compare::Baseline {
        results: Arc::new(before),
        text: String::new(),
        thresholds: fabricplan::compare::Thresholds::from_plan(&plan.regression, None),
    };
    let evidence = Evidence::none();
    let mut cfg = RunConfig::new(
        Arc::new(plan),
        Arc::new(
            fabricplan::launchers::ssh::exec::launcher::SshLauncher::new(Arc::new(fake(95.0))),
        ),
        RunOptions {
            run_id: "test".into(),
            only: vec![],
            skip: vec![],
            max_parallel: 8,
            keep_evidence: None,
        },
        &evidence,
    );
    cfg.baseline = Some(baseline);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (_c, cancel) = tokio::sync::watch::channel(false);
    runner::run(&cfg, tx, cancel).await;
    let events: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let Some(Event::Started(s)) = events.first() else {
        panic!("the run says its start first");
    };
    assert!(s.baseline.is_some(), "the start carries the baseline");
    let Some(Event::Finished(r)) = events.last() else {
        panic!("the run says its end last");
    };
    let job = &r.jobs[0];
    let gate = job
        .verdicts
        .iter()
        .find(|v| v.metric.is_some())
        .expect("the gate");
    assert_eq!(gate.outcome, Outcome::Ok, "95 Gb/s still passes the gate");
    let regression = job
        .verdicts
        .iter()
        .find(|v| v.gate.ends_with(" vs baseline"))
        .expect("judged against the baseline");
    assert_eq!(regression.outcome, Outcome::Warn, "{regression:#?}");
    assert_eq!(r.summary.warn, 1, "{:#?}", r.summary);
    assert_eq!(
        r.findings.len(),
        1,
        "the regression is one finding: {:#?}",
        r.findings
    );
}
