//! The run directory is the evidence behind a verdict: a run never writes into another run's
//! directory, and a run whose evidence could not be written says so and exits 3, whatever its
//! verdict.

mod support;

use std::process::Command;

use support::*;

#[test]
fn a_run_never_writes_into_another_runs_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, o) = sim_run(tmp.path(), "run", "plans/two-spark.toml", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = std::fs::read(first.join("results.json")).unwrap();
    let jsonl = std::fs::read(first.join("results.jsonl")).unwrap();
    let (_, o) = sim_run(tmp.path(), "run", "plans/two-spark.toml", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already holds a run"), "{}", stderr(&o));
    // the first run's evidence is as it was: nothing replaced, nothing appended
    assert_eq!(std::fs::read(first.join("results.json")).unwrap(), before);
    assert_eq!(std::fs::read(first.join("results.jsonl")).unwrap(), jsonl);
}

/// Is this process root, with `unshare` to give a command a mount namespace of its own?
fn can_mount() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        == Some("0");
    root && Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// A full disk: the run directory on a 48 KiB tmpfs (in a mount namespace of the command's
/// own, so nothing is left mounted). The run still runs and judges; every file it could not
/// write is named, and it exits 3, not with its verdict's 0.
#[test]
fn a_run_whose_evidence_cannot_be_written_exits_3() {
    if !can_mount() {
        eprintln!("note: not root or no unshare: the full-disk run is not exercised");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=48k tmpfs '{m}' && exec '{bin}' run plans/two-spark.toml --sim --out '{m}/run'",
        m = mnt.display(),
        bin = env!("CARGO_BIN_EXE_fabricplan"),
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("evidence not written") && err.contains("results.json"),
        "{err}"
    );
    assert!(err.contains("is incomplete"), "{err}");
}
