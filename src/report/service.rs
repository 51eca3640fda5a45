//! What a run did with blamed and healthy nodes under Slurm ([`Service`]), as lines the
//! terminal and summary.md show: drained, not drained and why, the commands to run when
//! `--drain` was not given, resumed, left alone, the exclude list. Pure.

use crate::results::service::{Action, Done, Service};
use crate::text::inert;

/// One line per node action and one for the exclude list; none when there is nothing.
pub fn lines(s: &Service) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in &s.actions {
        let node = inert(&a.node);
        let reason = inert(&a.reason);
        let line = match (a.action, a.done) {
            (Action::Drain, Done::Done) => format!("drained {node}: {reason}"),
            (Action::Drain, Done::Printed) => format!(
                "to take {node} out of service (--drain does it): {}",
                inert(a.command.as_deref().unwrap_or_default())
            ),
            (Action::Resume, Done::Done) => {
                format!("resumed {node}: healthy in this run (drained as `{reason}`)")
            }
            (Action::Resume, Done::Printed) => format!(
                "to resume {node} (--resume-passed does it): {}",
                inert(a.command.as_deref().unwrap_or_default())
            ),
            (Action::Drain | Action::Resume, _) => format!(
                "NOT {} {node}: {}",
                if a.action == Action::Drain {
                    "drained"
                } else {
                    "resumed"
                },
                inert(a.error.as_deref().unwrap_or("not done"))
            ),
            (Action::Leave, _) => format!("left {node} as it is: {reason}"),
        };
        out.push(line);
    }
    if let Some(path) = &s.exclude_file {
        let list = if s.hostlist.is_empty() {
            "no node".to_string()
        } else {
            inert(&s.hostlist).into_owned()
        };
        out.push(format!(
            "exclude list: {list} (in {}, one per line; {}.hostlist)",
            inert(path),
            inert(path)
        ));
    }
    out
}
