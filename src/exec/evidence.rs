//! The run directory: a copy of the plan, `results.jsonl` appended and flushed as each job
//! finishes, and per job its commands, outputs and exit statuses. Nothing measured is lost.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::results::JobResult;

#[derive(Debug)]
pub struct Evidence {
    pub dir: PathBuf,
    jsonl: Option<File>,
}

impl Evidence {
    /// Create the run directory and copy the plan into it.
    pub fn create(dir: &Path, plan_text: &str) -> std::io::Result<Evidence> {
        fs::create_dir_all(dir.join("jobs"))?;
        fs::write(dir.join("plan.toml"), plan_text)?;
        let jsonl = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("results.jsonl"))?;
        Ok(Evidence {
            dir: dir.to_path_buf(),
            jsonl: Some(jsonl),
        })
    }

    /// A sink that writes nothing (tests, `--dry-run`).
    pub fn none() -> Evidence {
        Evidence {
            dir: PathBuf::new(),
            jsonl: None,
        }
    }

    /// Save one output of a job; returns the file name relative to the run directory.
    pub fn save(&self, job: &str, name: &str, content: &str) -> Option<String> {
        self.jsonl.as_ref()?;
        let rel = format!("jobs/{job}/{name}");
        let path = self.dir.join(&rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).ok()?;
        }
        fs::write(&path, content).ok()?;
        Some(rel)
    }

    /// Append a finished job to results.jsonl and flush it to disk.
    pub fn append(&mut self, job: &JobResult) {
        if let Some(f) = self.jsonl.as_mut()
            && let Ok(line) = serde_json::to_string(job)
        {
            let _ = writeln!(f, "{line}");
            let _ = f.sync_data();
        }
    }

    pub fn write(&self, name: &str, content: &[u8]) -> std::io::Result<()> {
        if self.jsonl.is_none() {
            return Ok(());
        }
        let tmp = self.dir.join(format!(".{name}.tmp"));
        fs::write(&tmp, content)?;
        fs::rename(tmp, self.dir.join(name))
    }
}
