//! `results.jsonl`: one job per line, appended as each finishes and flushed to disk as each
//! round does (a round's jobs finish together), so a run that dies keeps everything it measured
//! up to its last round. When localisation names a part at fault after a sampled test's rounds,
//! one more line says so: `{"suspect": {...}, "follows": {"gate": G, "jobs": [...]}}`, the jobs
//! (written earlier) whose FAIL and WARN verdicts follow from gate G, as results.json has them.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Sink;
use crate::exec::runner::Event;

pub struct JsonlSink {
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

impl JsonlSink {
    pub fn new(dir: &Path) -> JsonlSink {
        JsonlSink {
            path: dir.join("results.jsonl"),
            file: None,
        }
    }
}

impl Sink for JsonlSink {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        match e {
            Event::JobDone(job) => self.line(job.as_ref()),
            Event::Suspect(suspect, jobs) => self.line(&serde_json::json!({
                "suspect": suspect,
                "follows": { "gate": suspect.verdict.gate, "jobs": jobs },
            })),
            Event::RoundDone(_) | Event::Finished(_) => self.sync(),
            _ => Ok(()),
        }
    }
}

impl JsonlSink {
    /// One more line.
    fn line(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        if self.file.is_none() {
            // a run directory holds one run: never append to another run's lines
            self.file = Some(BufWriter::with_capacity(
                1 << 16,
                OpenOptions::new()
                    .create_new(true)
                    .append(true)
                    .open(&self.path)?,
            ));
        }
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        serde_json::to_writer(&mut *f, value).map_err(io::Error::other)?;
        writeln!(f)
    }

    /// Everything written so far, on disk.
    fn sync(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => {
                f.flush()?;
                f.get_ref().sync_data()
            }
            None => Ok(()),
        }
    }
}
