//! Bad nodes out of service, on request (`run --drain`, `--resume-passed`): Slurm's states of
//! the blamed and healthy nodes read, [`crate::results::service::plan`]'s actions taken (each
//! `scontrol update` run once, its refusal recorded), after the diagnosis named the parts.

use crate::exec::launch::slurm::SlurmControl;
use crate::results::RunResults;
use crate::results::service::{self, Action, Asked, Done, Service};

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
