//! `report.html` in the run directory: the run at a glance (see [`crate::report::html`]), drawn
//! from the results, the plan and, when the run was judged against one, the baseline's
//! results: those the run started with, or read back from the run directory (`plan.toml`,
//! `baseline.json`) by `fabricplan report`.

use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::files::output::Existing;
use crate::report::html::{Inputs, render};
use crate::results::Event;
use crate::results::{RunResults, Started};

pub use crate::results::BASELINE_FILE;

/// `report.html` in the run directory, drawn at the end of the run from the plan and baseline
/// it started with (in memory).
pub struct HtmlSink {
    dir: PathBuf,
    started: Option<Box<Started>>,
}

impl HtmlSink {
    pub fn new(dir: &Path) -> HtmlSink {
        HtmlSink {
            dir: dir.to_path_buf(),
            started: None,
        }
    }
}

/// The report of the run whose directory is `dir`, with its results `r`: the plan is read from
/// the directory, and the baseline too when none is given. `Err` when the page does not render
/// (a defect of its templates).
pub fn report_of(dir: &Path, r: &RunResults, baseline: Option<&RunResults>) -> io::Result<String> {
    use crate::files::input::{Accept, DEFAULT_MAX_INPUT, read_text};
    // read within limits: a run directory read back may hold anything
    let (plan, plan_note) =
        match read_text(&dir.join("plan.toml"), DEFAULT_MAX_INPUT, Accept::Regular) {
            Ok(text) => match crate::kinds::load_str(&dir.join("plan.toml"), &text, dir) {
                Ok(l) => (Some(l.plan), None),
                Err(e) => (None, Some(format!("plan.toml does not load ({e})"))),
            },
            Err(e) => (
                None,
                Some(format!("no plan.toml in the run directory ({e})")),
            ),
        };
    let read = match baseline {
        Some(_) => None,
        None => read_text(&dir.join(BASELINE_FILE), DEFAULT_MAX_INPUT, Accept::Regular)
            .ok()
            .and_then(|t| crate::compare::parse_results(&t).ok()),
    };
    render(&Inputs {
        results: r,
        plan: plan.as_ref(),
        plan_note,
        baseline: baseline.or(read.as_ref()),
    })
    .map_err(io::Error::other)
}

impl Sink for HtmlSink {
    fn name(&self) -> String {
        self.dir.join("report.html").display().to_string()
    }

    fn outputs(&self) -> Vec<(PathBuf, Existing)> {
        vec![(self.dir.join("report.html"), Existing::Nothing)]
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let r = match e {
            Event::Started(s) => {
                self.started = Some(s.clone());
                return Ok(());
            }
            Event::Finished(r) => r,
            _ => return Ok(()),
        };
        let page = match &self.started {
            Some(s) => render(&Inputs {
                results: r,
                plan: Some(&s.plan),
                plan_note: None,
                baseline: s.baseline.as_deref(),
            })
            .map_err(io::Error::other)?,
            // a run that never said what it runs: the page from the run directory
            None => report_of(&self.dir, r, None)?,
        };
        write_atomic(&self.dir, "report.html", page.as_bytes()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::results::Started;

    const PLAN: &str = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
name = "stack"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
[tests.rdma-bw]
"#;

    /// The page is drawn from the plan the run started with, in memory: a run directory
    /// without plan.toml (or with another one) does not change it.
    #[test]
    fn the_page_draws_the_plan_the_run_started_with() {
        let dir = tempfile::tempdir().unwrap();
        let plan = crate::kinds::load_str(Path::new("pair.toml"), PLAN, Path::new("."))
            .unwrap()
            .plan;
        let results = Arc::new(RunResults {
            plan: "pair".into(),
            ..RunResults::default()
        });
        let page = |started: Option<Started>| {
            let mut sink = HtmlSink::new(dir.path());
            if let Some(s) = started {
                sink.event(&Event::Started(Box::new(s))).unwrap();
            }
            sink.event(&Event::Finished(results.clone())).unwrap();
            std::fs::read_to_string(dir.path().join("report.html")).unwrap()
        };
        let from_memory = page(Some(Started {
            run_id: "pair-1".into(),
            plan: Arc::new(plan),
            baseline: None,
            transport: "sim",
            simulated: true,
        }));
        assert!(
            from_memory.contains("spark-b"),
            "the plan's fabric is drawn"
        );
        let from_disk = page(None);
        assert!(
            !from_disk.contains("spark-b"),
            "without a Started event the page reads the directory, which has no plan.toml"
        );
    }
}
