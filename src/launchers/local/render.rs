//! How the local launcher writes commands: exactly as the SSH launcher does (every node's
//! commands are POSIX sh scripts run as jobs of that node's session), but every session runs on
//! this machine, which is what its words say.

use crate::launchers::ssh::render::SshStyle;
use crate::plan::{Node, NodeId, Plan};
use crate::render::launch::{LaunchStyle, MpiLaunch, Words, Written};
use crate::render::{RenderError, Renderer};

/// How the local launcher writes commands: the SSH launcher's scripts, run here.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalStyle;

impl LaunchStyle for LocalStyle {
    fn name(&self) -> &'static str {
        "local"
    }

    fn words(&self) -> Words {
        Words {
            session: "session on this machine",
            launch_check: "mpirun launches `hostname` on every rank, on this machine",
            ..SshStyle.words()
        }
    }

    fn server(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String {
        SshStyle.server(plan, node, timeout_s, command)
    }

    fn foreground(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String {
        SshStyle.foreground(plan, node, timeout_s, command)
    }

    fn oneshot(&self, node: &Node, script: &str) -> String {
        SshStyle.oneshot(node, script)
    }

    fn mpi(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        launch: &MpiLaunch,
    ) -> Result<Written, RenderError> {
        SshStyle.mpi(plan, renderer, launch)
    }
}
