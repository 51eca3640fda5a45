//! `report.html` in the run directory: the run at a glance (see [`crate::report::html`]), drawn
//! from the results, the plan copied beside them and, when the run was judged against one, the
//! baseline's results (`baseline.json`).

use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::exec::runner::Event;
use crate::files::output::Existing;
use crate::report::html::{Inputs, render};
use crate::results::RunResults;

/// The name of the baseline's results in a run directory judged against one.
pub const BASELINE_FILE: &str = "baseline.json";

/// `report.html` in the run directory.
pub struct HtmlSink {
    dir: PathBuf,
}

impl HtmlSink {
    pub fn new(dir: &Path) -> HtmlSink {
        HtmlSink {
            dir: dir.to_path_buf(),
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
        let Event::Finished(r) = e else {
            return Ok(());
        };
        write_atomic(
            &self.dir,
            "report.html",
            report_of(&self.dir, r, None)?.as_bytes(),
        )
        .map(|_| ())
    }
}
