//! A job's parsed output is typed end to end: every tool's report reads back from its own JSON
//! as the same report, and a `results.json` written before results were typed (format version
//! 1, by the binary of that time: `fixtures/results/v1/run`, a run of every kind with a
//! throttled half and `--keep-evidence failed`) still reads, each job's output as its tool's
//! report, and writes back as it was.

mod support;

use std::path::Path;

use fabricplan::kinds::iperf3::parse::IperfReport;
use fabricplan::parse::{Tool, parse};
use fabricplan::results::RunResults;
use fabricplan::tools::nccl_tests::parse::NcclReport;
use fabricplan::tools::perftest::parse::{BwReport, LatReport};

const V1: &str = "tests/fixtures/results/v1/run";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every capture of `tests/fixtures/parse`, with the tool it is an output of (a shared tool or
/// a kind's own).
fn captures() -> Vec<(Tool, String)> {
    let mut out = Vec::new();
    let dir = root().join("tests/fixtures/parse");
    for e in std::fs::read_dir(&dir).unwrap() {
        let folder = e.unwrap().path();
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let tool = match name.as_str() {
            "nccl-json" => Tool::NCCL_TESTS,
            n => fabricplan::kinds::tool(n).unwrap_or_else(|| panic!("{n} is no tool")),
        };
        for f in std::fs::read_dir(&folder).unwrap() {
            let bytes = std::fs::read(f.unwrap().path()).unwrap();
            out.push((tool, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    assert!(out.len() > 50, "the parse fixtures are there");
    out
}

#[test]
fn every_report_reads_back_from_its_json_as_itself() {
    for (tool, text) in captures() {
        let parsed = parse(tool, &text);
        let back = tool.read(parsed.to_json()).unwrap();
        assert_eq!(back, parsed, "{}: {text:.200}", tool.name());
        // shed (a digested job's form): reads back, and sheds to the same JSON again
        let mut shed = parsed.clone();
        shed.shed();
        let mut again = tool.read(shed.to_json()).unwrap();
        again.shed();
        assert_eq!(again.to_json(), shed.to_json(), "{}", tool.name());
    }
}

fn v1() -> (serde_json::Value, RunResults) {
    let text = std::fs::read_to_string(root().join(V1).join("results.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let r = fabricplan::compare::parse_results(&text).expect("a v1 results.json reads");
    (doc, r)
}

#[test]
fn a_v1_results_json_reads_every_output_as_its_tool_report() {
    let (_, r) = v1();
    assert_eq!(r.format_version, 1);
    let kinds: Vec<&str> = r.jobs.iter().map(|j| j.kind.as_str()).collect();
    for k in [
        "rdma-bw",
        "rdma-read-bw",
        "rdma-bw-both",
        "rdma-lat",
        "iperf3",
        "nccl",
    ] {
        assert!(kinds.contains(&k), "the fixture runs {k}");
    }
    for j in &r.jobs {
        let p = j
            .parsed
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no parsed output", j.job));
        let typed = match j.kind.as_str() {
            "rdma-bw" | "rdma-read-bw" | "rdma-bw-both" => p.get::<BwReport>().is_some(),
            "rdma-lat" => p.get::<LatReport>().is_some(),
            "iperf3" => p.get::<IperfReport>().is_some(),
            "nccl" => p.get::<NcclReport>().is_some_and(|n| !n.rows.is_empty()),
            other => panic!("kind {other} not in the fixture"),
        };
        assert!(typed, "{}: {p:?}", j.job);
    }
    // the throttled half's reading, and a digested job's figures without its banner
    let throttled = r
        .jobs
        .iter()
        .filter_map(|j| j.parsed.as_ref()?.get::<BwReport>())
        .filter_map(|b| b.bw_avg_gbps)
        .fold(f64::INFINITY, f64::min);
    assert!((12.0..14.0).contains(&throttled), "{throttled}");
    let digested = r.jobs.iter().find(|j| !j.digests.is_empty()).unwrap();
    let b = digested.parsed.as_ref().unwrap().get::<BwReport>().unwrap();
    assert!(b.setup.banner.is_none() && b.bw_avg_gbps.is_some());
}

#[test]
fn a_v1_results_json_writes_back_as_it_was() {
    let (doc, mut r) = v1();
    // a digested job's output was written shed; it is read back whole, and sheds the same
    for j in r.jobs.iter_mut().filter(|j| !j.digests.is_empty()) {
        j.parsed.as_mut().unwrap().shed();
    }
    let back = serde_json::to_value(&r).unwrap();
    assert_eq!(back["jobs"], doc["jobs"]);
    assert_eq!(back, doc);
}

#[test]
fn an_unknown_tool_leaves_the_output_empty_and_a_wrong_one_is_named() {
    let (mut doc, _) = v1();
    doc["jobs"][0]["parsed"]["tool"] = "ib_future_bw".into();
    let r = fabricplan::compare::parse_results(&doc.to_string()).unwrap();
    assert!(r.jobs[0].parsed.is_none());
    assert!(r.jobs[1].parsed.is_some());
    doc["jobs"][0]["parsed"]["tool"] = "ib_write_bw".into();
    doc["jobs"][0]["parsed"]["bw_avg_gbps"] = "fast".into();
    let e = fabricplan::compare::parse_results(&doc.to_string()).unwrap_err();
    let job = doc["jobs"][0]["job"].as_str().unwrap().to_string();
    assert!(e.to_string().contains(&job), "{e}");
}

#[test]
fn compare_and_report_read_the_v1_run() {
    let tmp = tempfile::tempdir().unwrap();
    let v1 = root().join(V1);
    let dir = v1.to_string_lossy().into_owned();
    // every row (`--all`): a v1 run's NCCL rows are read
    let o = support::fabricplan(&["compare", &dir, &dir, "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    assert!(support::stdout(&o).contains("nccl all_reduce"));
    let html = tmp.path().join("r.html");
    let o = support::fabricplan(&["report", &dir, "-o", &html.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    assert!(
        std::fs::read_to_string(&html)
            .unwrap()
            .contains("rdma-read-bw")
    );
}
