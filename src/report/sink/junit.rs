//! `junit.xml`: one testcase per gate; a FAIL's message is the trap and its fix. WARNs pass
//! (with the warning in system-out) so CI shows red only on real failures.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::exec::runner::Event;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::RunResults;

fn case(v: &Verdict, classname: &str) -> TestCase {
    let status = match v.outcome {
        // counted once, at its root cause; shown here as what it is
        Outcome::Fail if v.follows.is_some() => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!(
                "follows from `{}`: {}",
                v.follows.clone().unwrap_or_default(),
                v.detail
            ));
            s
        }
        Outcome::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let msg = format!(
                "{}: {}",
                v.trap_name.clone().unwrap_or_else(|| "failed".into()),
                v.fix.clone().unwrap_or_default()
            );
            s.set_message(msg);
            s.set_type(v.trap_name.clone().unwrap_or_default());
            s.set_description(describe(v));
            s
        }
        _ => TestCaseStatus::success(),
    };
    let mut c = TestCase::new(v.gate.clone(), status);
    c.set_classname(classname.to_string());
    if v.outcome != Outcome::Fail {
        c.set_system_out(describe(v));
    }
    c
}

fn describe(v: &Verdict) -> String {
    let mut s = v.outcome.as_str().to_string();
    if let Some(m) = v.measured {
        s.push_str(&format!(": measured {m:.2} {}", v.unit));
    }
    if !v.threshold.is_empty() {
        s.push_str(&format!(", threshold {}", v.threshold));
    }
    if !v.detail.is_empty() {
        s.push_str(&format!("; {}", v.detail));
    }
    if v.outcome == Outcome::Warn
        && let (Some(t), Some(f)) = (&v.trap_name, &v.fix)
    {
        s.push_str(&format!("; {t}: {f}"));
    }
    s
}

/// The JUnit document of a run.
pub fn render(r: &RunResults) -> String {
    let label = if r.simulated { " (SIMULATED)" } else { "" };
    let mut report = Report::new(format!("fabricplan {}{label}", r.plan));
    let mut pre = TestSuite::new(format!("{}{label} preflight", r.plan));
    for v in &r.preflight {
        pre.add_test_case(case(v, &format!("{}.preflight", r.plan)));
    }
    if r.interrupted {
        // never green: the run itself is a failed case, and every job it did not run is skipped
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(r.summary.verdict.clone());
        s.set_type("interrupted");
        let mut c = TestCase::new(format!("fabricplan run {}", r.plan), s);
        c.set_classname(format!("{}.run", r.plan));
        pre.add_test_case(c);
    }
    report.add_test_suite(pre);
    // a big run: each OK gate is counted in one passing case per suite, not listed
    let big = r.jobs.len() > crate::results::LINE_PER_JOB_ABOVE;
    let mut suites: Vec<(TestSuite, usize)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for j in &r.jobs {
        let idx = *at.entry(j.round_name.as_str()).or_insert_with(|| {
            let name = format!("{}{label} {}", r.plan, j.round_name);
            suites.push((TestSuite::new(name), 0));
            suites.len() - 1
        });
        let (suite, ok) = &mut suites[idx];
        for v in &j.verdicts {
            if big && v.outcome == Outcome::Ok {
                *ok += 1;
            } else {
                suite.add_test_case(case(v, &format!("{}.{}", r.plan, j.kind)));
            }
        }
        if j.verdicts.is_empty() {
            let mut s = TestCaseStatus::skipped();
            s.set_message(j.reason.clone().unwrap_or_default());
            let mut c = TestCase::new(format!("{} {}", j.kind, j.label), s);
            c.set_classname(format!("{}.{}", r.plan, j.kind));
            suite.add_test_case(c);
        }
    }
    for (mut s, ok) in suites {
        if ok > 0 {
            let mut c = TestCase::new(
                format!("{ok} gate(s) OK (listed in results.json)"),
                TestCaseStatus::success(),
            );
            c.set_classname(format!("{}.ok", r.plan));
            s.add_test_case(c);
        }
        report.add_test_suite(s);
    }
    report.to_string().unwrap_or_default()
}

/// `junit.xml` in the run directory.
pub struct JunitSink {
    dir: PathBuf,
}

impl JunitSink {
    pub fn new(dir: &Path) -> JunitSink {
        JunitSink {
            dir: dir.to_path_buf(),
        }
    }
}

impl Sink for JunitSink {
    fn name(&self) -> String {
        self.dir.join("junit.xml").display().to_string()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        write_atomic(&self.dir, "junit.xml", render(r).as_bytes()).map(|_| ())
    }
}
