//! `run --drain`, `--resume-passed`, `--exclude-file PATH`: the options read into what the
//! runner is asked to do once the run is diagnosed (see [`crate::exec::service`]), the exclude
//! files checked before the run. `--dry-run` says what would be drained and resumed, from
//! Slurm's states of the plan's nodes now.

use std::path::PathBuf;

use clap::Args;

use super::{CliError, Format};
use crate::exec::service::{Requested, exclude_paths};
use crate::files::output::{Existing, OutputError, check_file};
use crate::launchers::slurm::exec::{SlurmControl, slurm_conf};
use crate::plan::Plan;
use crate::results::service::{Asked, REASON_PREFIX};
use crate::text::inert;

/// `run`'s options for bad nodes out of service.
#[derive(Debug, Clone, Default, Args)]
pub struct ServiceArgs {
    /// Drain each node that a FAIL finding blames (`scontrol update nodename=NODE state=drain
    /// reason='fabricplan RUN-ID: TRAP PART'`); never a node that only follows, nor one drained
    /// or down by someone else. Without it, under Slurm, the commands are printed.
    #[arg(long)]
    pub drain: bool,
    /// Resume the nodes fabricplan drained (its reason) that this run finds healthy; no others.
    #[arg(long)]
    pub resume_passed: bool,
    /// Write the blamed nodes to PATH, one per line (what `sbatch --exclude=PATH` or a
    /// scheduler's own list reads), and as one Slurm hostlist (`spark-[2,5]`) to PATH.hostlist;
    /// both replaced atomically, empty when none is blamed.
    #[arg(long, value_name = "PATH")]
    pub exclude_file: Option<PathBuf>,
}

impl ServiceArgs {
    /// What the run is asked to do about its findings.
    pub(super) fn requested(&self) -> Requested {
        Requested {
            asked: Asked {
                drain: self.drain,
                resume_passed: self.resume_passed,
            },
            exclude_file: self.exclude_file.clone(),
        }
    }

    /// The exclude files must be new or regular files of their own (checked before the run).
    pub(super) fn check_exclude(&self) -> Vec<OutputError> {
        let Some(path) = &self.exclude_file else {
            return Vec::new();
        };
        exclude_paths(path)
            .iter()
            .filter_map(|p| check_file(p, Existing::Replace).err())
            .collect()
    }

    /// `--dry-run` with `--drain`, `--resume-passed` or `--exclude-file`: what would be done, and
    /// Slurm's states of the plan's nodes now (read-only). Said on stdout as text, on stderr beside
    /// `--format json` (stdout then holds only the JSON).
    pub(super) fn dry_run(&self, plan: &Plan, format: Format) -> Result<(), CliError> {
        if !self.drain && !self.resume_passed && self.exclude_file.is_none() {
            return Ok(());
        }
        let mut out: Vec<String> = vec![
            String::new(),
            "out of service (not done: --dry-run):".into(),
        ];
        let verb = if self.drain {
            "would be drained"
        } else {
            "would be said, not drained (without --drain)"
        };
        out.push(format!(
            "  each node a FAIL finding blames {verb}: scontrol update nodename=NODE state=drain 'reason={REASON_PREFIX}{}-STAMP: TRAP PART' (never a node that only follows, nor one drained or down by someone else)",
            inert(&plan.name)
        ));
        if let Some(p) = &self.exclude_file {
            out.push(format!(
                "  the blamed nodes would be written to {} (one per line) and {}.hostlist",
                inert(&p.display().to_string()),
                inert(&p.display().to_string())
            ));
        }
        if self.drain || self.resume_passed {
            out.extend(states_now(plan, self.resume_passed)?);
        }
        let text = out.join("\n") + "\n";
        match format {
            Format::Text => {
                let mut out = super::Stdout::new();
                out.write(&text);
                out.flush();
            }
            Format::Json => super::say(&text),
        }
        Ok(())
    }
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
