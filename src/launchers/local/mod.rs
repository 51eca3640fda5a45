//! The local launcher: every node's commands on this machine, each node in a session of its
//! own (a `/bin/sh` started here running the SSH launcher's scripts): for a one-box plan.

pub mod exec;
pub mod render;

use std::sync::Arc;

use super::{Unit, refuses_nothing, says_nothing};
use crate::plan::LauncherKind;

pub const UNIT: Unit = Unit {
    kind: LauncherKind::Local,
    style: |_| Box::new(render::LocalStyle),
    opening: says_nothing,
    build: |_, _| Ok(Arc::new(exec::launcher())),
    refuses: refuses_nothing,
    takes_allocation: false,
    reaches_this_machine_too: true,
};
