//! The Slurm launcher's part of a plan: its settings in `[launcher]` (`partition`, `account`,
//! `time-limit`, `allocation`, `mpi`), read and checked. Every one needs `kind = "slurm"` (so a
//! plan never carries a setting its launcher ignores), and a Slurm plan may not override the
//! SSH launcher's mpirun templates (NCCL's ranks are one job step).

use std::collections::BTreeMap;
use std::ops::Range;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::plan::LauncherKind;
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::raw::{RawLauncher, RawTemplate};

const MPI: [&str; 2] = ["pmix", "pmi2"];

fn span<T>(s: &Spanned<T>) -> Range<usize> {
    s.span()
}

/// The Slurm launcher's settings, validated: names are Slurm-safe, the time limit is in one of
/// Slurm's formats, the allocation is a job id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlurmConfig {
    pub partition: Option<String>,
    pub account: Option<String>,
    /// As written (`30`, `1:30:00`, `2-00`), checked.
    pub time_limit: Option<String>,
    /// An existing allocation's job id: run in it, never release it.
    pub allocation: Option<u32>,
    pub mpi: SlurmMpi,
}

/// `srun --mpi=...` for NCCL's ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SlurmMpi {
    #[default]
    Pmix,
    Pmi2,
}

impl SlurmMpi {
    pub fn name(self) -> &'static str {
        match self {
            SlurmMpi::Pmix => "pmix",
            SlurmMpi::Pmi2 => "pmi2",
        }
    }
}

/// A Slurm job id, as a number (`allocation = 1234`) or as text (`"1234"`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawJobId {
    /// The job id, 1 to 4294967293.
    Number(#[schemars(range(min = 1, max = 4294967293u32))] i64),
    Text(String),
}

/// A Slurm time limit, as minutes (`time-limit = 30`) or in Slurm's text formats (`"1:30:00"`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawTimeLimit {
    /// Minutes, 1 to 5256000 (ten years).
    Minutes(#[schemars(range(min = 1, max = 5256000))] i64),
    Text(String),
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SlurmMpiSchema {
    Pmix,
    Pmi2,
}

/// The Slurm settings of `[launcher]` under the launcher `kind` the plan names (`None`: a kind
/// not known, reported already): under Slurm each checked and the SSH launcher's mpirun
/// templates refused; under another launcher each setting given is an error (it would be
/// accepted and never used).
pub fn read(
    out: &mut Vec<Problem>,
    r: &RawLauncher,
    kind: Option<LauncherKind>,
    templates: &BTreeMap<Spanned<String>, RawTemplate>,
    ssh_only: &[&str],
) -> SlurmConfig {
    match kind {
        Some(LauncherKind::Slurm) => mpirun_templates(out, r, templates, ssh_only),
        Some(_) => settings_need_slurm(out, r),
        None => {}
    }
    settings(out, r)
}

/// The Slurm settings of `[launcher]`, each checked (a problem each into `out`); Slurm's
/// defaults where a setting is not given or not valid.
fn settings(out: &mut Vec<Problem>, r: &RawLauncher) -> SlurmConfig {
    SlurmConfig {
        partition: slurm_name(out, "partition", r.partition.as_ref()),
        account: slurm_name(out, "account", r.account.as_ref()),
        time_limit: r.time_limit.as_ref().and_then(|t| time_limit(out, t)),
        allocation: r.allocation.as_ref().and_then(|a| allocation(out, a)),
        mpi: r.mpi.as_ref().and_then(|m| mpi(out, m)).unwrap_or_default(),
    }
}

/// Under SSH a Slurm setting would be accepted and never used: each one is an error.
fn settings_need_slurm(out: &mut Vec<Problem>, r: &RawLauncher) {
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
        out.push(p);
    }
}

/// Under Slurm NCCL's ranks are one job step: an override of an mpirun template is never used.
fn mpirun_templates(
    out: &mut Vec<Problem>,
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
        out.push(p);
    }
}

/// A partition or account name.
fn slurm_name(out: &mut Vec<Problem>, key: &str, v: Option<&Spanned<String>>) -> Option<String> {
    let v = v?;
    if is_slurm_name(v.get_ref()) {
        return Some(v.get_ref().clone());
    }
    out.push(
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

fn time_limit(out: &mut Vec<Problem>, t: &Spanned<RawTimeLimit>) -> Option<String> {
    let text = match t.get_ref() {
        RawTimeLimit::Minutes(n) => n.to_string(),
        RawTimeLimit::Text(s) => s.trim().to_string(),
    };
    if is_time_limit(&text) {
        return Some(text);
    }
    out.push(
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

fn allocation(out: &mut Vec<Problem>, a: &Spanned<RawJobId>) -> Option<u32> {
    if let Some(id) = parse_job_id(a.get_ref()) {
        return Some(id);
    }
    let text = match a.get_ref() {
        RawJobId::Number(n) => n.to_string(),
        RawJobId::Text(s) => s.clone(),
    };
    out.push(
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

fn mpi(out: &mut Vec<Problem>, m: &Spanned<String>) -> Option<SlurmMpi> {
    match m.get_ref().as_str() {
        "pmix" => Some(SlurmMpi::Pmix),
        "pmi2" => Some(SlurmMpi::Pmi2),
        other => {
            let p = Problem::error(
                "plan::launcher-mpi",
                format!("MPI plugin `{other}` is not one fabricplan launches with"),
            )
            .at(span(m), "unknown MPI plugin");
            out.push(match did_you_mean(other, MPI.iter().copied()) {
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
    use super::SlurmMpi;
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
