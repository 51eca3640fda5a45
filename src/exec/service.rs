//! Bad nodes out of service, on request (`run --drain`, `--resume-passed`, `--exclude-file`):
//! once the run is diagnosed, Slurm's states of the blamed and healthy nodes read (through
//! Slurm's clients on this machine, whichever launcher ran the nodes),
//! [`crate::results::service::plan`]'s actions taken (each `scontrol update` run once, its
//! refusal recorded), the exclude list written; under Slurm without `--drain`, the drain
//! commands only said.

use std::path::{Path, PathBuf};

use crate::files::output::{folder_of, write_atomic};
use crate::launchers::slurm::exec::{SlurmControl, slurm_conf};
use crate::results::RunResults;
use crate::results::service::{self, Action, Asked, Done, Service};

/// What a run is asked to do about its findings.
#[derive(Debug, Clone, Default)]
pub struct Requested {
    pub asked: Asked,
    /// `--exclude-file PATH`: the blamed nodes written to PATH and PATH.hostlist.
    pub exclude_file: Option<PathBuf>,
}

/// `PATH` and `PATH.hostlist`: the files of `--exclude-file PATH`.
pub fn exclude_paths(path: &Path) -> [PathBuf; 2] {
    let mut list = path.as_os_str().to_owned();
    list.push(".hostlist");
    [path.to_path_buf(), PathBuf::from(list)]
}

/// Take the actions `req` asks for on a diagnosed run and write the exclude list, all said in
/// `r.service`; what could not be written is returned (the run's evidence is then incomplete).
/// Nothing is done (nor `r.service` set) when nothing was asked and there is no drain to say
/// (`scheduled`: the run's nodes are Slurm's, whose drains are said unasked).
pub async fn take(r: &mut RunResults, req: &Requested, scheduled: bool) -> Vec<String> {
    let asked = req.asked;
    let wanted = asked.drain || asked.resume_passed || req.exclude_file.is_some();
    if !wanted && (!scheduled || service::blamed(r).is_empty()) {
        return Vec::new();
    }
    let control = slurm_conf().map(SlurmControl::new);
    let mut s = apply(r, asked, control.as_ref().map_err(Clone::clone)).await;
    let mut lost = Vec::new();
    if let Some(path) = &req.exclude_file {
        let names: Vec<String> = service::blamed(r)
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

/// `text` as the file `path`, atomically, never over anything but a regular file.
fn write(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| std::io::Error::other("not a file name"))?;
    write_atomic(&folder_of(path), &name, text.as_bytes()).map(|_| ())
}

/// The actions asked for, taken. `control`: Slurm's clients, or why there are none (then every
/// action asked for fails with that reason). Nothing is read from Slurm unless something was
/// asked: the drain commands are then only said.
pub async fn apply(
    r: &RunResults,
    asked: Asked,
    control: Result<&SlurmControl, String>,
) -> Service {
    if !asked.drain && !asked.resume_passed {
        return service::plan(r, asked, &[]);
    }
    let mut names: Vec<String> = service::blamed(r).into_iter().map(|(n, _)| n).collect();
    if asked.resume_passed {
        names.extend(service::healthy(r));
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let states = match &control {
        Ok(c) => c.states(&refs).await,
        Err(why) => Err(why.clone()),
    };
    let (states, unread) = match states {
        Ok(s) => (s, None),
        Err(why) => (Vec::new(), Some(format!("Slurm's node states: {why}"))),
    };
    let mut s = service::plan(r, asked, &states);
    for a in &mut s.actions {
        let wanted = match a.action {
            Action::Drain => asked.drain,
            Action::Resume => asked.resume_passed,
            Action::Leave => false,
        };
        if !wanted {
            continue;
        }
        if let Some(why) = &unread {
            a.done = Done::Failed;
            a.error = Some(why.clone());
            continue;
        }
        let argv = match a.action {
            Action::Drain => service::drain_argv(&a.node, &a.reason),
            _ => service::resume_argv(&a.node),
        };
        let done = match &control {
            Ok(c) => c.run(&argv).await.map(|_| ()),
            Err(why) => Err(why.clone()),
        };
        match done {
            Ok(()) => a.done = Done::Done,
            Err(why) => {
                a.done = Done::Failed;
                a.error = Some(why);
            }
        }
    }
    s
}
