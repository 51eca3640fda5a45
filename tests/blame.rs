//! Blame only on evidence: a pass at a share too small to show a throttle clears neither end
//! of its flow.

mod support;

/// A pass at a share below the throttle band clears neither end: switched-6 with a 40 Gb/s ISL
/// and only its two flows sharing it (16.4 Gb/s each expected, a throttled half's 12.7 would
/// pass), no NCCL test: green, with those four halves said below the band, not measured.
#[test]
fn halves_passed_only_below_the_band_are_said() {
    let text = std::fs::read_to_string("plans/switched-6.toml").unwrap();
    let text = text.replace("capacity-gbps = 200", "capacity-gbps = 40");
    let rounds = text.find("[[tests.rdma-bw.round]]").unwrap();
    let text = format!(
        "{}[[tests.rdma-bw.round]]\nname = \"R2b\"\nflows = [\"gb10-05 -> gb10-01\", \"gb10-06 -> gb10-02\"]\n",
        &text[..rounds]
    );
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("thin-isl.toml");
    std::fs::write(&plan, text).unwrap();
    let (out, o) = support::sim_run(dir.path(), "run", plan.to_str().unwrap(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let r = support::json(&out.join("results.json"));
    let c = &r["coverage"];
    assert_eq!(
        c["below_band"],
        serde_json::json!([
            "gb10-01.f0.a",
            "gb10-02.f0.a",
            "gb10-05.f0.a",
            "gb10-06.f0.a"
        ]),
        "{c}"
    );
    assert_eq!(c["halves"]["measured"], 0, "{c}");
    assert_eq!(c["isls"]["measured"], 1, "{c}");
    let text = support::stdout(&o);
    assert!(
        text.contains(
            "below the throttle band: gb10-01.f0.a, gb10-02.f0.a, gb10-05.f0.a, gb10-06.f0.a (every"
        ),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("ALL GREEN: 0 of 12 halves, 4 of 6 cables, 1 of 1 ISL measured (simulated)"),
        "{text}"
    );
}
