//! `fabricplan check PLAN [--node NAME]`: this node against the plan, read-only, by a deadline
//! (see [`crate::check`]). Runs on the node itself (Slurm's HealthCheckProgram, a prolog or
//! epilog, a timer): no SSH. Exit 0 OK or warnings, 1 a FAIL or the deadline, 2 usage or plan;
//! with `--nagios` 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;

use super::{CliError, Format, Outcome, Stdout, load, warning};
use crate::check::state::State;
use crate::check::{Checked, DEFAULT_DEADLINE_S, output};
use crate::exec::check::{self as exec, Asked};
use crate::plan::Plan;

/// Where the state is kept when `--state` is not given (one file per plan).
const STATE_DIR: &str = "/var/lib/fabricplan";

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The plan this node belongs to.
    pub plan: PathBuf,
    /// The plan node this machine is (default: Slurm's SLURMD_NODENAME, else the hostname).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Nagios plugin output and exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    #[arg(long, conflicts_with = "format")]
    pub nagios: bool,
    /// Also write the outcome for node_exporter's textfile collector to FILE (replaced
    /// atomically; the file must be a regular file or absent, never a link).
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// The state kept between checks (carrier counts, far-end MACs) [default:
    /// /var/lib/fabricplan/check-PLAN.json]; mode 0600, never written through a link.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Stop by this many seconds, saying what was checked, and exit 1.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DEADLINE_S)]
    pub deadline: f64,
    /// Drain this node in Slurm on a FAIL (`scontrol update ... state=drain reason='fabricplan
    /// check: TRAP PART'`); never a node already drained or down.
    #[arg(long)]
    pub drain: bool,
    /// Resume this node when the check passes and a check drained it (its reason); no other.
    #[arg(long)]
    pub resume: bool,
}

/// The default state file of `plan`: its name with anything but letters, digits, `-`, `_` and
/// `.` made `_`.
fn default_state(plan: &Plan) -> PathBuf {
    let safe: String = plan
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from(STATE_DIR).join(format!("check-{}.json", safe.trim_start_matches('.')))
}

pub fn run(args: CheckArgs) -> Outcome {
    if !args.nagios {
        return checked(&args);
    }
    // a Nagios-style collector reads 3 (UNKNOWN) for a check that could not judge the node
    match checked(&args) {
        Err(e) => {
            let mut said = String::new();
            e.write(&mut said, false, super::width());
            let why: Vec<&str> = said
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let mut out = Stdout::new();
            out.write(&format!("FABRICPLAN UNKNOWN - {}\n", why.join(" ")));
            Ok(3)
        }
        ok => ok,
    }
}

fn checked(args: &CheckArgs) -> Outcome {
    let started = Instant::now();
    if !(args.deadline.is_finite() && args.deadline > 0.0 && args.deadline <= 86_400.0) {
        return Err(CliError::Usage(format!(
            "--deadline {} is not a number of seconds between 0 and 86400",
            args.deadline
        )));
    }
    let loaded = load(&args.plan)?;
    let plan = &loaded.plan;
    let slurm_name = std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|s| !s.is_empty());
    let node = crate::check::find_node(
        plan,
        args.node.as_deref(),
        slurm_name.as_deref(),
        &exec::hostname(),
    )
    .map_err(CliError::Usage)?;
    if let Some(m) = &args.metrics {
        crate::files::output::check_file(m, crate::files::output::Existing::Replace)
            .map_err(|e| CliError::Usage(e.to_string()))?;
    }
    let state_path = args.state.clone().unwrap_or_else(|| default_state(plan));
    let name = plan.node(node).name.clone();
    let previous = previous_state(&state_path, plan, &name);
    let deadline = Duration::from_secs_f64(args.deadline);
    let end = started + deadline;
    // the reading gets the deadline less what judging, the files and Slurm need
    let reserve = if args.drain || args.resume {
        deadline.mul_f64(0.3).min(Duration::from_secs(10))
    } else {
        deadline.mul_f64(0.1).min(Duration::from_millis(500))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
    let reading = rt.block_on(exec::read(plan, node, end - reserve, args.deadline));
    let mut checked = crate::check::judge(plan, node, &reading, previous.as_ref());
    if let Some(next) = &checked.next
        && let Err(e) = exec::write_state(&state_path, &next.to_json())
    {
        warning(&format!(
            "the state file {} cannot be written: {e} (the next check cannot see what changed)",
            state_path.display()
        ));
    }
    if args.drain || args.resume {
        let slurm = slurm_name.unwrap_or_else(|| name.clone());
        let asked = Asked {
            drain: args.drain,
            resume: args.resume,
        };
        checked.service = rt.block_on(exec::service(&slurm, &checked, asked, end));
    }
    checked.took_s = started.elapsed().as_secs_f64();
    if let Some(m) = &args.metrics {
        write_metrics(m, &checked);
    }
    Ok(say(args, &checked))
}

/// The last check's state, when there is one of this plan and node; a file that cannot be read
/// is said, and the check goes on as the first.
fn previous_state(path: &std::path::Path, plan: &Plan, node: &str) -> Option<State> {
    let said = |e: String| {
        warning(&format!(
            "the state file {}: {e}; this check is taken as the first",
            path.display()
        ))
    };
    match exec::read_state(path) {
        Ok(Some(text)) => State::read(&text, plan, node).unwrap_or_else(|e| {
            said(e);
            None
        }),
        Ok(None) => None,
        Err(e) => {
            said(e);
            None
        }
    }
}

fn write_metrics(path: &std::path::Path, c: &Checked) {
    let dir = crate::files::output::folder_of(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Err(e) = crate::files::output::write_atomic(&dir, &name, output::metrics(c).as_bytes()) {
        warning(&format!(
            "the metrics file {} cannot be written: {e}",
            path.display()
        ));
    }
}

/// Print the outcome; the exit code.
fn say(args: &CheckArgs, c: &Checked) -> i32 {
    let mut out = Stdout::new();
    if args.nagios {
        out.write(&output::nagios(c));
        return output::nagios_code(c);
    }
    match args.format {
        Format::Text => out.write(&output::text(c)),
        Format::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(c).unwrap_or_default()
        )),
    }
    c.exit_code()
}
