//! `run --keep-evidence all|failed`: which job outputs a run directory keeps as files. `all`
//! keeps every job's; `failed` keeps the full outputs of WARN, FAIL and unmeasured jobs and a
//! digest (size, sha256) of each output of an OK job; without the option, runs of up to 256
//! jobs keep `all` and bigger ones `failed`. Every run here is simulated (`--sim`).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use sha2::Digest;
use support::*;

/// Every file under `dir/jobs`, relative to `dir`, with its sha256.
fn job_files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let jobs = dir.join("jobs");
    for job in std::fs::read_dir(&jobs).unwrap() {
        let job = job.unwrap();
        for f in std::fs::read_dir(job.path()).unwrap() {
            let f = f.unwrap();
            let rel = format!(
                "jobs/{}/{}",
                job.file_name().to_string_lossy(),
                f.file_name().to_string_lossy()
            );
            let sha = data_encoding::HEXLOWER
                .encode(&sha2::Sha256::digest(std::fs::read(f.path()).unwrap()));
            out.insert(rel, sha);
        }
    }
    out
}

fn jobs(r: &serde_json::Value) -> &Vec<serde_json::Value> {
    r["jobs"].as_array().unwrap()
}

/// Has the job a WARN or FAIL, or could it not measure?
fn troubled(j: &serde_json::Value) -> bool {
    j["status"] != "measured"
        || j["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["outcome"] != "OK")
}

/// The files a job's steps name (stdout and stderr), relative to the run directory.
fn step_files(j: &serde_json::Value) -> Vec<String> {
    j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| [&s["stdout_file"], &s["stderr_file"]])
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect()
}

#[test]
fn all_keeps_every_jobs_output() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, o) = sim_run(
        tmp.path(),
        "all",
        "plans/two-spark.toml",
        &["--keep-evidence", "all", "--all"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&dir.join("results.json"));
    assert_eq!(r["keep_evidence"], "all");
    assert_eq!(r["keep_evidence_chosen"], "option");
    let files = job_files(&dir);
    assert!(!jobs(&r).is_empty());
    for j in jobs(&r) {
        assert!(j.get("digests").is_none(), "{j}");
        let named = step_files(j);
        // every step that ran names its stdout and stderr, and both are there
        let ran = j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["exit_status"].is_i64())
            .count();
        assert!(ran > 0, "{j}");
        assert_eq!(named.len(), 2 * ran, "{j}");
        for f in named {
            assert!(files.contains_key(&f), "{f} is not in the run directory");
        }
    }
    let out = stdout(&o);
    assert!(
        out.contains("--keep-evidence all (as asked): every job's outputs under jobs/"),
        "{out}"
    );
}

#[test]
fn failed_keeps_a_digest_of_an_ok_jobs_outputs_equal_to_the_files_all_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let (all, o) = sim_run(
        tmp.path(),
        "all",
        "plans/two-spark.toml",
        &["--keep-evidence", "all", "--all"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (failed, o) = sim_run(
        tmp.path(),
        "failed",
        "plans/two-spark.toml",
        &["--keep-evidence", "failed", "--all"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&failed.join("results.json"));
    assert_eq!(r["keep_evidence"], "failed");
    assert_eq!(r["keep_evidence_chosen"], "option");
    // a green run: nothing under jobs/, a digest of each non-empty output instead
    assert!(job_files(&failed).is_empty());
    let kept = job_files(&all);
    let mut digests = 0;
    for j in jobs(&r) {
        assert!(!troubled(j), "{j}");
        assert!(step_files(j).is_empty(), "{j}");
        for s in j["steps"].as_array().unwrap() {
            assert!(
                s.get("script").is_none(),
                "a digested step keeps no script: {s}"
            );
            assert_ne!(s["command"], "", "{s}");
        }
        let ds = j["digests"].as_array().unwrap_or_else(|| panic!("{j}"));
        assert!(!ds.is_empty(), "{j}");
        for d in ds {
            let file = format!(
                "jobs/{}/{}",
                j["job"].as_str().unwrap(),
                d["name"].as_str().unwrap()
            );
            // the simulated fabric answers the same both times: the digest is of the same text
            assert_eq!(
                kept.get(&file),
                Some(&d["sha256"].as_str().unwrap().to_string()),
                "{file}"
            );
            let bytes = std::fs::metadata(all.join(&file)).unwrap().len();
            assert_eq!(d["bytes"].as_u64(), Some(bytes), "{file}");
            digests += 1;
        }
        // the figures read from the output are kept
        assert!(!j["verdicts"].as_array().unwrap().is_empty(), "{j}");
        assert!(j["parsed"].is_object(), "{j}");
    }
    assert!(digests >= jobs(&r).len());
    let out = stdout(&o);
    assert!(
        out.contains("--keep-evidence failed (as asked):\n  outputs of WARN, FAIL and unmeasured jobs under jobs/, OK jobs' as sha256 digests in results.json"),
        "{out}"
    );
}

#[test]
fn a_failing_sim_job_keeps_its_evidence_under_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, o) = sim_run(
        tmp.path(),
        "throttled",
        "plans/two-spark.toml",
        &[
            "--sim-fault",
            "throttle:spark-a.f0.a",
            "--keep-evidence",
            "failed",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&dir.join("results.json"));
    let files = job_files(&dir);
    let (mut bad, mut good) = (0, 0);
    for j in jobs(&r) {
        let id = j["job"].as_str().unwrap();
        let prefix = format!("jobs/{id}/");
        let here: Vec<&String> = files.keys().filter(|f| f.starts_with(&prefix)).collect();
        if troubled(j) {
            bad += 1;
            assert!(j.get("digests").is_none(), "{j}");
            let named = step_files(j);
            assert!(!named.is_empty(), "{j}");
            for f in &named {
                assert!(files.contains_key(f), "{f} missing");
            }
            // the client's (or mpirun's) output is there in full, as the tool printed it
            let main = j["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["role"] != "server")
                .unwrap();
            let text =
                std::fs::read_to_string(dir.join(main["stdout_file"].as_str().unwrap())).unwrap();
            assert!(!text.trim().is_empty(), "{j}");
            assert!(!main["script"].as_str().unwrap().is_empty(), "{j}");
        } else {
            good += 1;
            assert!(here.is_empty(), "{id}: {here:?}");
            assert!(!j["digests"].as_array().unwrap().is_empty(), "{j}");
        }
    }
    assert!(bad >= 2 && good >= 2, "{bad} troubled, {good} OK");
    // a FAIL of the throttled half is among those kept
    let fail = jobs(&r)
        .iter()
        .find(|j| {
            j["verdicts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["outcome"] == "FAIL")
        })
        .unwrap();
    assert!(!step_files(fail).is_empty());
}

/// `scripts/gen-switched.sh N`: N nodes, rdma-bw all-pairs on half a (both directions) and one
/// NCCL job: 16 nodes are 241 jobs, 17 nodes 273.
fn generated(dir: &Path, nodes: usize) -> String {
    let o = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-switched.sh"))
        .arg(nodes.to_string())
        .output()
        .unwrap();
    assert!(o.status.success());
    let path = dir.join(format!("gen-{nodes}.toml"));
    std::fs::write(&path, o.stdout).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn the_default_is_all_up_to_256_jobs_and_failed_above() {
    let tmp = tempfile::tempdir().unwrap();
    for (nodes, jobs_expected, keep) in [(16, 241, "all"), (17, 273, "failed")] {
        let plan = generated(tmp.path(), nodes);
        let (dir, o) = sim_run(tmp.path(), &format!("run-{nodes}"), &plan, &["--all"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r = json(&dir.join("results.json"));
        assert_eq!(jobs(&r).len(), jobs_expected, "{nodes} nodes");
        assert_eq!(r["keep_evidence"], keep, "{nodes} nodes");
        assert_eq!(r["keep_evidence_chosen"], "default");
        assert_eq!(r["keep_evidence_failed_above_jobs"], 256);
        let files = job_files(&dir);
        let digested = jobs(&r)
            .iter()
            .filter(|j| j.get("digests").is_some())
            .count();
        if keep == "all" {
            assert!(files.len() >= 2 * jobs_expected, "{} files", files.len());
            assert_eq!(digested, 0);
        } else {
            assert!(files.is_empty(), "{} files", files.len());
            assert_eq!(digested, jobs_expected);
        }
        let out = stdout(&o);
        assert!(
            out.contains(&format!(
                "--keep-evidence {keep} (the default: all up to 256 jobs, failed above)"
            )),
            "{out}"
        );
    }
}

#[test]
fn the_option_overrides_the_default_of_a_big_run() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = generated(tmp.path(), 17);
    let (dir, o) = sim_run(tmp.path(), "big-all", &plan, &["--keep-evidence", "all"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&dir.join("results.json"));
    assert_eq!(r["keep_evidence"], "all");
    assert_eq!(r["keep_evidence_chosen"], "option");
    assert!(job_files(&dir).len() >= 2 * jobs(&r).len());
}

#[test]
fn a_big_runs_results_json_has_one_job_per_line() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = generated(tmp.path(), 17);
    let (dir, o) = sim_run(tmp.path(), "big", &plan, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let job_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("    {\"format_version\""))
        .collect();
    assert_eq!(job_lines.len(), 273);
    for l in job_lines {
        let j: serde_json::Value = serde_json::from_str(l.trim_end_matches(',').trim()).unwrap();
        assert!(j["job"].is_string());
        assert!(j["digests"].is_array());
    }
    // and the whole is one JSON document, every job in it
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(jobs(&r).len(), 273);
}
