//! How the commands that reach nodes reach them: SSH (the default), this machine (`--local`) or
//! the fabric simulated from the plan (`--sim`), and the SSH options they share.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use crate::exec::Transport;
use crate::plan::Plan;

/// The options of the commands that reach nodes.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// Learn unknown host keys (a changed key is always refused).
    #[arg(long)]
    pub accept_new_host_keys: bool,
    /// ssh_config file for node aliases.
    #[arg(long)]
    pub ssh_config: Option<PathBuf>,
    /// known_hosts file to verify host keys against.
    #[arg(long)]
    pub known_hosts: Option<PathBuf>,
    /// Run every node's commands on this machine instead of over SSH.
    #[arg(long)]
    pub local: bool,
    /// Answer from a fabric simulated from the plan: nothing leaves this machine, results are
    /// labelled simulated.
    #[arg(long, conflicts_with = "local")]
    pub sim: bool,
    /// With --sim: inject a fault, `KIND:TARGET` (repeatable), e.g. `throttle:spark-a.f0.a`.
    #[arg(long = "sim-fault", value_name = "KIND:TARGET", requires = "sim")]
    pub sim_fault: Vec<String>,
}

impl HostArgs {
    /// The transport these options name; `Err` is said to the user (exit 2).
    pub fn transport(&self, plan: Option<&Plan>) -> Result<Arc<dyn Transport>, String> {
        if self.sim {
            let Some(plan) = plan else {
                return Err("--sim simulates a plan's fabric: give a plan".into());
            };
            return crate::sim::SimTransport::new(plan, &self.sim_fault)
                .map(|t| Arc::new(t) as Arc<dyn Transport>);
        }
        if self.local {
            return Ok(Arc::new(crate::exec::local::LocalTransport));
        }
        let defaults = plan.map(|p| &p.ssh);
        let opts = crate::exec::ssh::SshOptions {
            config: self
                .ssh_config
                .clone()
                .or_else(|| defaults.and_then(|d| d.config.clone())),
            known_hosts: self
                .known_hosts
                .clone()
                .or_else(|| defaults.and_then(|d| d.known_hosts.clone())),
            accept_new: self.accept_new_host_keys,
            connect_timeout: std::time::Duration::from_secs(
                defaults.map_or(10, |d| u64::from(d.connect_timeout_s)),
            ),
            default_user: defaults.and_then(|d| d.user.clone()),
            ..Default::default()
        };
        Ok(Arc::new(crate::exec::ssh::SshTransport::new(opts)))
    }
}
