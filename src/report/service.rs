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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::service::NodeAction;

    fn action(node: &str, action: Action, done: Done) -> NodeAction {
        NodeAction {
            node: node.into(),
            action,
            reason: "fabricplan r: firmware throttle spark-2.f0.b".into(),
            command: Some(format!("scontrol update nodename={node} state=drain")),
            done,
            error: (done == Done::Failed).then(|| "Invalid user id".to_string()),
        }
    }

    #[test]
    fn every_action_says_what_was_done_or_what_to_run() {
        let s = Service {
            actions: vec![
                action("spark-2", Action::Drain, Done::Printed),
                action("spark-3", Action::Drain, Done::Done),
                action("spark-4", Action::Drain, Done::Failed),
                action("spark-5", Action::Resume, Done::Done),
                action("spark-6", Action::Leave, Done::Nothing),
            ],
            hostlist: "spark-[2-4]".into(),
            exclude_file: Some("/shared/bad".into()),
        };
        assert_eq!(
            lines(&s),
            [
                "to take spark-2 out of service (--drain does it): scontrol update nodename=spark-2 state=drain",
                "drained spark-3: fabricplan r: firmware throttle spark-2.f0.b",
                "NOT drained spark-4: Invalid user id",
                "resumed spark-5: healthy in this run (drained as `fabricplan r: firmware throttle spark-2.f0.b`)",
                "left spark-6 as it is: fabricplan r: firmware throttle spark-2.f0.b",
                "exclude list: spark-[2-4] (in /shared/bad, one per line; /shared/bad.hostlist)",
            ]
        );
        assert!(lines(&Service::default()).is_empty());
    }
}
