//! `run --metrics FILE`: the file is read back with a real exposition-format parser (Python's
//! `prometheus_client.parser`, Debian's python3-prometheus-client, which `.ci/run` installs),
//! and checked for what node_exporter's textfile collector needs: HELP and TYPE before every
//! family, no duplicate series, no timestamps, base units in the names, `_total` only on
//! counters, escaped label values, and no temporary file left beside it.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::*;

/// The parser's reading of `text`: `{"families": [{"name", "type", "help", "samples": [{"name",
/// "labels", "value", "timestamp"}]}]}`; `None` when no Python with prometheus_client is here.
fn parse(text: &str) -> Option<Value> {
    const SCRIPT: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "help": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value,
                             "timestamp": s.timestamp} for s in f.samples]})
print(json.dumps({"families": out}))
"#;
    for py in ["/usr/bin/python3", "python3"] {
        let probe = Command::new(py)
            .args(["-c", "import prometheus_client.parser"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            continue;
        }
        let mut child = Command::new(py)
            .args(["-c", SCRIPT])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "the parser rejects the file: {}\n{text}",
            String::from_utf8_lossy(&o.stderr)
        );
        return Some(serde_json::from_slice(&o.stdout).unwrap());
    }
    if std::env::var_os("FABRICPLAN_SKIP_PROMETHEUS_PARSER").is_some() {
        eprintln!(
            "note: no python3 with prometheus_client; skipped (FABRICPLAN_SKIP_PROMETHEUS_PARSER)"
        );
        return None;
    }
    panic!(
        "no python3 with prometheus_client: install python3-prometheus-client (as .ci/run does), or set FABRICPLAN_SKIP_PROMETHEUS_PARSER=1"
    );
}

/// Line-level rules the parser does not enforce.
fn check_lines(text: &str) {
    let mut typed: BTreeSet<String> = BTreeSet::new();
    let mut helped: BTreeSet<String> = BTreeSet::new();
    let mut series: BTreeSet<String> = BTreeSet::new();
    let name_ok = |n: &str| {
        n.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(helped.insert(name.to_string()), "HELP twice: {line}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (name, kind) = (it.next().unwrap(), it.next().unwrap());
            assert!(name_ok(name), "{name}");
            assert!(helped.contains(name), "TYPE before HELP: {line}");
            match kind {
                "counter" => assert!(name.ends_with("_total"), "{line}"),
                "gauge" => assert!(!name.ends_with("_total"), "{line}"),
                other => panic!("only gauges and counters: {other}"),
            }
            for unit in ["gigabits", "gbps", "_us", "microseconds", "milliseconds"] {
                assert!(!name.contains(unit), "base units only: {name}");
            }
            assert!(typed.insert(name.to_string()), "TYPE twice: {line}");
            continue;
        }
        assert!(!line.starts_with('#'), "{line}");
        let name = line.split(['{', ' ']).next().unwrap();
        assert!(typed.contains(name), "a sample before its TYPE: {line}");
        assert!(
            series.insert(line.rsplit_once(' ').unwrap().0.to_string()),
            "duplicate series: {line}"
        );
        // `name{labels} value`: no timestamp after the value
        let after = line.rsplit_once('}').map(|x| x.1).unwrap_or(line);
        assert_eq!(after.split_whitespace().count(), 1, "a timestamp? {line}");
    }
}

fn samples<'a>(v: &'a Value, family: &str) -> Vec<&'a Value> {
    v["families"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == family)
        .flat_map(|f| f["samples"].as_array().unwrap())
        .collect()
}

fn label<'a>(s: &'a Value, k: &str) -> &'a str {
    s["labels"][k].as_str().unwrap_or("")
}

fn no_temp_files(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "temporary files left: {names:?}"
    );
}

#[test]
fn throttled_two_spark_metrics_parse_and_say_what_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let prom_dir = tmp.path().join("textfile");
    std::fs::create_dir(&prom_dir).unwrap();
    let prom = prom_dir.join("fabricplan-two-spark.prom");
    let p = prom.to_string_lossy().into_owned();
    let (_, o) = sim_run(
        tmp.path(),
        "t",
        "plans/two-spark.toml",
        &["--sim-fault", "throttle:spark-a.f0.a", "--metrics", &p],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = std::fs::read_to_string(&prom).unwrap();
    check_lines(&text);
    no_temp_files(&prom_dir);
    let Some(v) = parse(&text) else { return };
    let bw = samples(&v, "fabricplan_link_bandwidth_bits_per_second");
    let a = bw
        .iter()
        .find(|s| {
            label(s, "kind") == "rdma-bw" && label(s, "half") == "a" && label(s, "src") == "spark-b"
        })
        .expect("half a's bandwidth");
    assert_eq!(label(a, "dst"), "spark-a");
    assert_eq!(label(a, "plan"), "two-spark");
    assert_eq!(label(a, "round"), "rdma-bw stack.a");
    assert_eq!(label(a, "src_port"), "f0");
    assert!((a["value"].as_f64().unwrap() - 12.66e9).abs() < 1e3, "{a}");
    let sum = bw
        .iter()
        .find(|s| label(s, "half") == "both")
        .expect("the both-halves sum");
    assert!(sum["value"].as_f64().unwrap() > 100e9);
    let exp = samples(&v, "fabricplan_link_expected_bandwidth_bits_per_second");
    assert_eq!(exp.len(), bw.len());
    let lat = samples(&v, "fabricplan_link_latency_seconds");
    assert_eq!(lat.len(), 2);
    assert!(lat.iter().all(|s| {
        let x = s["value"].as_f64().unwrap();
        x > 1e-6 && x < 2e-6
    }));
    let gates = samples(&v, "fabricplan_gate_outcome");
    let fail = gates
        .iter()
        .find(|s| label(s, "gate") == "rdma-bw spark-b.f0.a -> spark-a.f0.a")
        .unwrap();
    assert_eq!(label(fail, "outcome"), "fail");
    // a gate name with a comma survives as one label value
    assert!(
        gates
            .iter()
            .any(|s| label(s, "gate") == "nccl all_reduce (all_reduce_perf, 2 ranks) transport")
    );
    let verdict = samples(&v, "fabricplan_run_verdict");
    // the throttled half fails each way and again beside its twin half: one root cause, one
    // FAIL; the other failures follow it (shown, not counted again)
    assert_eq!(label(verdict[0], "verdict"), "1 FAIL: spark-a.f0.a");
    assert_eq!(samples(&v, "fabricplan_run_failures")[0]["value"], 1.0);
    assert_eq!(samples(&v, "fabricplan_run_simulated")[0]["value"], 1.0);
    assert!(
        samples(&v, "fabricplan_run_start_time_seconds")[0]["value"]
            .as_f64()
            .unwrap()
            > 1.7e9
    );
    assert!(!samples(&v, "fabricplan_run_duration_seconds").is_empty());
    let nccl = samples(&v, "fabricplan_nccl_bus_bandwidth_bytes_per_second");
    assert_eq!(nccl.len(), 25);
    let big = nccl
        .iter()
        .find(|s| label(s, "size_bytes") == "134217728")
        .unwrap();
    assert_eq!(label(big, "collective"), "all_reduce");
    assert!(big["value"].as_f64().unwrap() > 1e9);
    assert_eq!(
        samples(&v, "fabricplan_nccl_small_message_time_seconds").len(),
        1
    );
    assert_eq!(
        samples(&v, "fabricplan_nccl_average_bus_bandwidth_bytes_per_second").len(),
        1
    );
    // the RDMA counters: a counter family, samples named _total
    let fam = v["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["type"] == "counter")
        .expect("a counter family");
    assert!(
        fam["samples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["name"] == "fabricplan_rdma_counter_delta_total")
    );
    for f in v["families"].as_array().unwrap() {
        assert!(!f["help"].as_str().unwrap().is_empty(), "{f}");
        for s in f["samples"].as_array().unwrap() {
            assert_eq!(s["timestamp"], Value::Null);
            assert!(
                s["labels"]["plan"].is_string(),
                "every series has plan: {s}"
            );
        }
    }
}

#[test]
fn switched_six_metrics_have_one_series_per_flow_and_round() {
    let tmp = tempfile::tempdir().unwrap();
    let prom = tmp.path().join("sw6.prom");
    let (_, o) = sim_run(
        tmp.path(),
        "s",
        "plans/switched-6.toml",
        &["--metrics", &prom.to_string_lossy()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // rewritten in place by a second run, never half written
    let (_, o) = sim_run(
        tmp.path(),
        "s2",
        "plans/switched-6.toml",
        &["--metrics", &prom.to_string_lossy()],
    );
    assert_eq!(o.status.code(), Some(0));
    let text = std::fs::read_to_string(&prom).unwrap();
    check_lines(&text);
    no_temp_files(tmp.path());
    let Some(v) = parse(&text) else { return };
    let bw = samples(&v, "fabricplan_link_bandwidth_bits_per_second");
    // R1 3 flows, R2a 1, R2b 2, R3 3: gb10-05 -> gb10-01 in three rounds, three series
    assert_eq!(bw.len(), 9);
    let rounds: BTreeSet<&str> = bw
        .iter()
        .filter(|s| label(s, "src") == "gb10-05" && label(s, "dst") == "gb10-01")
        .map(|s| label(s, "round"))
        .collect();
    assert_eq!(rounds, BTreeSet::from(["R2a", "R2b", "R3"]));
    assert_eq!(
        label(samples(&v, "fabricplan_run_verdict")[0], "verdict"),
        "ALL GREEN"
    );
}

#[test]
fn label_values_with_quotes_backslashes_and_newlines_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, _) = sim_run(tmp.path(), "x", "plans/two-spark.toml", &[]);
    let text = std::fs::read_to_string(d.join("results.json")).unwrap();
    let mut r = fabricplan::compare::parse_results(&text).unwrap();
    let odd = "site \"A\"\\B\nC,D=E}";
    r.plan = odd.into();
    r.jobs[0].verdicts[0].gate = format!("rdma-bw {odd} spark-b.f0.a -> spark-a.f0.a");
    let prom = fabricplan::report::sink::metrics::render(&r);
    check_lines(&prom);
    let Some(v) = parse(&prom) else { return };
    let s = samples(&v, "fabricplan_run_verdict");
    assert_eq!(label(s[0], "plan"), odd);
    assert!(
        samples(&v, "fabricplan_gate_outcome")
            .iter()
            .any(|s| label(s, "gate").contains(odd))
    );
}
