//! `fabricplan report RUN_DIR [--baseline OLD]`: write the run's `report.html` again from its
//! results.json (and the plan copied beside it), judged against a baseline when one is given
//! (else against the `baseline.json` the run was judged against, if any).
//!
//! Exit codes: 0 the report was written; 2 a run cannot be read; 3 the report cannot be written.

use std::path::PathBuf;

use clap::Args;

use super::compare::{load_run, thresholds};
use super::{CliError, Outcome};
use crate::compare::{self, baseline};
use crate::exit;
use crate::report::sink::html::{BASELINE_FILE, report_of};
use crate::report::sink::write_atomic;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Judge the run against this one too (a run directory or its results.json).
    #[arg(long, value_name = "OLD")]
    pub baseline: Option<PathBuf>,
    /// Largest drop (bandwidth) or rise (latency, time) against the baseline that is not a
    /// regression, for metrics the plan's `[regression]` table does not name [default: 10%].
    #[arg(long, value_parser = compare::parse_pct, value_name = "PCT")]
    pub max_drop: Option<f64>,
    /// Where to write it [default: RUN_DIR/report.html].
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

pub fn run(args: &ReportArgs) -> Outcome {
    let run = load_run(&args.run_dir).map_err(CliError::Usage)?;
    let mut results = run.results.clone();
    // the baseline: the one named, else the one the run was judged against
    let named = args.baseline.as_ref().map(|b| load_run(b)).transpose();
    let old = match named.map_err(|e| CliError::Usage(format!("baseline: {e}")))? {
        Some(o) => Some(o.results),
        None => std::fs::read_to_string(run.dir.join(BASELINE_FILE))
            .ok()
            .and_then(|t| compare::parse_results(&t).ok()),
    };
    if let Some(old) = &old {
        let t = thresholds(&run, args.max_drop).map_err(CliError::Usage)?;
        baseline::strip(&mut results);
        let v = compare::baseline_verdicts(&results, old, &t);
        baseline::apply(&mut results, v);
    }
    let target = args
        .output
        .clone()
        .unwrap_or_else(|| run.dir.join("report.html"));
    let html = report_of(&run.dir, &results, old.as_ref())
        .map_err(|e| CliError::NotWritten(format!("cannot write `{}`: {e}", target.display())))?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Err(CliError::Usage(format!(
            "`{}` names no file",
            target.display()
        )));
    };
    let p = write_atomic(&dir, &name, html.as_bytes())
        .map_err(|e| CliError::NotWritten(format!("cannot write `{}`: {e}", target.display())))?;
    super::say(&format!("wrote {}\n", p.display()));
    Ok(exit::OK)
}
