//! `fabricplan compare OLD NEW`: a run against a baseline run, per link, half, direction and
//! round and per NCCL collective and message size: both values, the change, the regressions.
//!
//! Exit codes: 0 no regression, 1 a regression, 2 an input that cannot be read or is not a run.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::{CliError, Outcome, Stdout};
use crate::compare::{self, Baseline, Side, Thresholds};
use crate::exit;
use crate::results::RunResults;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum CompareFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline: a run directory or its results.json.
    pub old: PathBuf,
    /// The run judged against it: a run directory or its results.json.
    pub new: PathBuf,
    /// Largest drop of a bandwidth (or rise of a latency or time) that is not a regression, for
    /// every metric the new run's plan `[regression]` table does not name [default: 10%].
    #[arg(long, value_parser = compare::parse_pct, value_name = "PCT")]
    pub max_drop: Option<f64>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormat,
    /// List every measurement compared, with the NCCL rows per message size (text; the other
    /// formats always have every row).
    #[arg(long)]
    pub all: bool,
    /// The largest results.json (or plan.toml) read; a bigger file is refused.
    #[arg(long, value_parser = crate::files::parse_size, value_name = "SIZE", default_value = "1GiB")]
    pub max_input_size: u64,
}

/// A run read from disk.
pub struct LoadedRun {
    /// As the user named it.
    pub path: String,
    /// Its run directory (the folder of its results.json).
    pub dir: PathBuf,
    pub results: RunResults,
    /// The plan copied into the run directory, when it is there.
    pub plan_text: Option<String>,
}

/// The results file a run path names: `PATH/results.json` for a directory (a link to one
/// followed), else the path itself; and the run's directory.
fn results_file(path: &Path) -> (PathBuf, PathBuf) {
    if path.is_dir() {
        (path.join("results.json"), path.to_path_buf())
    } else {
        (path.to_path_buf(), crate::files::output::folder_of(path))
    }
}

/// Read a run from its directory or its results.json: regular files only, each at most `max`
/// bytes, the results streamed (read in passes: the head, the typed fields, the tools' outputs;
/// never the whole document as one value).
pub fn load_run(path: &Path, max: u64) -> Result<LoadedRun, String> {
    use crate::files::input::{self, Accept, InputError};
    let (file, dir) = results_file(path);
    let open = || {
        input::open(&file, max, Accept::Regular).map_err(|e| match e {
            InputError::NotFound(_) if path.is_dir() => format!(
                "`{}` is not a run directory: it has no results.json",
                path.display()
            ),
            e => e.to_string(),
        })
    };
    let not_results =
        |e: compare::ResultsError| format!("`{}` is not a run's results: {e}", file.display());
    compare::check_head(open()?).map_err(not_results)?;
    let mut results = compare::results_from(open()?).map_err(not_results)?;
    compare::outputs_from(open()?, &mut results).map_err(not_results)?;
    let plan_text = input::read_text_if_there(&dir.join("plan.toml"), max, Accept::Regular)
        .map_err(|e| e.to_string())?;
    Ok(LoadedRun {
        path: path.display().to_string(),
        dir,
        results,
        plan_text,
    })
}

/// The regression thresholds of a run: its plan's `[regression]` table and `--max-drop`.
pub fn thresholds(run: &LoadedRun, max_drop: Option<f64>) -> Result<Thresholds, String> {
    match &run.plan_text {
        Some(t) => Thresholds::from_plan_text(t, max_drop)
            .map_err(|e| format!("{}: {e}", run.dir.join("plan.toml").display())),
        None => Ok(Thresholds::new(
            max_drop.unwrap_or(compare::DEFAULT_MAX_DROP_PCT),
        )),
    }
}

pub fn run(args: &CompareArgs) -> Outcome {
    // both inputs are read, and what is wrong with each is said
    let max = args.max_input_size;
    let (old, new) = match (load_run(&args.old, max), load_run(&args.new, max)) {
        (Ok(o), Ok(n)) => (o, n),
        (o, n) => {
            let errors = [o.err(), n.err()].into_iter().flatten();
            return Err(CliError::Many(errors.map(CliError::Usage).collect()));
        }
    };
    let t = thresholds(&new, args.max_drop).map_err(CliError::Usage)?;
    let mut c = compare::compare(&old.results, &new.results, &t);
    if new.plan_text.is_none() {
        c.notes.push(format!(
            "no plan.toml beside `{}`: its [regression] table is unknown, {}% applies",
            new.path, t.default_pct
        ));
    }
    let (o, n) = (
        Side {
            path: old.path.clone(),
            run: &old.results,
        },
        Side {
            path: new.path.clone(),
            run: &new.results,
        },
    );
    let mut out = Stdout::new();
    match args.format {
        CompareFormat::Text => out.write(&compare::comparison_text_with(
            &c,
            &o,
            &n,
            &t,
            &compare::TextView {
                all: args.all,
                width: super::width(),
            },
        )),
        CompareFormat::Markdown => out.write(&compare::comparison_markdown(&c, &o, &n, &t)),
        CompareFormat::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(&compare::comparison_json(&c, &o, &n, &t))
                .unwrap_or_default()
        )),
    }
    if c.rows.is_empty() {
        return Err(CliError::Usage(
            "the two runs share no measurement: nothing was compared".into(),
        ));
    }
    Ok(if c.regressions().next().is_some() {
        exit::FAIL
    } else {
        exit::OK
    })
}

/// Read `run --baseline OLD` before anything runs; the thresholds come from the plan being run
/// (its validated `[regression]` table) and `--max-drop`.
pub fn load_baseline(
    path: &Path,
    regression: &crate::plan::Regression,
    max_drop: Option<f64>,
    max: u64,
) -> Result<Baseline, String> {
    use crate::files::input::{Accept, read_text};
    let old = load_run(path, max).map_err(|e| format!("--baseline: {e}"))?;
    let (file, _) = results_file(path);
    let text = read_text(&file, max, Accept::Regular).map_err(|e| format!("--baseline: {e}"))?;
    let thresholds = Thresholds::from_plan(regression, max_drop);
    Ok(Baseline {
        results: std::sync::Arc::new(old.results),
        text,
        thresholds,
    })
}
