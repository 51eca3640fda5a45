//! `junit.xml`: first a `findings` suite, one testcase per broken part the diagnosis named (a
//! FAIL's message is the part, its trap and the command that fixes it; its description what was
//! seen and what follows from it); then one testcase per gate, a FAIL's message the trap and
//! its fix, a gate that follows from a finding (WARN or FAIL) skipped with `follow:` and the part
//! it follows, a job that did not run skipped with `not run:`. WARNs pass (with the warning in
//! system-out) so CI shows red only on real failures. Counted by those words, the gate cases
//! agree with every other output (`summary.gates`).

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::files::output::Existing;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::Event;
use crate::results::{Finding, RunResults};

/// Text as XML 1.0 may hold it (see [`crate::text::xml`]): every string handed to the
/// document goes through it.
fn x(s: &str) -> String {
    crate::text::xml(s).into_owned()
}

fn case(v: &Verdict, classname: &str) -> TestCase {
    let status = match v.outcome {
        // counted once, at its root cause; shown here as what it is
        Outcome::Fail | Outcome::Warn if v.follows.is_some() => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(x(&format!(
                "follow: {} that follows from `{}`: {}",
                v.outcome.as_str(),
                v.follows.clone().unwrap_or_default(),
                v.detail
            )));
            s
        }
        Outcome::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let msg = format!(
                "{}: {}",
                v.trap_name.clone().unwrap_or_else(|| "failed".into()),
                v.fix.clone().unwrap_or_default()
            );
            s.set_message(x(&msg));
            s.set_type(x(v.trap_name.as_deref().unwrap_or_default()));
            s.set_description(x(&describe(v)));
            s
        }
        _ => TestCaseStatus::success(),
    };
    let mut c = TestCase::new(x(&v.gate), status);
    c.set_classname(x(classname));
    if v.outcome != Outcome::Fail {
        c.set_system_out(x(&describe(v)));
    }
    c
}

/// One broken part: a failure (a WARN passes with its words in system-out), its message the part,
/// the trap and the command (or words) that fix it.
fn finding_case(f: &Finding, classname: &str) -> TestCase {
    let fix = f.fix_command.clone().unwrap_or_else(|| f.fix.clone());
    let mut text = format!(
        "{}: {}\nseen: {}\nfix: {}",
        f.label, f.trap_name, f.seen, fix
    );
    if f.fix_command.is_some() {
        text.push_str(&format!("\n     {}", f.fix));
    }
    if !f.follows.is_empty() {
        text.push_str(&format!("\nfollows from it: {}", f.follows.join("; ")));
    }
    if !f.skipped.is_empty() {
        text.push_str(&format!(
            "\nnot run because they need it: {}",
            f.skipped.join("; ")
        ));
    }
    let status = match f.outcome {
        Outcome::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(x(&format!("{}: {}: {fix}", f.name, f.trap_name)));
            s.set_type(x(&f.trap_name));
            s.set_description(x(&text));
            s
        }
        _ => TestCaseStatus::success(),
    };
    let mut c = TestCase::new(x(&f.name), status);
    c.set_classname(x(classname));
    if f.outcome != Outcome::Fail {
        c.set_system_out(x(&text));
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
    let mut report = Report::new(x(&format!("fabricplan {}{label}", r.plan)));
    let mut pre = TestSuite::new(x(&format!("{}{label} preflight", r.plan)));
    for v in &r.preflight {
        pre.add_test_case(case(v, &format!("{}.preflight", r.plan)));
    }
    if r.interrupted {
        // never green: the run itself is a failed case, and every job it did not run is skipped
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(x(&r.summary.verdict));
        s.set_type("interrupted");
        let mut c = TestCase::new(x(&format!("fabricplan run {}", r.plan)), s);
        c.set_classname(x(&format!("{}.run", r.plan)));
        pre.add_test_case(c);
    }
    report.add_test_suite(pre);
    if !r.findings.is_empty() {
        let mut found = TestSuite::new(x(&format!("{}{label} findings", r.plan)));
        for f in &r.findings {
            found.add_test_case(finding_case(f, &format!("{}.findings", r.plan)));
        }
        report.add_test_suite(found);
    }
    // a big run: each OK gate is counted in one passing case per suite, not listed
    let big = r.jobs.len() > crate::results::LINE_PER_JOB_ABOVE;
    let mut suites: Vec<(TestSuite, usize)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for j in &r.jobs {
        let idx = *at.entry(j.round_name.as_str()).or_insert_with(|| {
            let name = format!("{}{label} {}", r.plan, j.round_name);
            suites.push((TestSuite::new(x(&name)), 0));
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
            let reason = j.reason.as_deref().unwrap_or("no reason recorded");
            // counted as every output counts it: a job that ran and could not measure is a
            // FAIL, one that did not run is `not run`
            let s = if j.status == crate::results::JobStatus::Failed {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(x(&format!("FAIL: could not measure: {reason}")));
                s.set_type("not measured");
                s
            } else {
                let mut s = TestCaseStatus::skipped();
                s.set_message(x(&format!("not run: {reason}")));
                s
            };
            let mut c = TestCase::new(x(&format!("{} {}", j.kind, j.label)), s);
            c.set_classname(x(&format!("{}.{}", r.plan, j.kind)));
            suite.add_test_case(c);
        }
    }
    for (mut s, ok) in suites {
        if ok > 0 {
            let mut c = TestCase::new(
                format!("{ok} gate(s) OK (listed in results.json)"),
                TestCaseStatus::success(),
            );
            c.set_classname(x(&format!("{}.ok", r.plan)));
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

    fn outputs(&self) -> Vec<(PathBuf, Existing)> {
        vec![(self.dir.join("junit.xml"), Existing::Nothing)]
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        write_atomic(&self.dir, "junit.xml", render(r).as_bytes()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use crate::gate::judge::{Outcome, Verdict};
    use crate::gate::trap::Trap;
    use crate::results::{JobResult, RunResults};

    /// Every character XML 1.0 forbids, and markup, in every text of the run.
    const BAD: &str = "a\u{fffe}b\u{ffff}c\u{1}\u{1b}[2J\u{7f}\u{9b}<x>&\"']]>\r\n\td";

    /// Parse `xml` through, panicking on the first well-formedness error; its text content.
    fn parse(xml: &str) -> String {
        let mut r = quick_xml::Reader::from_str(xml);
        let mut text = String::new();
        loop {
            match r.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)) => {
                    for a in e.attributes() {
                        let a = a.unwrap_or_else(|err| panic!("{err}: {xml}"));
                        text.push_str(
                            &a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .unwrap(),
                        );
                    }
                }
                Ok(quick_xml::events::Event::Text(t)) => {
                    text.push_str(&t.decode().unwrap());
                }
                Ok(_) => {}
                Err(e) => panic!("not well-formed: {e}\n{xml}"),
            }
        }
        text
    }

    #[test]
    fn well_formed_whatever_the_text() {
        let mut fail = Verdict::check(
            format!("rdma-bw {BAD}"),
            Outcome::Fail,
            BAD,
            Some(Trap::Site),
        );
        fail.trap_name = Some(BAD.into());
        fail.fix = Some(BAD.into());
        fail.unit = BAD.into();
        fail.threshold = BAD.into();
        fail.measured = Some(1.0);
        let mut warn = fail.clone();
        warn.outcome = Outcome::Warn;
        let mut follows = fail.clone();
        follows.follows = Some(BAD.into());
        let j = JobResult {
            kind: BAD.into(),
            label: BAD.into(),
            round_name: BAD.into(),
            verdicts: vec![fail.clone(), warn, follows],
            ..JobResult::default()
        };
        let skipped = JobResult {
            kind: BAD.into(),
            label: BAD.into(),
            round_name: BAD.into(),
            reason: Some(BAD.into()),
            ..JobResult::default()
        };
        let mut r = RunResults {
            plan: BAD.into(),
            preflight: vec![fail],
            jobs: vec![j, skipped],
            interrupted: true,
            ..RunResults::default()
        };
        r.summarize();
        r.summary.verdict = BAD.into();
        let xml = super::render(&r);
        let text = parse(&xml);
        // XML 1.0's Char production: the parser does not check it, so it is checked here
        for c in xml.chars() {
            assert!(
                matches!(c as u32, 0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..),
                "{c:?} in {xml}"
            );
        }
        // shown, not dropped
        assert!(
            text.contains("\\u{fffe}") && text.contains("<x>&"),
            "{text}"
        );
    }
}
