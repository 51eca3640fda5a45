//! The SSH launcher: every command a job of its node's one SSH session for the run, started
//! from this machine; NCCL's ranks started by `mpirun` from the first rank over the fabric
//! subnets.

pub mod exec;
pub mod render;

use std::sync::Arc;

use super::{Unit, refuses_nothing, says_nothing};
use crate::gate::part::Software;
use crate::plan::LauncherKind;

pub const UNIT: Unit = Unit {
    kind: LauncherKind::Ssh,
    style: |_| Box::new(render::SshStyle),
    opening: says_nothing,
    build: |_, open| {
        Ok(Arc::new(exec::launcher::SshLauncher::over(
            (open.transport)()?,
            &render::SshStyle,
            Some(Software::Sshd),
        )))
    },
    refuses: refuses_nothing,
    takes_allocation: false,
    reaches_this_machine_too: true,
};
