//! `fabricplan check` as a command on a machine that is no plan node's: usage and plan errors
//! exit 2 (3 UNKNOWN with `--nagios`); checked as a node by `--node`, the halves it does not
//! have are findings, exit 1, the verdict last; its state file is written 0600 and a state file
//! that is a link is refused, never written through. Nothing is pinged (no planned address is
//! configured here).

mod support;

use std::process::Command;

fn check(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .arg("check")
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("SLURMD_NODENAME")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("fabricplan runs")
}

#[test]
fn usage_and_plan_errors_exit_2_or_unknown() {
    let o = check(&["plans/two-spark.toml", "--node", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        support::stderr(&o)
            .contains("--node nope is not a node of the plan (the plan's nodes: spark-a, spark-b)")
    );
    let o = check(&[
        "plans/two-spark.toml",
        "--node",
        "spark-a",
        "--deadline",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = check(&["no-such-plan.toml", "--nagios"]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert!(
        support::stdout(&o).starts_with("FABRICPLAN UNKNOWN - "),
        "{o:?}"
    );
}

#[test]
fn a_node_without_its_halves_fails_and_keeps_its_state_privately() {
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state.json");
    let s = state.to_string_lossy().into_owned();
    let o = check(&["plans/two-spark.toml", "--node", "spark-a", "--state", &s]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let out = support::stdout(&o);
    let last = out.lines().last().unwrap_or("");
    assert!(last.starts_with("check spark-a: FAIL: "), "{out}");
    assert!(
        out.lines().count() >= 2,
        "a line per finding before the verdict: {out}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(
        (json["plan"].as_str(), json["node"].as_str()),
        (Some("two-spark"), Some("spark-a"))
    );
    // the second check reads it: JSON says since when
    let o = check(&[
        "plans/two-spark.toml",
        "--node",
        "spark-a",
        "--state",
        &s,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["since_unix_ms"], json["unix_ms"], "{v}");
    assert_eq!(v["outcome"], "FAIL");
    // a link in its place is refused, and what it points at is left alone
    let theirs = d.path().join("theirs");
    std::fs::write(&theirs, "theirs").unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    let l = link.to_string_lossy().into_owned();
    let o = check(&[
        "plans/two-spark.toml",
        "--node",
        "spark-a",
        "--state",
        &l,
        "--metrics",
        &d.path().join("m.prom").to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = support::stderr(&o);
    assert!(
        err.contains("symbolic link") && err.contains("cannot be written"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs");
    let prom = std::fs::read_to_string(d.path().join("m.prom")).unwrap();
    assert!(
        prom.contains("fabricplan_check_status{node=\"spark-a\",plan=\"two-spark\"} 2"),
        "{prom}"
    );
}

/// The systemd service and timer of docs/src/check.md, as written there (only the binary's path
/// set to this build's, which `verify` wants to exist): `systemd-analyze verify` has nothing to
/// say about them, where it does say something about a unit with a misspelt key. Skipped where
/// systemd-analyze is not installed.
#[test]
fn the_docs_systemd_units_verify() {
    let found = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output();
    if !found.is_ok_and(|o| o.status.success()) {
        eprintln!("note: systemd-analyze not installed: skipped");
        return;
    }
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/check.md"),
    )
    .unwrap();
    let block = |start: &str| {
        let at = doc
            .find(start)
            .unwrap_or_else(|| panic!("`{start}` in the docs"));
        doc[at..at + doc[at..].find("```").unwrap()].to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    let service = tmp.path().join("fabricplan-check.service");
    let timer = tmp.path().join("fabricplan-check.timer");
    let unit = block("[Unit]\nDescription=fabricplan: this node");
    assert!(
        unit.contains("ExecStart=/usr/local/bin/fabricplan check "),
        "{unit}"
    );
    std::fs::write(
        &service,
        unit.replace(
            "/usr/local/bin/fabricplan",
            env!("CARGO_BIN_EXE_fabricplan"),
        ),
    )
    .unwrap();
    std::fs::write(&timer, block("[Unit]\nDescription=fabricplan check every")).unwrap();
    let verify = |units: &[&std::path::Path]| {
        let o = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .args(units)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.success(), said)
    };
    let (ok, said) = verify(&[&service, &timer]);
    assert!(
        ok && !said.contains("fabricplan-check"),
        "systemd-analyze verify:\n{said}"
    );
    // the same tool on a misspelt key speaks: the check above can fail
    let bad = tmp.path().join("fabricplan-check-bad.service");
    std::fs::write(&bad, "[Service]\nTyp=oneshot\nExecStart=/bin/true\n").unwrap();
    let (_, said) = verify(&[&bad]);
    assert!(said.contains("fabricplan-check-bad"), "{said}");
}
