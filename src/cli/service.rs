//! `run --drain`, `--resume-passed`, `--exclude-file PATH`: once the run is diagnosed, the
//! blamed nodes out of service and the healthy ones fabricplan drained back (through Slurm's
//! clients on this machine, whichever launcher ran the nodes), the exclude list written; under
//! Slurm without `--drain`, the drain commands said. `--dry-run` says what would be drained
//! and resumed, from Slurm's states of the plan's nodes now.

use std::path::{Path, PathBuf};

use super::CliError;
use super::run::RunArgs;
use crate::exec::launch::slurm::{SlurmControl, slurm_conf};
use crate::files::output::{Existing, OutputError, check_file, folder_of, write_atomic};
use crate::plan::Plan;
use crate::results::RunResults;
use crate::results::service::{Asked, REASON_PREFIX, Service};
use crate::text::inert;

fn asked(args: &RunArgs) -> Asked {
    Asked {
        drain: args.drain,
        resume_passed: args.resume_passed,
    }
}

/// `PATH` and `PATH.hostlist`.
fn exclude_paths(path: &Path) -> [PathBuf; 2] {
    let mut list = path.as_os_str().to_owned();
    list.push(".hostlist");
    [path.to_path_buf(), PathBuf::from(list)]
}

/// The exclude files must be new or regular files of their own (checked before the run).
pub(super) fn check_exclude(args: &RunArgs) -> Vec<OutputError> {
    let Some(path) = &args.exclude_file else {
        return Vec::new();
    };
    exclude_paths(path)
        .iter()
        .filter_map(|p| check_file(p, Existing::Replace).err())
        .collect()
}

/// Take the actions asked for and write the exclude list into `r.service`; what could not be
/// written is returned (the run's evidence is then incomplete).
pub(super) async fn apply(r: &mut RunResults, args: &RunArgs, slurm: bool) -> Vec<String> {
    let wanted = args.drain || args.resume_passed || args.exclude_file.is_some();
    if !wanted && (!slurm || crate::results::service::blamed(r).is_empty()) {
        return Vec::new();
    }
    let control = slurm_conf().map(SlurmControl::new);
    let mut s: Service =
        crate::exec::service::apply(r, asked(args), control.as_ref().map_err(Clone::clone)).await;
    let mut lost = Vec::new();
    if let Some(path) = &args.exclude_file {
        let names: Vec<String> = crate::results::service::blamed(r)
            .into_iter()
            .map(|(n, _)| format!("{n}\n"))
            .collect();
        let hostlist = if s.hostlist.is_empty() {
            String::new()
        } else {
            format!("{}\n", s.hostlist)
        };
        for (p, text) in exclude_paths(path).iter().zip([names.concat(), hostlist]) {
            if let Err(e) = write(p, &text) {
                lost.push(format!("{}: {e}", p.display()));
            }
        }
        s.exclude_file = Some(path.display().to_string());
    }
    r.service = Some(s);
    lost
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| std::io::Error::other("not a file name"))?;
    write_atomic(&folder_of(path), &name, text.as_bytes()).map(|_| ())
}

/// `--dry-run` with `--drain`, `--resume-passed` or `--exclude-file`: what would be done, and
/// Slurm's states of the plan's nodes now (read-only). Said on stdout as text, on stderr beside
/// `--format json` (stdout then holds only the JSON).
pub(super) fn dry_run(plan: &Plan, args: &RunArgs) -> Result<(), CliError> {
    if !args.drain && !args.resume_passed && args.exclude_file.is_none() {
        return Ok(());
    }
    let mut out: Vec<String> = vec![
        String::new(),
        "out of service (not done: --dry-run):".into(),
    ];
    let verb = if args.drain {
        "would be drained"
    } else {
        "would be said, not drained (without --drain)"
    };
    out.push(format!(
        "  each node a FAIL finding blames {verb}: scontrol update nodename=NODE state=drain 'reason={REASON_PREFIX}{}-STAMP: TRAP PART' (never a node that only follows, nor one drained or down by someone else)",
        inert(&plan.name)
    ));
    if let Some(p) = &args.exclude_file {
        out.push(format!(
            "  the blamed nodes would be written to {} (one per line) and {}.hostlist",
            inert(&p.display().to_string()),
            inert(&p.display().to_string())
        ));
    }
    if args.drain || args.resume_passed {
        out.extend(states_now(plan, args.resume_passed)?);
    }
    let text = out.join("\n") + "\n";
    match args.format {
        super::Format::Text => {
            let mut out = super::Stdout::new();
            out.write(&text);
            out.flush();
        }
        super::Format::Json => super::say(&text),
    }
    Ok(())
}

/// Slurm's states of the plan's nodes now, each drained one with what would become of it.
fn states_now(plan: &Plan, resume: bool) -> Result<Vec<String>, CliError> {
    let names: Vec<&str> = plan.nodes.iter().map(|n| n.name.as_str()).collect();
    let control = match slurm_conf() {
        Ok(c) => SlurmControl::new(c),
        Err(why) => return Ok(vec![format!("  Slurm cannot be asked: {}", inert(&why))]),
    };
    let rt = super::runtime()?;
    let states = match rt.block_on(control.states(&names)) {
        Ok(s) => s,
        Err(why) => {
            return Ok(vec![format!(
                "  Slurm's node states cannot be read: {}",
                inert(&why)
            )]);
        }
    };
    let mut out = vec!["  Slurm's states of the plan's nodes now:".to_string()];
    for n in &names {
        let Some(s) = states.iter().find(|s| s.node == *n) else {
            out.push(format!("    {}: not a Slurm node", inert(n)));
            continue;
        };
        let reason = s.reason.as_deref().unwrap_or("");
        let ours = reason.starts_with(REASON_PREFIX);
        let fate = match (s.drained(), ours, resume) {
            (true, true, true) => "drained by fabricplan: resumed if this run finds it healthy",
            (true, true, false) => {
                "drained by fabricplan: stays drained (--resume-passed resumes it when healthy)"
            }
            (true, false, _) => "drained by someone else: left alone",
            (false, _, _) if !s.usable() => "down: a blamed node is left as it is",
            _ => "in service: drained if a FAIL finding blames it",
        };
        let why = if reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", inert(reason))
        };
        out.push(format!("    {} {}{why}: {fate}", inert(n), inert(&s.state)));
    }
    Ok(out)
}
