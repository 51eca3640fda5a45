//! What a lab test keeps of a `fabricplan run`: its exit, output and results.json read back
//! ([`Run`]), and the work directory that holds its run directories ([`Work`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

/// `fabricplan run PLAN --ssh-config <the lab's> --out OUT`, with no SSH agent, no colour and
/// nothing on stdin: add the test's own arguments and outputs.
pub fn run_command(lab: &super::Lab, plan: &Path, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabricplan"));
    c.arg("run")
        .arg(plan)
        .arg("--ssh-config")
        .arg(lab.ssh_config_path())
        .arg("--out")
        .arg(out)
        .env_remove("SSH_AUTH_SOCK")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    c
}

/// The nodes a job of results.json ran on (its `hosts`).
pub fn hosts_of(job: &Value) -> Vec<&str> {
    job["hosts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h.as_str())
        .collect()
}

/// A finished run: exit code, output, results.json and how long it took.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub results: Value,
    pub wall: Duration,
}

impl Run {
    /// The run of `out` whose run directory is `dir`; a run without results.json is a failed
    /// test, with what the run printed.
    pub fn finish(out: Output, dir: &Path, wall: Duration) -> Run {
        let path = dir.join("results.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "no {} ({e}); exit {:?}\nstderr:\n{}\nstdout:\n{}",
                path.display(),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            )
        });
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            results: serde_json::from_str(&text).expect("results.json is JSON"),
            wall,
        }
    }

    pub fn jobs(&self) -> &Vec<Value> {
        self.results["jobs"].as_array().expect("jobs array")
    }

    pub fn job(&self, id: &str) -> &Value {
        self.jobs()
            .iter()
            .find(|j| j["job"] == id)
            .unwrap_or_else(|| panic!("no job {id} in results.json"))
    }

    /// The id of the one job of `kind` (the NCCL test of a twin), whatever round it landed in.
    pub fn only(&self, kind: &str) -> String {
        let of: Vec<&Value> = self.jobs().iter().filter(|j| j["kind"] == kind).collect();
        assert_eq!(of.len(), 1, "one {kind} job expected:\n{}", self.story());
        of[0]["job"].as_str().unwrap_or("").to_string()
    }

    pub fn verdict(&self) -> &str {
        self.results["summary"]["verdict"].as_str().unwrap_or("")
    }

    pub fn preflight(&self) -> &[Value] {
        self.results["preflight"]
            .as_array()
            .map_or(&[], |v| v.as_slice())
    }

    /// Every verdict (preflight and jobs) that is not OK, as (gate, outcome, trap).
    pub fn not_ok(&self) -> Vec<(String, String, String)> {
        let jobs = self
            .jobs()
            .iter()
            .flat_map(|j| j["verdicts"].as_array().into_iter().flatten());
        self.preflight()
            .iter()
            .chain(jobs)
            .filter(|v| v["outcome"] != "OK")
            .map(|v| {
                (
                    v["gate"].as_str().unwrap_or("").to_string(),
                    v["outcome"].as_str().unwrap_or("").to_string(),
                    v["trap"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The main measured value of a job (its first metric verdict).
    pub fn value(&self, id: &str) -> f64 {
        self.job(id)["verdicts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| !v["metric"].is_null())
            .and_then(|v| v["measured"].as_f64())
            .unwrap_or_else(|| panic!("{id} has no measured value:\n{}", self.story()))
    }

    /// A readable account of the run for assertion messages.
    pub fn story(&self) -> String {
        let mut s = format!(
            "exit {:?}, {:?}, verdict {:?}\n",
            self.code,
            self.wall,
            self.verdict()
        );
        for j in self.jobs() {
            s.push_str(&format!(
                "  {} {} {} reason={}\n",
                j["job"].as_str().unwrap_or(""),
                j["status"].as_str().unwrap_or(""),
                j["label"].as_str().unwrap_or(""),
                j["reason"]
            ));
            for v in j["verdicts"].as_array().into_iter().flatten() {
                s.push_str(&format!(
                    "    {} {} measured={} threshold={} trap={} detail={}\n",
                    v["outcome"].as_str().unwrap_or(""),
                    v["gate"].as_str().unwrap_or(""),
                    v["measured"],
                    v["threshold"],
                    v["trap"],
                    v["detail"]
                ));
            }
        }
        for v in self.preflight() {
            if v["outcome"] != "OK" {
                s.push_str(&format!(
                    "  preflight {} {} trap={} {}\n",
                    v["outcome"], v["gate"], v["trap"], v["detail"]
                ));
            }
        }
        s.push_str(&format!(
            "--- stderr:\n{}\n--- stdout (first 3000 chars):\n{}",
            self.stderr,
            self.stdout.chars().take(3000).collect::<String>()
        ));
        s
    }
}

/// A test's work directory (run directories, plan variants), `/var/tmp/<area>/<name>`:
/// emptied first, removed on drop when the test passed, kept for reading after a failure.
pub struct Work(PathBuf);

impl Work {
    pub fn new(area: &str, name: &str) -> Work {
        let p = PathBuf::from("/var/tmp").join(area).join(name);
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("work dir");
        Work(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("run directories kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
