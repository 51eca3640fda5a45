//! A check said for people and machines: one line per finding and a one-line verdict; a
//! Nagios-style status line (with its exit code); node_exporter's textfile format; the reason
//! Slurm is given when the node is drained. Pure text: the CLI prints it.

use super::Checked;
use crate::gate::judge::Outcome;
use crate::results::Finding;
use crate::results::counters::{
    CARRIER_FAMILY, CARRIER_HELP, PORT_COUNTER_FAMILY, PORT_COUNTER_HELP,
};
use crate::results::service::REASON_PREFIX;

/// `check spark-1: FAIL: cable spark-1.f0 -- spark-2.f1 (1 finding, 4 halves checked)`.
pub fn verdict_line(
    node: &str,
    outcome: Outcome,
    findings: &[Finding],
    halves: usize,
    not_checked: &[String],
) -> String {
    let named: Vec<String> = findings
        .iter()
        .filter(|f| f.outcome == outcome)
        .map(|f| f.name.clone())
        .collect();
    let cut = if not_checked.is_empty() {
        String::new()
    } else {
        format!(", {} not checked", not_checked.len())
    };
    let counted = format!(
        "{} finding(s), {halves} planned half(s) checked{cut}",
        findings.len()
    );
    match outcome {
        Outcome::Ok => format!("check {node}: OK ({counted})"),
        _ => format!(
            "check {node}: {}: {} ({counted})",
            outcome.as_str(),
            if named.is_empty() {
                "the check did not finish".to_string()
            } else {
                named.join(", ")
            }
        ),
    }
}

/// One line per finding: `FAIL cable spark-1.f0 -- spark-2.f1: link flapped: SEEN; fix: FIX`.
pub fn finding_line(f: &Finding) -> String {
    let mut s = format!(
        "{} {}: {}: {}",
        f.outcome.as_str(),
        f.label,
        f.trap_name,
        f.seen
    );
    if !f.fix.is_empty() {
        s.push_str(&format!("; fix: {}", f.fix));
    }
    if let Some(c) = &f.fix_command {
        s.push_str(&format!(" (`{c}`)"));
    }
    crate::text::inert_lines(&s).replace('\n', " ")
}

/// The text output: each finding, what the deadline cut, the verdict with the time it took.
pub fn text(c: &Checked) -> String {
    let mut out = String::new();
    for f in &c.findings {
        out.push_str(&finding_line(f));
        out.push('\n');
    }
    for n in &c.not_checked {
        out.push_str(&format!("NOT CHECKED {}\n", crate::text::inert(n)));
    }
    for s in &c.service {
        out.push_str(&format!("slurm: {}\n", crate::text::inert(s)));
    }
    out.push_str(&format!("{} in {:.2} s\n", c.verdict, c.took_s));
    out
}

/// Nagios plugin status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (nothing could be checked).
pub fn nagios_code(c: &Checked) -> i32 {
    if !c.not_checked.is_empty() && c.findings.iter().all(|f| f.part.name() == c.node) {
        // only the deadline's own finding: nothing says the node is broken
        return 3;
    }
    match c.outcome {
        Outcome::Ok => 0,
        Outcome::Warn => 1,
        Outcome::Fail => 2,
    }
}

/// The plugin's output: the status line with performance data, then the findings.
pub fn nagios(c: &Checked) -> String {
    let status = ["OK", "WARNING", "CRITICAL", "UNKNOWN"][nagios_code(c) as usize];
    let fails = c
        .findings
        .iter()
        .filter(|f| f.outcome == Outcome::Fail)
        .count();
    let warns = c
        .findings
        .iter()
        .filter(|f| f.outcome == Outcome::Warn)
        .count();
    let mut out = format!(
        "FABRICPLAN {status} - {} | fail={fails};;1 warn={warns};1 halves={} seconds={:.3}s\n",
        c.verdict.replace('|', "/"),
        c.halves.len(),
        c.took_s
    );
    for f in &c.findings {
        out.push_str(&finding_line(f).replace('|', "/"));
        out.push('\n');
    }
    out
}

/// A Prometheus label value, escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// node_exporter's textfile collector format: the outcome, the findings by outcome, the time,
/// and per planned half its state, MTU and carrier changes.
pub fn metrics(c: &Checked) -> String {
    let base = format!("node=\"{}\",plan=\"{}\"", label(&c.node), label(&c.plan));
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, String)>| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, value) in rows {
            out.push_str(&format!("{name}{{{labels}}} {value}\n"));
        }
    };
    let status = match c.outcome {
        Outcome::Ok => 0,
        Outcome::Warn => 1,
        Outcome::Fail => 2,
    };
    family(
        "fabricplan_check_status",
        "gauge",
        "0 OK, 1 WARN, 2 FAIL (a FAIL finding, or the deadline cut the check)",
        vec![(base.clone(), status.to_string())],
    );
    let count = |o: Outcome| c.findings.iter().filter(|f| f.outcome == o).count();
    family(
        "fabricplan_check_findings",
        "gauge",
        "Broken parts the check found, by outcome",
        [Outcome::Fail, Outcome::Warn]
            .into_iter()
            .map(|o| {
                (
                    format!("{base},outcome=\"{}\"", o.as_str()),
                    count(o).to_string(),
                )
            })
            .collect(),
    );
    family(
        "fabricplan_check_duration_seconds",
        "gauge",
        "How long the check took",
        vec![(base.clone(), format!("{:.3}", c.took_s))],
    );
    family(
        "fabricplan_check_timestamp_seconds",
        "gauge",
        "When the node was read (Unix time)",
        vec![(base.clone(), format!("{:.3}", c.unix_ms as f64 / 1000.0))],
    );
    half_metrics(c, &base, &mut family);
    out
}

type Family<'a> = dyn FnMut(&str, &str, &str, Vec<(String, String)>) + 'a;

fn half_metrics(c: &Checked, base: &str, family: &mut Family<'_>) {
    let of = |h: &crate::discover::HalfResolution| {
        format!(
            "{base},half=\"{}\",netdev=\"{}\"",
            label(&h.name),
            label(h.netdev.as_deref().unwrap_or(""))
        )
    };
    family(
        "fabricplan_half_up",
        "gauge",
        "1 when the planned half's device is ACTIVE and its address is configured",
        c.halves
            .iter()
            .map(|h| (of(h), u8::from(h.active && h.address_found).to_string()))
            .collect(),
    );
    family(
        "fabricplan_half_mtu_bytes",
        "gauge",
        "The MTU of the planned half's netdev",
        c.halves
            .iter()
            .filter_map(|h| Some((of(h), h.mtu?.to_string())))
            .collect(),
    );
    // the names and help texts `run --metrics` writes too (`source` tells them apart)
    family(
        PORT_COUNTER_FAMILY,
        "counter",
        PORT_COUNTER_HELP,
        c.halves
            .iter()
            .flat_map(|h| {
                h.port_counters.iter().map(move |(k, v)| {
                    (
                        format!("{},counter=\"{}\",source=\"check\"", of(h), label(k)),
                        v.to_string(),
                    )
                })
            })
            .collect(),
    );
    family(
        CARRIER_FAMILY,
        "counter",
        CARRIER_HELP,
        c.halves
            .iter()
            .filter_map(|h| {
                Some((
                    format!("{},source=\"check\"", of(h)),
                    h.carrier_changes?.to_string(),
                ))
            })
            .collect(),
    );
}

/// The reason Slurm is given: `fabricplan check: link flapped cable spark-1.f0 -- spark-2.f1`
/// (the worst finding; `and N more`), one line within Slurm's short reasons.
pub fn drain_reason(c: &Checked) -> Option<String> {
    let mut fails = c.findings.iter().filter(|f| f.outcome == Outcome::Fail);
    let first = fails.next()?;
    let more = fails.count();
    let mut r = format!(
        "{REASON_PREFIX}{}: {} {}",
        super::RUN_ID,
        first.trap_name,
        first.part
    );
    if more > 0 {
        r.push_str(&format!(" (and {more} more)"));
    }
    Some(crate::results::service::clip(&r))
}

/// The prefix of every reason a check gives: `--resume` returns only nodes drained with it.
pub fn own_reason_prefix() -> String {
    format!("{REASON_PREFIX}{}:", super::RUN_ID)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::part::Part;

    fn finding(part: Part, outcome: Outcome, trap: &str) -> Finding {
        Finding {
            name: part.name(),
            among: Vec::new(),
            part,
            label: "LABEL".into(),
            outcome,
            trap: None,
            trap_name: trap.into(),
            seen: "seen\nsecond line".into(),
            evidence: Vec::new(),
            follows: Vec::new(),
            skipped: Vec::new(),
            host: None,
            fix_command: None,
            fix: "fix it".into(),
        }
    }

    fn checked(findings: Vec<Finding>, not_checked: Vec<String>) -> Checked {
        let outcome =
            if findings.iter().any(|f| f.outcome == Outcome::Fail) || !not_checked.is_empty() {
                Outcome::Fail
            } else if findings.is_empty() {
                Outcome::Ok
            } else {
                Outcome::Warn
            };
        Checked {
            plan: "p\"q".into(),
            node: "n1".into(),
            outcome,
            verdict: verdict_line("n1", outcome, &findings, 2, &not_checked),
            findings,
            verdicts: Vec::new(),
            checked: Vec::new(),
            not_checked,
            halves: Vec::new(),
            since_unix_ms: None,
            unix_ms: 1_000,
            took_s: 0.5,
            service: Vec::new(),
            next: None,
        }
    }

    #[test]
    fn nagios_codes_follow_the_outcome_and_unknown_is_only_the_deadline() {
        assert_eq!(nagios_code(&checked(Vec::new(), Vec::new())), 0);
        let warn = finding(Part::half("n1", "f0", "a"), Outcome::Warn, "link errors");
        assert_eq!(nagios_code(&checked(vec![warn.clone()], Vec::new())), 1);
        let cable = finding(Part::cable("n1.f0", "n2.f1"), Outcome::Fail, "link flapped");
        assert_eq!(nagios_code(&checked(vec![cable], Vec::new())), 2);
        let deadline = finding(Part::node("n1"), Outcome::Fail, "timeout");
        assert_eq!(
            nagios_code(&checked(vec![deadline], vec!["the probe".into()])),
            3
        );
        let n = nagios(&checked(vec![warn], Vec::new()));
        assert!(
            n.starts_with("FABRICPLAN WARNING - check n1: WARN: n1.f0.a"),
            "{n}"
        );
        assert!(n.lines().count() == 2, "one line per finding: {n}");
    }

    #[test]
    fn lines_reasons_and_labels_are_single_line_and_escaped() {
        let f = finding(Part::cable("n1.f0", "n2.f1"), Outcome::Fail, "link flapped");
        let line = finding_line(&f);
        assert!(
            !line.contains('\n') && line.starts_with("FAIL LABEL: link flapped: seen"),
            "{line}"
        );
        let c = checked(vec![f.clone(), f], Vec::new());
        assert_eq!(
            drain_reason(&c).as_deref(),
            Some("fabricplan check: link flapped cable n1.f0 -- n2.f1 (and 1 more)")
        );
        assert!(drain_reason(&checked(Vec::new(), Vec::new())).is_none());
        let m = metrics(&c);
        assert!(
            m.contains("fabricplan_check_status{node=\"n1\",plan=\"p\\\"q\"} 2"),
            "{m}"
        );
        assert!(text(&c).ends_with("(2 finding(s), 2 planned half(s) checked) in 0.50 s\n"));
    }
}
