//! Which regressions of a comparison the new run's findings explain: the diagnosis's idea
//! applied to a comparison. A regression is explained by a finding when its gate is that
//! finding's evidence or follows from it, or (an NCCL per-size row, a gate the finding does not
//! name) when its job has a gate that does. What no finding explains is listed on its own.

use std::collections::HashMap;

use serde::Serialize;

use super::diff::{Comparison, Row};
use super::entry::Quantity;
use crate::gate::judge::Outcome;
use crate::results::{Finding, RunResults};

/// One finding of the new run and the regressions it explains.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// The part's short name (`spark-a.f0.a`, `ISL sw-a-sw-b`).
    pub name: String,
    pub outcome: Outcome,
    pub trap: String,
    /// Indexes into the comparison's rows, worst first.
    pub rows: Vec<usize>,
}

/// The regressions of a comparison, by cause.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Explained {
    /// Each finding of the new run (in its order), with the regressions it explains.
    pub causes: Vec<Cause>,
    /// Regressions no finding explains: indexes into the rows, in their order.
    pub unexplained: Vec<usize>,
    pub regressions: usize,
}

impl Cause {
    /// The row that shows the cause best: the worst regression whose measurement names the
    /// part, else the worst bandwidth gate it explains, else the worst it explains.
    pub fn headline<'a>(&self, c: &'a Comparison) -> Option<&'a Row> {
        let rows = || self.rows.iter().map(|i| &c.rows[*i]);
        rows()
            .find(|r| r.key.to_string().contains(&self.name))
            .or_else(|| rows().find(|r| r.key.quantity == Quantity::Gate && r.higher_is_better))
            .or_else(|| rows().next())
    }
}

/// The regressions of `c` (a comparison whose new run is `new`) by the finding that explains
/// each.
pub fn explain(c: &Comparison, new: &RunResults) -> Explained {
    // gate -> the finding it is evidence of or follows from
    let mut by_gate: HashMap<&str, usize> = HashMap::new();
    for (i, f) in new.findings.iter().enumerate() {
        for g in f.evidence.iter().chain(&f.follows) {
            by_gate.entry(g.as_str()).or_insert(i);
        }
    }
    // job -> the first finding one of its gates belongs to
    let mut by_job: HashMap<&str, usize> = HashMap::new();
    for j in &new.jobs {
        if let Some(i) = j
            .verdicts
            .iter()
            .find_map(|v| by_gate.get(v.gate.as_str()).copied())
        {
            by_job.insert(j.job.as_str(), i);
        }
    }
    let mut causes: Vec<Cause> = new.findings.iter().map(cause).collect();
    let mut unexplained = Vec::new();
    let mut regressions = 0;
    for (k, r) in c.rows.iter().enumerate().filter(|(_, r)| r.regression) {
        regressions += 1;
        let own = (r.key.quantity == Quantity::Gate)
            .then(|| by_gate.get(r.key.subject.as_str()).copied())
            .flatten();
        match own.or_else(|| by_job.get(r.job.as_str()).copied()) {
            Some(i) => causes[i].rows.push(k),
            None => unexplained.push(k),
        }
    }
    for cause in &mut causes {
        cause.rows.sort_by(|a, b| {
            let w = |i: &usize| c.rows[*i].worsening_pct().unwrap_or(0.0);
            w(b).total_cmp(&w(a))
        });
    }
    Explained {
        causes,
        unexplained,
        regressions,
    }
}

fn cause(f: &Finding) -> Cause {
    Cause {
        name: f.name.clone(),
        outcome: f.outcome,
        trap: f.trap_name.clone(),
        rows: Vec::new(),
    }
}
