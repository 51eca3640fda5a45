//! The Slurm launcher: every command a job step of one allocation, started from this machine
//! with `srun`; its own messages (a node down or drained, a step that could not launch, an
//! allocation refused) read and named.

pub mod exec;
pub mod gate;
pub mod parse;
pub mod plan;
pub mod render;

use std::sync::Arc;

use super::Unit;
use crate::plan::LauncherKind;

pub const UNIT: Unit = Unit {
    kind: LauncherKind::Slurm,
    style: |cfg| Box::new(render::SlurmStyle::new(cfg.slurm.allocation, cfg.slurm.mpi)),
    opening: render::opening,
    build: |cfg, open| {
        Ok(Arc::new(exec::SlurmLauncher::new(
            &cfg.slurm,
            open.plan_name,
            exec::slurm_conf()?,
        )))
    },
    refuses: |cfg, plan| {
        let t = crate::kinds::ssh_only_templates()
            .into_iter()
            .find(|t| plan.templates.contains_key(*t))?;
        Some(format!(
            "the plan overrides template `{t}`, an mpirun line the slurm launcher does not run (NCCL's ranks are one `srun --mpi={}` step): remove the override, or use --launcher ssh",
            cfg.slurm.mpi.name()
        ))
    },
    takes_allocation: true,
    reaches_this_machine_too: false,
};
