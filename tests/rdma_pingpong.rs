//! `rdma-pingpong`, a kind with its own section, tool, parser, metric and gate, and its own
//! words on the simulated fabric: what it reads, how it judges, and that the reports, the
//! metrics file and `compare` show it without naming it.

mod support;

use std::path::Path;

use fabricplan::parse::{Status, check_invariants};

const PLAN: &str = "tests/fixtures/kinds/rdma-pingpong.toml";
const SWITCHED: &str = "tests/fixtures/kinds/rdma-pingpong-switched.toml";

fn tool() -> fabricplan::parse::Tool {
    fabricplan::kinds::tool("ibv_rc_pingpong").expect("the kind's tool is registered")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/parse/ibv_rc_pingpong")
            .join(name),
    )
    .unwrap()
}

#[test]
fn reads_both_addresses_and_both_figures() {
    let p = tool().parse(&fixture("client.txt"));
    assert_eq!(p.status(), Status::Ok);
    let j = p.to_json();
    assert_eq!(j["tool"], "ibv_rc_pingpong");
    assert_eq!(j["usec_per_iter"], 20.0);
    assert_eq!(j["mbit_per_sec"], 3276.8);
    assert_eq!(j["bytes"], 8192000);
    assert_eq!(j["iters"], 1000);
    assert_eq!(j["local"]["qpn"], 0x123);
    assert_eq!(j["local"]["psn"], 0x4a1b2c);
    assert_eq!(j["remote"]["gid"], "::ffff:198.51.100.1");
    let ib = tool().parse(&fixture("server-ib.txt")).to_json();
    assert_eq!(ib["local"]["lid"], 4);
    assert_eq!(ib["usec_per_iter"], 11.0);
}

#[test]
fn each_error_line_is_its_kind_and_a_cut_capture_is_incomplete() {
    for (file, kind) in [
        ("err-connect.txt", "connect-failed"),
        ("err-rtr.txt", "qp-rtr-failed"),
        ("err-port.txt", "port-state"),
        ("err-retry.txt", "completion-error"),
    ] {
        let p = tool().parse(&fixture(file));
        assert_eq!(p.status(), Status::Error, "{file}");
        assert_eq!(p.to_json()["error"]["kind"], kind, "{file}");
    }
    let cut = tool().parse(&fixture("truncated.txt"));
    assert_eq!(cut.status(), Status::Incomplete);
    assert_eq!(tool().parse("").status(), Status::Empty);
    assert_eq!(tool().parse("hello\n").status(), Status::Unrecognized);
}

/// Every fixture cut at every line, and with each figure made impossible, keeps its promises
/// and never panics.
#[test]
fn damaged_captures_keep_the_invariants() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parse/ibv_rc_pingpong");
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for n in 0..=lines.len() {
            let p = tool().parse(&lines[..n].join("\n"));
            check_invariants(&p).unwrap();
        }
        for bad in ["-20.00", "nan", "inf"] {
            let p = tool().parse(&text.replace("20.00", bad).replace("11.00", bad));
            check_invariants(&p).unwrap();
            assert_ne!(
                p.to_json()["usec_per_iter"].as_f64().map(f64::is_finite),
                Some(false)
            );
        }
    }
}

#[test]
fn the_section_is_validated_and_in_the_schema() {
    let p = Path::new(PLAN);
    let text = std::fs::read_to_string(p).unwrap();
    let bad = text.replace("iterations = 500", "iteratons = 500");
    let err = match fabricplan::kinds::load_str(p, &bad, Path::new(".")) {
        Err(fabricplan::plan::LoadError::Invalid(d)) => d.render(false, 100),
        other => panic!("{other:?}"),
    };
    assert!(err.contains("did you mean `iterations`?"), "{err}");
    let schema: serde_json::Value =
        serde_json::from_str(&fabricplan::kinds::json_schema()).unwrap();
    assert!(schema["definitions"]["RawTests"]["properties"]["rdma-pingpong"].is_object());
}

/// On the simulated fabric each half is one ping-pong, rendered from the kind's templates,
/// green; summary.md and report.html show its gates, the metrics file its round trips.
#[test]
fn green_on_a_healthy_pair_and_in_every_report() {
    let tmp = tempfile::tempdir().unwrap();
    let prom = tmp.path().join("m.prom");
    let prom_s = prom.to_string_lossy().into_owned();
    let (dir, o) = support::sim_run(tmp.path(), "ok", PLAN, &["--metrics", &prom_s]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let jobs: Vec<_> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["kind"] == "rdma-pingpong")
        .collect();
    assert_eq!(jobs.len(), 2, "one per half");
    for j in &jobs {
        let cmd = j["steps"][0]["command"].as_str().unwrap();
        assert!(cmd.starts_with("ibv_rc_pingpong -d "), "{cmd}");
        assert!(cmd.contains(" -n 500"), "{cmd}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("| rdma-pingpong spark-b.f0.a -> spark-a.f0.a | OK |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("rdma-pingpong spark-b.f0.b -&gt; spark-a.f0.b")
            || html.contains("rdma-pingpong spark-b.f0.b -> spark-a.f0.b")
    );
    let m = std::fs::read_to_string(&prom).unwrap();
    assert!(
        m.contains("# TYPE fabricplan_link_round_trip_seconds gauge"),
        "{m}"
    );
    assert!(
        m.contains(
            "fabricplan_link_round_trip_seconds{plan=\"pingpong-pair\",kind=\"rdma-pingpong\""
        ),
        "{m}"
    );
}

/// An RSTP-blocked ISL makes the round trips across it crawl: they FAIL the default gate, the
/// finding is the ISL, and `compare` against a healthy run calls them regressions.
#[test]
fn a_blocked_isl_fails_the_gate_and_compare_sees_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (ok, o) = support::sim_run(tmp.path(), "ok", SWITCHED, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let (bad, o) = support::sim_run(
        tmp.path(),
        "bad",
        SWITCHED,
        &["--sim-fault", "rstp-block:sw-a-sw-b"],
    );
    assert_eq!(o.status.code(), Some(1));
    let md = std::fs::read_to_string(bad.join("summary.md")).unwrap();
    assert!(md.contains("ISL sw-a-sw-b"), "{md}");
    assert!(
        md.contains("| rdma-pingpong gb10-03.f0.a -> gb10-01.f0.a | FAIL |"),
        "{md}"
    );
    // the same switch: untouched
    assert!(
        md.contains("| rdma-pingpong gb10-02.f0.a -> gb10-01.f0.a | OK |"),
        "{md}"
    );
    // compare leads with the cause: the ISL explains the round trips that rose
    let c = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(["compare", &ok.to_string_lossy(), &bad.to_string_lossy()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&c.stdout);
    assert!(out.starts_with("ISL sw-a-sw-b ("), "{out}");
    assert!(!out.contains("not explained"), "{out}");
    // every measurement behind --all, the regressions marked
    let c = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args([
            "compare",
            &ok.to_string_lossy(),
            &bad.to_string_lossy(),
            "--all",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&c.stdout);
    assert!(
        out.contains("rdma-pingpong gb10-03.f0.a -> gb10-01.f0.a"),
        "{out}"
    );
    assert!(out.contains("REGRESSION"), "{out}");
}

/// A plan's gate is the kind's gate: a pass threshold below the healthy round trip fails it;
/// a server that dies leaves the pair unmeasured (the kind's words for a refused connection).
#[test]
fn the_plans_gate_judges_it_and_a_dead_server_is_a_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(PLAN).unwrap()
        + "\n[gates.rdma-pingpong]\npass = \"2 us\"\nwarn = \"2.5 us\"\n";
    let strict = tmp.path().join("strict.toml");
    std::fs::write(&strict, text).unwrap();
    let (dir, o) = support::sim_run(tmp.path(), "strict", &strict.to_string_lossy(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", support::stderr(&o));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("| rdma-pingpong spark-b.f0.a -> spark-a.f0.a | FAIL |"),
        "{md}"
    );
    let (dir, o) = support::sim_run(
        tmp.path(),
        "dies",
        PLAN,
        &["--sim-fault", "server-dies:spark-a"],
    );
    assert_eq!(o.status.code(), Some(1));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        !md.contains("| rdma-pingpong spark-b.f0.a -> spark-a.f0.a | OK |"),
        "{md}"
    );
}
