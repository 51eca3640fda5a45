//! `summary.md`: the verdict table and a node x node bandwidth matrix.

use std::collections::BTreeSet;

use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::exec::runner::Event;
use crate::results::RunResults;
use crate::text::inert;

/// A table cell: inert, and no `|` to split it.
fn cell(s: &str) -> String {
    inert(s).replace('|', "/")
}

pub fn render(r: &RunResults) -> String {
    let mut s = String::new();
    let sim = if r.simulated {
        " (SIMULATED fabric)"
    } else {
        ""
    };
    s.push_str(&format!(
        "# fabricplan: {}{sim}\n\nRun `{}` over {}: **{}**\n\n",
        inert(&r.plan),
        inert(&r.run_id),
        r.transport,
        r.summary.verdict
    ));
    s.push_str("| gate | verdict | measured | threshold | trap and fix |\n|---|---|---|---|---|\n");
    for v in r.verdicts() {
        let measured = v
            .measured
            .map(|m| format!("{m:.2} {}", v.unit))
            .unwrap_or_else(|| cell(&v.detail));
        let trap = match (&v.trap_name, &v.fix) {
            (Some(t), Some(f)) => format!("{t}: {f}"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            cell(&v.gate),
            v.outcome.as_str(),
            measured,
            cell(&v.threshold),
            cell(&trap)
        ));
    }
    let m = r.bandwidth_matrix();
    if !m.is_empty() {
        let names: BTreeSet<&String> = m.keys().flat_map(|(a, b)| [a, b]).collect();
        s.push_str("\n## Bandwidth matrix, Gb/s (row: client, column: server)\n\n| |");
        for n in &names {
            s.push_str(&format!(" {} |", cell(n)));
        }
        s.push_str("\n|---|");
        for _ in &names {
            s.push_str("---|");
        }
        s.push('\n');
        for a in &names {
            s.push_str(&format!("| {} |", cell(a)));
            for b in &names {
                match m.get(&((*a).clone(), (*b).clone())) {
                    Some(v) => s.push_str(&format!(
                        " {} |",
                        v.iter()
                            .map(|x| format!("{x:.1}"))
                            .collect::<Vec<_>>()
                            .join(" / ")
                    )),
                    None => s.push_str(" |"),
                }
            }
            s.push('\n');
        }
    }
    s.push_str(&against_baseline(r));
    let skews: Vec<String> = r
        .rounds
        .iter()
        .filter_map(|x| {
            x.launch_skew_ms
                .map(|k| format!("{} {k:.1} ms", cell(&x.name)))
        })
        .collect();
    if !skews.is_empty() {
        s.push_str(&format!(
            "\nClient launch skew per concurrent round: {}\n",
            skews.join(", ")
        ));
    }
    s
}

// ---- against the baseline (issue #15, report branch) ----

/// The run against its baseline (`run --baseline`): each measurement's baseline value next to
/// it, from the baseline verdicts. Empty when the run had no baseline.
fn against_baseline(r: &RunResults) -> String {
    use crate::compare::baseline::{self, SUFFIX, fmt_change, fmt_val};
    let rows = baseline::of(r);
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## Against the baseline\n\n| measurement | verdict | baseline | now | change | allowed |\n|---|---|---:|---:|---:|---|\n",
    );
    for (_, v) in rows {
        let value = |x: Option<f64>| {
            x.map(|x| format!("{} {}", fmt_val(x), cell(&v.unit)))
                .unwrap_or_default()
        };
        let change = match (v.expected, v.measured) {
            (Some(o), Some(n)) => fmt_change(crate::compare::change_pct(o, n)),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(v.gate.strip_suffix(SUFFIX).unwrap_or(&v.gate)),
            v.outcome.as_str(),
            value(v.expected),
            value(v.measured),
            change,
            cell(&v.threshold)
        ));
    }
    s
}

// ---- end against the baseline ----

/// `summary.md` in the run directory.
pub struct SummarySink {
    dir: PathBuf,
}

impl SummarySink {
    pub fn new(dir: &Path) -> SummarySink {
        SummarySink {
            dir: dir.to_path_buf(),
        }
    }
}

impl Sink for SummarySink {
    fn name(&self) -> String {
        self.dir.join("summary.md").display().to_string()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        write_atomic(&self.dir, "summary.md", render(r).as_bytes()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use crate::gate::judge::{Outcome, Verdict};
    use crate::gate::trap::Trap;
    use crate::results::{RunResults, Summary};

    /// Regression: plan text (gate names, a site trap's name and fix) reached summary.md with its
    /// raw ANSI/OSC escapes.
    #[test]
    fn plan_text_reaches_summary_inert() {
        let mut v = Verdict::check("rdma-bw a\u{1b}[2J", Outcome::Fail, "x", Some(Trap::Site));
        v.trap_name = Some("site\u{1b}]0;title\u{7}".into());
        v.fix = Some("call\u{1b}[8m hidden".into());
        let r = RunResults {
            format_version: 1,
            plan: "p\u{1b}[31m".into(),
            run_id: "r".into(),
            transport: "fake".into(),
            simulated: false,
            started_unix_ms: 0,
            finished_unix_ms: 0,
            interrupted: false,
            discovery: Vec::new(),
            preflight: vec![v],
            jobs: Vec::new(),
            rounds: Vec::new(),
            summary: Summary::default(),
        };
        let md = super::render(&r);
        assert!(!md.contains('\u{1b}') && !md.contains('\u{7}'), "{md:?}");
        assert!(md.contains("\\u{1b}[8m hidden"), "{md}");
    }
}
