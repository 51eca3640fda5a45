//! The local launcher (`[launcher] kind = "local"`, `--launcher local`, `--local`): every node's
//! commands run on this machine, in a session of its own, through the same session loop as over
//! SSH. On a machine without RDMA devices (this one, in CI) a run of a one-box plan finds that,
//! about the node itself and never an sshd.

mod support;

use std::path::Path;

use support::{fabricplan, json, stderr, stdout};

const ONE_BOX: &str = r#"format-version = 1
name = "one-box"

[launcher]
kind = "local"

[[node]]
name = "box"

[[node]]
name = "box-twin"

[[cable]]
kind = "direct"
name = "loop"
ends = ["box.f0", "box-twin.f0"]
subnets = { a = "198.18.250.0/30", b = "198.18.250.4/30" }

[tests.rdma-bw]
"#;

fn write_plan(dir: &Path, text: &str) -> String {
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("fabricplan-local-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_local_plan_validates_and_its_dry_run_says_this_machine() {
    let d = scratch("plan");
    let plan = write_plan(&d, ONE_BOX);
    let v = fabricplan(&["validate", &plan]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    let p = fabricplan(&["plan", &plan]);
    assert!(p.status.success(), "{}", stderr(&p));
    assert!(
        stdout(&p).contains("in its session on this machine"),
        "{}",
        stdout(&p)
    );
    // the same words for an SSH plan run with --launcher local
    let p = fabricplan(&["plan", "plans/two-spark.toml", "--launcher", "local"]);
    let out = stdout(&p);
    assert!(
        out.contains("mpirun launches `hostname` on every rank, on this machine"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn slurm_settings_under_the_local_launcher_are_an_error_at_their_line() {
    let d = scratch("bad");
    let plan = write_plan(
        &d,
        &ONE_BOX.replace("kind = \"local\"", "kind = \"local\"\npartition = \"gpu\""),
    );
    let v = fabricplan(&["validate", &plan]);
    assert_eq!(v.status.code(), Some(2), "{}", stdout(&v));
    assert!(stderr(&v).contains("partition"), "{}", stderr(&v));
    let typo = write_plan(&d, &ONE_BOX.replace("kind = \"local\"", "kind = \"locl\""));
    let v = fabricplan(&["validate", &typo]);
    assert_eq!(v.status.code(), Some(2));
    assert!(
        stderr(&v).contains("did you mean `local`?"),
        "{}",
        stderr(&v)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Runs the one-box plan for real on this machine, with the launcher chosen by `how`.
fn local_run(name: &str, extra: &[&str], text: &str) -> serde_json::Value {
    let d = scratch(name);
    let plan = write_plan(&d, text);
    let out_dir = d.join("run");
    let mut args = vec!["run", plan.as_str(), "--out", out_dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = fabricplan(&args);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let r = json(&out_dir.join("results.json"));
    let _ = std::fs::remove_dir_all(&d);
    r
}

#[test]
fn a_local_run_reaches_this_machine_and_blames_no_sshd() {
    if Path::new("/sys/class/infiniband").exists() {
        // a machine with RDMA devices would measure them: this test is about one without
        return;
    }
    for (name, extra, text) in [
        ("kind", vec![], ONE_BOX.to_string()),
        (
            "flag",
            vec!["--local"],
            ONE_BOX.replace("[launcher]\nkind = \"local\"\n", ""),
        ),
        (
            "option",
            vec!["--launcher", "local"],
            ONE_BOX.replace("[launcher]\nkind = \"local\"\n", ""),
        ),
    ] {
        let r = local_run(name, &extra, &text);
        assert_eq!(r["transport"], "local", "{name}");
        assert_eq!(r["simulated"], false, "{name}");
        let findings = r["findings"].as_array().unwrap();
        assert!(
            !findings.is_empty(),
            "{name}: no finding on a machine without RDMA devices"
        );
        let text = serde_json::to_string(findings).unwrap();
        assert!(
            !text.contains("sshd"),
            "{name}: a local run blamed an sshd: {text}"
        );
        // discovery ran in each node's session here: the probe answered (no device found)
        for f in findings {
            let part = f["name"].as_str().unwrap_or_default();
            assert!(
                part.starts_with("box"),
                "{name}: finding about {part}: {text}"
            );
        }
    }
}
