//! How a launcher writes commands: the seam between what a test kind runs and how it gets
//! started where it runs. A kind renders its tool's command line; the launcher's
//! [`LaunchStyle`] wraps it ([`SshStyle`]: a server that runs until its session stops it, a
//! foreground client under a remote timeout, `mpirun` over the fabric subnets) or writes it
//! another way ([`SlurmStyle`]: every command a job step of one allocation). No script names a
//! path on a host: each runs in its job's own directory inside its session's private one. Pure:
//! the executing half of a launcher lives in `crate::exec::launch`.

use std::net::Ipv4Addr;

use minijinja::Value;
use serde::Serialize;

use super::{RenderError, Renderer};
use crate::plan::{Node, NodeId, Plan};

/// One application context of an MPI launch: ranks sharing a binary and an environment.
#[derive(Debug, Clone)]
pub struct MpiApp {
    pub nodes: Vec<NodeId>,
    /// The address each rank is reached on, in rank order.
    pub hosts: Vec<Ipv4Addr>,
    /// The environment, as a template value (a map; names with placeholders marked safe).
    pub env: Value,
    pub binary: String,
}

/// An MPI launch over ranks, before a launcher writes it.
#[derive(Debug, Clone)]
pub struct MpiLaunch {
    /// The first rank: where `mpirun` runs over SSH.
    pub first: NodeId,
    pub apps: Vec<MpiApp>,
    /// The fabric subnets the launch's out-of-band traffic is pinned to.
    pub subnets: Vec<String>,
    /// The program's arguments after the binary.
    pub args: Vec<String>,
    /// The template that writes it over SSH (`nccl`, `mpi-hostname`), and its variables beyond
    /// `apps` and `subnets`.
    pub template: &'static str,
    pub vars: Value,
    pub timeout_s: u32,
}

/// Where a command runs and how it is written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Written {
    /// The node it runs on (for the SSH launcher, where mpirun runs).
    pub node: NodeId,
    /// The tool's or launcher's own command line.
    pub command: String,
    /// The full script that runs it.
    pub script: String,
}

/// How a launcher names what it starts, for a dry run and a collective's launch check: what
/// differs between launchers is said by each, never decided by comparing their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// What carries a node's commands (`SSH session`, `session step`).
    pub session: &'static str,
    /// What starts a collective's ranks, and names its launch check (`mpirun`, `srun`).
    pub starter: &'static str,
    /// How the launch check starts `hostname` on every rank.
    pub launch_check: &'static str,
    /// A server, a client and the collective's starter as a dry run lists them.
    pub server: &'static str,
    pub client: &'static str,
    pub collective: &'static str,
}

/// How one launcher writes commands.
pub trait LaunchStyle: Send + Sync {
    /// The launcher's name (`ssh`, `slurm`), for reports.
    fn name(&self) -> &'static str;

    /// How it names what it starts.
    fn words(&self) -> Words;

    /// A server: a job that runs until it is stopped, by the process group its session
    /// recorded when it started it.
    fn server(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String;

    /// A command in the foreground (a client), under a timeout on the node.
    fn foreground(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String;

    /// A one-shot script on a node (a discovery probe, a counter snapshot, a ping), written
    /// the way this launcher runs it there.
    fn oneshot(&self, node: &Node, script: &str) -> String;

    /// An MPI launch over ranks.
    fn mpi(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        launch: &MpiLaunch,
    ) -> Result<Written, RenderError>;
}
