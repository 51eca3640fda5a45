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
    /// Create the run directory (new, or existing and empty) and copy the plan into it.
    pub fn create(dir: &Path, plan_text: &str) -> Result<Evidence, EvidenceError> {
        let io = |source| EvidenceError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        if let Some(found) = RUN_FILES.iter().find(|f| dir.join(f).exists()) {
            return Err(EvidenceError::Taken {
                dir: dir.to_path_buf(),
                found: (*found).to_string(),
            });
        }
        fs::create_dir_all(dir.join("jobs")).map_err(io)?;
        fs::write(dir.join("plan.toml"), plan_text).map_err(io)?;
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
            .and_then(|()| fs::write(&path, content));
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
    /// (perftest's key-value header, whose values the parsed fields keep).
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
        if let Some(serde_json::Value::Object(parsed)) = job.parsed.as_mut() {
            // perftest's banner as printed: its values are read into the parsed fields
            parsed.remove("banner");
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
