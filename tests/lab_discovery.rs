//! Discovery and preflight on the lab (real sshd, real links, real sysfs trees): `detect`,
//! per-box device names, a pin that assumes one name on both boxes, an MTU 1500 end, a crossed
//! cable, and a stand-in that does not advance the counters. Needs root, like every lab test.

mod lab;

use std::path::Path;
use std::process::Command;

use lab::{Fault, Lab, LabSpec, lab_enabled};
use serde_json::Value;

/// Two boxes on one cable, both halves; on host-b the cable came up on the f1 devices and the
/// RoCE v2 GIDs sit at index 5 (the naming and index asymmetry of real GB10 pairs).
fn asymmetric_spec(tag: &str) -> LabSpec {
    LabSpec::new(tag)
        .host("host-a")
        .host("host-b")
        .cable(
            "host-a",
            "enp1s0f0np0",
            "198.19.1.1/30",
            "host-b",
            "enp1s0f1np1",
            "198.19.1.2/30",
        )
        .cable(
            "host-a",
            "enP2p1s0f0np0",
            "198.19.1.5/30",
            "host-b",
            "enP2p1s0f1np1",
            "198.19.1.6/30",
        )
        .gid_index("host-b", 5)
}

fn plan_text(extra_b: &str, extra: &str) -> String {
    format!(
        r#"format-version = 1
name = "lab-pair"
[[node]]
name = "host-a"
[[node]]
name = "host-b"
{extra_b}
[[cable]]
kind = "direct"
name = "stack"
ends = ["host-a.f0", "host-b.f0"]
subnets = {{ a = "198.19.1.0/30", b = "198.19.1.4/30" }}

[tests.rdma-bw]
duration-s = 1
[tests.rdma-lat]
iterations = 200
[[tests.nccl]]
collective = "all_reduce"
max-bytes = "64K"
warmup = 1
iterations = 3

[gates.rdma-bw]
pass = "0.5 Gb/s"
warn = "0.2 Gb/s"
[gates.rdma-lat]
pass = "2000 us"
[gates.nccl-small-time]
pass = "500000 us"
[gates.nccl-busbw]
pass = "0.05 GB/s"
warn = "0.01 GB/s"
{extra}
"#
    )
}

/// The plan file, its fabric addresses the lab's (moved when another lab holds the spec's).
fn write_plan(lab: &Lab, dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lab.translate(text)).unwrap();
    p
}

fn run(lab: &Lab, plan: &Path, out: &Path) -> (i32, Value, String) {
    let o = lab::run::run_command(lab, plan, out).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // FABRICPLAN_KEEP_RUNS=DIR keeps a copy of every run directory for inspection
    if let Some(keep) = std::env::var_os("FABRICPLAN_KEEP_RUNS") {
        let _ = Command::new("cp").arg("-r").arg(out).arg(keep).status();
    }
    let results = std::fs::read_to_string(out.join("results.json"))
        .unwrap_or_else(|_| panic!("no results.json: {text}"));
    (
        o.status.code().unwrap_or(-1),
        serde_json::from_str(&results).unwrap(),
        text,
    )
}

fn verdicts(r: &Value) -> Vec<Value> {
    let mut v: Vec<Value> = r["preflight"].as_array().cloned().unwrap_or_default();
    for j in r["jobs"].as_array().cloned().unwrap_or_default() {
        v.extend(j["verdicts"].as_array().cloned().unwrap_or_default());
    }
    v
}

fn failed_traps(r: &Value) -> Vec<String> {
    verdicts(r)
        .iter()
        .filter(|v| v["outcome"] == "FAIL")
        .map(|v| {
            format!(
                "{} [{}] {}",
                v["gate"].as_str().unwrap_or(""),
                v["trap"].as_str().unwrap_or(""),
                v["detail"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn per_box_names_resolve_and_a_shared_pin_fails() {
    if !lab_enabled() {
        return;
    }
    let lab = Lab::build(&asymmetric_spec("d1")).expect("lab");
    let dir = tempfile::tempdir().unwrap();

    // detect: the live device on host-b is the f1 one, GID 5
    let plan = write_plan(&lab, dir.path(), "pair.toml", &plan_text("", ""));
    let o = Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(["detect"])
        .arg(&plan)
        .arg("--ssh-config")
        .arg(lab.ssh_config_path())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    println!("{table}");
    assert!(
        o.status.success(),
        "detect: {table}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let live_b = table
        .lines()
        .find(|l| l.contains("* rocep1s0f1"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        live_b.contains(&lab.addr("198.19.1.2/30")) && live_b.contains(" 5 "),
        "{live_b}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.contains("* rocep1s0f0") && l.contains(&lab.addr("198.19.1.1/30"))),
        "{table}"
    );

    // the run resolves each box's own names and measures, NCCL on NET/IB; but host-b's cable
    // lands on f1 where the plan says f0: the plan, the site's record of its cabling, is wrong,
    // and the run says so (a WARN per half, not a silent green)
    let (code, r, text) = run(&lab, &plan, &dir.path().join("run1"));

    assert_eq!(code, 0, "{text}\n{:#?}", failed_traps(&r));
    // one finding, the cable, named by its planned ends; both halves' WARNs are about it
    assert_eq!(
        r["summary"]["verdict"], "PASS with 1 warning(s): cable host-a.f0 -- host-b.f0",
        "{text}"
    );
    assert_eq!(r["findings"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(r["findings"][0]["outcome"], "WARN", "{text}");
    for half in ["a", "b"] {
        let w = verdicts(&r)
            .into_iter()
            .find(|v| v["gate"] == format!("cabling host-b.f0.{half}"))
            .unwrap_or_else(|| panic!("no cabling verdict for host-b.f0.{half}: {text}"));
        assert_eq!(w["outcome"], "WARN");
        assert!(
            w["detail"]
                .as_str()
                .unwrap_or("")
                .starts_with("host-b: this cable lands on f1, the plan says f0"),
            "{w}"
        );
    }
    assert!(
        text.contains("host-b: this cable lands on f1, the plan says f0"),
        "the cause on screen: {text}"
    );
    let nccl = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["kind"] == "nccl")
        .unwrap();
    assert_eq!(nccl["parsed"]["transport"], "NET/IB");
    let cmd = nccl["steps"][0]["command"].as_str().unwrap();
    assert!(
        cmd.contains("rocep1s0f0") && cmd.contains("rocep1s0f1"),
        "every rank's own device: {cmd}"
    );
    assert!(
        cmd.contains("NCCL_IB_GID_INDEX=3") && cmd.contains("NCCL_IB_GID_INDEX=5"),
        "per-rank GID: {cmd}"
    );

    // the same plan with host-a's names pinned on host-b too: refused, the asymmetry named
    let pinned = write_plan(
        &lab,
        dir.path(),
        "pinned.toml",
        &plan_text(
            "pin = { \"f0.a\" = { device = \"rocep1s0f0\", netdev = \"enp1s0f0np0\" }, \"f0.b\" = { device = \"roceP2p1s0f0\", netdev = \"enP2p1s0f0np0\" } }",
            "",
        ),
    );
    let (code, r, text) = run(&lab, &pinned, &dir.path().join("run2"));
    assert_eq!(code, 1, "{text}");
    let fails = failed_traps(&r);
    assert!(
        fails
            .iter()
            .any(|f| f.contains("[pinned-name-wrong]") && f.contains("names differ per box")),
        "{fails:#?}"
    );
    for h in ["host-a", "host-b"] {
        assert!(lab.processes(h).is_empty(), "{h}: {:?}", lab.processes(h));
    }
}

#[test]
fn mtu_crossed_cable_and_counters() {
    if !lab_enabled() {
        return;
    }
    // a symmetric pair; host-b's half-B cable is really in f1 while the plan says f0
    let spec = LabSpec::new("d2")
        .host("host-a")
        .host("host-b")
        .direct_pair("host-a", "host-b", 1)
        .cross("host-b", "enP2p1s0f0np0", "enP2p1s0f1np1");
    let lab = Lab::build(&spec).expect("lab");
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(&lab, dir.path(), "pair.toml", &plan_text("", ""));

    let (code, r, text) = run(&lab, &plan, &dir.path().join("crossed"));
    assert_eq!(code, 1, "{text}");
    let fails = failed_traps(&r);
    assert!(
        fails.iter().any(|f| f.contains("[crossed-cable]")
            && f.contains("host-b: this cable lands on f1, the plan says f0")),
        "{fails:#?}"
    );
    // half A still measured
    let measured = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["status"] == "measured")
        .count();
    assert!(measured >= 2, "{text}");

    // MTU 1500 on host-b's half A: the jumbo ping fails naming MTU while the small one passes
    lab.set_mtu("host-b", "enp1s0f0np0", 1500).unwrap();
    let only_a = write_plan(
        &lab,
        dir.path(),
        "a.toml",
        &plan_text("", "").replace(
            "subnets = { a = \"198.19.1.0/30\", b = \"198.19.1.4/30\" }",
            "halves = [\"a\"]\nsubnets = { a = \"198.19.1.0/30\" }",
        ),
    );
    let (code, r, text) = run(&lab, &only_a, &dir.path().join("mtu"));
    assert_eq!(code, 1, "{text}");
    let all = verdicts(&r);
    let small = all
        .iter()
        .find(|v| v["gate"].as_str().unwrap_or("").starts_with("ping "))
        .unwrap();
    assert_eq!(small["outcome"], "OK", "{small}");
    let jumbo = all
        .iter()
        .find(|v| v["gate"].as_str().unwrap_or("").starts_with("jumbo ping"))
        .unwrap();
    assert_eq!(jumbo["outcome"], "FAIL");
    assert_eq!(jumbo["trap"], "mtu-mismatch", "{jumbo}");
    lab.set_mtu("host-b", "enp1s0f0np0", 9000).unwrap();

    // a stand-in that does not advance the counters: the fabric did not carry it
    lab.fault("host-b", Fault::NoCounters);
    let nccl_only = write_plan(
        &lab,
        dir.path(),
        "n.toml",
        &plan_text("", "")
            .replace(
                "[tests.rdma-bw]\nduration-s = 1\n[tests.rdma-lat]\niterations = 200\n",
                "",
            )
            .replace(
                "subnets = { a = \"198.19.1.0/30\", b = \"198.19.1.4/30\" }",
                "halves = [\"a\"]\nsubnets = { a = \"198.19.1.0/30\" }",
            ),
    );
    let (code, r, text) = run(&lab, &nccl_only, &dir.path().join("counters"));
    assert_eq!(code, 1, "{text}");
    let fails = failed_traps(&r);
    assert!(
        fails
            .iter()
            .any(|f| f.contains("[fabric-not-used]") && f.contains("host-b")),
        "{fails:#?}"
    );
}
