//! `results.jsonl`: one job per line, appended and flushed to disk as each finishes, so a run
//! that dies keeps everything it measured.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Sink;
use crate::exec::runner::Event;

pub struct JsonlSink {
    path: PathBuf,
    file: Option<File>,
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
        let Event::JobDone(job) = e else {
            return Ok(());
        };
        if self.file.is_none() {
            // a run directory holds one run: never append to another run's lines
            self.file = Some(
                OpenOptions::new()
                    .create_new(true)
                    .append(true)
                    .open(&self.path)?,
            );
        }
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        let line = serde_json::to_string(job.as_ref()).map_err(io::Error::other)?;
        writeln!(f, "{line}")?;
        f.sync_data()
    }
}
