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
use crate::topology::{self, Fabric};

#[derive(Debug, Parser)]
#[command(
    name = "fabricplan",
    version,
    about = "Prove a RoCE/RDMA GPU fabric is healthy before trusting it with a workload"
)]
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
    /// Run the plan: discovery, preflight, every round, verdict. Exit 0 green or warnings, 1 any
    /// FAIL or a job that could not measure, 2 invalid plan, 130 interrupted.
    Run {
        plan: PathBuf,
        /// Only jobs matching: a test kind, node, link, cable, round or NCCL test name (repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// Skip jobs matching (repeatable).
        #[arg(long)]
        skip: Vec<String>,
        /// Print what would run and stop (same as `fabricplan plan`).
        #[arg(long)]
        dry_run: bool,
        /// Run directory (default runs/<plan>/<UTC timestamp>/).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Run the plan's setup stage first (installs packages: not read-only).
        #[arg(long)]
        setup: bool,
        /// Commands in flight at once.
        #[arg(long, default_value_t = 32)]
        max_parallel: usize,
        /// Learn unknown host keys (a changed key is always refused).
        #[arg(long)]
        accept_new_host_keys: bool,
        /// ssh_config file for node aliases.
        #[arg(long)]
        ssh_config: Option<PathBuf>,
        /// known_hosts file to verify host keys against.
        #[arg(long)]
        known_hosts: Option<PathBuf>,
        /// Run every node's commands on this machine instead of over SSH.
        #[arg(long)]
        local: bool,
        /// Run against a fabric simulated from the plan: nothing leaves this machine, results
        /// are labelled simulated.
        #[arg(long, conflicts_with = "local")]
        sim: bool,
        /// With --sim: inject a fault, `KIND:TARGET` (repeatable), e.g. `throttle:spark-a.f0.a`.
        #[arg(long = "sim-fault", value_name = "KIND:TARGET", requires = "sim")]
        sim_fault: Vec<String>,
    },
    /// Discover each node's RDMA devices (read-only): state, netdev, IPv4, MTU, GID index; and
    /// the exact `ip addr add` to run where a planned half has no address. Runs nothing else.
    Detect {
        /// A plan (its nodes and planned halves); or use --host.
        plan: Option<PathBuf>,
        /// A host to probe without a plan (ssh_config alias or address; repeatable).
        #[arg(long)]
        host: Vec<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[arg(long)]
        ssh_config: Option<PathBuf>,
        #[arg(long)]
        known_hosts: Option<PathBuf>,
        #[arg(long)]
        accept_new_host_keys: bool,
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
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
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
                        let s = crate::kinds::schedule(&l.plan);
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
            let schedule = crate::kinds::schedule(&l.plan);
            let run_id = "<run-id>";
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let r = match format {
                Format::Text => {
                    plan_view::write_text(&mut out, &l.plan, &fabric, &schedule, run_id)
                }
                Format::Json => {
                    plan_view::write_json(&mut out, &l.plan, &fabric, &schedule, run_id)
                }
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
        Command::Run {
            plan,
            only,
            skip,
            dry_run,
            out,
            format,
            setup,
            max_parallel,
            accept_new_host_keys,
            ssh_config,
            known_hosts,
            local,
            sim,
            sim_fault,
        } => {
            let Some(l) = load_or_report(&plan) else {
                return exit::INVALID_PLAN;
            };
            if dry_run {
                return run(Cli {
                    command: Command::Plan { plan, format },
                });
            }
            if setup && l.plan.setup.is_none() {
                eprintln!("error: --setup given but the plan declares no [setup] stage");
                return exit::USAGE;
            }
            let transport: std::sync::Arc<dyn crate::exec::Transport> = if sim {
                match crate::sim::SimTransport::new(&l.plan, &sim_fault) {
                    Ok(t) => std::sync::Arc::new(t),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return exit::USAGE;
                    }
                }
            } else if local {
                std::sync::Arc::new(crate::exec::local::LocalTransport)
            } else {
                let opts = crate::exec::ssh::SshOptions {
                    config: ssh_config.or_else(|| l.plan.ssh.config.clone()),
                    known_hosts: known_hosts.or_else(|| l.plan.ssh.known_hosts.clone()),
                    accept_new: accept_new_host_keys,
                    connect_timeout: std::time::Duration::from_secs(
                        l.plan.ssh.connect_timeout_s as u64,
                    ),
                    default_user: l.plan.ssh.user.clone(),
                    ..Default::default()
                };
                std::sync::Arc::new(crate::exec::ssh::SshTransport::new(opts))
            };
            execute(
                &l.plan,
                transport,
                only,
                skip,
                out,
                format,
                max_parallel,
                setup,
            )
        }
        Command::Detect {
            plan,
            host,
            format,
            ssh_config,
            known_hosts,
            accept_new_host_keys,
        } => detect(
            plan,
            host,
            format,
            ssh_config,
            known_hosts,
            accept_new_host_keys,
        ),
        Command::Parse { tool, file, format } => {
            let Some(t) = Tool::from_name(&tool) else {
                eprintln!(
                    "error: unknown tool `{tool}`\nhelp: one of {}",
                    Tool::ALL
                        .iter()
                        .map(|t| t.name())
                        .collect::<Vec<_>>()
                        .join(", ")
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

fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86400;
    let (h, m, s) = ((secs % 86400) / 3600, (secs % 3600) / 60, secs % 60);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days as i64 + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}{mo:02}{d:02}T{h:02}{m:02}{s:02}Z")
}

/// Run a plan with a transport; prints progress and the verdict; returns the exit code.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    plan: &crate::plan::Plan,
    transport: std::sync::Arc<dyn crate::exec::Transport>,
    only: Vec<String>,
    skip: Vec<String>,
    out: Option<PathBuf>,
    format: Format,
    max_parallel: usize,
    setup: bool,
) -> i32 {
    use crate::exec::evidence::Evidence;
    use crate::exec::runner::{self, RunOptions};
    let stamp = utc_stamp();
    let run_id = format!("{}-{stamp}", plan.name);
    let dir = out.unwrap_or_else(|| PathBuf::from("runs").join(&plan.name).join(&stamp));
    let mut evidence = match Evidence::create(&dir, &plan.text) {
        Ok(e) => e,
        Err(e) => {
            eprintln!(
                "error: cannot create the run directory `{}`: {e}",
                dir.display()
            );
            return exit::FAIL;
        }
    };
    let fabric = Fabric::build(plan);
    let schedule = crate::kinds::schedule(plan);
    let opts = RunOptions {
        run_id,
        only,
        skip,
        max_parallel,
    };
    let Some(rt) = runtime() else {
        return exit::FAIL;
    };
    let term = crate::report::terminal::Terminal::new(transport.simulated());
    let results = rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
        // Ctrl-C or SIGTERM: stop launching, clean up what started, write partial results
        tokio::spawn(async move {
            let mut term_sig = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term_sig.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
            let _ = cancel_tx.send(true);
        });
        let printer = async {
            while let Some(e) = rx.recv().await {
                if format == Format::Text {
                    term.event(&e);
                }
            }
        };
        let work = async {
            // the setup stage changes hosts: only with --setup, before anything is measured
            let setup_verdicts = if setup { crate::exec::setup::run(plan, transport.as_ref()).await } else { Vec::new() };
            let mut r = runner::run(plan, &fabric, &schedule, transport, &opts, &mut evidence, tx, cancel_rx).await;
            if !setup_verdicts.is_empty() {
                r.preflight.splice(0..0, setup_verdicts);
                r.summarize();
            }
            r
        };
        let (r, ()) = tokio::join!(work, printer);
        r
    });
    let json = serde_json::to_vec_pretty(&results).unwrap_or_default();
    let _ = evidence.write("results.json", &json);
    let _ = evidence.write(
        "junit.xml",
        crate::report::junit::render(&results).as_bytes(),
    );
    let _ = evidence.write(
        "summary.md",
        crate::report::markdown::render(&results).as_bytes(),
    );
    match format {
        Format::Text => term.finish(&results, &dir.display().to_string()),
        Format::Json => println!("{}", String::from_utf8_lossy(&json)),
    }
    results.summary.exit_code
}

fn detect(
    plan: Option<PathBuf>,
    hosts: Vec<String>,
    format: Format,
    ssh_config: Option<PathBuf>,
    known_hosts: Option<PathBuf>,
    accept_new: bool,
) -> i32 {
    use crate::plan::{Node, NodeId};
    use crate::report::detect::NodeReport;
    let loaded = match &plan {
        Some(p) => match load_or_report(p) {
            Some(l) => Some(l),
            None => return exit::INVALID_PLAN,
        },
        None => None,
    };
    let nodes: Vec<Node> = match &loaded {
        Some(l) => l.plan.nodes.clone(),
        None if hosts.is_empty() => {
            eprintln!("error: give a plan or at least one --host");
            return exit::USAGE;
        }
        None => hosts
            .iter()
            .enumerate()
            .map(|(i, h)| Node::alias(NodeId(i), h))
            .collect(),
    };
    let opts = crate::exec::ssh::SshOptions {
        config: ssh_config.or_else(|| loaded.as_ref().and_then(|l| l.plan.ssh.config.clone())),
        known_hosts: known_hosts
            .or_else(|| loaded.as_ref().and_then(|l| l.plan.ssh.known_hosts.clone())),
        accept_new,
        default_user: loaded.as_ref().and_then(|l| l.plan.ssh.user.clone()),
        ..Default::default()
    };
    let transport = crate::exec::ssh::SshTransport::new(opts);
    let Some(rt) = runtime() else {
        return exit::FAIL;
    };
    use crate::exec::Transport;
    let outs = rt.block_on(async {
        let r = futures::future::join_all(nodes.iter().map(|n| {
            transport.exec(
                n,
                crate::discover::PROBE_SCRIPT,
                crate::discover::PROBE_TIMEOUT,
            )
        }))
        .await;
        transport.close().await;
        r
    });
    let mut reports = Vec::new();
    for (n, out) in nodes.iter().zip(outs) {
        match out {
            Ok(o) => {
                let probe = crate::discover::probe::parse(&o.stdout);
                let halves = loaded
                    .as_ref()
                    .map(|l| crate::discover::resolve_node(&l.plan, n.id, &probe))
                    .unwrap_or_default();
                reports.push(NodeReport {
                    node: n.name.clone(),
                    reachable: true,
                    error: None,
                    probe: Some(probe),
                    halves,
                });
            }
            Err(e) => reports.push(NodeReport {
                node: n.name.clone(),
                reachable: false,
                error: Some(e.to_string()),
                probe: None,
                halves: Vec::new(),
            }),
        }
    }
    match format {
        Format::Text => print!("{}", crate::report::detect::render(&reports)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&reports).unwrap_or_default()
        ),
    }
    if reports.iter().all(|r| r.reachable) {
        exit::OK
    } else {
        exit::FAIL
    }
}

/// The runtime for the commands that reach hosts; `None` (said on stderr) when it cannot start.
fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            None
        }
    }
}
