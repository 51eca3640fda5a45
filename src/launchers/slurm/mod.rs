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
};
