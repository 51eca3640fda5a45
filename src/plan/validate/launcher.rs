//! `[launcher]`: which launcher runs the plan, and the Slurm launcher's settings. Every Slurm
//! setting needs `kind = "slurm"` (so a plan never carries a setting its launcher ignores), and
//! a Slurm plan may not override the SSH launcher's mpirun templates.

use std::collections::BTreeMap;
use std::ops::Range;

use clap::ValueEnum;
use toml::Spanned;

use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;

const MPI: [&str; 2] = ["pmix", "pmi2"];

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
    match kind {
        Some(LauncherKind::Slurm) => mpirun_templates(ctx, r, templates, ssh_only),
        Some(LauncherKind::Ssh | LauncherKind::Local) => settings_need_slurm(ctx, r),
        // an unknown kind is the one mistake reported
        None => {}
    }
    let slurm = SlurmConfig {
        partition: slurm_name(ctx, "partition", r.partition.as_ref()),
        account: slurm_name(ctx, "account", r.account.as_ref()),
        time_limit: r.time_limit.as_ref().and_then(|t| time_limit(ctx, t)),
        allocation: r.allocation.as_ref().and_then(|a| allocation(ctx, a)),
        mpi: r.mpi.as_ref().and_then(|m| mpi(ctx, m)).unwrap_or_default(),
    };
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

/// Under SSH a Slurm setting would be accepted and never used: each one is an error.
fn settings_need_slurm(ctx: &mut Ctx, r: &RawLauncher) {
    let settings: [(&str, Option<Range<usize>>); 5] = [
        ("partition", r.partition.as_ref().map(span)),
        ("account", r.account.as_ref().map(span)),
        ("time-limit", r.time_limit.as_ref().map(span)),
        ("allocation", r.allocation.as_ref().map(span)),
        ("mpi", r.mpi.as_ref().map(span)),
    ];
    for (key, at) in settings {
        let Some(at) = at else { continue };
        let mut p = Problem::error(
            "plan::launcher-setting",
            format!("`{key}` is a setting of the slurm launcher, and this plan runs over SSH"),
        )
        .at(at, "used only by the slurm launcher")
        .help(format!(
            "add `kind = \"slurm\"` to `[launcher]` (`fabricplan run --launcher ssh` still runs it over SSH), or remove `{key}`"
        ));
        if let Some(k) = &r.kind {
            p = p.also(span(k), "the launcher is SSH");
        }
        ctx.push(p);
    }
}

/// Under Slurm NCCL's ranks are one job step: an override of an mpirun template is never used.
fn mpirun_templates(
    ctx: &mut Ctx,
    r: &RawLauncher,
    templates: &BTreeMap<Spanned<String>, RawTemplate>,
    ssh_only: &[&str],
) {
    for name in templates.keys() {
        if !ssh_only.contains(&name.get_ref().as_str()) {
            continue;
        }
        let mut p = Problem::error(
            "plan::launcher-template",
            format!(
                "template `{}` writes the SSH launcher's mpirun line, which the slurm launcher does not run",
                name.get_ref()
            ),
        )
        .at(span(name), "not used under Slurm")
        .help(
            "under Slurm NCCL's ranks are one job step (`srun --mpi=pmix`, or `mpi = \"pmi2\"`): remove this override, or set `kind = \"ssh\"`",
        );
        if let Some(k) = &r.kind {
            p = p.also(span(k), "the launcher is Slurm");
        }
        ctx.push(p);
    }
}

/// A partition or account name.
fn slurm_name(ctx: &mut Ctx, key: &str, v: Option<&Spanned<String>>) -> Option<String> {
    let v = v?;
    if is_slurm_name(v.get_ref()) {
        return Some(v.get_ref().clone());
    }
    ctx.push(
        Problem::error(
            "plan::launcher-name",
            format!("{key} `{}` is not a Slurm {key} name", v.get_ref()),
        )
        .at(span(v), "not a Slurm name")
        .help(format!(
            "{key} names use letters, digits, `-`, `_` and `.` ({} lists them)",
            if key == "account" {
                "`sacctmgr show account`"
            } else {
                "`sinfo -s`"
            }
        )),
    );
    None
}

fn time_limit(ctx: &mut Ctx, t: &Spanned<RawTimeLimit>) -> Option<String> {
    let text = match t.get_ref() {
        RawTimeLimit::Minutes(n) => n.to_string(),
        RawTimeLimit::Text(s) => s.trim().to_string(),
    };
    if is_time_limit(&text) {
        return Some(text);
    }
    ctx.push(
        Problem::error(
            "plan::time-limit",
            format!("time limit `{text}` is not in Slurm's format"),
        )
        .at(span(t), "not a Slurm time limit")
        .help(
            "write minutes (`30`), `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM` or `D-HH:MM:SS` (e.g. `\"1:30:00\"`), more than zero",
        ),
    );
    None
}

fn allocation(ctx: &mut Ctx, a: &Spanned<RawJobId>) -> Option<u32> {
    if let Some(id) = parse_job_id(a.get_ref()) {
        return Some(id);
    }
    let text = match a.get_ref() {
        RawJobId::Number(n) => n.to_string(),
        RawJobId::Text(s) => s.clone(),
    };
    ctx.push(
        Problem::error(
            "plan::allocation",
            format!("allocation `{text}` is not a Slurm job id"),
        )
        .at(span(a), "not a job id")
        .help(
            "the number `salloc` printed (`Granted job allocation 1234`), as `squeue --me` lists it; or remove `allocation` and fabricplan allocates the plan's nodes itself",
        ),
    );
    None
}

fn mpi(ctx: &mut Ctx, m: &Spanned<String>) -> Option<SlurmMpi> {
    match m.get_ref().as_str() {
        "pmix" => Some(SlurmMpi::Pmix),
        "pmi2" => Some(SlurmMpi::Pmi2),
        other => {
            let p = Problem::error(
                "plan::launcher-mpi",
                format!("MPI plugin `{other}` is not one fabricplan launches with"),
            )
            .at(span(m), "unknown MPI plugin");
            ctx.push(match did_you_mean(other, MPI.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(
                    "`mpi` is `pmix` (the default) or `pmi2`: whichever `srun --mpi=list` offers and the nodes' Open MPI was built with",
                ),
            });
            None
        }
    }
}

/// Partition and account names: what Slurm lists, and nothing a shell reads.
pub fn is_slurm_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A Slurm job id: a whole number from 1 to 4294967293 (Slurm reserves the two above).
pub fn parse_job_id(v: &RawJobId) -> Option<u32> {
    let n: u64 = match v {
        RawJobId::Number(n) => u64::try_from(*n).ok()?,
        RawJobId::Text(s) => job_id_text(s)?.into(),
    };
    u32::try_from(n)
        .ok()
        .filter(|n| (1..=0xFFFF_FFFD).contains(n))
}

/// A job id written as text (the command line's `--allocation`).
pub fn job_id_text(s: &str) -> Option<u32> {
    let s = s.trim();
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>()
        .ok()
        .filter(|n| (1..=0xFFFF_FFFD).contains(n))
}

/// Slurm's time formats (`-t`): `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`; more than zero.
pub fn is_time_limit(s: &str) -> bool {
    let num = |p: &str| !p.is_empty() && p.len() <= 7 && p.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, s),
    };
    if days.is_some_and(|d| !num(d)) {
        return false;
    }
    // after a day count: H, H:M, H:M:S; without: M, M:S, H:M:S
    let parts: Vec<&str> = rest.split(':').collect();
    if !(1..=3).contains(&parts.len()) || !parts.iter().all(|p| num(p)) {
        return false;
    }
    // minutes and seconds after the first field stay below 60
    if parts
        .iter()
        .skip(1)
        .any(|p| p.parse::<u32>().unwrap_or(60) >= 60)
    {
        return false;
    }
    s.bytes().any(|b| b.is_ascii_digit() && b != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_time_formats() {
        for ok in [
            "30",
            "1",
            "0:30",
            "1:30:00",
            "2-00",
            "2-12:30",
            "1-00:00:01",
            "90",
        ] {
            assert!(is_time_limit(ok), "{ok}");
        }
        for bad in [
            "",
            "0",
            "0:00",
            "1h",
            "1:60",
            "1:2:3:4",
            "-1",
            "1-",
            "a-1",
            "1-2-3",
            "1:00:60",
            " 5",
            "UNLIMITED",
        ] {
            assert!(!is_time_limit(bad), "{bad}");
        }
    }

    #[test]
    fn job_ids() {
        assert_eq!(parse_job_id(&RawJobId::Number(1234)), Some(1234));
        assert_eq!(parse_job_id(&RawJobId::Text("77".into())), Some(77));
        for bad in [
            RawJobId::Number(0),
            RawJobId::Number(-3),
            RawJobId::Number(1 << 40),
            RawJobId::Text("12a".into()),
            RawJobId::Text("$(id)".into()),
            RawJobId::Text("".into()),
            RawJobId::Text("1234_5".into()),
            RawJobId::Text("4294967295".into()),
        ] {
            assert_eq!(parse_job_id(&bad), None, "{bad:?}");
        }
    }
}

#[cfg(test)]
mod plans {
    use crate::plan::{LauncherKind, NoKinds, SlurmMpi};
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
