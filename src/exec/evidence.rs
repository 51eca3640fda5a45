//! The run directory's raw evidence: a copy of the plan and, per job, every command's stdout and
//! stderr and the servers' logs, so a person can check the tool's reading. A directory holds one
//! run: creating evidence where another run left its own is refused. Write failures are kept
//! and reported at the end of the run, never dropped.
//!
//! A job's outputs are held until it is judged, then kept ([`Evidence::keep`]) as files, or
//! with `--keep-evidence failed` as digests when the job was OK: a failure's evidence is always
//! a file.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::results::{CounterDelta, JobResult, KeepEvidence, OutputDigest};

/// One output of a job (a step's stdout or stderr, a server's log), held until the job is
/// judged.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Its file name in the job's folder.
    pub name: String,
    pub text: String,
}

/// Why a run directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("`{}` already holds a run ({}): a run never writes into another run's evidence; choose another --out", .dir.display(), .found)]
    Taken { dir: PathBuf, found: String },
    #[error("cannot create the run directory `{}`: {source}", .dir.display())]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Debug)]
pub struct Evidence {
    pub dir: PathBuf,
    enabled: bool,
    errors: Mutex<Vec<String>>,
}

/// Files that mark a directory as a run's.
const RUN_FILES: [&str; 4] = ["plan.toml", "results.jsonl", "results.json", "jobs"];

impl Evidence {
    /// Does `dir` already hold a run (any of its files there, a dangling link too)?
    pub fn check_free(dir: &Path) -> Result<(), EvidenceError> {
        // anything there counts, a dangling link too (never written through)
        match RUN_FILES
            .iter()
            .find(|f| fs::symlink_metadata(dir.join(f)).is_ok())
        {
            Some(found) => Err(EvidenceError::Taken {
                dir: dir.to_path_buf(),
                found: (*found).to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Create the run directory (new, or existing and empty) and copy the plan into it.
    pub fn create(dir: &Path, plan_text: &str) -> Result<Evidence, EvidenceError> {
        let io = |source| EvidenceError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        Self::check_free(dir)?;
        fs::create_dir_all(dir).map_err(io)?;
        fs::create_dir(dir.join("jobs")).map_err(io)?;
        crate::files::output::write_new(&dir.join("plan.toml"), plan_text.as_bytes())
            .map_err(io)?;
        Ok(Evidence {
            dir: dir.to_path_buf(),
            enabled: true,
            errors: Mutex::new(Vec::new()),
        })
    }

    /// Evidence that writes nothing (tests, `--dry-run`).
    pub fn none() -> Evidence {
        Evidence {
            dir: PathBuf::new(),
            enabled: false,
            errors: Mutex::new(Vec::new()),
        }
    }

    /// Copy the baseline's results.json (`text`) into the run directory as
    /// [`crate::results::BASELINE_FILE`]; a failure is kept for [`Evidence::errors`].
    pub fn save_baseline(&self, text: &str) {
        if !self.enabled {
            return;
        }
        let name = crate::results::BASELINE_FILE;
        if let Err(e) = crate::files::output::write_atomic(&self.dir, name, text.as_bytes()) {
            self.errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("{}: {e}", self.dir.join(name).display()));
        }
    }

    /// Save one output of a job; returns the file name relative to the run directory. A failure
    /// is kept for [`Evidence::errors`].
    pub fn save(&self, job: &str, name: &str, content: &str) -> Option<String> {
        if !self.enabled {
            return None;
        }
        let rel = format!("jobs/{job}/{name}");
        let path = self.dir.join(&rel);
        let written = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| crate::files::output::write_new(&path, content.as_bytes()));
        match written {
            Ok(()) => Some(rel),
            Err(e) => {
                self.errors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("{}: {e}", path.display()));
                None
            }
        }
    }

    /// Keep a judged job's outputs: as files under `jobs/JOB/` with `all`, or for a job with a
    /// problem (see [`JobResult::troubled`]); else as digests in `job.digests`, and then the
    /// job also sheds what every job repeats (its steps' wrapped scripts), the counters that
    /// do not matter ([`CounterDelta::matters`]) and the verbatim banner of its parsed output
    /// (perftest's key-value header, whose values the parsed fields keep), and its one parsed
    /// row when that row only repeats the parsed fields.
    pub fn keep(&self, mode: KeepEvidence, job: &mut JobResult, outputs: Vec<Captured>) {
        if mode == KeepEvidence::All || job.troubled() {
            let mut written: HashMap<String, String> = HashMap::new();
            for c in outputs {
                if let Some(rel) = self.save(&job.job, &c.name, &c.text) {
                    written.insert(c.name, rel);
                }
            }
            for s in &mut job.steps {
                let [out, err] = s.output_names();
                s.stdout_file = written.get(&out).cloned();
                s.stderr_file = written.get(&err).cloned();
            }
            return;
        }
        job.digests = outputs
            .iter()
            .filter(|c| !c.text.is_empty())
            .map(|c| OutputDigest::of(&c.name, &c.text))
            .collect();
        for s in &mut job.steps {
            s.script = String::new();
        }
        job.counters.retain(CounterDelta::matters);
        for c in &mut job.counters {
            (c.before, c.after) = (None, None);
        }
        // what the report only repeats (perftest's banner as printed, a single row equal to
        // the totals), and the fields with nothing in them
        if let Some(parsed) = job.parsed.as_mut() {
            parsed.shed();
        }
    }

    /// What could not be written, in order.
    pub fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::{Captured, Evidence};
    use crate::gate::judge::{Outcome, Verdict};
    use crate::parse::Tool;
    use crate::render::job::Role;
    use crate::results::{CounterDelta, JobResult, JobStatus, KeepEvidence, StepRecord};
    use crate::tools::perftest::parse::BwReport;

    fn step(host: &str, role: Role) -> StepRecord {
        StepRecord {
            attempt: 1,
            host: host.to_string(),
            role,
            command: "ib_write_bw -d f0".to_string(),
            script: "set -e; exec ib_write_bw -d f0".to_string(),
            exit_status: Some(0),
            error: None,
            started_unix_ms: 0,
            remote_started_unix_ms: None,
            finished_unix_ms: 0,
            stdout_file: None,
            stderr_file: None,
        }
    }

    fn counter(name: &str, delta: i64) -> CounterDelta {
        CounterDelta {
            attempt: 1,
            host: "a".to_string(),
            device: "f0".to_string(),
            counter: name.to_string(),
            before: Some(1000),
            after: Some(1000 + delta as u64),
            delta,
        }
    }

    fn job(outcome: Outcome) -> (JobResult, Vec<Captured>) {
        let j = JobResult {
            job: "r01-a-b".to_string(),
            status: JobStatus::Measured,
            steps: vec![step("b", Role::Server), step("a", Role::Client)],
            parsed: Tool::IB_WRITE_BW
                .read(serde_json::json!({
                    "status": "ok",
                    "bw_avg_gbps": 97.1,
                    "bw_peak_gbps": 97.3,
                    "msg_rate_mpps": 0.18,
                    "bytes": 65536,
                    "iterations": 1000,
                    "rows": [{"bytes": 65536, "iterations": 1000, "bw_peak_gbps": 97.3,
                              "bw_avg_gbps": 97.1, "msg_rate_mpps": 0.18}],
                    "banner": {"Device": "rocep1s0f0"}
                }))
                .ok(),
            counters: vec![
                counter("port_xmit_data", 100),
                counter("port_xmit_packets", 7),
                counter("link_downed", 0),
            ],
            verdicts: vec![Verdict::check("rdma-bw a -> b", outcome, "", None)],
            ..JobResult::default()
        };
        let outs = ["b.server.stdout", "b.server.stderr", "a.client.stdout"]
            .iter()
            .map(|n| Captured {
                name: (*n).to_string(),
                text: format!("output of {n}\n"),
            })
            .chain([Captured {
                name: "a.client.stderr".to_string(),
                text: String::new(),
            }])
            .collect();
        (j, outs)
    }

    fn files(dir: &std::path::Path, job: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.join("jobs").join(job))
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn all_keeps_every_output_as_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let ev = Evidence::create(&tmp.path().join("run"), "").unwrap();
        let (mut j, outs) = job(Outcome::Ok);
        ev.keep(KeepEvidence::All, &mut j, outs);
        assert_eq!(
            files(&ev.dir, "r01-a-b"),
            [
                "a.client.stderr",
                "a.client.stdout",
                "b.server.stderr",
                "b.server.stdout"
            ]
        );
        assert!(j.digests.is_empty());
        assert_eq!(
            j.steps[1].stdout_file.as_deref(),
            Some("jobs/r01-a-b/a.client.stdout")
        );
        assert!(!j.steps[0].script.is_empty());
        assert_eq!(j.counters.len(), 3);
    }

    #[test]
    fn failed_digests_an_ok_job_and_trims_it() {
        let tmp = tempfile::tempdir().unwrap();
        let ev = Evidence::create(&tmp.path().join("run"), "").unwrap();
        let (mut j, outs) = job(Outcome::Ok);
        ev.keep(KeepEvidence::Failed, &mut j, outs);
        assert!(files(&ev.dir, "r01-a-b").is_empty());
        // the empty stderr is not listed
        let names: Vec<&str> = j.digests.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["b.server.stdout", "b.server.stderr", "a.client.stdout"]
        );
        let d = &j.digests[2];
        assert_eq!(d.bytes, "output of a.client.stdout\n".len() as u64);
        assert_eq!(d.sha256.len(), 64);
        assert!(j.steps.iter().all(|s| s.stdout_file.is_none()));
        assert!(j.steps.iter().all(|s| s.script.is_empty()));
        assert!(j.steps.iter().all(|s| !s.command.is_empty()));
        // the figures read from the output stay; the banner as printed goes
        let parsed = j.parsed.as_ref().unwrap().to_json();
        assert_eq!(parsed["bw_avg_gbps"], 97.1);
        assert!(parsed.get("banner").is_none());
        assert!(parsed.get("rows").is_none());
        // nothing in it: left out
        assert!(parsed.get("error").is_none());
        assert!(parsed.get("warnings").is_none());
        let report = j.parsed.as_ref().unwrap().get::<BwReport>().unwrap();
        assert_eq!(report.bw_avg_gbps, Some(97.1));
        let kept: Vec<&str> = j.counters.iter().map(|c| c.counter.as_str()).collect();
        assert_eq!(kept, ["port_xmit_data"]);
    }

    #[test]
    fn failed_keeps_the_files_of_a_warn_a_fail_and_an_unmeasured_job() {
        for (outcome, status) in [
            (Outcome::Warn, JobStatus::Measured),
            (Outcome::Fail, JobStatus::Measured),
            (Outcome::Ok, JobStatus::Failed),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let ev = Evidence::create(&tmp.path().join("run"), "").unwrap();
            let (mut j, outs) = job(outcome);
            j.status = status;
            ev.keep(KeepEvidence::Failed, &mut j, outs);
            assert_eq!(files(&ev.dir, "r01-a-b").len(), 4, "{outcome:?} {status:?}");
            assert!(j.digests.is_empty());
            assert!(!j.steps[0].script.is_empty());
            let parsed = j.parsed.as_ref().unwrap().to_json();
            assert!(parsed.get("banner").is_some());
            assert!(parsed.get("rows").is_some());
            assert!(parsed.get("error").is_some());
        }
    }
}
