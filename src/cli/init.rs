//! `fabricplan init HOST... [-o PLAN]`: read each host (read-only, the same sessions and probe
//! as `detect`, plus who answers on each RDMA netdev) and draft the site's plan from it. With
//! `--sim PLAN`, the hosts are the simulated fabric of an existing plan.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::hosts::HostArgs;
use super::launcher::LauncherArgs;
use super::{CliError, Outcome, Stdout, load, runtime, say};
use crate::exec::launch::Launcher;
use crate::exec::runner::discovery;
use crate::exit;
use crate::init::{self, Host};
use crate::plan::{Node, NodeId};

/// How long a host has to run the evidence script (its pings last about a second).
const EVIDENCE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The hosts to read (ssh_config aliases or addresses; under Slurm, node names); a Slurm
    /// hostlist (`spark-[1-3]`) stands for its names.
    pub hosts: Vec<String>,
    /// Write the plan here (refused when the file exists, unless --force); else stdout.
    #[arg(short = 'o', long, value_name = "PLAN")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing --output file.
    #[arg(long)]
    pub force: bool,
    /// More hosts, one per line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Propose subnets for halves without an address from this pool (default: 198.51.100.0/24,
    /// a documentation range).
    #[arg(long, value_name = "CIDR")]
    pub subnet_pool: Option<String>,
    /// The plan's name (default: the output file's name, else `site`).
    #[arg(long)]
    pub name: Option<String>,
    /// Draft from the fabric simulated from this plan (its nodes are the hosts; nothing leaves
    /// this machine).
    #[arg(long, value_name = "PLAN", conflicts_with = "hostfile")]
    pub sim: Option<PathBuf>,
    #[arg(
        long = "sim-fault",
        value_name = "KIND:TARGET",
        requires = "sim",
        help = crate::plan::validate::SIM_FAULT_HELP
    )]
    pub sim_fault: Vec<String>,
    /// ssh_config file for the host aliases.
    #[arg(long)]
    pub ssh_config: Option<PathBuf>,
    /// known_hosts file to verify host keys against.
    #[arg(long)]
    pub known_hosts: Option<PathBuf>,
    /// Learn unknown host keys (a changed key is always refused).
    #[arg(long)]
    pub accept_new_host_keys: bool,
    /// Probes in flight at once.
    #[arg(long, default_value_t = 32)]
    pub max_parallel: usize,
    #[command(flatten)]
    pub launcher: LauncherArgs,
}

impl InitArgs {
    fn host_args(&self) -> HostArgs {
        HostArgs {
            accept_new_host_keys: self.accept_new_host_keys,
            ssh_config: self.ssh_config.clone(),
            known_hosts: self.known_hosts.clone(),
            local: false,
            sim: self.sim.is_some(),
            sim_fault: self.sim_fault.clone(),
        }
    }

    /// The hosts: the command line's, then the host file's; with --sim, the plan's nodes (those
    /// named, or all).
    fn names(&self, plan: Option<&crate::plan::Plan>) -> Result<Vec<String>, CliError> {
        let mut names = Vec::new();
        for h in &self.hosts {
            names.extend(crate::text::hostlist::expand(h).map_err(CliError::Usage)?);
        }
        if let Some(f) = &self.hostfile {
            let text = std::fs::read_to_string(f)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", f.display())))?;
            names.extend(
                text.lines()
                    .map(|l| l.split('#').next().unwrap_or("").trim())
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            );
        }
        if let Some(p) = plan {
            if names.is_empty() {
                names = p.nodes.iter().map(|n| n.name.clone()).collect();
            } else if let Some(n) = names.iter().find(|n| p.node_by_name(n).is_none()) {
                return Err(CliError::Usage(format!(
                    "--sim: `{n}` is not a node of the simulated plan"
                )));
            }
        }
        if names.is_empty() {
            return Err(CliError::Usage(
                "give the hosts to read (HOST... or --hostfile), or --sim PLAN".into(),
            ));
        }
        Ok(names)
    }

    fn options(&self) -> Result<init::Options, CliError> {
        let pool_text = self.subnet_pool.as_deref().unwrap_or(init::DEFAULT_POOL);
        let pool: ipnet::Ipv4Net = pool_text.parse().map_err(|_| {
            CliError::Usage(format!(
                "--subnet-pool `{pool_text}` is not an IPv4 network (198.19.0.0/16)"
            ))
        })?;
        let stem = self
            .output
            .as_ref()
            .and_then(|o| o.file_stem())
            .map(|s| s.to_string_lossy().into_owned());
        let name = self
            .name
            .clone()
            .or(stem)
            .filter(|n| crate::plan::validate::is_safe_name(n))
            .unwrap_or_else(|| "site".into());
        Ok(init::Options {
            pool: pool.trunc(),
            pool_given: self.subnet_pool.is_some(),
            name,
            simulated: self.sim.as_ref().map(|p| p.display().to_string()),
        })
    }
}

pub fn run(args: InitArgs) -> Outcome {
    let opts = args.options()?;
    if let Some(o) = &args.output
        && o.exists()
        && !args.force
    {
        return Err(CliError::Usage(format!(
            "{} exists: init never replaces a file; give another -o, or --force",
            o.display()
        )));
    }
    let loaded = args.sim.as_deref().map(load).transpose()?;
    let plan = loaded.as_ref().map(|l| &l.plan);
    let names = args.names(plan)?;
    let nodes: Vec<Node> = match plan {
        Some(p) => names
            .iter()
            .filter_map(|n| p.node_by_name(n).cloned())
            .collect(),
        None => names
            .iter()
            .enumerate()
            .map(|(i, h)| Node::alias(NodeId(i), h))
            .collect(),
    };
    let launcher: Arc<dyn Launcher> = args
        .launcher
        .launcher(plan, &args.host_args())
        .map_err(CliError::Usage)?;
    if plan.is_some() {
        say("SIMULATED FABRIC (--sim): a model of the plan, not a reading of hardware\n");
    }
    let hosts = runtime()?.block_on(read(launcher.as_ref(), &nodes, args.max_parallel));
    let draft = init::draft(&hosts, &opts).map_err(CliError::Failed)?;
    finish(&args, &draft)
}

/// Write the plan, and say what is left to do.
fn finish(args: &InitArgs, draft: &init::Draft) -> Outcome {
    match &args.output {
        Some(o) => write_new(o, &draft.text, args.force)?,
        None => Stdout::new().write(&draft.text),
    }
    for n in &draft.notes {
        say(&format!("left out: {}\n", crate::text::inert_lines(n)));
    }
    if !draft.commands.is_empty() {
        say("to apply the proposed addresses, run:\n");
        for (host, cmd) in &draft.commands {
            say(&format!("  on {host}: {cmd}\n"));
        }
    }
    let at = args
        .output
        .as_ref()
        .map(|o| o.display().to_string())
        .unwrap_or_else(|| "the plan".into());
    if draft.todos.is_empty() && draft.notes.is_empty() {
        say(&format!("{at}: drafted, nothing left undecided\n"));
        Ok(exit::OK)
    } else {
        say(&format!(
            "{at}: drafted with {} TODO(s) left to decide (see `# TODO:` in it):\n",
            draft.todos.len()
        ));
        for t in &draft.todos {
            say(&format!("  TODO: {}\n", crate::text::inert_lines(t)));
        }
        Ok(exit::FAIL)
    }
}

/// Write `text` to `path`, a new file (or over one with `force`).
fn write_new(path: &Path, text: &str, force: bool) -> Result<(), CliError> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let mut f = o
        .open(path)
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))
}

/// Read every host: open the launcher, the discovery probe, then the evidence script on each
/// host that answered; a host that did not is an error in its place.
pub(super) async fn read(
    launcher: &dyn Launcher,
    nodes: &[Node],
    max_parallel: usize,
) -> Vec<Host> {
    let refs: Vec<&Node> = nodes.iter().collect();
    let (opening, usable) = super::detect::open_usable(launcher, &refs).await;
    let probed = discovery::probe(launcher, &usable, max_parallel).await;
    let extras = futures::future::join_all(usable.iter().zip(&probed).map(|(n, p)| async move {
        let Ok(p) = p else {
            return init::Extra::default();
        };
        let script = launcher.style().oneshot(n, &init::evidence::script(p));
        match launcher.exec(n, &script, EVIDENCE_TIMEOUT).await {
            Ok(o) => init::evidence::parse(&o.stdout),
            Err(_) => init::Extra::default(),
        }
    }))
    .await;
    launcher.close().await;
    let mut found = usable.iter().zip(probed.into_iter().zip(extras));
    refs.iter()
        .map(
            |n| match opening.unavailable.iter().find(|u| u.node == n.name) {
                Some(u) => Host {
                    name: n.name.clone(),
                    probe: Err(u.reason.clone()),
                    extra: init::Extra::default(),
                },
                None => match found.next() {
                    Some((_, (p, extra))) => Host {
                        name: n.name.clone(),
                        probe: p.map_err(|e| e.to_string()),
                        extra,
                    },
                    None => Host {
                        name: n.name.clone(),
                        probe: Err("not probed".into()),
                        extra: init::Extra::default(),
                    },
                },
            },
        )
        .collect()
}
