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
    match kind {
        Some(LauncherKind::Slurm) => slurm::mpirun_templates(&mut found, r, templates, ssh_only),
        Some(LauncherKind::Ssh | LauncherKind::Local) => slurm::settings_need_slurm(&mut found, r),
        // an unknown kind is the one mistake reported
        None => {}
    }
    let slurm = slurm::settings(&mut found, r);
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

#[cfg(test)]
mod plans {
    use crate::launchers::slurm::plan::SlurmMpi;
    use crate::plan::{LauncherKind, NoKinds};
    use std::path::Path;

    const BASE: &str = r#"format-version = 1
name = "s"
[[node]]
name = "a"
[[node]]
name = "b"
[[cable]]
kind = "direct"
ends = ["a.f0", "b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
"#;

    #[test]
    fn a_slurm_launcher_is_read_whole() {
        let text = format!(
            "{BASE}[launcher]\nkind = \"slurm\"\npartition = \"gpu\"\naccount = \"net-ops\"\ntime-limit = 45\nallocation = \"1234\"\nmpi = \"pmi2\"\n"
        );
        let plan = crate::plan::load_str(Path::new("s.toml"), &text, Path::new("."), &NoKinds)
            .unwrap()
            .plan;
        let l = &plan.launcher;
        assert_eq!(l.kind, LauncherKind::Slurm);
        assert_eq!(l.slurm.partition.as_deref(), Some("gpu"));
        assert_eq!(l.slurm.account.as_deref(), Some("net-ops"));
        assert_eq!(l.slurm.time_limit.as_deref(), Some("45"));
        assert_eq!(l.slurm.allocation, Some(1234));
        assert_eq!(l.slurm.mpi, SlurmMpi::Pmi2);
        // no table: SSH, Slurm's defaults kept for `--launcher slurm`
        let plan = crate::plan::load_str(Path::new("s.toml"), BASE, Path::new("."), &NoKinds)
            .unwrap()
            .plan;
        assert_eq!(plan.launcher.kind, LauncherKind::Ssh);
        assert_eq!(plan.launcher.slurm.mpi, SlurmMpi::Pmix);
        assert_eq!(plan.launcher.slurm.allocation, None);
    }

    #[test]
    fn a_hostile_partition_is_refused() {
        let text = format!("{BASE}[launcher]\nkind = \"slurm\"\npartition = \"gpu; rm -rf /\"\n");
        assert!(
            crate::plan::load_str(Path::new("s.toml"), &text, Path::new("."), &NoKinds).is_err()
        );
    }
}
