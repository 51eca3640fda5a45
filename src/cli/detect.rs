//! `fabricplan detect [PLAN] [--host H]...`: discovery alone, read-only, with the same probe
//! and resolution a run uses.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::hosts::HostArgs;
use super::launcher::LauncherArgs;
use super::{CliError, Format, Outcome, Stdout, load, runtime};
use crate::exec::launch::Launcher;
use crate::exec::runner::discovery;
use crate::exec::transport::TransportError;
use crate::exit;
use crate::plan::{Node, NodeId};
use crate::report::detect::NodeReport;

#[derive(Debug, Clone, Args)]
pub struct DetectArgs {
    /// A plan (its nodes and planned halves); or use --host.
    pub plan: Option<PathBuf>,
    /// A host to probe without a plan (ssh_config alias or address; repeatable).
    #[arg(long)]
    pub host: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Compare the plan with the fabric as found: a cable landing elsewhere (LLDP, IPv6 or IPv4
    /// neighbours), a device renamed, an address gone, a smaller MTU, firmware or PCIe drift;
    /// each as the edit to the plan (with its line) or the change on the box. Exit 1 when they
    /// differ.
    #[arg(long, requires = "plan")]
    pub against: bool,
    /// Probes in flight at once.
    #[arg(long, default_value_t = 32)]
    pub max_parallel: usize,
    #[command(flatten)]
    pub hosts: HostArgs,
    #[command(flatten)]
    pub launcher: LauncherArgs,
}

pub fn run(args: DetectArgs) -> Outcome {
    let loaded = args.plan.as_deref().map(load).transpose()?;
    let plan = loaded.as_ref().map(|l| &l.plan);
    let nodes: Vec<Node> = match plan {
        Some(p) => p.nodes.clone(),
        None if args.host.is_empty() => {
            return Err(CliError::Usage("give a plan or at least one --host".into()));
        }
        None => args
            .host
            .iter()
            .enumerate()
            .map(|(i, h)| Node::alias(NodeId(i), h))
            .collect(),
    };
    let launcher: Arc<dyn Launcher> = args
        .launcher
        .launcher(plan, &args.hosts)
        .map_err(CliError::Usage)?;
    let rt = runtime()?;
    if let (true, Some(p)) = (args.against, plan) {
        let hosts = rt.block_on(super::init::read(
            launcher.as_ref(),
            &nodes,
            args.max_parallel,
        ));
        return against(p, &hosts, args.hosts.sim, args.format);
    }
    let found = rt.block_on(async {
        let refs: Vec<&Node> = nodes.iter().collect();
        let (opening, usable) = open_usable(launcher.as_ref(), &refs).await;
        let mut probed = discovery::probe(launcher.as_ref(), &usable, args.max_parallel)
            .await
            .into_iter();
        launcher.close().await;
        refs.iter()
            .map(
                |n| match opening.unavailable.iter().find(|u| u.node == n.name) {
                    Some(u) => Err(TransportError::Launch {
                        host: n.name.clone(),
                        reason: u.reason.clone(),
                        trap: u.trap,
                    }),
                    None => probed.next().unwrap_or_else(|| {
                        Err(TransportError::Lost {
                            host: n.name.clone(),
                            reason: "not probed".into(),
                        })
                    }),
                },
            )
            .collect::<Vec<_>>()
    });
    let reports: Vec<NodeReport> = nodes
        .iter()
        .zip(found)
        .map(|(n, out)| match out {
            Ok(probe) => NodeReport {
                node: n.name.clone(),
                reachable: true,
                error: None,
                halves: plan
                    .map(|p| crate::discover::resolve_node(p, n.id, &probe))
                    .unwrap_or_default(),
                probe: Some(probe),
            },
            Err(e) => NodeReport {
                node: n.name.clone(),
                reachable: false,
                error: Some(e.to_string()),
                probe: None,
                halves: Vec::new(),
            },
        })
        .collect();
    let mut out = Stdout::new();
    if args.hosts.sim && args.format == Format::Text {
        out.write("SIMULATED FABRIC (--sim): a model of the plan, not a reading of hardware\n\n");
    }
    match args.format {
        Format::Text => out.write(&crate::report::detect::render(&reports)),
        Format::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(&reports).unwrap_or_default()
        )),
    }
    Ok(if reports.iter().all(|r| r.reachable) {
        exit::OK
    } else {
        exit::FAIL
    })
}

/// `--against`: the differences, one line each, or that plan and fabric agree.
fn against(
    plan: &crate::plan::Plan,
    hosts: &[crate::init::Host],
    sim: bool,
    format: Format,
) -> Outcome {
    let found = crate::init::against::compare(plan, hosts);
    let diffs = &found.differences;
    let mut out = Stdout::new();
    match format {
        Format::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(&found).unwrap_or_default()
        )),
        Format::Text => {
            if sim {
                out.write(
                    "SIMULATED FABRIC (--sim): a model of the plan, not a reading of hardware\n\n",
                );
            }
            for d in diffs {
                out.write(&format!("{}\n", crate::text::inert_lines(&d.line_text())));
            }
            let heard = match (found.proven, found.cables) {
                (_, 0) => String::new(),
                (p, c) if p == c => format!(" (all {c} cable(s) proven where it puts them)"),
                (p, c) if diffs.is_empty() => format!(
                    " as far as was heard: {p} of {c} cable(s) proven where it puts them, the others not heard (run lldpd on the nodes, or bring their links up)"
                ),
                (p, c) => format!(" ({p} of {c} cable(s) proven where it puts them)"),
            };
            out.write(&match diffs.len() {
                0 => format!("{}: the plan and the fabric agree{heard}\n", plan.name),
                n => format!(
                    "{}: {n} difference(s) between the plan and the fabric{heard}\n",
                    plan.name
                ),
            });
        }
    }
    Ok(if diffs.is_empty() {
        exit::OK
    } else {
        exit::FAIL
    })
}

/// Open the run's nodes (Slurm allocates them first; Ctrl-C gives up a wait) and keep those the
/// launcher can use: a node it cannot is not probed, and its opening says why.
pub(super) async fn open_usable<'a>(
    launcher: &dyn crate::exec::launch::Launcher,
    refs: &[&'a Node],
) -> (crate::exec::launch::Opening, Vec<&'a Node>) {
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    super::run::on_interrupt(cancel_tx);
    let opening = launcher.open(refs, cancel_rx).await;
    let usable: Vec<&Node> = refs
        .iter()
        .copied()
        .filter(|n| !opening.unavailable.iter().any(|u| u.node == n.name))
        .collect();
    (opening, usable)
}
