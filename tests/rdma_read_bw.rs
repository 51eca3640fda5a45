//! `rdma-read-bw`, the kind added as one file: its plan section, its commands (`ib_read_bw`),
//! its expected value and its verdicts, on the simulated fabric.

mod support;

use std::path::Path;

use fabricplan::gate::judge::Outcome;
use fabricplan::gate::trap::Trap;
use fabricplan::results::RunResults;

fn fixture() -> (std::path::PathBuf, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kinds/rdma-read-bw.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    (p, text)
}

async fn run(text: &str, faults: &[&str]) -> RunResults {
    let (p, _) = fixture();
    let plan = support::load_plan_text(&p, text);
    support::sim_results(&plan, faults).await
}

#[tokio::test]
async fn reads_both_ways_per_half_green_on_a_healthy_pair() {
    let (_, text) = fixture();
    let r = run(&text, &[]).await;
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.kind == "rdma-read-bw").collect();
    // each half, each way
    assert_eq!(jobs.len(), 4, "{jobs:#?}");
    for j in &jobs {
        assert!(j.steps.iter().all(|s| s.command.starts_with("ib_read_bw ")));
        assert!((j.expected_gbps.unwrap() - 0.97 * 111.9).abs() < 0.2);
        assert_eq!(j.worst(), Some(Outcome::Ok), "{:#?}", j.verdicts);
    }
    assert_eq!(r.summary.verdict, "ALL GREEN");
}

#[tokio::test]
async fn a_throttled_half_is_the_firmware_throttle() {
    let (_, text) = fixture();
    let r = run(&text, &["throttle:spark-a.f0.a"]).await;
    let v = r
        .jobs
        .iter()
        .filter(|j| j.kind == "rdma-read-bw" && j.label.contains("f0.a"))
        .flat_map(|j| j.verdicts.iter())
        .next()
        .unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.trap, Some(Trap::FirmwareThrottle));
}

#[test]
fn the_section_is_validated_and_in_the_schema() {
    let (p, text) = fixture();
    let bad = text.replace("duration-s = 2", "duraton-s = 2");
    let err = match fabricplan::kinds::load_str(&p, &bad, Path::new(".")) {
        Err(fabricplan::plan::LoadError::Invalid(d)) => d.render(false, 100),
        other => panic!("{other:?}"),
    };
    assert!(err.contains("did you mean `duration-s`?"), "{err}");
    let schema: serde_json::Value =
        serde_json::from_str(&fabricplan::kinds::json_schema()).unwrap();
    assert!(
        schema["definitions"]["RawTests"]["properties"]["rdma-read-bw"].is_object(),
        "{schema}"
    );
}

/// summary.md's node x node matrix and report.html's heatmap show the kind's pairs, measured
/// or not, because the kind says it has a matrix (no report names it).
#[test]
fn the_reports_show_its_pairs_measured_or_not() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = "tests/fixtures/kinds/rdma-read-bw.toml";
    let (dir, o) = support::sim_run(
        tmp.path(),
        "t",
        plan,
        &["--sim-fault", "throttle:spark-a.f0.a"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", support::stderr(&o));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("`ar`, `br` that half's RDMA reads (rdma-read-bw)"),
        "{md}"
    );
    assert!(md.contains("**ar 12.7 ✗**"), "{md}");
    // a server that dies: no pair measures, and each is in the heatmap as not measured
    let (dir, _) = support::sim_run(
        tmp.path(),
        "d",
        plan,
        &["--sim-fault", "server-dies:spark-a"],
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for half in ["a", "b"] {
        let cell = format!("data-pair=\"rdma-read-bw|{half}|spark-b|spark-a\"");
        assert!(html.contains(&cell), "{cell} missing");
    }
    assert!(html.contains("not measured; gate : FAIL"));
}
