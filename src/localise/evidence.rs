//! What a flow says about the parts of the fabric it used.

use crate::gate::judge::Outcome;
use crate::gate::threshold::Metric;
use crate::gate::trap::Trap;
use crate::plan::{Endpoint, IslId, Plan, SwitchId};
use crate::results::{JobResult, JobStatus};
use crate::schedule::{Job, Pair};

/// A part of the fabric a flow depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Element {
    /// A node half, sending or receiving (a half can fail one way only).
    End { endpoint: Endpoint, sending: bool },
    /// One direction of an ISL: from switch `from` to its other end.
    Isl { isl: IslId, from: SwitchId },
}

/// The parts a flow uses: its client sending, its server receiving, the ISL directions on its
/// path; both ways of each for a bidirectional flow.
pub fn elements(plan: &Plan, pair: &Pair) -> Vec<Element> {
    let mut out = vec![
        Element::End {
            endpoint: pair.client.clone(),
            sending: true,
        },
        Element::End {
            endpoint: pair.server.clone(),
            sending: false,
        },
    ];
    for (isl, from) in pair.path.isl_hops() {
        out.push(Element::Isl { isl, from });
    }
    if pair.bidirectional {
        out.push(Element::End {
            endpoint: pair.client.clone(),
            sending: false,
        });
        out.push(Element::End {
            endpoint: pair.server.clone(),
            sending: true,
        });
        for (isl, from) in pair.path.isl_hops() {
            let i = &plan.isls[isl.0];
            let back = if i.a == from { i.b } else { i.a };
            out.push(Element::Isl { isl, from: back });
        }
    }
    out
}

/// What a flow showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Its main gate OK, nothing failing: every part it used works.
    Passed,
    /// A FAIL: one of its parts does not.
    Failed,
    /// Its main gate a WARN, nothing failing: it vouches for nothing and proves nothing, but a
    /// part named at fault explains it too.
    Warned,
}

/// One flow's evidence.
#[derive(Debug, Clone)]
pub struct Observed {
    pub job: Job,
    pub seen: Seen,
    /// The trap its failure was read as, the value it measured and what was expected of it.
    pub trap: Option<Trap>,
    pub measured: Option<f64>,
    pub expected: Option<f64>,
}

impl Observed {
    /// What `result` of `job` says, when it says something: a FAIL is a failure (measured or
    /// not: a server that dies is its half's too); the main gate OK with nothing failing is a
    /// pass, a WARN a warning. A job skipped and a job without a pair say nothing.
    pub fn from_result(job: &Job, result: &JobResult, metric: Metric) -> Option<Observed> {
        job.pair.as_ref()?;
        if result.status == JobStatus::Skipped {
            return None;
        }
        let main = result.verdicts.iter().find(|v| v.metric == Some(metric));
        let failed = result.verdicts.iter().find(|v| v.outcome == Outcome::Fail);
        let seen = match (failed, main.map(|m| m.outcome)) {
            (Some(_), _) => Seen::Failed,
            (None, Some(Outcome::Ok)) => Seen::Passed,
            (None, Some(Outcome::Warn)) => Seen::Warned,
            _ => return None,
        };
        let trap = main
            .filter(|m| m.outcome != Outcome::Ok)
            .or(failed)
            .and_then(|v| v.trap);
        Some(Observed {
            job: job.clone(),
            seen,
            trap,
            measured: main.and_then(|m| m.measured),
            expected: result.expected_gbps,
        })
    }
}
