//! `results.jsonl`: one job per line, appended as each finishes and flushed to disk as each
//! round does (a round's jobs finish together), so a run that dies keeps everything it measured
//! up to its last round. When localisation names a part at fault after a sampled test's rounds,
//! one more line says so: `{"suspect": {...}, "follows": {"gate": G, "jobs": [...]}}`, the jobs
//! (written earlier) whose FAIL and WARN verdicts follow from gate G, as results.json has them.
//! At the end, one line per broken part the diagnosis names: `{"finding": {...}}`, as
//! results.json's `findings` has it (its evidence, the gates that follow from it, its fix).
//!
//! The file holds whole lines only: lines are written whole from a buffer of complete lines,
//! and when a write fails (a full disk) the file is cut back to its last complete line, so a
//! reader never meets half a line.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Sink;
use crate::files::output::Existing;
use crate::results::Event;

/// Lines are written once this many bytes of them are waiting (and at each round's end).
const BUFFER: usize = 1 << 16;

pub struct JsonlSink {
    path: PathBuf,
    file: Option<File>,
    /// Complete lines not written yet.
    pending: Vec<u8>,
    /// Bytes of whole lines in the file.
    written: u64,
}

impl JsonlSink {
    pub fn new(dir: &Path) -> JsonlSink {
        JsonlSink {
            path: dir.join("results.jsonl"),
            file: None,
            pending: Vec::new(),
            written: 0,
        }
    }
}

impl Sink for JsonlSink {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn outputs(&self) -> Vec<(PathBuf, Existing)> {
        vec![(self.path.clone(), Existing::Nothing)]
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        match e {
            Event::JobDone(job) => self.line(job.as_ref()),
            Event::Suspect(suspect, jobs) => self.line(&serde_json::json!({
                "suspect": suspect,
                "follows": { "gate": suspect.verdict.gate, "jobs": jobs },
            })),
            Event::RoundDone(_) => self.sync(),
            Event::Finished(r) => {
                // the diagnosis, last: one line per broken part, with the gates that follow it
                for f in &r.findings {
                    self.line(&serde_json::json!({ "finding": f }))?;
                }
                // a run without a job or finding still leaves its (empty) file
                self.open()?;
                self.sync()
            }
            _ => Ok(()),
        }
    }
}

impl JsonlSink {
    /// One more line.
    fn line(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        let start = self.pending.len();
        if let Err(e) = serde_json::to_writer(&mut self.pending, value) {
            self.pending.truncate(start);
            return Err(io::Error::other(e));
        }
        self.pending.push(b'\n');
        if self.pending.len() >= BUFFER {
            self.write_pending()?;
        }
        Ok(())
    }

    /// The waiting lines into the file, whole; on a failure the file is cut back to the lines
    /// written before.
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let written = self.written;
        let f = self.open()?;
        match f.write_all(&pending) {
            Ok(()) => {
                self.written += pending.len() as u64;
                Ok(())
            }
            Err(e) => {
                // whatever part of a line reached the file goes; the lines before it stay
                let _ = f.set_len(written);
                Err(e)
            }
        }
    }

    /// The file, created on first use: a run directory holds one run, so it is never appended
    /// to another run's lines.
    fn open(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            self.file = Some(
                OpenOptions::new()
                    .create_new(true)
                    .append(true)
                    .open(&self.path)?,
            );
        }
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(io::Error::other("results.jsonl is not open")),
        }
    }

    /// Everything written so far, on disk.
    fn sync(&mut self) -> io::Result<()> {
        self.write_pending()?;
        match self.file.as_mut() {
            Some(f) => f.sync_data(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::JobResult;
    use std::os::unix::process::CommandExt;

    #[test]
    fn lines_are_whole_and_written_as_rounds_end() {
        let d = tempfile::tempdir().unwrap();
        let mut s = JsonlSink::new(d.path());
        let j = JobResult {
            job: "a".into(),
            ..JobResult::default()
        };
        s.line(&j).unwrap();
        // not on disk before the round ends (a small run writes once per round)
        assert!(!d.path().join("results.jsonl").exists());
        s.sync().unwrap();
        s.line(&j).unwrap();
        s.sync().unwrap();
        let text = std::fs::read_to_string(d.path().join("results.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));
    }

    /// A run without a job or a finding (a plan with no test) still leaves its file, empty.
    #[test]
    fn a_run_with_nothing_to_say_leaves_an_empty_file() {
        let d = tempfile::tempdir().unwrap();
        let mut s = JsonlSink::new(d.path());
        let r = std::sync::Arc::new(crate::results::RunResults::default());
        s.event(&Event::Finished(r)).unwrap();
        let text = std::fs::read_to_string(d.path().join("results.jsonl")).unwrap();
        assert_eq!(text, "");
    }

    /// A write that fails half-way (the file size limit stands for a full disk, in a child
    /// process) leaves the lines written before, and no part of the next.
    #[test]
    fn a_failed_write_leaves_no_partial_line() {
        if std::env::var_os("FABRICPLAN_JSONL_CHILD").is_some() {
            let dir = PathBuf::from(std::env::var_os("FABRICPLAN_JSONL_CHILD").unwrap());
            let mut s = JsonlSink::new(&dir);
            let j = JobResult {
                job: "x".repeat(1000),
                ..JobResult::default()
            };
            let mut failed = false;
            for _ in 0..200 {
                s.line(&j).unwrap();
                if s.sync().is_err() {
                    failed = true;
                    break;
                }
            }
            assert!(failed, "the limit was never met");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args([
            "--exact",
            "report::sink::jsonl::tests::a_failed_write_leaves_no_partial_line",
        ])
        .env("FABRICPLAN_JSONL_CHILD", d.path());
        // SAFETY: async-signal-safe calls only, between fork and exec
        unsafe {
            c.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 50_000,
                    rlim_max: 50_000,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            });
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        let text = std::fs::read_to_string(d.path().join("results.jsonl")).unwrap();
        assert!(
            !text.is_empty() && text.ends_with('\n'),
            "{} bytes",
            text.len()
        );
        assert!(text.len() < 50_000);
        for l in text.lines() {
            serde_json::from_str::<serde_json::Value>(l).unwrap();
        }
    }
}
