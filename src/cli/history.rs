//! `fabricplan history DIR`: a plan's runs (the run directories in DIR, e.g. `runs/two-spark/`)
//! oldest to newest, one line per link and collective with every value and its trend.
//!
//! Exit codes: 0 the history was printed; 2 DIR cannot be read or holds no run.

use std::path::{Path, PathBuf};

use clap::Args;

use super::compare::{LoadedRun, load_run};
use super::{CliError, Format, Outcome, Stdout};
use crate::compare;
use crate::exit;
use crate::results::RunResults;

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// A folder of run directories (`runs/<plan>/`).
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Largest drop of a bandwidth (or rise of a latency or time) first to last that is not a
    /// decline, for every metric the newest run's plan `[regression]` table does not name
    /// [default: 10%]: the rule `compare` uses for a regression.
    #[arg(long, value_parser = compare::parse_pct, value_name = "PCT")]
    pub max_drop: Option<f64>,
    /// Show every run's value (text), however wide; by default the newest runs that fit.
    #[arg(long)]
    pub all: bool,
    /// The largest results.json (or plan.toml) read; a bigger file is refused (and its run
    /// skipped, with a warning).
    #[arg(long, value_parser = crate::files::parse_size, value_name = "SIZE", default_value = "1GiB")]
    pub max_input_size: u64,
}

/// The runs in `dir`, by name, each one read within `max` bytes per file; every entry that is
/// not a readable run is named on stderr with why.
fn read_runs(dir: &Path, max: u64) -> Result<Vec<(String, LoadedRun)>, CliError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError::Usage(format!("cannot read `{}`: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    let mut runs = Vec::new();
    for p in &paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // a folder of runs may hold other things: each one not read is said, with why
        let read = match std::fs::metadata(p) {
            Ok(m) if !m.is_dir() => Err(format!(
                "{}, not a run directory",
                crate::files::kind_of(&m)
            )),
            Err(e) => Err(e.to_string()),
            Ok(_) => load_run(p, max).map_err(|e| e.to_string()),
        };
        match read {
            Ok(r) => runs.push((name, r)),
            // one unreadable run does not hide the others
            Err(e) => super::warning(&format!("skipped `{name}`: {e}")),
        }
    }
    Ok(runs)
}

pub fn run(args: &HistoryArgs) -> Outcome {
    let loaded = read_runs(&args.dir, args.max_input_size)?;
    // the newest run's plan sets the rule, as the new run's does for compare
    let newest = loaded
        .iter()
        .max_by(|(an, a), (bn, b)| {
            a.results
                .started_unix_ms
                .cmp(&b.results.started_unix_ms)
                .then_with(|| an.cmp(bn))
        })
        .map(|(_, r)| r);
    let t = match newest {
        Some(r) => super::compare::thresholds(r, args.max_drop).map_err(CliError::Usage)?,
        None => compare::Thresholds::new(args.max_drop.unwrap_or(compare::DEFAULT_MAX_DROP_PCT)),
    };
    let mut runs: Vec<(String, RunResults)> =
        loaded.into_iter().map(|(n, r)| (n, r.results)).collect();
    if runs.is_empty() {
        return Err(CliError::Usage(format!(
            "`{}` holds no run directory (a folder with a results.json)",
            args.dir.display()
        )));
    }
    let plans: std::collections::BTreeSet<&str> =
        runs.iter().map(|(_, r)| r.plan.as_str()).collect();
    if plans.len() > 1 {
        super::warning(&format!(
            "runs of {} plans ({}): each measurement is followed where it appears",
            plans.len(),
            plans.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    compare::order(&mut runs);
    let h = compare::history_with(&runs, &t);
    let dir = args.dir.display().to_string();
    let mut out = Stdout::new();
    match args.format {
        Format::Text => out.write(&compare::history_text_with(
            &h,
            &dir,
            &t,
            &compare::TextView {
                all: args.all,
                width: super::width(),
            },
        )),
        Format::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(&compare::history_json(&h, &dir)).unwrap_or_default()
        )),
    }
    Ok(exit::OK)
}
