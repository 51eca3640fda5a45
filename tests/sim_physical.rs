//! The physical layer on the simulated fabric, through the binary: cables proven by who
//! answers (MAC and LLDP), cables swapped between ports and boxes, a PCIe link trained narrow,
//! firmware that drifts or is not the pinned one, and the inventory in results.json.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{json, sim_run, stdout};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fabricplan-simphys-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `fabricplan run PLAN --sim [--sim-fault F]...`: its exit code and results.json.
fn run(name: &str, plan: &str, faults: &[&str]) -> (i32, Value) {
    let d = dir(name);
    let mut extra = vec!["--format", "json"];
    for f in faults {
        extra.extend(["--sim-fault", f]);
    }
    let (out, o) = sim_run(&d, "run", plan, &extra);
    assert!(
        out.join("results.json").exists(),
        "{plan} {faults:?}: {}",
        support::stderr(&o)
    );
    let r = json(&out.join("results.json"));
    let _ = std::fs::remove_dir_all(&d);
    (o.status.code().unwrap_or(-1), r)
}

fn preflight<'a>(r: &'a Value, prefix: &str) -> Vec<&'a Value> {
    r["preflight"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["gate"].as_str().unwrap().starts_with(prefix))
        .collect()
}

/// Every verdict that failed and follows from nothing: the run's root causes.
fn roots(r: &Value) -> Vec<&Value> {
    r["preflight"]
        .as_array()
        .unwrap()
        .iter()
        .chain(
            r["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|j| j["verdicts"].as_array().unwrap()),
        )
        .filter(|v| v["outcome"] == "FAIL" && v.get("follows").is_none())
        .collect()
}

fn plan(name: &str) -> String {
    format!("plans/{name}.toml")
}

#[test]
fn healthy_cables_are_proven_by_mac_and_lldp_and_the_inventory_is_kept() {
    let (code, r) = run("healthy", &plan("ring3"), &[]);
    assert_eq!(code, 0, "{}", r["summary"]);
    let cables = preflight(&r, "cable ");
    assert_eq!(cables.len(), 3, "one verdict per ring link");
    for c in &cables {
        assert_eq!(c["outcome"], "OK");
        let d = c["detail"].as_str().unwrap();
        assert!(d.starts_with("proven: "), "{d}");
        assert!(
            d.contains("(MAC 4c:bb:47:") && d.contains("LLDP agrees"),
            "{d}"
        );
        assert_eq!(c["clears"][0]["part"], "cable");
    }
    let inv = r["inventory"].as_array().unwrap();
    assert_eq!(inv.len(), 12, "3 nodes x 2 ports x 2 halves");
    assert_eq!(inv[0]["firmware"], "28.45.1200");
    assert_eq!(inv[0]["pcie_now"], "32 GT/s x4");
    assert_eq!(inv[0]["driver"], "mlx5_core");
    assert!(preflight(&r, "pcie ").is_empty() && preflight(&r, "firmware ").is_empty());
}

#[test]
fn two_cables_swapped_between_boxes_are_each_one_finding() {
    let (code, r) = run(
        "swap-boxes",
        &plan("ring3"),
        &["swapped:spark-1.f0=spark-3.f0"],
    );
    assert_eq!(code, 1);
    let roots = roots(&r);
    let gates: Vec<&str> = roots.iter().map(|v| v["gate"].as_str().unwrap()).collect();
    assert_eq!(
        gates,
        [
            "cable spark-1.f0 -- spark-2.f1",
            "cable spark-1.f1 -- spark-3.f0"
        ],
        "{roots:#?}"
    );
    let d = roots[0]["detail"].as_str().unwrap();
    // as planned and as found, with the recabling
    assert!(
        d.contains("spark-2.f1.a reaches spark-3.enp1s0f0np0 (spark-3.f0) (LLDP); the plan says spark-1.f0: move the cable's far end from spark-3.f0 to spark-1.f0"),
        "{d}"
    );
    assert_eq!(roots[0]["implicates"][0]["part"], "cable");
    assert_eq!(r["summary"]["fail"], 2);
    // each cable one finding, named by its planned ends
    let findings: Vec<&Value> = r["findings"].as_array().unwrap().iter().collect();
    let parts: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| {
            assert_eq!(f["part"]["part"], "cable", "{f}");
            (
                f["part"]["a"].as_str().unwrap(),
                f["part"]["b"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        parts,
        [("spark-1.f0", "spark-2.f1"), ("spark-1.f1", "spark-3.f0")],
        "{findings:#?}"
    );
    // what runs over the swapped cables is skipped for them
    let skipped = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["status"] == "skipped")
        .count();
    assert!(skipped > 0);
}

#[test]
fn two_cables_swapped_between_ports_of_one_box_and_between_switches() {
    let (code, r) = run(
        "swap-ports",
        &plan("two-spark"),
        &["swapped:spark-a.f0=spark-a.f1"],
    );
    assert_eq!(code, 1);
    let found = roots(&r);
    assert_eq!(found.len(), 1, "{found:#?}");
    // one finding, the cable; its proof says where it landed
    assert_eq!(
        r["summary"]["verdict"],
        "1 FAIL: cable spark-a.f0 -- spark-b.f0"
    );
    let cable = preflight(&r, "cable spark-a.f0 -- spark-b.f0");
    assert!(
        cable[0]["detail"]
            .as_str()
            .unwrap()
            .contains("reaches spark-a.enp1s0f1np1 (spark-a.f1) (LLDP); the plan says spark-a.f0"),
        "{}",
        cable[0]["detail"]
    );
    // switched: each node port's cable to its switch is one cable
    let (code, r) = run(
        "swap-switches",
        &plan("switched-6"),
        &["swapped:gb10-01.f0=gb10-05.f0"],
    );
    assert_eq!(code, 1);
    let gates: Vec<String> = roots(&r)
        .iter()
        .map(|v| v["gate"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        gates,
        ["cable gb10-01.f0 -- sw-a", "cable gb10-05.f0 -- sw-b"],
        "{gates:?}"
    );
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{findings:#?}");
    assert!(
        findings.iter().all(|f| f["part"]["part"] == "cable"),
        "{findings:#?}"
    );
}

#[test]
fn a_half_trained_narrow_is_a_warn_with_the_capped_expectation_and_no_fail() {
    let (code, r) = run("pcie", &plan("two-spark"), &["pcie-degraded:spark-b.f0.b"]);
    assert_eq!(code, 0, "{}", r["summary"]);
    let w = preflight(&r, "pcie ");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["outcome"], "WARN");
    assert_eq!(w[0]["gate"], "pcie spark-b.f0.b");
    assert_eq!(w[0]["implicates"][0]["part"], "half");
    let d = w[0]["detail"].as_str().unwrap();
    assert!(
        d.contains("trained at 32 GT/s x2 of 32 GT/s x4: it carries at most 56.1 Gb/s"),
        "{d}"
    );
    for j in r["jobs"].as_array().unwrap() {
        if j["kind"] == "rdma-bw" && j["label"].as_str().unwrap().contains("f0.b") {
            let e = j["expected_gbps"].as_f64().unwrap();
            assert!((e - 56.08).abs() < 0.05, "{e}");
            assert!(
                j["verdicts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|v| v["outcome"] == "OK")
            );
        }
    }
    assert!(
        r["inventory"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["pcie_degraded"] == true)
    );
}

#[test]
fn firmware_that_drifts_is_a_warn_and_a_pinned_version_fails_the_node() {
    let (code, r) = run("fw", &plan("two-spark"), &["firmware:spark-b=28.39.2048"]);
    assert_eq!(code, 0);
    let w = preflight(&r, "firmware ");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["outcome"], "WARN");
    assert_eq!(
        w[0]["detail"],
        "nodes of profile `gb10` run different NIC firmware: 28.45.1200 on spark-a; 28.39.2048 on spark-b"
    );
    // a site profile that pins the firmware
    let d = dir("pinned");
    let text = std::fs::read_to_string(support::plan_path("two-spark"))
        .unwrap()
        .replace(
            "[[node]]\nname = \"spark-a\"",
            &format!("{PINNED}\n[[node]]\nname = \"spark-a\"\nprofile = \"spark\""),
        )
        .replace(
            "[[node]]\nname = \"spark-b\"",
            "[[node]]\nname = \"spark-b\"\nprofile = \"spark\"",
        );
    let p = d.join("pinned.toml");
    std::fs::write(&p, text).unwrap();
    let (code, r) = run(
        "pinned-run",
        p.to_str().unwrap(),
        &["firmware:spark-b=28.39.2048"],
    );
    assert_eq!(code, 1, "{}", r["summary"]);
    let f = preflight(&r, "firmware ");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["gate"], "firmware spark-b");
    assert_eq!(f[0]["outcome"], "FAIL");
    assert_eq!(
        f[0]["implicates"][0],
        serde_json::json!({"part": "node", "node": "spark-b"})
    );
    assert!(
        f[0]["detail"]
            .as_str()
            .unwrap()
            .contains("sudo mlxfwmanager -u -d 0000:01:00.0")
    );
    let _ = std::fs::remove_dir_all(&d);
}

const PINNED: &str = r#"[[profile]]
name = "spark"
half-rate-gbps = 111.9
port-rate-gbps = 196.0
firmware = "28.45.1200"
[[profile.port]]
name = "f0"
half = [{ name = "a", device = "rocep1s0f0", netdev = "enp1s0f0np0" }, { name = "b", device = "roceP2p1s0f0", netdev = "enP2p1s0f0np0" }]
[[profile.port]]
name = "f1"
half = [{ name = "a", device = "rocep1s0f1", netdev = "enp1s0f1np1" }, { name = "b", device = "roceP2p1s0f1", netdev = "enP2p1s0f1np1" }]
"#;

#[test]
fn the_new_faults_are_validated_like_the_others() {
    for bad in [
        "firmware:spark-b",
        "firmware:spark-z=1.2",
        "firmware:spark-b=1;reboot",
        "swapped:spark-a.f0",
        "swapped:spark-a.f0=spark-a.f0",
        "swapped:spark-a.f0=spark-a.f9",
        "pcie-degraded:spark-a.f7",
    ] {
        let o = support::fabricplan(&[
            "run",
            &plan("two-spark"),
            "--sim",
            "--sim-fault",
            bad,
            "--out",
            "/nonexistent/never",
        ]);
        assert_ne!(o.status.code(), Some(0), "{bad}: {}", stdout(&o));
        let err = support::stderr(&o);
        assert!(err.contains(bad.split(':').next().unwrap()), "{bad}: {err}");
    }
    let _ = Path::new(".");
}

/// summary.md and report.html carry the inventory: one row per half, the narrow link marked
/// with what it carries, the odd firmware shown.
#[test]
fn summary_and_report_carry_the_inventory() {
    let d = dir("inventory");
    let (out, o) = sim_run(
        &d,
        "run",
        &plan("two-spark"),
        &[
            "--sim-fault",
            "pcie-degraded:spark-b.f0.b",
            "--sim-fault",
            "firmware:spark-a=28.39.2048",
        ],
    );
    assert!(out.join("results.json").exists(), "{}", support::stderr(&o));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains(
            "## Inventory\n\n| node | half | device | firmware | PCIe now/max | driver | kernel |"
        ),
        "{md}"
    );
    let rows: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("## Inventory"))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| spark-"))
        .collect();
    assert_eq!(
        rows.len(),
        4,
        "2 nodes x the cabled port's 2 halves: {rows:#?}"
    );
    assert!(
        rows.iter().any(|l| l.starts_with("| spark-b | spark-b.f0.b | roceP2p1s0f0 (enP2p1s0f0np0) | 28.45.1200 | **32 GT/s x2 of 32 GT/s x4** | mlx5_core |")),
        "{rows:#?}"
    );
    assert!(
        rows.iter()
            .any(|l| l.contains("| spark-a.f0.a |") && l.contains("| 28.39.2048 |"))
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let section = html
        .split("<section id=\"inventory\">")
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .expect("an inventory section");
    assert_eq!(section.matches("<tr><td>spark-").count(), 4, "{section}");
    assert!(
        section.contains("<span class=\"badge warn\">WARN</span> 32 GT&#x2f;s x2 of 32 GT&#x2f;s x4 (carries 56.10 Gb/s)"),
        "{section}"
    );
    assert!(section.contains("<b>28.39.2048</b>"), "{section}");
    let _ = std::fs::remove_dir_all(&d);
}
