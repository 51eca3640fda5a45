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
    /// Run every node's commands on this machine instead of over SSH (`--launcher local`).
    #[arg(long)]
    pub local: bool,
    /// Answer from a fabric simulated from the plan: nothing leaves this machine, results are
    /// labelled simulated.
    #[arg(long, conflicts_with = "local")]
    pub sim: bool,
    #[arg(
        long = "sim-fault",
        value_name = "KIND:TARGET",
        requires = "sim",
        help = crate::plan::validate::SIM_FAULT_HELP
    )]
    pub sim_fault: Vec<String>,
}

impl HostArgs {
    /// The transport SSH's launcher rides with these options (SSH, or the simulated fabric;
    /// `--local` is a launcher of its own); `Err` is said to the user (exit 2).
    pub fn transport(&self, plan: Option<&Plan>) -> Result<Arc<dyn Transport>, String> {
        if self.sim {
            let Some(plan) = plan else {
                return Err("--sim simulates a plan's fabric: give a plan".into());
            };
            return crate::sim::SimTransport::new(plan, &self.sim_fault)
                .map(|t| Arc::new(t) as Arc<dyn Transport>);
        }
        let opts = self.ssh_options(plan);
        Ok(Arc::new(crate::launchers::ssh::exec::SshTransport::new(
            opts,
        )))
    }

    /// The SSH transport's options: the command line over the plan's `[ssh]` table over the
    /// defaults.
    pub fn ssh_options(&self, plan: Option<&Plan>) -> crate::launchers::ssh::exec::SshOptions {
        let fallback = crate::plan::SshDefaults::default();
        let defaults = plan.map(|p| &p.ssh);
        let d = defaults.unwrap_or(&fallback);
        crate::launchers::ssh::exec::SshOptions {
            config: self
                .ssh_config
                .clone()
                .or_else(|| defaults.and_then(|d| d.config.clone())),
            known_hosts: self
                .known_hosts
                .clone()
                .or_else(|| defaults.and_then(|d| d.known_hosts.clone())),
            accept_new: self.accept_new_host_keys,
            connect_timeout: std::time::Duration::from_secs(u64::from(d.connect_timeout_s)),
            default_user: d.user.clone(),
            max_handshakes: d.max_connections as usize,
            retry: crate::launchers::ssh::exec::Retry {
                attempts: d.connect_attempts,
                backoff: std::time::Duration::from_millis(u64::from(d.retry_backoff_ms)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args() -> HostArgs {
        HostArgs {
            accept_new_host_keys: false,
            ssh_config: None,
            known_hosts: None,
            local: false,
            sim: false,
            sim_fault: Vec::new(),
        }
    }

    #[test]
    fn the_plans_ssh_table_reaches_the_transport() {
        let text = r#"
format-version = 1
name = "t"
[ssh]
connect-timeout-s = 4
max-connections = 3
connect-attempts = 5
retry-backoff-ms = 40
[[node]]
name = "a"
[[node]]
name = "b"
[[cable]]
kind = "direct"
ends = ["a.f0", "b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
"#;
        let path = std::path::Path::new("t.toml");
        let plan = crate::plan::load_str(path, text, path, &crate::plan::NoKinds)
            .expect("valid plan")
            .plan;
        let o = args().ssh_options(Some(&plan));
        assert_eq!(o.connect_timeout, Duration::from_secs(4));
        assert_eq!(o.max_handshakes, 3);
        assert_eq!(o.retry.attempts, 5);
        assert_eq!(o.retry.backoff, Duration::from_millis(40));
        // without a plan (or an [ssh] table): the documented defaults
        let d = args().ssh_options(None);
        assert_eq!(
            (
                d.connect_timeout,
                d.max_handshakes,
                d.retry.attempts,
                d.retry.backoff
            ),
            (Duration::from_secs(10), 8, 3, Duration::from_millis(250))
        );
    }
}
