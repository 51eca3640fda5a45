//! Report sinks: consumers of a run's [`Event`]s, as nextest's reporters are. Each sink writes
//! one thing (a file of the run directory, the terminal, stdout) and returns its errors instead
//! of dropping them: a run whose evidence could not be written says so and exits with its own
//! code. Adding a sink is one new file here and one line in [`run_directory`].

pub mod html;
mod jsonl;
pub mod junit;
pub mod metrics;
pub mod results_json;
pub mod summary;

use std::io;
use std::path::{Path, PathBuf};

use crate::exec::runner::Event;

pub use html::HtmlSink;
pub use jsonl::JsonlSink;
pub use junit::JunitSink;
pub use metrics::MetricsSink;
pub use results_json::ResultsJsonSink;
pub use summary::SummarySink;

/// A consumer of a run's events.
pub trait Sink: Send {
    /// What it writes (`results.json`, `terminal`), for error messages.
    fn name(&self) -> String;

    /// Take one event; an error is reported and the run goes on.
    fn event(&mut self, e: &Event) -> io::Result<()>;
}

/// A sink that failed, and how.
#[derive(Debug)]
pub struct SinkError {
    pub sink: String,
    pub error: io::Error,
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.sink, self.error)
    }
}

/// Sinks fed together; their errors kept, one per sink (the first).
#[derive(Default)]
pub struct Sinks {
    sinks: Vec<Box<dyn Sink>>,
    failed: Vec<SinkError>,
}

impl Sinks {
    pub fn new(sinks: Vec<Box<dyn Sink>>) -> Sinks {
        Sinks {
            sinks,
            failed: Vec::new(),
        }
    }

    pub fn push(&mut self, s: Box<dyn Sink>) {
        self.sinks.push(s);
    }

    /// Give `e` to every sink that has not failed.
    pub fn event(&mut self, e: &Event) {
        for s in &mut self.sinks {
            let name = s.name();
            if self.failed.iter().any(|f| f.sink == name) {
                continue;
            }
            if let Err(error) = s.event(e) {
                self.failed.push(SinkError { sink: name, error });
            }
        }
    }

    /// The sinks that failed.
    pub fn errors(&self) -> &[SinkError] {
        &self.failed
    }
}

/// The sinks of a run directory: results.jsonl as jobs finish, then results.json, junit.xml,
/// summary.md and report.html.
pub fn run_directory(dir: &Path) -> Vec<Box<dyn Sink>> {
    vec![
        Box::new(JsonlSink::new(dir)),
        Box::new(ResultsJsonSink::new(dir)),
        Box::new(JunitSink::new(dir)),
        Box::new(SummarySink::new(dir)),
        Box::new(HtmlSink::new(dir)),
    ]
}

/// Write `name` in `dir` atomically: a temporary file beside it, then a rename, so a reader never
/// sees half a file.
pub fn write_atomic(dir: &Path, name: &str, content: &[u8]) -> io::Result<PathBuf> {
    write_atomic_with(dir, name, |w| w.write_all(content))
}

/// [`write_atomic`] with the content written by `write` through a buffer: a big file is never
/// held in memory whole.
pub fn write_atomic_with(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
) -> io::Result<PathBuf> {
    use std::io::Write;
    let target = dir.join(name);
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, tmp);
    write(&mut w)?;
    w.flush()?;
    let tmp = w.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_data()?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(target)
}
