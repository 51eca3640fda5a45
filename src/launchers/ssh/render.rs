//! How the SSH launcher writes commands: servers its sessions stop, `timeout` clients,
//! `mpirun` from the first rank.

use minijinja::{Value, context};

use crate::plan::{Node, NodeId, Plan};
use crate::render::launch::{LaunchStyle, MpiLaunch, Words, Written};
use crate::render::{RenderError, Renderer, wrap};

/// How the SSH launcher writes commands: servers its sessions stop, `timeout` clients,
/// `mpirun`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SshStyle;

impl LaunchStyle for SshStyle {
    fn name(&self) -> &'static str {
        "ssh"
    }

    fn words(&self) -> Words {
        Words {
            session: "SSH session",
            starter: "mpirun",
            launch_check: "mpirun launches `hostname` on every rank over the fabric subnet",
            server: "server, until stopped",
            client: "client",
            collective: "mpirun",
        }
    }

    fn server(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String {
        wrap::server(timeout_s, &plan.node(node).env, command)
    }

    fn foreground(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String {
        wrap::foreground(timeout_s, &plan.node(node).env, command)
    }

    /// Run as it is, under `/bin/sh -c` on the node.
    fn oneshot(&self, _node: &Node, script: &str) -> String {
        script.to_string()
    }

    /// `mpirun` on the first rank, from the plan's `nccl` / `mpi-hostname` template.
    fn mpi(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        launch: &MpiLaunch,
    ) -> Result<Written, RenderError> {
        let apps: Vec<Value> = launch
            .apps
            .iter()
            .map(|a| {
                context! {
                    np => a.hosts.len(),
                    hosts => a.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
                    env => a.env.clone(),
                    binary => a.binary.clone(),
                }
            })
            .collect();
        let ctx =
            context! { apps => apps, subnets => launch.subnets.clone(), ..launch.vars.clone() };
        let command = renderer.render(launch.template, ctx)?;
        // mpirun's ssh children outlive it when it is killed: its session is reaped after it
        let script =
            wrap::foreground_session(launch.timeout_s, &plan.node(launch.first).env, &command);
        Ok(Written {
            node: launch.first,
            command,
            script,
        })
    }
}
