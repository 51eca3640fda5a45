//! `fabricplan report RUN_DIR [--baseline OLD]`: write the run's `report.html` again from its
//! results.json (and the plan copied beside it), judged against a baseline when one is given
//! (else against the `baseline.json` the run was judged against, if any).
//!
//! Exit codes: 0 the report was written; 2 a run cannot be read; 3 the report cannot be written.

use std::path::{Path, PathBuf};

use clap::Args;

use super::compare::{load_run, thresholds};
use super::{CliError, Outcome};
use crate::compare::{self, baseline};
use crate::exit;
use crate::files::output::{Existing, check_file, folder_of};
use crate::report::sink::html::{BASELINE_FILE, report_of};
use crate::report::sink::write_atomic;
use crate::results::RunResults;
use crate::text::inert;

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
    /// Where to write it [default: RUN_DIR/report.html]: a new file, or a regular file it
    /// replaces (never a device, FIFO, socket, directory or symbolic link).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// The largest results.json (or baseline.json, plan.toml) read; a bigger file is refused.
    #[arg(long, value_parser = crate::files::parse_size, value_name = "SIZE", default_value = "1GiB")]
    pub max_input_size: u64,
}

/// Where the report goes, checked before anything is read: a new file, or a regular file
/// replaced (never a device, FIFO, socket, directory or link).
fn target_of(args: &ReportArgs) -> Result<PathBuf, CliError> {
    let target = args
        .output
        .clone()
        .unwrap_or_else(|| args.run_dir.join("report.html"));
    if target.file_name().is_none() {
        return Err(CliError::Usage(format!(
            "`{}` names no file",
            target.display()
        )));
    }
    check_file(&target, Existing::Replace).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(target)
}

/// The baseline the run was judged against (its `baseline.json`), if there is one; one that
/// is there but cannot be read is an error, as the run's own results would be.
fn baseline_beside(dir: &Path, max: u64) -> Result<Option<RunResults>, String> {
    let path = dir.join(BASELINE_FILE);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => load_run(&path, max).map(|r| Some(r.results)),
    }
}

pub fn run(args: &ReportArgs) -> Outcome {
    let max = args.max_input_size;
    let target = target_of(args)?;
    let run = load_run(&args.run_dir, max).map_err(CliError::Usage)?;
    let mut results = run.results.clone();
    // the baseline: the one named, else the one the run was judged against
    let old = match &args.baseline {
        Some(b) => Some(
            load_run(b, max)
                .map_err(|e| CliError::Usage(format!("baseline: {e}")))?
                .results,
        ),
        None => baseline_beside(&run.dir, max).map_err(CliError::Usage)?,
    };
    if let Some(old) = &old {
        let t = thresholds(&run, args.max_drop).map_err(CliError::Usage)?;
        baseline::strip(&mut results);
        let v = compare::baseline_verdicts(&results, old, &t);
        baseline::apply(&mut results, v);
    }
    let html = report_of(&run.dir, &results, old.as_ref())
        .map_err(|e| CliError::NotWritten(format!("cannot write `{}`: {e}", target.display())))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let p = write_atomic(&folder_of(&target), &name, html.as_bytes())
        .map_err(|e| CliError::NotWritten(format!("cannot write `{}`: {e}", target.display())))?;
    super::say(&format!("wrote {}\n", inert(&p.display().to_string())));
    Ok(exit::OK)
}
