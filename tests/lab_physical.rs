//! The physical layer on the lab: real lldpd on every host, firmware and PCIe links in the
//! hosts' sysfs, cables proven by who answers, firmware and PCIe drift, through the real
//! binary over SSH. Needs root, like every lab test.
//!
//! One lab serves every case: three hosts in a ring on their `a` halves, cabled as planned, and
//! on their `b` halves the same ring with two cables swapped (each netdev is its own veth, so
//! the `b` ring is cabled on its own). The `a` plan proves the ring and carries the PCIe and
//! firmware cases (sysfs is changed between runs); the `b` plan finds the swap.

mod support;

mod lab;

use std::path::Path;
use std::time::{Duration, Instant};

use fabricplan::plan::Plan;
use lab::run::{Run, Work, run_command};
use lab::{Lab, LabSpec, PcieLink, lab_enabled};
use serde_json::Value;

const NODES: [&str; 3] = ["spark-1", "spark-2", "spark-3"];

/// A lab-sized ring plan over the three hosts on `half`, with `profile_extra` in its profile.
/// A lab half carries 5 Gb/s (the lab shapes every port there); the bandwidth gate is relative
/// to the expectation, tight enough that a half measured at a PCIe cap it was not expected at
/// would not pass.
fn ring_plan(half: &str, pool: &str, profile_extra: &str) -> String {
    let mut s = format!(
        r#"format-version = 1
name = "ring-{half}"
[[profile]]
name = "lab-veth"
half-rate-gbps = 5.0
port-rate-gbps = 10.0
{profile_extra}
[[profile.port]]
name = "f0"
half = [{{ name = "a", device = "rocep1s0f0", netdev = "enp1s0f0np0" }}, {{ name = "b", device = "roceP2p1s0f0", netdev = "enP2p1s0f0np0" }}]
[[profile.port]]
name = "f1"
half = [{{ name = "a", device = "rocep1s0f1", netdev = "enp1s0f1np1" }}, {{ name = "b", device = "roceP2p1s0f1", netdev = "enP2p1s0f1np1" }}]
"#
    );
    for n in NODES {
        s.push_str(&format!(
            "[[node]]\nname = \"{n}\"\nprofile = \"lab-veth\"\n"
        ));
    }
    s.push_str(&format!(
        r#"[[cable]]
kind = "ring"
name = "ring"
nodes = ["spark-1", "spark-2", "spark-3"]
halves = ["{half}"]
subnet-pool = "{pool}"
pool-prefix = 24

[tests.rdma-bw]
schedule = "per-link"
duration-s = 1
timeout-s = 8

[tests.rdma-lat]
iterations = 100
timeout-s = 8

[gates.rdma-lat]
pass = "5000 us"

[gates.rdma-bw]
min-pct-of-expected = 60
warn-pct-of-expected = 45
"#
    ));
    s
}

/// The `b` halves cabled as `pairs` (node port to node port), each end with the address the
/// plan gives it.
fn cable_as(mut spec: LabSpec, plan: &Plan, pairs: &[(&str, &str)]) -> LabSpec {
    let end = |np: &str| {
        let (node, port) = np.split_once('.').expect("NODE.PORT");
        let (seg, m) = plan
            .segments
            .iter()
            .flat_map(|s| s.members.iter().map(move |m| (s, m)))
            .find(|(_, m)| plan.node(m.endpoint.node).name == node && m.endpoint.port == port)
            .unwrap_or_else(|| panic!("{np} is not in the plan"));
        let netdev = plan
            .profile_half(&m.endpoint)
            .expect("a profile half")
            .netdev
            .clone();
        let cidr = format!("{}/{}", m.address, seg.subnet.prefix_len());
        (node.to_string(), netdev, cidr)
    };
    for (x, y) in pairs {
        let (a, b) = (end(x), end(y));
        spec = spec.cable(&a.0, &a.1, &a.2, &b.0, &b.1, &b.2);
    }
    spec
}

struct Bench {
    lab: Lab,
    work: Work,
    n: usize,
}

impl Bench {
    /// `fabricplan run` of `text` (translated to the lab's addresses) with `extra` arguments.
    fn run(&mut self, text: &str, extra: &[&str]) -> Run {
        self.n += 1;
        let plan = self.work.path().join(format!("plan-{}.toml", self.n));
        std::fs::write(&plan, self.lab.translate(text)).expect("plan file");
        let out = self.work.path().join(format!("run-{}", self.n));
        let t0 = Instant::now();
        let o = run_command(&self.lab, &plan, &out)
            .args(["--format", "json"])
            .args(extra)
            .output()
            .expect("fabricplan runs");
        let r = Run::finish(o, &out, t0.elapsed());
        eprintln!("run {} took {:?}", self.n, r.wall);
        r
    }
}

fn preflight<'a>(r: &'a Run, prefix: &str) -> Vec<&'a Value> {
    r.preflight()
        .iter()
        .filter(|v| v["gate"].as_str().unwrap_or("").starts_with(prefix))
        .collect()
}

fn text(v: &Value) -> &str {
    v["detail"].as_str().unwrap_or("")
}

#[test]
fn cables_firmware_and_pcie_are_evidence_on_real_hosts() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let a_text = ring_plan("a", "198.19.64.0/18", "");
    let b_text = ring_plan("b", "198.19.128.0/18", "");
    let a = support::load_plan_text(Path::new("a.toml"), &a_text);
    let b = support::load_plan_text(Path::new("b.toml"), &b_text);
    // the b ring as planned is 1.f0-2.f1, 2.f0-3.f1, 3.f0-1.f1; cabled with the ends at 1.f0
    // and 3.f1 swapped
    let spec = cable_as(
        lab::twin::lab_spec("phy", &a),
        &b,
        &[
            ("spark-3.f1", "spark-2.f1"),
            ("spark-2.f0", "spark-1.f0"),
            ("spark-3.f0", "spark-1.f1"),
        ],
    )
    .lldp();
    let lab = Lab::build(&spec).expect("lab");
    lab.wait_lldp(Duration::from_secs(30))
        .expect("LLDP neighbours");
    eprintln!("lab built in {:?}", t0.elapsed());
    let mut bench = Bench {
        lab,
        work: Work::new("fabricplan-lab-physical", "ring"),
        n: 0,
    };

    proven_ring(&mut bench, &a_text);
    swapped_cables(&mut bench, &b_text);
    narrow_link_and_drifting_firmware(&mut bench, &a_text);
    pinned_firmware(&mut bench);

    let fp = bench.lab.footprint();
    drop(bench);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
}

/// The ring as cabled: each link proven by the MAC that answered and by LLDP; the inventory
/// read from the hosts' sysfs.
fn proven_ring(bench: &mut Bench, plan: &str) {
    let r = bench.run(plan, &["--only", "rdma-lat"]);
    assert_eq!(r.code, Some(0), "{}", r.story());
    let cables = preflight(&r, "cable ");
    assert_eq!(cables.len(), 3, "{}", r.story());
    for c in cables {
        assert_eq!(c["outcome"], "OK", "{c}");
        let d = text(c);
        assert!(d.starts_with("proven: "), "{d}");
        assert!(d.contains("(MAC ") && d.contains("LLDP agrees"), "{d}");
        assert_eq!(c["clears"][0]["part"], "cable", "{c}");
    }
    let c = preflight(&r, "cable spark-1.f0 -- spark-2.f1")[0];
    assert!(
        text(c).contains("spark-2.f1.a answered by spark-1.enp1s0f0np0 (spark-1.f0) (MAC "),
        "{c}"
    );
    let inv = r.results["inventory"].as_array().expect("inventory");
    assert_eq!(inv.len(), 6, "3 nodes x 2 ports x half a");
    for row in inv {
        assert_eq!(row["firmware"], "28.45.1200", "{row}");
        assert_eq!(row["pcie_now"], "32 GT/s x4", "{row}");
        assert_eq!(row["driver"], "mlx5_core", "{row}");
        assert!(
            row["kernel"].as_str().is_some_and(|k| !k.is_empty()),
            "{row}"
        );
    }
    // the hosts' lldpd answers on its standard socket, with the lab's transmit interval
    let config = bench.lab.ssh("spark-2", "lldpcli show configuration");
    assert!(
        String::from_utf8_lossy(&config.stdout).contains("Transmit delay: 1"),
        "{config:?}"
    );
}

/// Two cables of the b ring swapped in spark-2's two ports: each cable's verdict a FAIL naming
/// its ends as planned and as found, with the recabling; together one finding, the swap at
/// spark-2 (each of its ports reaches the other cable's far end); the third link proven.
fn swapped_cables(bench: &mut Bench, plan: &str) {
    let r = bench.run(plan, &["--only", "rdma-lat"]);
    assert_eq!(r.code, Some(1), "{}", r.story());
    assert_eq!(
        r.verdict(),
        "1 FAIL: spark-2.f0 and spark-2.f1",
        "{}",
        r.story()
    );
    let finding = &r.results["findings"][0];
    assert!(
        finding["label"]
            .as_str()
            .is_some_and(|l| l.contains("cable spark-1.f0 -- spark-2.f1")
                && l.contains("cable spark-2.f0 -- spark-3.f1")),
        "{finding}"
    );
    assert_eq!(finding["host"], "spark-2", "{finding}");
    let roots: Vec<&Value> = r
        .preflight()
        .iter()
        .filter(|v| {
            v["outcome"] == "FAIL" && v["gate"].as_str().is_some_and(|g| g.starts_with("cable "))
        })
        .collect();
    let gates: Vec<&str> = roots.iter().map(|v| v["gate"].as_str().unwrap()).collect();
    assert_eq!(
        gates,
        [
            "cable spark-1.f0 -- spark-2.f1",
            "cable spark-2.f0 -- spark-3.f1"
        ],
        "{}",
        r.story()
    );
    // each end as found (by the MAC that answered or by LLDP), as planned, and the recabling
    for (v, said) in [
        (
            roots[0],
            "spark-1.f0.b reaches spark-2.enP2p1s0f0np0 (spark-2.f0) (",
        ),
        (
            roots[0],
            "the plan says spark-2.f1: move the cable's far end from spark-2.f0 to spark-2.f1",
        ),
        (
            roots[0],
            "spark-2.f1.b reaches spark-3.enP2p1s0f1np1 (spark-3.f1) (",
        ),
        (
            roots[0],
            "the plan says spark-1.f0: move the cable's far end from spark-3.f1 to spark-1.f0",
        ),
        (
            roots[1],
            "spark-2.f0.b reaches spark-1.enP2p1s0f0np0 (spark-1.f0) (",
        ),
        (
            roots[1],
            "spark-3.f1.b reaches spark-2.enP2p1s0f1np1 (spark-2.f1) (",
        ),
    ] {
        assert!(text(v).contains(said), "{said}\n{}", text(v));
    }
    for (v, (x, y)) in roots
        .iter()
        .zip([("spark-1.f0", "spark-2.f1"), ("spark-2.f0", "spark-3.f1")])
    {
        assert_eq!(
            v["implicates"][0],
            serde_json::json!({"part": "cable", "a": x, "b": y}),
            "{v}"
        );
    }
    let third = preflight(&r, "cable spark-1.f1 -- spark-3.f0")[0];
    assert_eq!(third["outcome"], "OK", "{third}");
    assert!(text(third).starts_with("proven: "), "{third}");
}

/// spark-2's f0 a half trained at x2 of x4 (2.5 GT/s: 3.6 Gb/s, below the lab half's 5) and
/// throttled to what that carries; spark-3 on older firmware. The link is a WARN about the half,
/// its flow expected at the cap and passing there; the firmware a WARN naming who runs what.
fn narrow_link_and_drifting_firmware(bench: &mut Bench, plan: &str) {
    let lab = &bench.lab;
    lab.set_pcie(
        "spark-2",
        "rocep1s0f0",
        &PcieLink::trained("2.5 GT/s PCIe", 2, 4),
    )
    .expect("narrow link");
    for (host, netdev) in [("spark-2", "enp1s0f0np0"), ("spark-3", "enp1s0f1np1")] {
        lab.throttle(host, netdev, "2800mbit").expect("throttle");
    }
    lab.set_firmware("spark-3", "28.39.2048").expect("firmware");
    let r = bench.run(plan, &["--only", "rdma-bw"]);
    assert_eq!(r.code, Some(0), "{}", r.story());
    let w = preflight(&r, "pcie ");
    assert_eq!(w.len(), 1, "{}", r.story());
    assert_eq!(w[0]["gate"], "pcie spark-2.f0.a");
    assert_eq!(w[0]["outcome"], "WARN");
    assert_eq!(
        w[0]["implicates"][0],
        serde_json::json!({"part": "half", "node": "spark-2", "port": "f0", "half": "a"})
    );
    assert!(
        text(w[0]).contains("trained at 2.5 GT/s x2 of 2.5 GT/s x4: it carries at most 3.6 Gb/s, below the half's 5.0"),
        "{}",
        text(w[0])
    );
    let capped: Vec<&Value> = r
        .jobs()
        .iter()
        .filter(|j| {
            j["kind"] == "rdma-bw" && j["label"].as_str().unwrap_or("").contains("spark-2.f0")
        })
        .collect();
    assert_eq!(capped.len(), 2, "both directions: {}", r.story());
    for j in capped {
        let e = j["expected_gbps"].as_f64().expect("expected");
        assert!((e - 3.56).abs() < 0.01, "{e}");
        for v in j["verdicts"].as_array().unwrap() {
            assert_eq!(v["outcome"], "OK", "{v}");
        }
        let m = r.value(j["job"].as_str().unwrap());
        // below what the uncapped expectation would pass: the cap is what makes it OK
        assert!(m < 0.6 * 5.0, "measured at the cap: {m}");
    }
    let f = preflight(&r, "firmware ");
    assert_eq!(f.len(), 1, "{}", r.story());
    assert_eq!(f[0]["outcome"], "WARN");
    assert_eq!(
        text(f[0]),
        "nodes of profile `lab-veth` run different NIC firmware: 28.45.1200 on spark-1, spark-2; 28.39.2048 on spark-3"
    );
    assert_eq!(
        f[0]["implicates"][0],
        serde_json::json!({"part": "node", "node": "spark-3"})
    );
    let inv = r.results["inventory"].as_array().unwrap();
    let narrow: Vec<&Value> = inv.iter().filter(|i| i["pcie_degraded"] == true).collect();
    assert_eq!(narrow.len(), 1);
    assert_eq!(narrow[0]["half"], "spark-2.f0.a");
    assert_eq!(narrow[0]["pcie_now"], "2.5 GT/s x2");
}

/// The same ring with the profile pinning 28.45.1200: spark-3 is a FAIL about the node whose
/// detail is the update on that host.
fn pinned_firmware(bench: &mut Bench) {
    let plan = ring_plan("a", "198.19.64.0/18", "firmware = \"28.45.1200\"");
    let r = bench.run(&plan, &["--only", "rdma-lat"]);
    assert_eq!(r.code, Some(1), "{}", r.story());
    let f = preflight(&r, "firmware ");
    assert_eq!(f.len(), 1, "{}", r.story());
    assert_eq!(f[0]["gate"], "firmware spark-3");
    assert_eq!(f[0]["outcome"], "FAIL");
    assert!(
        text(f[0]).starts_with("spark-3 runs 28.39.2048; profile `lab-veth` pins 28.45.1200. On spark-3: `sudo mlxfwmanager -u -d 0000:01:00.0 -i IMAGE`"),
        "{}",
        text(f[0])
    );
    assert_eq!(
        f[0]["implicates"][0],
        serde_json::json!({"part": "node", "node": "spark-3"})
    );
}
