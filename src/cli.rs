//! The command line. Parses arguments, calls the library, prints, and returns the exit code.
//! With the terminal reporter, the only place that prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

use crate::exit;
use crate::parse::{self, Tool};
use crate::plan::{self, LoadError};
use crate::report::plan_view;
use crate::schedule::Schedule;
use crate::topology::{self, Fabric};

#[derive(Debug, Parser)]
#[command(name = "fabricplan", version, about = "Prove a RoCE/RDMA GPU fabric is healthy before trusting it with a workload")]
pub struct Cli {
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
    /// Dry run: the rounds, jobs and exact command lines each host would run. Runs nothing.
    Plan {
        plan: PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print the fabric graph.
    Graph {
        plan: PathBuf,
        #[arg(long, value_enum, default_value = "dot")]
        format: GraphFormat,
    },
    /// Read a saved tool output (FILE or stdin) and print what fabricplan reads in it.
    Parse {
        /// ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat,
        /// nccl-tests, mpirun, iperf3 or ping.
        tool: String,
        file: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

fn width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(100)
}

/// Load a plan, printing diagnostics; `None` means exit 2.
pub fn load_or_report(path: &Path) -> Option<plan::Loaded> {
    match plan::load(path) {
        Ok(l) => {
            if !l.warnings.problems.is_empty() {
                eprint!("{}", l.warnings.render(color(), width()));
            }
            Some(l)
        }
        Err(LoadError::Io { path, source }) => {
            eprintln!("error: cannot read plan `{}`: {source}", path.display());
            None
        }
        Err(LoadError::Invalid(d)) => {
            eprint!("{}", d.render(color(), width()));
            eprintln!(
                "error: plan `{}` is invalid: {} error(s), {} warning(s)",
                d.path,
                d.errors(),
                d.warnings()
            );
            None
        }
    }
}

/// Run the CLI; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Validate { plans } => {
            let mut code = exit::OK;
            for p in plans {
                match load_or_report(&p) {
                    Some(l) => {
                        let s = Schedule::expand(&l.plan);
                        println!(
                            "{}: ok ({} nodes, {} links, {} rounds{})",
                            p.display(),
                            l.plan.nodes.len(),
                            l.plan.segments.len(),
                            s.len(),
                            match l.warnings.warnings() {
                                0 => String::new(),
                                n => format!(", {n} warning(s)"),
                            }
                        );
                    }
                    None => code = exit::INVALID_PLAN,
                }
            }
            code
        }
        Command::Schema => {
            print!("{}", plan::json_schema());
            exit::OK
        }
        Command::Plan { plan, format } => {
            let Some(l) = load_or_report(&plan) else {
                return exit::INVALID_PLAN;
            };
            let fabric = Fabric::build(&l.plan);
            let schedule = Schedule::expand(&l.plan);
            let run_id = "<run-id>";
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let r = match format {
                Format::Text => plan_view::write_text(&mut out, &l.plan, &fabric, &schedule, run_id),
                Format::Json => plan_view::write_json(&mut out, &l.plan, &fabric, &schedule, run_id),
            };
            match r.and_then(|_| out.flush()) {
                Ok(()) => exit::OK,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::OK,
                Err(e) => {
                    eprintln!("error: {e}");
                    exit::FAIL
                }
            }
        }
        Command::Graph { plan, format } => {
            let Some(l) = load_or_report(&plan) else {
                return exit::INVALID_PLAN;
            };
            match format {
                GraphFormat::Dot => print!("{}", topology::to_dot(&l.plan)),
                GraphFormat::Mermaid => print!("{}", topology::to_mermaid(&l.plan)),
            }
            exit::OK
        }
        Command::Parse { tool, file, format } => {
            let Some(t) = Tool::from_name(&tool) else {
                eprintln!(
                    "error: unknown tool `{tool}`\nhelp: one of {}",
                    Tool::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
                );
                return exit::USAGE;
            };
            let bytes = match &file {
                Some(f) => match std::fs::read(f) {
                    Ok(b) => b,
                    Err(e) => {
                        eprintln!("error: cannot read `{}`: {e}", f.display());
                        return exit::USAGE;
                    }
                },
                None => {
                    let mut b = Vec::new();
                    if let Err(e) = std::io::stdin().read_to_end(&mut b) {
                        eprintln!("error: cannot read stdin: {e}");
                        return exit::USAGE;
                    }
                    b
                }
            };
            // captures may hold stray bytes (terminal noise): read what is text
            let text = String::from_utf8_lossy(&bytes);
            let parsed = parse::parse(t, &text);
            match format {
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&parsed.to_json(t)).unwrap_or_default()
                ),
                Format::Text => println!("{}", parsed.summary()),
            }
            exit::OK
        }
    }
}
