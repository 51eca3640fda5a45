//! `summary.md`: what to fix (one entry per broken part), failures and warnings, then discovery and preflight, then each round's
//! verdicts, and the node x node bandwidth matrix with its legend and failing cells marked.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::files::output::Existing;
use crate::gate::judge::{Outcome, Verdict};
use crate::kinds;
use crate::results::Event;
use crate::results::{JobResult, RunResults};
/// Text in the file, a table cell or a heading: inert, every Markdown and HTML character
/// escaped ([`crate::text::md`]).
fn cell(s: &str) -> String {
    crate::text::md(s)
}

/// One row of a verdict table.
fn verdict_row(s: &mut String, v: &Verdict) {
    let measured = v
        .measured
        .map(|m| format!("{m:.2} {}", v.unit))
        .unwrap_or_default();
    let verdict = match (&v.follows, v.outcome) {
        (Some(g), o) if o != Outcome::Ok => {
            format!("follow ({o} from {})", cell(g), o = o.as_str())
        }
        _ => v.outcome.as_str().to_string(),
    };
    let seen = match (&v.trap_name, v.outcome) {
        (_, Outcome::Ok) => v.detail.clone(),
        (Some(t), _) if v.detail.is_empty() => t.clone(),
        (Some(t), _) => format!("{t}: {}", v.detail),
        (None, _) => v.detail.clone(),
    };
    let fix = if v.outcome == Outcome::Ok {
        String::new()
    } else {
        v.fix.clone().unwrap_or_default()
    };
    s.push_str(&format!(
        "| {} | {verdict} | {} | {} | {} | {} |\n",
        cell(&v.gate),
        cell(&measured),
        cell(&v.threshold),
        cell(&seen),
        cell(&fix)
    ));
}

const VERDICT_HEAD: &str =
    "| gate | verdict | measured | threshold | seen | fix |\n|---|---|---|---|---|---|\n";

/// The node x node matrix: every measured flow of the pair, labelled by half and test, failing
/// and warning values marked; the legend names the kinds in the table.
fn matrix(s: &mut String, r: &RunResults) {
    let measured = kinds::view::matrix(r);
    let nodes: BTreeSet<&str> = measured.iter().flat_map(|c| [c.client, c.server]).collect();
    if nodes.len() > MATRIX_MAX_NODES {
        s.push_str(&format!(
            "\n## Bandwidth matrix\n\n{} nodes: too many for a table here; report.html draws \
             the node x node heatmap.\n",
            nodes.len()
        ));
        return;
    }
    let mut cells: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    let mut kinds_in: Vec<&str> = Vec::new();
    for c in &measured {
        let value = format!("{} {:.1}", cell(&c.tag), c.value);
        let value = match c.outcome {
            Outcome::Fail => format!("**{value} ✗**"),
            Outcome::Warn => format!("_{value} !_"),
            Outcome::Ok => value,
        };
        cells.entry((c.client, c.server)).or_default().push(value);
        if !kinds_in.contains(&c.job.kind.as_str()) {
            kinds_in.push(&c.job.kind);
        }
    }
    if cells.is_empty() {
        return;
    }
    let names: BTreeSet<&str> = cells.keys().flat_map(|(a, b)| [*a, *b]).collect();
    s.push_str("\n## Bandwidth matrix, Gb/s (row: client, column: server)\n\n");
    let legend: Vec<String> = kinds::view::matrix_legend()
        .into_iter()
        .filter(|(_, _, kind)| kinds_in.contains(kind))
        .map(|(tag, words, kind)| format!("`a{tag}`, `b{tag}` {words} ({kind})"))
        .collect();
    s.push_str(&format!(
        "Each cell lists the pair's flows in job order: {}. **Bold ✗** failed its gate, \
         _italic !_ warned.\n\n| |",
        legend.join("; ")
    ));
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
            match cells.get(&(*a, *b)) {
                Some(v) => s.push_str(&format!(" {} |", v.join(" / "))),
                None => s.push_str(" |"),
            }
        }
        s.push('\n');
    }
}

/// At most this many rows in the failures table of a big run (every one is in results.json).
const MAX_PROBLEM_ROWS: usize = 1000;

/// The node x node matrix is drawn up to this many nodes (a wider Markdown table reads as
/// noise; report.html's heatmap draws any size).
const MATRIX_MAX_NODES: usize = 32;

/// Is this a big run, summarised rather than listed (more jobs than
/// [`LINE_PER_JOB_ABOVE`](crate::results::LINE_PER_JOB_ABOVE))?
fn big(r: &RunResults) -> bool {
    r.jobs.len() > crate::results::LINE_PER_JOB_ABOVE
}

/// The jobs of each round, rounds in run order.
fn by_round(r: &RunResults) -> Vec<(usize, &str, Vec<&JobResult>)> {
    let mut rounds: Vec<(usize, &str, Vec<&JobResult>)> = Vec::new();
    let mut at: HashMap<usize, usize> = HashMap::new();
    for j in &r.jobs {
        let i = *at.entry(j.round).or_insert_with(|| {
            rounds.push((j.round, &j.round_name, Vec::new()));
            rounds.len() - 1
        });
        rounds[i].2.push(j);
    }
    rounds
}

/// `## What to fix`: each finding, its part, trap, what was seen, the command for its host and
/// what follows from it (counted, the first named).
fn findings(s: &mut String, r: &RunResults) {
    if r.findings.is_empty() {
        return;
    }
    s.push_str("\n## What to fix\n\n");
    for (i, f) in r.findings.iter().enumerate() {
        s.push_str(&format!(
            "{}. **{} {}**: {}. Seen: {}\n",
            i + 1,
            f.outcome.as_str(),
            cell(&f.label),
            cell(&f.trap_name),
            cell(&f.seen)
        ));
        if let Some(c) = &f.fix_command {
            s.push_str(&format!("   - fix: {}\n", crate::text::md_code(c)));
        }
        s.push_str(&format!("   - {}\n", cell(&f.fix)));
        if !f.follows.is_empty() {
            const NAMED: usize = 5;
            let more = f.follows.len().saturating_sub(NAMED);
            let named: Vec<String> = f.follows.iter().take(NAMED).map(|g| cell(g)).collect();
            s.push_str(&format!(
                "   - follows from it: {} gate(s): {}{}\n",
                f.follows.len(),
                named.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if !f.skipped.is_empty() {
            let named: Vec<String> = f.skipped.iter().map(|g| cell(g)).collect();
            s.push_str(&format!(
                "   - not run because they need it: {}\n",
                named.join("; ")
            ));
        }
    }
}

/// The failures, then the warnings, in one table; a big run lists the first
/// [`MAX_PROBLEM_ROWS`] and counts the rest.
fn problems(s: &mut String, r: &RunResults, big: bool) {
    let bad: Vec<&Verdict> = r.verdicts().filter(|v| v.outcome != Outcome::Ok).collect();
    if !bad.is_empty() {
        s.push_str("\n## Failures and warnings\n\n");
        s.push_str(VERDICT_HEAD);
        let cap = if big { MAX_PROBLEM_ROWS } else { usize::MAX };
        let fails = bad.iter().filter(|v| v.outcome == Outcome::Fail);
        let warns = bad.iter().filter(|v| v.outcome == Outcome::Warn);
        for v in fails.chain(warns).take(cap) {
            verdict_row(s, v);
        }
        if bad.len() > cap {
            s.push_str(&format!(
                "\n{} more failures and warnings are in results.json.\n",
                bad.len() - cap
            ));
        }
    }
}

/// Discovery's and preflight's verdicts; a big run lists those not OK and counts the others.
fn preflight(s: &mut String, r: &RunResults, big: bool) {
    if !r.preflight.is_empty() {
        s.push_str("\n## Discovery and preflight\n\n");
        s.push_str(VERDICT_HEAD);
        for v in r
            .preflight
            .iter()
            .filter(|v| !big || v.outcome != Outcome::Ok)
        {
            verdict_row(s, v);
        }
        if big {
            let ok = r
                .preflight
                .iter()
                .filter(|v| v.outcome == Outcome::Ok)
                .count();
            s.push_str(&format!("\n{ok} preflight check(s) OK, not listed.\n"));
        }
    }
}

/// Each round's verdicts, in run order, with its launch skew and its skipped jobs; a big run
/// lists only the rounds with a problem, and in them only the gates not OK.
fn rounds(s: &mut String, r: &RunResults, big: bool) {
    let records: HashMap<usize, &crate::results::RoundRecord> =
        r.rounds.iter().rev().map(|x| (x.index, x)).collect();
    let mut quiet = 0;
    for (index, name, jobs) in by_round(r) {
        let troubled = |j: &&JobResult| {
            j.verdicts.is_empty() || j.verdicts.iter().any(|v| v.outcome != Outcome::Ok)
        };
        if big && !jobs.iter().any(troubled) {
            quiet += 1;
            continue;
        }
        let skew = records
            .get(&index)
            .and_then(|x| x.launch_skew_ms)
            .map(|k| format!(" (clients released within {k:.1} ms)"))
            .unwrap_or_default();
        s.push_str(&format!(
            "\n## Round {}: {}{skew}\n\n",
            index + 1,
            cell(name)
        ));
        s.push_str(VERDICT_HEAD);
        let mut ok = 0;
        for j in jobs {
            if j.verdicts.is_empty() {
                s.push_str(&format!(
                    "| {} {} | {} | | | {} | |\n",
                    cell(&j.kind),
                    cell(&j.label),
                    crate::results::tally::job_word(j),
                    cell(j.reason.as_deref().unwrap_or_default())
                ));
            }
            for v in &j.verdicts {
                if big && v.outcome == Outcome::Ok {
                    ok += 1;
                } else {
                    verdict_row(s, v);
                }
            }
        }
        if ok > 0 {
            s.push_str(&format!("\nand {ok} gate(s) OK in this round.\n"));
        }
    }
    if quiet > 0 {
        s.push_str(&format!(
            "\n{quiet} round(s) with every gate OK, not listed.\n"
        ));
    }
}

/// The whole `summary.md` of a run.
pub fn render(r: &RunResults) -> String {
    let big = big(r);
    let mut s = String::new();
    let sim = if r.simulated {
        " (SIMULATED fabric)"
    } else {
        ""
    };
    s.push_str(&format!(
        "# fabricplan: {}{sim}\n\nRun {} over {}: **{}**\n",
        cell(&r.plan),
        cell(&r.run_id),
        cell(&r.transport),
        cell(&r.summary.verdict)
    ));
    // every gate counted once, in the words every output uses
    s.push_str(&format!(
        "\nGates: {} (follow: a WARN or FAIL that a finding below explains).\n",
        crate::results::Tally::of_run(r).words(", ")
    ));
    if big {
        s.push_str(&format!(
            "\n{} jobs. A big run is summarised: failures and warnings, and only the rounds \
             with one; every gate is in results.json.\n",
            r.jobs.len(),
        ));
    }
    // what to fix first: one entry per broken part the diagnosis named
    findings(&mut s, r);
    // then the failures: what a reader opens the file for
    problems(&mut s, r, big);
    preflight(&mut s, r, big);
    s.push_str(&inventory(r, big));
    // per round, in run order
    rounds(&mut s, r, big);
    if let Some(service) = &r.service {
        let lines = crate::report::service::lines(service);
        if !lines.is_empty() {
            s.push_str("\n## Out of service\n\n");
            for l in lines {
                s.push_str(&format!("- {}\n", cell(&l)));
            }
        }
    }
    matrix(&mut s, r);
    s.push_str(&against_baseline(r));
    s
}

/// The hardware inventory: per planned half, its device, firmware, PCIe link and driver; a big
/// run lists only the rows that stand out (a narrow link, an odd firmware).
fn inventory(r: &RunResults, big: bool) -> String {
    if r.inventory.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## Inventory\n\n| node | half | device | firmware | PCIe now/max | driver | kernel |\n|---|---|---|---|---|---|---|\n",
    );
    let unusual = crate::discover::inventory::unusual(&r.inventory);
    let dash = |o: &Option<String>| cell(o.as_deref().unwrap_or("-"));
    let mut quiet = 0;
    for (row, odd) in r.inventory.iter().zip(unusual) {
        if big && !odd {
            quiet += 1;
            continue;
        }
        let device = match (&row.device, &row.netdev) {
            (Some(d), Some(n)) => format!("{d} ({n})"),
            (d, n) => d
                .clone()
                .or_else(|| n.clone())
                .unwrap_or_else(|| "-".into()),
        };
        let pcie = if row.pcie_degraded {
            format!("**{}**", cell(&row.pcie_text()))
        } else {
            cell(&row.pcie_text())
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {pcie} | {} | {} |\n",
            cell(&row.node),
            cell(&row.half),
            cell(&device),
            dash(&row.firmware),
            cell(&row.driver_text()),
            dash(&row.kernel)
        ));
    }
    if quiet > 0 {
        s.push_str(&format!(
            "\nand {quiet} half(s) on the common firmware at their full PCIe link, not listed.\n"
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

    fn outputs(&self) -> Vec<(PathBuf, Existing)> {
        vec![(self.dir.join("summary.md"), Existing::Nothing)]
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
            suspects: Vec::new(),
            summary: Summary::default(),
            ..RunResults::default()
        };
        let md = super::render(&r);
        assert!(!md.contains('\u{1b}') && !md.contains('\u{7}'), "{md:?}");
        assert!(md.contains("\\\\x1b\\[8m hidden"), "{md}");
    }

    /// Regression (found by the results fuzz): a finding's fix command read back from a
    /// hostile results.json reached summary.md inside a code span with its controls and tags.
    #[test]
    fn a_hostile_fix_command_reaches_summary_inert() {
        for command in [
            "ssh a sudo x\u{1b}[2J\u{7}",
            "</code><img src=x onerror=alert(1)>",
            "a ` b `` c & d",
        ] {
            let r = RunResults {
                findings: vec![crate::results::Finding {
                    part: crate::gate::part::Part::Node {
                        node: "spark-a".into(),
                    },
                    among: Vec::new(),
                    name: "spark-a".into(),
                    label: "spark-a".into(),
                    outcome: Outcome::Fail,
                    trap: None,
                    trap_name: "unreachable".into(),
                    seen: "x".into(),
                    evidence: Vec::new(),
                    follows: Vec::new(),
                    skipped: Vec::new(),
                    host: Some("spark-a".into()),
                    fix_command: Some(command.into()),
                    fix: "y".into(),
                }],
                ..RunResults::default()
            };
            let md = super::render(&r);
            assert!(
                !md.contains('<') && !md.chars().any(|c| c.is_control() && c != '\n'),
                "{md}"
            );
        }
    }

    /// Unescaped `|` in a Markdown line: the cell separators.
    pub(crate) fn pipes(line: &str) -> usize {
        let b = line.as_bytes();
        let mut n = 0;
        for i in 0..b.len() {
            if b[i] == b'|' {
                let slashes = b[..i].iter().rev().take_while(|c| **c == b'\\').count();
                n += usize::from(slashes % 2 == 0);
            }
        }
        n
    }

    /// Every text of the results that summary.md shows, hostile: no tag, no raw control, no
    /// cell split, whatever column it lands in.
    #[test]
    fn every_column_is_escaped() {
        use crate::results::{JobResult, JobStatus};
        let bad = "<img src=x onerror=alert(1)>|`x`|\u{1b}[2J\n| a | b |";
        let mut v = Verdict::check(
            format!("rdma-bw {bad}"),
            Outcome::Fail,
            bad,
            Some(Trap::Site),
        );
        v.trap_name = Some(bad.into());
        v.fix = Some(bad.into());
        v.unit = bad.into();
        v.threshold = bad.into();
        v.measured = Some(1.0);
        v.metric = Some(crate::gate::threshold::Metric::new("rdma-bw"));
        let j = JobResult {
            kind: "rdma-bw".into(),
            label: format!("{bad} -> n.f0.a"),
            round_name: bad.into(),
            hosts: vec![bad.into(), format!("{bad}2")],
            status: JobStatus::Measured,
            verdicts: vec![v.clone()],
            ..JobResult::default()
        };
        let skipped = JobResult {
            kind: bad.into(),
            label: bad.into(),
            round: 1,
            round_name: bad.into(),
            reason: Some(bad.into()),
            ..JobResult::default()
        };
        let mut r = RunResults {
            format_version: 1,
            plan: bad.into(),
            run_id: bad.into(),
            transport: bad.into(),
            preflight: vec![v],
            jobs: vec![j, skipped],
            ..RunResults::default()
        };
        r.summarize();
        r.summary.verdict = bad.into();
        let md = super::render(&r);
        assert!(!md.contains('<') && !md.contains('\u{1b}'), "{md}");
        for l in md.lines().filter(|l| l.starts_with('|')) {
            assert!(matches!(pipes(l), 4 | 7), "a split cell: {l}");
        }
    }
}
