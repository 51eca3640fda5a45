//! `[launcher]`: which launcher runs the plan; the settings of a launcher are read by its own
//! folder (`crate::launchers::NAME::plan`).

use std::collections::BTreeMap;

use clap::ValueEnum;
use toml::Spanned;

use super::{Ctx, span};
use crate::launchers::slurm::plan as slurm;
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;

/// `ssh_only`: the templates only the SSH launcher writes (the kinds' mpirun lines, see
/// [`crate::plan::Catalog::ssh_only_templates`]).
pub(super) fn launcher(
    ctx: &mut Ctx,
    raw: Option<&RawLauncher>,
    templates: &BTreeMap<Spanned<String>, RawTemplate>,
    ssh_only: &[&str],
) -> LauncherConfig {
    let Some(r) = raw else {
        return LauncherConfig::default();
    };
    let kind = kind(ctx, r);
    let mut found = Vec::new();
    let slurm = slurm::read(&mut found, r, kind, templates, ssh_only);
    found.into_iter().for_each(|p| ctx.push(p));
    LauncherConfig {
        kind: kind.unwrap_or_default(),
        slurm,
    }
}

/// `kind`: `ssh` (also when not given) or `slurm`; `None` when it is neither (reported).
fn kind(ctx: &mut Ctx, r: &RawLauncher) -> Option<LauncherKind> {
    let Some(k) = &r.kind else {
        return Some(LauncherKind::Ssh);
    };
    let other = k.get_ref().as_str();
    if let Some(kind) = LauncherKind::value_variants()
        .iter()
        .find(|v| v.name() == other)
    {
        return Some(*kind);
    }
    let p = Problem::error(
        "plan::launcher-kind",
        format!("launcher `{other}` is not known"),
    )
    .at(span(k), "unknown launcher");
    let names = LauncherKind::value_variants().iter().map(|v| v.name());
    ctx.push(match did_you_mean(other, names) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help(format!(
            "`kind` is one of {} (`ssh` when not given)",
            LauncherKind::value_variants()
                .iter()
                .map(|v| format!("`{}`", v.name()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    });
    None
}
