//! Reports from a run: results.json decoded (not string-compared), JUnit and summary.md by
//! snapshot with times and run ids redacted.

mod support;

use std::sync::Arc;

use fabricplan::exec::evidence::Evidence;
use fabricplan::exec::fake::FakeTransport;
use fabricplan::exec::runner::{self, RunConfig, RunOptions};
use fabricplan::exec::{Output, TransportError};

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
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
[tests.rdma-bw]
duration-s = 2
direction = "one"
"#;

fn probe(host: &str, a: &str, b: &str) -> String {
    format!(
        "@host {host}
@dev rocep1s0f0
@state 4: ACTIVE
@netdev enp1s0f0np0
@gid /x/gids/3:0000:0000:0000:0000:0000:ffff:{a}
@gidtype /x/types/3:RoCE v2
@counter /x/counters/port_xmit_data:0
@dev roceP2p1s0f0
@state 4: ACTIVE
@netdev enP2p1s0f0np0
@gid /x/gids/3:0000:0000:0000:0000:0000:ffff:{b}
@gidtype /x/types/3:RoCE v2
@ip
2: enp1s0f0np0    inet 198.51.100.{}/30 scope global enp1s0f0np0
3: enP2p1s0f0np0    inet 203.0.113.{}/30 scope global enP2p1s0f0np0
@link
2: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP
3: enP2p1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP
@route
@end
",
        if host == "spark-a" { 1 } else { 2 },
        if host == "spark-a" { 1 } else { 2 }
    )
}

fn bw(gbps: f64) -> String {
    format!(
        "---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1039716          0.00               {gbps:.2} \t\t     0.207862
---------------------------------------------------------------------------------------
"
    )
}

async fn results() -> fabricplan::results::RunResults {
    let plan = support::load_plan_text("pair.toml", PLAN);
    let t = FakeTransport::new()
        .on(
            "spark-a",
            "@host",
            Ok(Output::ok(probe("spark-a", "c633:6401", "cb00:7101"))),
        )
        .on(
            "spark-b",
            "@host",
            Ok(Output::ok(probe("spark-b", "c633:6402", "cb00:7102"))),
        )
        .on("*", "/proc/net/tcp", Ok(Output::ok("4242\n")))
        .on(
            "*",
            "ping -c",
            Ok(Output::ok(
                "3 packets transmitted, 3 received, 0% packet loss, time 2002ms\n",
            )),
        )
        // half a healthy, half b throttled
        .on("spark-b", "198.51.100.1", Ok(Output::ok(bw(109.0))))
        .on("spark-b", "203.0.113.1", Ok(Output::ok(bw(12.74))))
        // each end of the failing flow alone against its own NIC (the loopback round): the
        // throttle is spark-b's half b
        .on("spark-a", "203.0.113.1", Ok(Output::ok(bw(109.0))))
        .on("spark-b", "203.0.113.2", Ok(Output::ok(bw(12.74))))
        .rule(|_, _| None::<Result<Output, TransportError>>);
    let opts = RunOptions {
        run_id: "pair-test".into(),
        only: vec![],
        skip: vec![],
        max_parallel: 8,
        keep_evidence: None,
    };
    runner::results(&RunConfig::new(
        Arc::new(plan.clone()),
        Arc::new(fabricplan::launchers::ssh::exec::launcher::SshLauncher::new(Arc::new(t))),
        opts,
        &Evidence::none(),
    ))
    .await
}

#[tokio::test]
async fn results_json_decodes_to_the_documented_shape() {
    let r = results().await;
    let v: serde_json::Value = serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["plan"], "pair");
    assert_eq!(v["summary"]["verdict"], "1 FAIL: spark-b.f0.b");
    assert_eq!(v["summary"]["exit_code"], 1);
    let jobs = v["jobs"].as_array().unwrap();
    // the two flows, then each end of the failing one alone against its own NIC
    assert_eq!(jobs.len(), 4);
    let f = &v["findings"][0];
    assert_eq!(v["findings"].as_array().unwrap().len(), 1);
    assert_eq!(f["name"], "spark-b.f0.b");
    assert_eq!(f["host"], "spark-b");
    assert_eq!(
        f["fix_command"],
        "ssh spark-b sudo mlxfwmanager --online -u"
    );
    assert_eq!(f["follows"][0], "rdma-bw spark-b.f0.b -> spark-a.f0.b");
    let throttled = jobs
        .iter()
        .find(|j| j["label"] == "spark-b.f0.b -> spark-a.f0.b")
        .unwrap();
    let verdict = &throttled["verdicts"][0];
    assert_eq!(verdict["outcome"], "FAIL");
    assert_eq!(verdict["trap"], "firmware-throttle");
    assert_eq!(verdict["measured"], 12.74);
    assert_eq!(verdict["unit"], "Gb/s");
    assert_eq!(
        verdict["threshold"],
        ">= 89.52 Gb/s, warn >= 30.21 Gb/s (80%, 27% of 111.9 expected)"
    );
    assert_eq!(throttled["expected_gbps"], 111.9);
    assert_eq!(throttled["parsed"]["bw_avg_gbps"], 12.74);
    assert!(
        v["preflight"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["outcome"] == "OK")
    );
}

fn redact(s: &str) -> String {
    let mut out = String::new();
    for line in s.lines() {
        let mut l = line.to_string();
        for attr in ["time=\"", "timestamp=\""] {
            while let Some(i) = l.find(attr) {
                let start = i + attr.len();
                let end = l[start..].find('"').map(|e| start + e).unwrap_or(l.len());
                l = format!(
                    "{}[redacted]{}",
                    &l[..i + attr.len() - 1].replace(attr, &attr.replace("=\"", "=@")),
                    &l[end..]
                );
            }
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

#[tokio::test]
async fn junit_one_testcase_per_gate_fail_message_is_trap_and_fix() {
    let r = results().await;
    let xml = fabricplan::report::junit::render(&r);
    assert!(
        xml.contains("firmware throttle: update the ConnectX-7 firmware"),
        "{xml}"
    );
    insta::assert_snapshot!(redact(&xml));
}

#[tokio::test]
async fn summary_markdown_has_the_verdict_table_and_matrix() {
    let r = results().await;
    let md = fabricplan::report::markdown::render(&r);
    assert!(
        md.contains("| spark-b | a 109.0 / **b 12.7 ✗** | **b loopback 12.7 ✗** |"),
        "both halves shown, the failing one marked: {md}"
    );
    // what to fix first, then the failures
    let fix = md
        .find("## What to fix\n\n1. **FAIL spark-b.f0.b (enP2p1s0f0np0 on spark-b)**: firmware throttle")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        md.contains("   - fix: `ssh spark-b sudo mlxfwmanager --online -u`"),
        "{md}"
    );
    let fails = md.find("## Failures and warnings").unwrap();
    assert!(fix < fails);
    assert!(
        fails < md.find("## Discovery and preflight").unwrap(),
        "{md}"
    );
    insta::assert_snapshot!(md.replace("pair-test", "RUN"));
}
