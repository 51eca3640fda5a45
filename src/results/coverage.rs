//! What a run covered: of the plan's declared halves, cables and ISLs, which some test measured
//! (a job that ran and judged it: passed, or failed with a value of its own), which no test
//! measured, and which were measured only by gates that follow from a finding (not cleared: they
//! are to be measured again once it is fixed). Green says what it covered: a plan whose rounds
//! name nodes measures one half of each, and a run of it must say the other halves were never
//! looked at. A half whose flows all passed at shares too small to show a throttle (a crowded
//! ISL's) was not cleared by them (see `crate::kinds::parts::blind_to_a_throttle`): it is said
//! apart, measured only below the throttle band. Pure: from the plan and the results.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::RunResults;
use crate::gate::judge::Outcome;
use crate::gate::part::Part;
use crate::plan::Plan;

/// How many parts of a kind the plan declares and how many the run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Count {
    pub declared: usize,
    pub measured: usize,
}

/// What a run covered (results.json `coverage`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Coverage {
    pub halves: Count,
    pub cables: Count,
    pub isls: Count,
    /// Declared parts no test measured, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_measured: Vec<String>,
    /// Parts measured only by gates that follow from a finding: not cleared (`NAME: follows
    /// FINDING`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_cleared: Vec<String>,
    /// Halves some flow passed through, but only at shares below the throttle band: a throttled
    /// half would have passed them too (not measured, by name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub below_band: Vec<String>,
}

impl Coverage {
    /// `12 of 12 halves, 6 of 6 cables, 1 of 1 ISL measured` (kinds the plan has none of left
    /// out).
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        for (c, one, many) in [
            (self.halves, "half", "halves"),
            (self.cables, "cable", "cables"),
            (self.isls, "ISL", "ISLs"),
        ] {
            if c.declared > 0 {
                let word = if c.declared == 1 { one } else { many };
                parts.push(format!("{} of {} {word}", c.measured, c.declared));
            }
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("{} measured", parts.join(", "))
    }

    /// Whether every declared part was measured and cleared.
    pub fn complete(&self) -> bool {
        self.not_measured.is_empty() && self.not_cleared.is_empty() && self.below_band.is_empty()
    }
}

/// The declared halves, cables and ISLs of `plan`, each once, in plan order.
fn declared(plan: &Plan) -> (Vec<Part>, Vec<Part>, Vec<Part>) {
    let mut halves = Vec::new();
    let mut cables = Vec::new();
    for seg in &plan.segments {
        for m in &seg.members {
            let h = plan.half_part(&m.endpoint);
            if !halves.contains(&h) {
                halves.push(h);
            }
            if let Some(c) = plan.cable_part(&m.endpoint)
                && !cables.contains(&c)
            {
                cables.push(c);
            }
        }
    }
    let isls = plan.isls.iter().map(|i| plan.isl_part(i.id)).collect();
    (halves, cables, isls)
}

/// What the run covered of `plan`'s declared parts: a part is measured when a job's passing
/// verdict clears it, or a job's failing verdict with a value of its own names it; a part named
/// only by failing verdicts that follow a finding is not cleared.
pub fn of(plan: &Plan, r: &RunResults) -> Coverage {
    let (halves, cables, isls) = declared(plan);
    let mut measured: BTreeSet<&Part> = BTreeSet::new();
    let mut following: Vec<(&Part, &str)> = Vec::new();
    let mut passed_through: BTreeSet<Part> = BTreeSet::new();
    for v in r.jobs.iter().flat_map(|j| &j.verdicts) {
        if let (Outcome::Ok, Some(f)) = (v.outcome, &v.flow) {
            passed_through.insert(Part::half(&f.src, &f.src_port, &f.half));
            passed_through.insert(Part::half(&f.dst, &f.dst_port, &f.half));
        }
        match v.outcome {
            Outcome::Ok => measured.extend(&v.clears),
            _ if v.measured.is_none() => {}
            _ => match &v.follows {
                None => measured.extend(&v.implicates),
                Some(f) => following.extend(v.implicates.iter().map(|p| (p, f.as_str()))),
            },
        }
    }
    let mut c = Coverage::default();
    for (list, count) in [
        (&halves, &mut c.halves),
        (&cables, &mut c.cables),
        (&isls, &mut c.isls),
    ] {
        count.declared = list.len();
        for p in list {
            if measured.contains(p) {
                count.measured += 1;
            } else if let Some((_, f)) = following.iter().find(|(q, _)| *q == p) {
                count.measured += 1;
                c.not_cleared.push(format!("{}: follows {f}", p.name()));
            } else if passed_through.contains(p) {
                c.below_band.push(p.name());
            } else {
                c.not_measured.push(p.name());
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::judge::Verdict;
    use crate::results::JobResult;

    #[test]
    fn a_line_counts_each_kind_the_plan_has() {
        let c = Coverage {
            halves: Count {
                declared: 12,
                measured: 6,
            },
            cables: Count {
                declared: 6,
                measured: 6,
            },
            isls: Count {
                declared: 1,
                measured: 1,
            },
            ..Coverage::default()
        };
        assert_eq!(
            c.line(),
            "6 of 12 halves, 6 of 6 cables, 1 of 1 ISL measured"
        );
        let c = Coverage {
            halves: Count {
                declared: 4,
                measured: 4,
            },
            cables: Count {
                declared: 2,
                measured: 2,
            },
            ..Coverage::default()
        };
        assert_eq!(c.line(), "4 of 4 halves, 2 of 2 cables measured");
        assert!(c.complete());
    }

    #[test]
    fn measured_passed_failed_with_a_value_or_only_following() {
        let plan = crate::plan::load_str(
            std::path::Path::new("two-spark.toml"),
            "format-version = 1\nname = \"p\"\n[[node]]\nname = \"spark-a\"\n[[node]]\nname = \"spark-b\"\n\
             [[cable]]\nkind = \"direct\"\nends = [\"spark-a.f0\", \"spark-b.f0\"]\n\
             subnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n",
            std::path::Path::new("."),
            &crate::plan::NoKinds,
        )
        .unwrap()
        .plan;
        let a = Part::half("spark-a", "f0", "a");
        let b = Part::half("spark-b", "f0", "a");
        let ok = Verdict::check("rdma-bw x", Outcome::Ok, "", None).about(vec![
            a.clone(),
            b.clone(),
            Part::cable("spark-a.f0", "spark-b.f0"),
        ]);
        let mut slow = Verdict::check("rdma-bw y", Outcome::Fail, "", None)
            .about(vec![Part::half("spark-a", "f0", "b")]);
        slow.measured = Some(12.7);
        slow.follows = Some("spark-a.f0.b".into());
        let r = RunResults {
            jobs: vec![JobResult {
                verdicts: vec![ok, slow],
                ..JobResult::default()
            }],
            ..RunResults::default()
        };
        let c = of(&plan, &r);
        assert_eq!((c.halves.declared, c.halves.measured), (4, 3));
        assert_eq!((c.cables.declared, c.cables.measured), (1, 1));
        assert_eq!(c.not_measured, ["spark-b.f0.b"]);
        assert_eq!(c.not_cleared, ["spark-a.f0.b: follows spark-a.f0.b"]);
        assert!(!c.complete());
        // a pass at a share below the throttle band clears its cable, not its ends: they are
        // said apart, neither measured nor left unmeasured
        let mut low = Verdict::check("rdma-bw z", Outcome::Ok, "", None)
            .about(vec![Part::cable("spark-a.f0", "spark-b.f0")]);
        low.flow = Some(crate::gate::flow::Flow {
            src: "spark-a".into(),
            src_port: "f0".into(),
            dst: "spark-b".into(),
            dst_port: "f0".into(),
            half: "b".into(),
        });
        let r = RunResults {
            jobs: vec![JobResult {
                verdicts: vec![low],
                ..JobResult::default()
            }],
            ..RunResults::default()
        };
        let c = of(&plan, &r);
        assert_eq!((c.halves.measured, c.cables.measured), (0, 1));
        assert_eq!(c.below_band, ["spark-a.f0.b", "spark-b.f0.b"]);
        assert_eq!(c.not_measured, ["spark-a.f0.a", "spark-b.f0.a"]);
        assert!(!c.complete());
    }
}
