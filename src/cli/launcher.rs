//! `--launcher ssh|slurm` and `--allocation JOBID`: which launcher a command uses, over the
//! plan's `[launcher]`, and the launcher itself.

use std::sync::Arc;

use clap::Args;

use super::hosts::HostArgs;
use crate::exec::launch::Launcher;
use crate::launchers;
use crate::launchers::slurm::plan::job_id_text;
use crate::plan::{LauncherConfig, LauncherKind, Plan};

/// The options that pick the launcher.
#[derive(Debug, Clone, Default, Args)]
pub struct LauncherArgs {
    /// How commands reach the nodes: `ssh`, `slurm` (each one a job step of one allocation;
    /// node names are Slurm node names) or `local` (this machine). Default: the plan's
    /// `[launcher] kind`, else ssh.
    #[arg(long, value_enum, value_name = "KIND")]
    pub launcher: Option<LauncherKind>,
    /// Run in this existing Slurm allocation (its job id) instead of allocating the nodes
    /// (implies `--launcher slurm`); fabricplan does not release it.
    #[arg(long, value_name = "JOBID", value_parser = parse_allocation)]
    pub allocation: Option<u32>,
}

fn parse_allocation(s: &str) -> Result<u32, String> {
    job_id_text(s).ok_or_else(|| {
        format!(
            "`{s}` is not a Slurm job id (the number `salloc` printed, as `squeue --me` lists it)"
        )
    })
}

/// The launcher a command runs with, settled: the plan's `[launcher]` under the options.
pub type Choice = LauncherConfig;

impl LauncherArgs {
    /// The launcher the options and the plan name; `Err` is said to the user (exit 2).
    pub fn choice(&self, plan: Option<&Plan>) -> Result<Choice, String> {
        let planned = plan.map(|p| p.launcher.clone()).unwrap_or_default();
        let allocating = launchers::UNITS.iter().find(|u| u.takes_allocation);
        let kind = match (self.launcher, self.allocation, allocating) {
            (Some(k), Some(_), _) if !launchers::unit(k).takes_allocation => {
                return Err(format!(
                    "--allocation names an existing allocation of the {} launcher: it does not go with --launcher {}",
                    allocating.map_or("", |u| u.kind.name()),
                    k.name()
                ));
            }
            (Some(k), _, _) => k,
            (None, Some(_), Some(u)) => u.kind,
            (None, _, _) => planned.kind,
        };
        let mut cfg = LauncherConfig { kind, ..planned };
        if let Some(a) = self.allocation {
            cfg.slurm.allocation = Some(a);
        }
        if let Some(p) = plan
            && let Some(refusal) = (launchers::unit(kind).refuses)(&cfg, p)
        {
            return Err(refusal);
        }
        Ok(cfg)
    }

    /// Whether the command line itself asks for a launcher that runs elsewhere than here.
    fn asks_elsewhere(&self) -> bool {
        self.launcher
            .is_some_and(|k| !launchers::unit(k).reaches_this_machine_too)
            || self.allocation.is_some()
    }

    /// The launcher for a command reaching nodes: the one chosen (SSH, Slurm, this machine;
    /// `--local` is this machine's), or SSH's over the simulated fabric (`--sim`).
    pub fn launcher(
        &self,
        plan: Option<&Plan>,
        hosts: &HostArgs,
    ) -> Result<Arc<dyn Launcher>, String> {
        let choice = self.choice(plan)?;
        if hosts.sim || hosts.local {
            let flag = if hosts.sim { "--sim" } else { "--local" };
            if self.asks_elsewhere() {
                return Err(format!(
                    "{flag} answers every command on this machine: drop --launcher {} / --allocation",
                    self.launcher.unwrap_or(choice.kind).name()
                ));
            }
            if !launchers::unit(choice.kind).reaches_this_machine_too {
                super::say(&format!(
                    "note: {flag} answers every command on this machine: the plan's {} launcher is not used\n",
                    choice.kind.name()
                ));
            }
        }
        let local = LauncherConfig {
            kind: LauncherKind::Local,
            ..LauncherConfig::default()
        };
        let cfg = if hosts.sim {
            &LauncherConfig::default()
        } else if hosts.local {
            &local
        } else {
            &choice
        };
        let name = plan.map_or("detect", |p| p.name.as_str());
        launchers::build(cfg, name, &|| hosts.transport(plan))
    }
}
