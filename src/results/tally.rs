//! The one count of a run's gates that every output prints: each gate is in exactly one of OK,
//! WARN, FAIL, follows (a WARN or FAIL a finding explains: shown, not counted again) and not run
//! (a job that judged nothing: skipped, or the run was interrupted before it). A job that ran
//! but could not measure and judged nothing is a FAIL. The terminal, `results.json`
//! (`summary.gates`), `summary.md`, `junit.xml` and `report.html` all say it with [`Tally::words`]
//! (or the same five words), so their numbers agree.

use serde::Serialize;

use super::{JobResult, JobStatus, RunResults};
use crate::gate::judge::{Outcome, Verdict};

/// The words of the five counts, in the order they are printed.
pub const WORDS: [&str; 5] = ["OK", "WARN", "FAIL", "follow", "not run"];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Tally {
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
    /// WARN and FAIL gates that follow from a finding.
    pub follows: usize,
    /// Jobs that judged nothing because they did not run.
    pub not_run: usize,
}

/// The word a gate is shown with: its outcome, or `follow` for a WARN or FAIL a finding explains
/// (the word it is counted under).
pub fn word(v: &Verdict) -> &'static str {
    if v.outcome != Outcome::Ok && v.follows.is_some() {
        WORDS[3]
    } else {
        v.outcome.as_str()
    }
}

/// The word a job that judged nothing is shown with: FAIL when it ran and could not measure,
/// else `not run`.
pub fn job_word(j: &JobResult) -> &'static str {
    if j.status == JobStatus::Failed {
        WORDS[2]
    } else {
        WORDS[4]
    }
}

impl Tally {
    /// Counts one gate.
    pub fn add(&mut self, v: &Verdict) {
        match v.outcome {
            Outcome::Ok => self.ok += 1,
            _ if v.follows.is_some() => self.follows += 1,
            Outcome::Warn => self.warn += 1,
            Outcome::Fail => self.fail += 1,
        }
    }

    /// Counts a job's gates; a job that judged nothing counts once: not run, or FAIL when it
    /// ran and could not measure.
    pub fn add_job(&mut self, j: &JobResult) {
        if j.verdicts.is_empty() {
            match j.status {
                JobStatus::Failed => self.fail += 1,
                _ => self.not_run += 1,
            }
        }
        for v in &j.verdicts {
            self.add(v);
        }
    }

    /// Every gate of a run: preflight, the jobs' and the suspects'.
    pub fn of_run(r: &RunResults) -> Tally {
        let mut t = Tally::default();
        for v in &r.preflight {
            t.add(v);
        }
        for j in &r.jobs {
            t.add_job(j);
        }
        for s in &r.suspects {
            t.add(&s.verdict);
        }
        t
    }

    pub fn of_jobs<'a>(jobs: impl IntoIterator<Item = &'a JobResult>) -> Tally {
        let mut t = Tally::default();
        for j in jobs {
            t.add_job(j);
        }
        t
    }

    pub fn of_verdicts<'a>(vs: impl IntoIterator<Item = &'a Verdict>) -> Tally {
        let mut t = Tally::default();
        for v in vs {
            t.add(v);
        }
        t
    }

    /// Nothing counted (a file written before the tally was recorded reads so).
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    pub fn total(&self) -> usize {
        self.ok + self.warn + self.fail + self.follows + self.not_run
    }

    /// The five counts with their words, in print order.
    pub fn counts(&self) -> [(usize, &'static str); 5] {
        [
            (self.ok, WORDS[0]),
            (self.warn, WORDS[1]),
            (self.fail, WORDS[2]),
            (self.follows, WORDS[3]),
            (self.not_run, WORDS[4]),
        ]
    }

    /// `26 OK, 0 WARN, 1 FAIL, 7 follow, 0 not run`: all five, joined by `sep`.
    pub fn words(&self, sep: &str) -> String {
        self.counts()
            .iter()
            .map(|(n, w)| format!("{n} {w}"))
            .collect::<Vec<_>>()
            .join(sep)
    }

    /// `, 1 FAIL, 2 follow`: what is not OK, the zeros left out (after `3/6 OK`).
    pub fn not_ok_words(&self) -> String {
        self.counts()[1..]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, w)| format!(", {n} {w}"))
            .collect()
    }

    /// The worst thing counted: FAIL for a FAIL or a gate that did not run, WARN for a WARN or
    /// a gate that follows, else OK.
    pub fn worst(&self) -> Outcome {
        if self.fail > 0 || self.not_run > 0 {
            Outcome::Fail
        } else if self.warn > 0 || self.follows > 0 {
            Outcome::Warn
        } else {
            Outcome::Ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gate_in_one_bucket() {
        let mut follow = Verdict::check("b", Outcome::Warn, "x", None);
        follow.follows = Some("spark-a.f0.a".into());
        let vs = [
            Verdict::check("a", Outcome::Ok, "", None),
            follow,
            Verdict::check("c", Outcome::Fail, "", None),
            Verdict::check("d", Outcome::Warn, "", None),
        ];
        let t = Tally::of_verdicts(&vs);
        assert_eq!(t.words(", "), "1 OK, 1 WARN, 1 FAIL, 1 follow, 0 not run");
        assert_eq!(t.not_ok_words(), ", 1 WARN, 1 FAIL, 1 follow");
        assert_eq!(t.total(), 4);
    }
}
