//! The command line: one file per command, each parsing nothing (clap did) and returning its
//! exit code or the [`CliError`] that kept it from its result. With the terminal reporter, the
//! only code that writes to stdout and stderr (through [`Stdout`] and [`say`], never a print
//! macro): stdout or stderr going away (a closed pipe) ends the writing quietly and the command
//! still exits with its own code.

mod check;
mod compare;
mod completions;
mod detect;
mod error;
mod graph;
mod history;
mod hosts;
mod init;
mod launcher;
mod man;
mod parse;
mod plan;
mod report;
mod run;
mod schema;
mod service;
mod validate;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

use crate::plan as plan_mod;

pub use error::{CliError, Outcome};
pub use run::{RunArgs, execute};

#[derive(Debug, Parser)]
#[command(
    name = "fabricplan",
    version,
    about = "Prove a RoCE/RDMA GPU fabric is healthy before trusting it with a workload"
)]
pub struct Cli {
    /// Colour: `auto` (on a terminal, unless NO_COLOR is set), `always` or `never`.
    #[arg(
        long,
        value_enum,
        global = true,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub color: clap::ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum GraphFormat {
    Dot,
    Mermaid,
    /// The fabric drawn for a terminal: nodes, ports, cables, switches, ISLs.
    Text,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check plans: TOML syntax and every semantic problem, with diagnostics. Exit 2 on error.
    Validate {
        #[arg(required = true)]
        plans: Vec<PathBuf>,
    },
    /// Print the plan's JSON Schema (draft-07).
    Schema,
    /// Dry run: the rounds, jobs and exact command lines each host would run (under Slurm: the
    /// allocation and the exact srun lines). Runs nothing.
    Plan {
        plan: PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Read the nodes first (read-only discovery) and fill every placeholder (device, GID
        /// index, netdev, addresses): command lines to paste on each host. Exit 1 when a node
        /// does not answer or a half cannot be resolved.
        #[arg(long)]
        resolve: bool,
        #[command(flatten)]
        launcher: launcher::LauncherArgs,
        #[command(flatten)]
        hosts: hosts::HostArgs,
        /// Also show what `run --setup` runs on each host first (the plan's `[setup]`: packages
        /// installed, nccl-tests built), exactly as the launcher runs it.
        #[arg(long, conflicts_with = "resolve")]
        setup: bool,
    },
    /// Print the fabric graph: Graphviz dot, Mermaid, or drawn as text for the terminal.
    Graph {
        plan: PathBuf,
        #[arg(long, value_enum, default_value = "dot")]
        format: GraphFormat,
    },
    /// Run the plan: discovery, preflight, every round, verdict. Exit 0 green or warnings, 1 any
    /// FAIL or a job that could not measure, 2 invalid plan or usage, 3 the run directory could
    /// not be written completely, 130 interrupted.
    Run(RunArgs),
    /// Check this node against the plan, on the node itself (Slurm health check, prolog,
    /// epilog, a timer): devices, state, rate, MTU, GID, addresses, routes, PCIe, firmware, each
    /// cable's far end, flaps since the last check. Read-only, by a deadline. Exit 0 OK or
    /// warnings, 1 a FAIL or the deadline, 2 usage or plan (`--nagios`: 0/1/2/3).
    Check(check::CheckArgs),
    /// Discover each node's RDMA devices (read-only): state, netdev, IPv4, MTU, GID index; and
    /// the exact `ip addr add` to run where a planned half has no address. Runs nothing else.
    Detect(detect::DetectArgs),
    /// Draft a site's plan from what its hosts show (read-only): nodes, a profile per kind of
    /// box, cables from who answers (LLDP, IPv6 link-local neighbours, IPv4 neighbours),
    /// subnets in use or proposed, tests and gates; a TODO comment for what it cannot decide.
    /// Exit 0 nothing left undecided, 1 TODOs left (the plan is still written), 2 usage.
    Init(init::InitArgs),
    /// Read a saved tool output (FILE or stdin) and print what fabricplan reads in it. Exit 0
    /// when the output was read (even an error the tool reported), 1 when nothing in it is
    /// recognisable or it is empty, 2 when it cannot be read.
    Parse {
        tool: crate::parse::Tool,
        /// The saved output; stdin when absent or `-`.
        file: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Compare a run with a baseline run (run directories or results.json), causes first: each
    /// finding of the new run with the regressions it explains, then each regression no finding
    /// explains (--all: every measurement, NCCL per size too). A regression: worse than the old
    /// run by more than the max change (10%, the plan's [regression] table, --max-drop), the
    /// rule history's "declining" uses. Exit 0 no regression, 1 a regression, 2 an input that
    /// is not a run.
    Compare(compare::CompareArgs),
    /// A plan's runs oldest to newest (DIR holds run directories, e.g. runs/two-spark/): what
    /// declines, then one line per link and collective with its values and trend. Declining:
    /// the newest run worse than the oldest by more than the max change (10%, the newest plan's
    /// [regression] table, --max-drop) over at least 3 runs: the rule compare calls a
    /// regression.
    History(history::HistoryArgs),
    /// Write a run's report.html again from its results.json, optionally against a baseline.
    Report(report::ReportArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the man page of fabricplan, or of one of its commands.
    Man { command: Option<String> },
}

/// Run the CLI: the command's own exit code, or the error that kept it from its result (`main`
/// says it and exits with its code).
pub fn run(cli: Cli) -> Outcome {
    anstream::ColorChoice::write_global(match cli.color {
        clap::ColorChoice::Always => anstream::ColorChoice::Always,
        clap::ColorChoice::Never => anstream::ColorChoice::Never,
        clap::ColorChoice::Auto => anstream::ColorChoice::Auto,
    });
    match cli.command {
        Command::Validate { plans } => validate::run(&plans),
        Command::Schema => schema::run(),
        Command::Plan {
            plan,
            format,
            resolve,
            launcher,
            hosts,
            setup,
        } => match resolve {
            true => plan::resolved(&plan, format, &launcher, &hosts),
            false => plan::run(&plan, format, &launcher, setup),
        },
        Command::Graph { plan, format } => graph::run(&plan, format),
        Command::Run(args) => run::run(args),
        Command::Detect(args) => detect::run(args),
        Command::Init(args) => init::run(args),
        Command::Check(args) => check::run(args),
        Command::Parse { tool, file, format } => parse::run(tool, file.as_deref(), format),
        Command::Compare(args) => compare::run(&args),
        Command::History(args) => history::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Completions { shell } => completions::run(shell),
        Command::Man { command } => man::run(command.as_deref()),
    }
}

/// Colour on a stream, as anstream chooses it: `--color always` or `never`; else on a terminal
/// that shows colour, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE forces it).
fn color_on<S: anstream::stream::RawStream>(stream: &S) -> bool {
    anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never
}

/// Colour on stderr (diagnostics).
fn color() -> bool {
    color_on(&std::io::stderr())
}

/// Colour on stdout (the verdict table).
pub fn color_stdout() -> bool {
    color_on(&std::io::stdout())
}

/// The terminal's width, measured on stdout; else `COLUMNS` when it is set (a pipe into a
/// pager of known width); else stderr's; 100 when none says. Never below 40.
pub fn width() -> usize {
    let term =
        |w: Option<(terminal_size::Width, terminal_size::Height)>| w.map(|(w, _)| usize::from(w.0));
    let columns = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
    };
    term(terminal_size::terminal_size_of(std::io::stdout()))
        .or_else(columns)
        .or_else(|| term(terminal_size::terminal_size_of(std::io::stderr())))
        .filter(|w| *w >= 40)
        .unwrap_or(100)
}

/// Load a plan; its warnings are said on stderr, its errors are the command's.
pub fn load(path: &Path) -> Result<plan_mod::Loaded, CliError> {
    let l = crate::kinds::load(path).map_err(CliError::Plan)?;
    if !l.warnings.problems.is_empty() {
        say(&l.warnings.render(color(), width()));
    }
    Ok(l)
}

/// Say `text` on stderr (a warning, a note, an error). A closed stderr says nothing and never
/// panics: the exit code is the message that matters then.
pub fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Stdout for a command's output: a closed pipe (`| head -1`) ends the writing, quietly; any
/// other error is said once on stderr.
pub struct Stdout {
    out: std::io::BufWriter<std::io::Stdout>,
    closed: bool,
}

impl Default for Stdout {
    fn default() -> Self {
        Stdout::new()
    }
}

impl Stdout {
    pub fn new() -> Stdout {
        Stdout {
            out: std::io::BufWriter::new(std::io::stdout()),
            closed: false,
        }
    }

    /// Write `text` (nothing once the reader is gone).
    pub fn write(&mut self, text: &str) {
        if self.closed {
            return;
        }
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            self.fail(e);
        }
    }

    /// Flush what is buffered.
    pub fn flush(&mut self) {
        if self.closed {
            return;
        }
        if let Err(e) = self.out.flush() {
            self.fail(e);
        }
    }

    fn fail(&mut self, e: std::io::Error) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            say(&format!("error: cannot write to stdout: {e}\n"));
        }
        self.closed = true;
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.out.write_all(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.fail(e);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Stdout::flush(self);
        Ok(())
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        Stdout::flush(self);
    }
}

/// `warning: MSG` on stderr, its text inert (a path or a value read from a file cannot drive
/// the terminal).
pub(crate) fn warning(msg: &str) {
    say(&format!("warning: {}\n", crate::text::inert_lines(msg)));
}

/// The runtime for the commands that reach hosts.
fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))
}
