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
use std::sync::Arc;

use crate::files::output::{Existing, OutputError, check_file};
use crate::results::Event;

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

    /// The files it will write, and what may be there already: every one is checked before
    /// the run starts ([`Sinks::check_outputs`]). None for the terminal and stdout.
    fn outputs(&self) -> Vec<(PathBuf, Existing)>;
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

    /// Every file the sinks will write, checked before anything runs: each problem, in order.
    pub fn check_outputs(&self) -> Vec<OutputError> {
        self.sinks
            .iter()
            .flat_map(|s| s.outputs())
            .filter_map(|(p, existing)| check_file(&p, existing).err())
            .collect()
    }
}

/// A run's sinks: those of its files and those in front (the terminal, or JSON on stdout),
/// fed each event as it comes; the end is delivered by [`Feed::event`]'s rule.
pub struct Feed {
    pub files: Sinks,
    pub front: Sinks,
}

/// How a run ended, once its sinks have had the results.
#[derive(Debug, Clone)]
pub struct Ended {
    /// The verdict's exit code, or the evidence one when something was not written.
    pub exit_code: i32,
    /// What could not be written: the runner's, then the sinks' (each file's first error).
    pub lost: Vec<String>,
}

impl Feed {
    /// Give `e` to every sink. [`Event::Finished`] goes to the files first (results.json
    /// last, with what the others could not write), again to those written before a later one
    /// failed, so that they say so too, then to the front, whose verdict admits any lost
    /// evidence; it returns how the run ended.
    pub fn event(&mut self, e: Event) -> Option<Ended> {
        let Event::Finished(mut r) = e else {
            self.files.event(&e);
            self.front.event(&e);
            return None;
        };
        let runner = r.summary.evidence_lost.clone();
        let lost = |files: &Sinks| -> Vec<String> {
            let mut l = runner.clone();
            l.extend(files.errors().iter().map(|e| e.to_string()));
            l
        };
        // the sinks read the results in place: they are not copied while no sink holds them
        self.files.event(&Event::Finished(r.clone()));
        let after = lost(&self.files);
        if after.len() > runner.len() {
            Arc::make_mut(&mut r).summary.evidence_lost(&after);
            self.files.event(&Event::Finished(r.clone()));
        }
        let all = lost(&self.files);
        Arc::make_mut(&mut r).summary.evidence_lost(&all);
        let exit_code = r.summary.exit_code;
        self.front.event(&Event::Finished(r));
        Some(Ended {
            exit_code,
            lost: all,
        })
    }
}

/// The sinks of a run directory, with `also` (the metrics file): results.jsonl as jobs finish,
/// then junit.xml, summary.md, report.html, `also`, and results.json last, so that it records
/// what the others could not write.
pub fn run_directory(dir: &Path, also: Vec<Box<dyn Sink>>) -> Vec<Box<dyn Sink>> {
    let mut v: Vec<Box<dyn Sink>> = vec![
        Box::new(JsonlSink::new(dir)),
        Box::new(JunitSink::new(dir)),
        Box::new(SummarySink::new(dir)),
        Box::new(HtmlSink::new(dir)),
    ];
    v.extend(also);
    v.push(Box::new(ResultsJsonSink::new(dir)));
    v
}

/// Files are written through [`crate::files::output`]: never over anything but a regular file,
/// with the umask's mode, atomically.
pub use crate::files::output::{write_atomic, write_atomic_with};

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::results::RunResults;

    /// A sink that writes down what it was given (its name and the verdict it saw), and fails
    /// at the end when told to.
    struct Log {
        name: &'static str,
        fails: bool,
        seen: Arc<Mutex<Vec<(String, String)>>>,
    }

    impl Sink for Log {
        fn name(&self) -> String {
            self.name.into()
        }

        fn event(&mut self, e: &Event) -> io::Result<()> {
            let Event::Finished(r) = e else {
                return Ok(());
            };
            let mut seen = self.seen.lock().unwrap();
            seen.push((self.name.into(), r.summary.verdict.clone()));
            if self.fails {
                return Err(io::Error::other("disk full"));
            }
            Ok(())
        }

        fn outputs(&self) -> Vec<(PathBuf, Existing)> {
            Vec::new()
        }
    }

    /// The end goes to the files in order, again to those written before one that failed (so
    /// that they say it), then to the front, whose verdict admits the lost evidence; the run's
    /// own lost evidence comes first.
    #[test]
    fn the_end_reaches_the_files_first_and_the_front_last_admitting_what_was_lost() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = |name, fails| -> Box<dyn Sink> {
            Box::new(Log {
                name,
                fails,
                seen: seen.clone(),
            })
        };
        let mut feed = Feed {
            files: Sinks::new(vec![
                log("junit.xml", false),
                log("summary.md", true),
                log("results.json", false),
            ]),
            front: Sinks::new(vec![log("terminal", false)]),
        };
        let mut r = RunResults::default();
        r.summary.verdict = "ALL GREEN".into();
        r.summary
            .evidence_lost(&["jobs/x/stdout: gone".to_string()]);
        let ended = feed
            .event(Event::Finished(Arc::new(r)))
            .expect("the end is said");
        assert_eq!(ended.exit_code, crate::exit::EVIDENCE);
        assert_eq!(
            ended.lost,
            ["jobs/x/stdout: gone", "summary.md: disk full"],
            "the runner's lost evidence, then the sinks'"
        );
        let seen = seen.lock().unwrap();
        let order: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        // summary.md failed the first time, so it is given nothing more
        assert_eq!(
            order,
            [
                "junit.xml",
                "summary.md",
                "results.json",
                "junit.xml",
                "results.json",
                "terminal"
            ]
        );
        assert!(seen[0].1.contains("(1 not written)"), "{seen:?}");
        assert!(seen[3].1.contains("(2 not written)"), "{seen:?}");
        assert!(seen[5].1.contains("(2 not written)"), "{seen:?}");
        assert!(seen[5].1.ends_with("ALL GREEN"), "{seen:?}");
        // a progress event is no end
        assert!(
            feed.event(Event::Preflight(crate::gate::judge::Verdict::check(
                "x",
                crate::gate::judge::Outcome::Ok,
                "",
                None
            )))
            .is_none()
        );
    }
}
