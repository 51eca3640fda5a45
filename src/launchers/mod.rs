//! Launchers, each one folder: how commands reach nodes. A launcher's folder holds all of it,
//! one file or folder per layer it reaches into (`render.rs`: how it writes commands;
//! `exec/`: how it opens sessions, starts servers and collectives; `parse.rs`: how its own
//! messages are read), and its `mod.rs` declares it as a [`Unit`]: its kind, what it writes
//! for a dry run, how it is built for a run. Adding a launcher is its folder and one line in
//! [`UNITS`]; what differs between launchers is what each declares (see
//! [`crate::render::launch::Words`]), never a comparison with a name.

pub mod local;
pub mod slurm;
pub mod ssh;

use std::sync::Arc;

use crate::exec::Transport;
use crate::exec::launch::Launcher;
use crate::plan::{LauncherConfig, LauncherKind, Plan};
use crate::render::launch::LaunchStyle;

/// Every launcher fabricplan has.
pub const UNITS: &[Unit] = &[ssh::UNIT, slurm::UNIT, local::UNIT];

/// What builds a launcher for a run: the plan's name (a Slurm allocation is named after it)
/// and the SSH transport, made only when a launcher asks for it (SSH, or the simulated fabric).
pub struct Opener<'a> {
    pub plan_name: &'a str,
    pub transport: &'a dyn Fn() -> Result<Arc<dyn Transport>, String>,
}

/// A launcher built for a run, or why not (said to the user).
pub type Built = Result<Arc<dyn Launcher>, String>;

/// One launcher, as its folder declares it.
pub struct Unit {
    pub kind: LauncherKind,
    /// How it writes commands, before anything is opened (a dry run's lines).
    pub style: fn(&LauncherConfig) -> Box<dyn LaunchStyle>,
    /// What a dry run says about how it opens a run, before the rounds (nothing for most).
    pub opening: fn(&LauncherConfig, &Plan) -> Vec<String>,
    /// The launcher itself, for a run with settings `cfg`; `Err` is said to the user.
    pub build: fn(&LauncherConfig, &Opener<'_>) -> Built,
    /// Why it cannot run a plan with settings `cfg`, when chosen on the command line over the
    /// plan's own launcher (the plan's `[launcher]` is checked when it is read).
    pub refuses: fn(&LauncherConfig, &Plan) -> Option<String>,
    /// Whether it runs in an existing allocation given with `--allocation JOBID`.
    pub takes_allocation: bool,
    /// Whether the nodes it reaches could be this machine's own sessions (`--sim` and
    /// `--local` stand in for it with a note); a launcher that reaches them only through
    /// something else (a scheduler) is refused beside them.
    pub reaches_this_machine_too: bool,
}

/// The unit of a launcher kind.
pub fn unit(kind: LauncherKind) -> &'static Unit {
    UNITS.iter().find(|u| u.kind == kind).unwrap_or(&UNITS[0])
}

/// The launcher of a run with settings `cfg` (see [`Unit::build`]).
pub fn build(
    cfg: &LauncherConfig,
    plan_name: &str,
    transport: &dyn Fn() -> Result<Arc<dyn Transport>, String>,
) -> Built {
    (unit(cfg.kind).build)(
        cfg,
        &Opener {
            plan_name,
            transport,
        },
    )
}

/// How a launcher with settings `cfg` writes its commands (see [`Unit::style`]).
pub fn style(cfg: &LauncherConfig) -> Box<dyn LaunchStyle> {
    (unit(cfg.kind).style)(cfg)
}

/// What a dry run says about how the run is opened (see [`Unit::opening`]).
pub fn opening(cfg: &LauncherConfig, plan: &Plan) -> Vec<String> {
    (unit(cfg.kind).opening)(cfg, plan)
}

/// Nothing refused: a launcher that runs any valid plan.
pub fn refuses_nothing(_: &LauncherConfig, _: &Plan) -> Option<String> {
    None
}

/// No lines: a launcher with nothing to say before the rounds.
pub fn says_nothing(_: &LauncherConfig, _: &Plan) -> Vec<String> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_exactly_one_unit() {
        use clap::ValueEnum;
        for kind in LauncherKind::value_variants() {
            let n = UNITS.iter().filter(|u| u.kind == *kind).count();
            assert_eq!(n, 1, "{kind:?}");
            assert_eq!(
                style(&LauncherConfig {
                    kind: *kind,
                    ..Default::default()
                })
                .name(),
                kind.name()
            );
        }
    }
}
