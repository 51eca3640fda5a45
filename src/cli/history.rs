//! `fabricplan history DIR`: a plan's runs (the run directories in DIR, e.g. `runs/two-spark/`)
//! oldest to newest, one line per link and collective with every value and its trend.
//!
//! Exit codes: 0 the history was printed; 2 DIR cannot be read or holds no run.

use std::path::PathBuf;

use clap::Args;

use super::compare::load_run;
use super::{CliError, Format, Outcome, Stdout};
use crate::compare;
use crate::exit;

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// A folder of run directories (`runs/<plan>/`).
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(args: &HistoryArgs) -> Outcome {
    let entries = std::fs::read_dir(&args.dir)
        .map_err(|e| CliError::Usage(format!("cannot read `{}`: {e}", args.dir.display())))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("results.json").is_file())
        .collect();
    dirs.sort();
    let mut runs = Vec::new();
    for d in &dirs {
        match load_run(d) {
            Ok(r) => {
                let name = d
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                runs.push((name, r.results));
            }
            // one unreadable run does not hide the others
            Err(e) => super::say(&format!("warning: skipped: {e}\n")),
        }
    }
    if runs.is_empty() {
        return Err(CliError::Usage(format!(
            "`{}` holds no run directory (a folder with a results.json)",
            args.dir.display()
        )));
    }
    let plans: std::collections::BTreeSet<&str> =
        runs.iter().map(|(_, r)| r.plan.as_str()).collect();
    if plans.len() > 1 {
        super::say(&format!(
            "warning: runs of {} plans ({}): each measurement is followed where it appears\n",
            plans.len(),
            plans.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    compare::order(&mut runs);
    let h = compare::history(&runs);
    let dir = args.dir.display().to_string();
    let mut out = Stdout::new();
    match args.format {
        Format::Text => out.write(&compare::history_text(&h, &dir)),
        Format::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(&compare::history_json(&h, &dir)).unwrap_or_default()
        )),
    }
    Ok(exit::OK)
}
