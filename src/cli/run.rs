//! `fabricplan run PLAN`: discovery, preflight, every round, the verdict; the run directory's
//! sinks and the terminal fed by the runner's events.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::hosts::HostArgs;
use super::launcher::LauncherArgs;
use super::service::ServiceArgs;
use super::{CliError, Format, Outcome, Stdout, load, runtime};
use crate::compare::Baseline;
use crate::exec::evidence::Evidence;
use crate::exec::launch::Launcher;
use crate::exec::runner::{self, RunConfig, RunOptions};
use crate::plan::Plan;
use crate::report::phases::PhaseLines;
use crate::report::sink::{self, Ended, Feed, Sink, Sinks};
use crate::report::terminal::{JsonStdout, Terminal};
use crate::results::KeepEvidence;

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    pub plan: PathBuf,
    /// Only jobs matching: a test kind, node, link, cable, round or NCCL test name (repeatable).
    #[arg(long)]
    pub only: Vec<String>,
    /// Skip jobs matching (repeatable).
    #[arg(long)]
    pub skip: Vec<String>,
    /// Print what would run and stop (same as `fabricplan plan`).
    #[arg(long)]
    pub dry_run: bool,
    /// Run directory (default runs/<plan>/<UTC timestamp>/); it must not hold another run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Run the plan's setup stage first (installs packages: not read-only).
    #[arg(long)]
    pub setup: bool,
    /// Commands in flight at once.
    #[arg(long, default_value_t = 32)]
    pub max_parallel: usize,
    /// Which job outputs to keep as files under jobs/: `all`, or `failed` (full stdout, stderr
    /// and server logs only for jobs with a WARN or FAIL or that could not measure; an OK job
    /// keeps a digest of each output in results.json) [default: all up to 256 jobs, failed
    /// above].
    #[arg(long, value_enum, value_name = "WHICH")]
    pub keep_evidence: Option<KeepArg>,
    #[command(flatten)]
    pub hosts: HostArgs,
    #[command(flatten)]
    pub launcher: LauncherArgs,
    // over time and at a glance: baseline and metrics
    /// Judge the run against a baseline run too (its directory or results.json): a value that
    /// dropped (bandwidth) or rose (latency, time) beyond the max drop is a WARN.
    #[arg(long, value_name = "OLD")]
    pub baseline: Option<PathBuf>,
    /// Largest change against the baseline that is not a regression, for metrics the plan's
    /// `[regression]` table does not name [default: 10%].
    #[arg(long, value_parser = crate::compare::parse_pct, value_name = "PCT", requires = "baseline")]
    pub max_drop: Option<f64>,
    /// Also write the results in the Prometheus text format to FILE (replaced atomically), for
    /// node_exporter's textfile collector.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// The largest baseline results.json read (`--baseline`); a bigger file is refused.
    #[arg(long, value_parser = crate::files::parse_size, value_name = "SIZE", default_value = "1GiB")]
    pub max_input_size: u64,
    #[command(flatten)]
    pub service: ServiceArgs,
    /// After each round, print where its time went on stderr (counters, server starts,
    /// readiness, staging, release, the longest tool, stops and logs, judging, overhead: the
    /// round's `phases` in results.json), and show every gate in a table, not only the compact
    /// answer.
    #[arg(short, long)]
    pub verbose: bool,
    /// Show every gate in a table (the table of `--verbose`, without its phase lines).
    #[arg(long)]
    pub all: bool,
}

/// `--keep-evidence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepArg {
    All,
    Failed,
}

impl From<KeepArg> for KeepEvidence {
    fn from(k: KeepArg) -> KeepEvidence {
        match k {
            KeepArg::All => KeepEvidence::All,
            KeepArg::Failed => KeepEvidence::Failed,
        }
    }
}

pub fn run(args: RunArgs) -> Outcome {
    let l = load(&args.plan)?;
    selectors(&l.plan, &args)?;
    if args.dry_run {
        let code = super::plan::show(&l.plan, args.format, &args.launcher, args.setup)?;
        args.service.dry_run(&l.plan, args.format)?;
        return Ok(code);
    }
    if args.setup && l.plan.setup.is_none() {
        return Err(CliError::Usage(
            "--setup given but the plan declares no [setup] stage".into(),
        ));
    }
    let launcher = args
        .launcher
        .launcher(Some(&l.plan), &args.hosts)
        .map_err(CliError::Usage)?;
    execute(l.plan, launcher, &args)
}

/// Every `--only` and `--skip` value must select a job of the plan: one that selects nothing
/// is refused with what the plan's jobs answer to (a typo would otherwise run everything, or
/// nothing, silently).
fn selectors(plan: &Plan, args: &RunArgs) -> Result<(), CliError> {
    if args.only.is_empty() && args.skip.is_empty() {
        return Ok(());
    }
    let schedule = crate::kinds::schedule(plan);
    let fabric = crate::topology::Fabric::build(plan);
    let rounds: Vec<crate::schedule::Round> = schedule.rounds(plan, &fabric).collect();
    let jobs = || {
        rounds
            .iter()
            .flat_map(|r| r.jobs.iter().map(move |j| (r, j)))
    };
    let mut problems = Vec::new();
    for (flag, values) in [("--only", &args.only), ("--skip", &args.skip)] {
        for v in values {
            if jobs().any(|(r, j)| j.matches(plan, &r.name, v)) {
                continue;
            }
            problems.push(CliError::Usage(format!(
                "`{flag} {v}` selects no job of plan `{}`{}: it takes {}",
                plan.name,
                suggestion(plan, &rounds, v),
                selector_words(plan, &rounds)
            )));
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(problems.remove(0)),
        _ => Err(CliError::Many(problems)),
    }
}

/// What the plan's jobs answer to, by kind of name, a few of each.
fn selector_words(plan: &Plan, rounds: &[crate::schedule::Round]) -> String {
    let few = |mut v: Vec<String>| -> String {
        v.dedup();
        let n = v.len();
        let mut shown: Vec<String> = v.into_iter().take(6).collect();
        if n > 6 {
            shown.push(format!("and {} more", n - 6));
        }
        shown.join(", ")
    };
    let mut kinds: Vec<String> = Vec::new();
    let mut tests: Vec<String> = Vec::new();
    for r in rounds {
        for j in &r.jobs {
            let k = j.kind.name().to_string();
            if !kinds.contains(&k) {
                kinds.push(k);
            }
            if let Some(t) = j.ranks.as_ref().filter(|t| !tests.contains(&t.name)) {
                tests.push(t.name.clone());
            }
        }
    }
    let mut out = vec![
        format!("a test kind ({})", few(kinds)),
        format!(
            "a node ({})",
            few(plan.nodes.iter().map(|n| n.name.clone()).collect())
        ),
        format!(
            "a cable ({})",
            few(plan.cables.iter().map(|c| c.name.clone()).collect())
        ),
        format!(
            "a link ({})",
            few(plan.segments.iter().map(|s| s.name.clone()).collect())
        ),
        format!(
            "a round ({})",
            few(rounds.iter().map(|r| r.name.clone()).collect())
        ),
    ];
    if !tests.is_empty() {
        out.push(format!("an NCCL test ({})", few(tests)));
    }
    out.push("or a job id (`fabricplan plan` lists them)".into());
    out.join(", ")
}

/// `; did you mean `spark-a`?` among every name a job answers to.
fn suggestion(plan: &Plan, rounds: &[crate::schedule::Round], v: &str) -> String {
    let mut names: Vec<&str> = plan.nodes.iter().map(|n| n.name.as_str()).collect();
    names.extend(plan.cables.iter().map(|c| c.name.as_str()));
    names.extend(plan.segments.iter().map(|s| s.name.as_str()));
    for r in rounds {
        names.push(r.name.as_str());
        for j in &r.jobs {
            names.push(j.kind.name());
            if let Some(t) = &j.ranks {
                names.push(t.name.as_str());
            }
        }
    }
    names.sort_unstable();
    names.dedup();
    crate::plan::diag::did_you_mean(v, names)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

/// `runs/<plan>/<stamp>`, or `<stamp>-2`, `-3`... when a run of the same second is there.
fn default_dir(plan: &str, stamp: &str) -> PathBuf {
    let base = PathBuf::from("runs").join(plan);
    let mut dir = base.join(stamp);
    let mut n = 2;
    while dir.exists() {
        dir = base.join(format!("{stamp}-{n}"));
        n += 1;
    }
    dir
}

/// `20261201T074501Z`: now, in UTC, as run ids and run directories carry it.
fn utc_stamp() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(['-', ':'], "")
}

/// Ctrl-C or SIGTERM: stop launching, clean up what started, write partial results.
pub(super) fn on_interrupt(cancel: tokio::sync::watch::Sender<bool>) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match term.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        let _ = cancel.send(true);
    });
}

/// What a run writes, checked and opened before anything runs, and the baseline it is judged
/// against.
struct Prepared {
    baseline: Option<Baseline>,
    dir: PathBuf,
    evidence: Evidence,
    run_id: String,
}

/// Read the baseline and check every output path (the run directory, each sink's file, the
/// metrics file) before anything runs; then create the run directory.
fn prepare(
    plan: &Plan,
    args: &RunArgs,
    sinks: impl FnOnce(&std::path::Path) -> Sinks,
) -> Result<(Prepared, Sinks), CliError> {
    let baseline = args
        .baseline
        .as_deref()
        .map(|p| {
            super::compare::load_baseline(p, &plan.regression, args.max_drop, args.max_input_size)
        })
        .transpose()
        .map_err(CliError::Usage)?;
    let stamp = utc_stamp();
    let run_id = format!("{}-{stamp}", plan.name);
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| default_dir(&plan.name, &stamp));
    let sinks = sinks(&dir);
    let mut problems: Vec<CliError> = Vec::new();
    if let Err(e) = crate::files::output::check_run_dir(&dir) {
        problems.push(CliError::Usage(format!("--out: {e}")));
    } else if let Err(e) = Evidence::check_free(&dir) {
        problems.push(CliError::Usage(e.to_string()));
    } else {
        problems.extend(
            sinks
                .check_outputs()
                .iter()
                .map(|e| CliError::Usage(e.to_string())),
        );
        problems.extend(
            args.service
                .check_exclude()
                .into_iter()
                .map(|e| CliError::Usage(format!("--exclude-file: {e}"))),
        );
    }
    if !problems.is_empty() {
        problems.push(CliError::Usage(
            "nothing was run: every output must be a new or regular file of its own".into(),
        ));
        return Err(CliError::Many(problems));
    }
    let evidence =
        Evidence::create(&dir, &plan.text).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok((
        Prepared {
            baseline,
            dir,
            evidence,
            run_id,
        },
        sinks,
    ))
}

/// `fabricplan run PLAN` (with `--sim` when given), each word quoted for a
/// shell: the command the last lines suggest.
fn again_command(args: &RunArgs) -> String {
    let plan = args.plan.display().to_string();
    let mut words = vec![
        "fabricplan".to_string(),
        "run".to_string(),
        crate::render::quote::quote(&plan).unwrap_or(plan),
    ];
    if args.hosts.sim {
        words.push("--sim".into());
    }
    words.join(" ")
}

/// The sinks that show the run as it goes: the terminal (and its progress bar, which `-v`'s
/// phase lines print above) or JSON on stdout.
fn front_sinks(dir: &std::path::Path, args: &RunArgs) -> Sinks {
    let (front, bar): (Box<dyn Sink>, _) = match args.format {
        Format::Text => {
            let t = Terminal::new(
                Box::new(Stdout::new()),
                dir.display().to_string(),
                super::width(),
                super::color_stdout(),
            )
            .all(args.verbose || args.all)
            .again(again_command(args));
            let bar = t.progress_bar();
            (Box::new(t), Some(bar))
        }
        Format::Json => (Box::new(JsonStdout::new(Box::new(Stdout::new()))), None),
    };
    let mut sinks = Sinks::new(vec![front]);
    if args.verbose {
        sinks.push(Box::new(PhaseLines::new(Box::new(std::io::stderr()), bar)));
    }
    sinks
}

/// Run a plan with a launcher; prints progress and the verdict; returns the verdict's exit
/// code, or the evidence that could not be written. Every output is checked (and the baseline
/// read) before anything runs; the run itself is the runner's, from its start to its end.
pub fn execute(plan: Plan, launcher: Arc<dyn Launcher>, args: &RunArgs) -> Outcome {
    let metrics: Vec<Box<dyn Sink>> = match &args.metrics {
        Some(m) => vec![Box::new(sink::MetricsSink::new(m))],
        None => Vec::new(),
    };
    let (p, files) = prepare(&plan, args, |dir| {
        Sinks::new(sink::run_directory(dir, metrics))
    })?;
    let front = front_sinks(&p.dir, args);
    let cfg = RunConfig {
        plan: Arc::new(plan),
        launcher,
        opts: RunOptions {
            run_id: p.run_id.clone(),
            only: args.only.clone(),
            skip: args.skip.clone(),
            max_parallel: args.max_parallel,
            keep_evidence: args.keep_evidence.map(KeepEvidence::from),
        },
        evidence: &p.evidence,
        setup: args.setup,
        baseline: p.baseline,
        service: args.service.requested(),
    };
    let ended = runtime()?.block_on(drive(&cfg, Feed { files, front }))?;
    if !ended.lost.is_empty() {
        return Err(CliError::Incomplete {
            lost: ended.lost,
            dir: p.dir.clone(),
        });
    }
    Ok(ended.exit_code)
}

/// The run, its events fed to the sinks as they come, until it ends (Ctrl-C and SIGTERM
/// interrupt it: what is left is recorded as skipped).
async fn drive(cfg: &RunConfig<'_>, mut feed: Feed) -> Result<Ended, CliError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    on_interrupt(cancel_tx);
    let sinks = async {
        let mut ended = None;
        while let Some(e) = rx.recv().await {
            ended = feed.event(e).or(ended);
        }
        ended
    };
    let ((), ended) = tokio::join!(runner::run(cfg, tx, cancel_rx), sinks);
    ended.ok_or_else(|| CliError::Failed("the run ended without its results".into()))
}
