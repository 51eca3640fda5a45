//! What every shipped plan and example says on the simulated fabric, kept: results.json (times
//! and ids taken out) and the terminal's text (400 columns: a count does not move a wrap), healthy and with faults of every kind the
//! simulator knows, plus the command lines each launcher writes for a dry run. A change to the
//! inside of the house (a module moved, a launcher or a tool made a folder) must leave every
//! one of them as it was; a change that means to alter what a person or a machine reads updates
//! them on purpose (`INSTA_UPDATE=always` or `cargo insta review`), and the diff is reviewed.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fabricplan() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabricplan"));
    c.current_dir(manifest())
        .env("COLUMNS", "400")
        .env("NO_COLOR", "1")
        .env_remove("SLURM_CONF")
        .env_remove("FABRICPLAN_LAUNCHER");
    c
}

/// results.json without what differs between two runs of the same plan: clock times, how long
/// things took, the run's id.
fn steady(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| {
                !(k.ends_with("_ms")
                    || k.ends_with("_s")
                    || k == "tool_seconds"
                    || k == "run_id"
                    || k == "phases")
            });
            map.values_mut().for_each(steady);
        }
        Value::Array(items) => items.iter_mut().for_each(steady),
        _ => {}
    }
}

/// Run `plan` on the simulated fabric with `faults`; its results.json made steady and the
/// terminal's text, the output directory written as `OUT`.
fn sim(plan: &str, faults: &[&str]) -> (String, String) {
    let out = tempfile::tempdir().unwrap();
    let mut c = fabricplan();
    c.args(["run", plan, "--sim", "--out"]).arg(out.path());
    for f in faults {
        c.args(["--sim-fault", f]);
    }
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).replace(&*out.path().to_string_lossy(), "OUT");
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{plan} {faults:?}: {}\n{text}",
        String::from_utf8_lossy(&o.stderr)
    );
    let raw = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    let mut json: Value = serde_json::from_str(&raw).unwrap();
    steady(&mut json);
    (
        unclock(&serde_json::to_string_pretty(&json).unwrap()),
        unclock(&text),
    )
}

/// The simulated error counters grow with the time between two reads: `237 symbol errors in
/// 0.0 s` says a count and an interval that differ run to run, and the bit-error rate drawn from
/// them moves in its second digit.
fn unclock(text: &str) -> String {
    let blanked = blank_after(text, "effective BER ", "B");
    let text = blanked.as_str();
    const MID: &str = " errors in ";
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(MID) {
        let before = &rest[..i];
        let kind_start = before.rfind(' ').map_or(0, |j| j + 1);
        let count_start = before[..kind_start.saturating_sub(1)]
            .rfind(|c: char| !c.is_ascii_digit() && c != ',')
            .map_or(0, |j| j + 1);
        out.push_str(&before[..count_start]);
        out.push('N');
        out.push_str(&before[kind_start.saturating_sub(1)..]);
        out.push_str(MID);
        let after = &rest[i + MID.len()..];
        let secs = after
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(after.len());
        out.push('T');
        rest = &after[secs..];
    }
    out.push_str(rest);
    out
}

/// `text` with the number after each `mark` written as `with`.
fn blank_after(text: &str, mark: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(mark) {
        out.push_str(&rest[..i + mark.len()]);
        let after = &rest[i + mark.len()..];
        let end = after.find([' ', '"', ',', ')']).unwrap_or(after.len());
        out.push_str(with);
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn name_of(plan: &str) -> String {
    Path::new(plan)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn keep(plan: &str, case: &str, faults: &[&str]) {
    let (json, text) = sim(plan, faults);
    let name = format!("{}@{case}", name_of(plan));
    insta::assert_snapshot!(format!("{name}.json"), json);
    insta::assert_snapshot!(format!("{name}.txt"), text);
}

#[test]
fn unclock_keeps_the_kind_and_drops_count_and_interval() {
    assert_eq!(
        unclock("on a: 1,237 symbol errors in 0.04 s (`x`), effective BER 2.5e-8 at"),
        "on a: N symbol errors in T s (`x`), effective BER B at"
    );
    assert_eq!(unclock("no counters here"), "no counters here");
}

/// Every plan and example, healthy.
#[test]
fn every_plan_healthy() {
    let plans = support::shipped_plans();
    assert!(plans.len() >= 8, "{plans:?}");
    for p in plans {
        keep(&p.to_string_lossy(), "healthy", &[]);
    }
}

/// Each fault kind on each shipped plan shape it applies to.
#[test]
fn every_fault_kind_on_every_shape() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "plans/two-spark.toml",
            "throttle",
            &["throttle:spark-a.f0.a"],
        ),
        ("plans/two-spark.toml", "mtu1500", &["mtu1500:spark-b.f0.b"]),
        (
            "plans/two-spark.toml",
            "pcie",
            &["pcie-degraded:spark-a.f0.a"],
        ),
        (
            "plans/two-spark.toml",
            "firmware",
            &["firmware:spark-b=28.39.1002"],
        ),
        (
            "plans/two-spark.toml",
            "swapped",
            &["swapped:spark-a.f0=spark-a.f1"],
        ),
        ("plans/two-spark.toml", "dead-host", &["dead-host:spark-b"]),
        (
            "plans/two-spark.toml",
            "server-dies",
            &["server-dies:spark-a"],
        ),
        (
            "plans/two-spark.toml",
            "nccl-socket",
            &["nccl-socket:spark-b"],
        ),
        ("plans/two-spark.toml", "flap", &["flap:spark-a.f0.b"]),
        (
            "plans/two-spark.toml",
            "phy-errors",
            &["phy-errors:spark-b.f0.a=5000"],
        ),
        ("plans/ring3.toml", "throttle", &["throttle:spark-2.f0.a"]),
        ("plans/ring3.toml", "crossed", &["crossed:spark-2.f0"]),
        ("plans/ring3.toml", "mtu1500", &["mtu1500:spark-3.f1"]),
        ("plans/ring3.toml", "dead-host", &["dead-host:spark-3"]),
        ("plans/ring3.toml", "server-dies", &["server-dies:spark-1"]),
        ("plans/ring3.toml", "flap", &["flap:spark-1.f1.a"]),
        (
            "plans/ring3.toml",
            "two",
            &["throttle:spark-1.f0.b", "firmware:spark-3=28.39.1002"],
        ),
        (
            "plans/switched-6.toml",
            "throttle",
            &["throttle:gb10-04.f0.a"],
        ),
        ("plans/switched-6.toml", "rstp", &["rstp-block:sw-a-sw-b"]),
        (
            "plans/switched-6.toml",
            "nccl-socket",
            &["nccl-socket:gb10-02"],
        ),
        ("plans/switched-6.toml", "dead-host", &["dead-host:gb10-06"]),
        (
            "plans/switched-6.toml",
            "pcie",
            &["pcie-degraded:gb10-01.f0"],
        ),
        (
            "plans/switched-6.toml",
            "phy-errors",
            &["phy-errors:gb10-05.f0.b"],
        ),
    ];
    for (plan, case, faults) in cases {
        keep(plan, case, faults);
    }
}

/// The command lines each launcher writes for every shipped plan (the dry run, nothing run).
#[test]
fn every_launcher_writes_the_same_lines() {
    for plan in [
        "plans/two-spark.toml",
        "plans/ring3.toml",
        "plans/switched-6.toml",
    ] {
        for launcher in ["ssh", "slurm", "local"] {
            let o = fabricplan()
                .args(["plan", plan, "--launcher", launcher])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{plan} {launcher}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            insta::assert_snapshot!(format!("{}@plan-{launcher}.txt", name_of(plan)), text);
        }
    }
}
