//! Sessions that ended during the run. A node's session (its one command stream,
//! [`crate::exec::session`]) that dies or stops answering is that node's finding: one FAIL
//! (`session NODE`) naming the part (its sshd, its slurmd), the failures of the round on that
//! node that came from it following it. The session is opened again once, before the next
//! round; a node it cannot be opened on is out of the run from then on (its jobs are skipped
//! for that FAIL), and the run goes on with the rest.

use super::ctx::Ctx;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::results::Event;
use crate::results::{JobResult, RunResults};

/// The gate of a node's session.
pub(crate) fn gate(node: &str) -> String {
    format!("session {node}")
}

/// Ask the launcher which sessions ended (`when`: during which round, or before the rounds),
/// record each as one FAIL, mark `jobs`' failures that followed from it, and put the nodes whose
/// session could not be opened again out of the run.
pub(crate) async fn check(
    ctx: &mut Ctx<'_>,
    when: &str,
    jobs: &mut [JobResult],
    results: &mut RunResults,
) {
    for r in ctx.launcher.reopen().await {
        let Some(node) = ctx
            .plan
            .nodes
            .iter()
            .find(|n| n.name == r.host)
            .map(|n| n.id)
        else {
            continue;
        };
        let gate = gate(&r.host);
        let detail = match &r.again {
            Ok(()) => format!("{} ({when}); opened again for the rest of the run", r.why),
            Err(e) => format!(
                "{} ({when}); opening it again failed ({e}): {} is out of the run from here on",
                r.why, r.host
            ),
        };
        let v = Verdict::check(gate.clone(), Outcome::Fail, detail, Some(r.trap))
            .about(vec![r.part.clone()]);
        for j in jobs.iter_mut().filter(|j| j.hosts.contains(&r.host)) {
            follow(&mut j.verdicts, &gate, &r.part);
        }
        if let Err(e) = &r.again {
            ctx.unreachable.insert(node, e.to_string());
            ctx.out_by.insert(node, gate.clone());
        }
        ctx.emit(Event::Preflight(v.clone()));
        results.preflight.push(v);
    }
}

/// A job's failures that a lost session explains follow its FAIL, and are about the part it
/// names (the node's sshd, its slurmd): the host unreachable, no answer in time, and every
/// failure that measured nothing. A session that ends stops what it ran (its server, its
/// client), so the peer's tool fails too ("Failed to exchange data", a server gone): the lost
/// session is their one explanation, so the diagnosis makes them one finding with it. A value
/// that was measured is evidence of its own and is left as it is.
fn follow(verdicts: &mut [Verdict], gate: &str, part: &Part) {
    for v in verdicts.iter_mut().filter(|v| {
        v.outcome != Outcome::Ok
            && v.follows.is_none()
            && (matches!(v.trap, Some(Trap::Unreachable | Trap::Timeout)) || v.measured.is_none())
    }) {
        v.follows = Some(gate.to_string());
        v.set_about(vec![part.clone()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::part::Software;

    #[test]
    fn what_a_lost_session_explains_follows_it_and_names_its_part() {
        let slurmd = Part::software("spark-2", Software::Slurmd);
        let sshd = Part::software("spark-2", Software::Sshd);
        let lost = |trap| {
            Verdict::check("rdma-bw x", Outcome::Fail, "connection lost", Some(trap))
                .about(vec![sshd.clone()])
        };
        let mut slow = Verdict::check(
            "rdma-bw y",
            Outcome::Fail,
            "slow",
            Some(Trap::BelowLineRate),
        )
        .about(vec![Part::node("spark-2")]);
        slow.measured = Some(12.7);
        // its peer's tool, whose server the lost session took along
        let peer = Verdict::check(
            "rdma-bw w",
            Outcome::Fail,
            "Failed to exchange data between server and clients",
            Some(Trap::ToolError),
        )
        .about(vec![Part::software("spark-1", Software::Tools)]);
        let ok = Verdict::check("rdma-bw z", Outcome::Ok, "", None).about(vec![sshd.clone()]);
        let mut vs = vec![
            lost(Trap::Unreachable),
            lost(Trap::Timeout),
            peer,
            slow.clone(),
            ok.clone(),
        ];
        follow(&mut vs, "session spark-2", &slurmd);
        for v in &vs[..3] {
            assert_eq!(v.follows.as_deref(), Some("session spark-2"));
            assert_eq!(v.implicates, vec![slurmd.clone()]);
        }
        // a value measured is evidence of its own, and what passed is left as it was
        assert_eq!(vs[3], slow);
        assert_eq!(vs[4], ok);
    }
}
