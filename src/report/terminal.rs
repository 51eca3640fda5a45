//! The terminal reporter: a sink of the run's events. Progress while a run goes (indicatif on
//! stderr, hidden off a tty and under CI), then the verdict table and one summary line on its
//! output. With the CLI, the only code that prints.
#![allow(clippy::print_stderr)]

use std::io::{self, IsTerminal, Write};

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::sink::Sink;
use crate::exec::runner::Event;
use crate::gate::judge::{Outcome, Verdict};
use crate::results::{KeepChosen, KeepEvidence, RunResults};
use crate::text::inert;
use crate::text::width::{columns, pad, rpad};

/// The verdict column, and the measured value's.
const VERDICT_W: usize = 8;
const MEASURED_W: usize = 14;

/// The widths of the table's wrapped columns.
struct Columns {
    gate: usize,
    rest: usize,
}

impl Columns {
    /// The gate column as wide as the widest gate, up to two fifths of the width; the threshold
    /// or evidence gets the rest (at least 24).
    fn fit(r: &RunResults, width: usize) -> Columns {
        let widest = r
            .verdicts()
            .map(|v| columns(&v.gate))
            .chain(
                r.jobs
                    .iter()
                    .map(|j| columns(&j.kind) + columns(&j.label) + 1),
            )
            .max()
            .unwrap_or(4);
        let gate = widest.min((width * 2 / 5).max(24));
        let rest = width
            .saturating_sub(VERDICT_W + gate + 2 + MEASURED_W + 2)
            .max(24);
        Columns { gate, rest }
    }
}

pub struct Terminal {
    bar: ProgressBar,
    color: bool,
    out: Box<dyn Write + Send>,
    run_dir: String,
    width: usize,
}

impl Terminal {
    /// The reporter of a run whose evidence goes to `run_dir`, writing its table to `out`, lines
    /// wrapped to `width`, in colour when `color` (the CLI's `--color` and NO_COLOR decide).
    pub fn new(
        simulated: bool,
        out: Box<dyn Write + Send>,
        run_dir: String,
        width: usize,
        color: bool,
    ) -> Terminal {
        let tty = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let bar = ProgressBar::new(0);
        bar.set_draw_target(if tty {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} rounds")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        // on a terminal, say it before the progress starts; the final table says it again
        if simulated && tty {
            eprintln!(
                "SIMULATED FABRIC: no host is contacted; numbers come from the capacity model"
            );
        }
        Terminal {
            bar,
            color,
            out,
            run_dir,
            width,
        }
    }

    /// The progress bar (a handle to it), for other lines written to stderr while it is drawn.
    pub fn progress_bar(&self) -> ProgressBar {
        self.bar.clone()
    }

    fn progress(&self, e: &Event) {
        match e {
            Event::Discovered { node, ok, detail } => {
                let line = format!(
                    "discover {}: {}",
                    inert(node),
                    if *ok {
                        inert(detail).into_owned()
                    } else {
                        format!("UNREACHABLE {}", inert(detail))
                    }
                );
                self.bar.println(line);
            }
            Event::Preflight(v) if v.outcome != Outcome::Ok => self.bar.println(format!(
                "preflight {} {}: {}",
                v.outcome.as_str(),
                inert(&v.gate),
                inert(&v.detail)
            )),
            Event::Preflight(_) | Event::BeforeRounds(_) => {}
            Event::RoundStart {
                index,
                total,
                name,
                jobs,
            } => {
                self.bar.set_length(*total as u64);
                self.bar.set_position(*index as u64);
                self.bar
                    .set_message(format!("{} ({jobs} job(s))", inert(name)));
            }
            Event::JobDone(j) => {
                let worst = j.worst().map(|o| o.as_str()).unwrap_or("SKIP");
                let val = j
                    .main_value()
                    .map(|v| format!(" {v:.2}"))
                    .unwrap_or_default();
                self.bar
                    .println(format!("  {worst:<4} {}{val}", inert(&j.label)));
            }
            Event::RoundDone(r) => self.bar.set_position(r.index as u64 + 1),
            Event::Suspect(s, _) => self.bar.println(format!(
                "  SUSPECT {} ({})",
                inert(&s.name),
                inert(&s.verdict.detail)
            )),
            Event::Finished(_) => self.bar.finish_and_clear(),
        }
    }

    /// `word` in its outcome's colour (green OK, yellow WARN, red FAIL, cyan for no outcome),
    /// when the terminal shows colour.
    fn paint(&self, word: &str, o: Option<Outcome>) -> String {
        paint(self.color, Style::new(), word, o)
    }

    /// `text` wrapped to `width` columns (at least one line).
    fn cell(text: &str, width: usize) -> Vec<String> {
        let opts = textwrap::Options::new(width.max(8))
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        let mut v: Vec<String> = textwrap::wrap(text, opts)
            .into_iter()
            .map(|l| l.into_owned())
            .collect();
        if v.is_empty() {
            v.push(String::new());
        }
        v
    }

    /// Text from column `start` to the width, each line but the first indented to `start`.
    fn write_wrapped(&mut self, lead: &str, text: &str, start: usize) -> io::Result<()> {
        let lines = Self::cell(text, self.width.saturating_sub(start).max(20));
        let pad = " ".repeat(start);
        for (i, l) in lines.iter().enumerate() {
            if i == 0 {
                writeln!(self.out, "{lead}{l}")?;
            } else {
                writeln!(self.out, "{pad}{l}")?;
            }
        }
        Ok(())
    }

    /// One row of the table: the verdict word (painted), then the gate, the measured value and
    /// the threshold or evidence, each wrapped within its column.
    fn row(
        &mut self,
        word: &str,
        outcome: Option<Outcome>,
        cols: &Columns,
        gate: &str,
        measured: &str,
        rest: &str,
    ) -> io::Result<()> {
        let g = Self::cell(gate, cols.gate);
        let r = Self::cell(rest, cols.rest);
        for i in 0..g.len().max(r.len()) {
            let lead = if i == 0 {
                format!(
                    "{}{}",
                    self.paint(word, outcome),
                    " ".repeat(VERDICT_W.saturating_sub(word.len()))
                )
            } else {
                " ".repeat(VERDICT_W)
            };
            let line = format!(
                "{lead}{}  {}  {}",
                pad(g.get(i).map(String::as_str).unwrap_or(""), cols.gate),
                rpad(if i == 0 { measured } else { "" }, MEASURED_W),
                r.get(i).map(String::as_str).unwrap_or(""),
            );
            writeln!(self.out, "{}", line.trim_end())?;
        }
        Ok(())
    }

    /// One verdict: its row, then for a WARN or FAIL what was seen and the fix.
    fn verdict(&mut self, v: &Verdict, cols: &Columns) -> io::Result<()> {
        let measured = v
            .measured
            .map(|m| format!("{m:.2} {}", v.unit))
            .unwrap_or_default();
        let word = match (&v.follows, v.outcome) {
            (Some(_), Outcome::Fail) => "(FAIL)",
            _ => v.outcome.as_str(),
        };
        // the threshold for a measured value (with its attempts when the gate repeats); the
        // evidence of an OK check
        let rest = if !v.attempts.is_empty() && v.outcome == Outcome::Ok {
            format!("{}; {}", v.detail, v.threshold)
        } else if v.measured.is_some() {
            v.threshold.clone()
        } else if v.outcome == Outcome::Ok {
            v.detail.clone()
        } else {
            String::new()
        };
        self.row(
            word,
            Some(v.outcome),
            cols,
            &inert(&v.gate),
            &measured,
            &inert(&rest),
        )?;
        if v.outcome == Outcome::Ok {
            return Ok(());
        }
        let mut notes: Vec<String> = Vec::new();
        match (&v.trap_name, v.detail.is_empty()) {
            (Some(t), false) => notes.push(format!("{t}: {}", v.detail)),
            (Some(t), true) => notes.push(t.clone()),
            (None, false) => notes.push(v.detail.clone()),
            (None, true) => {}
        }
        if let Some(g) = &v.follows {
            notes.push(format!("follows from `{g}`: counted there, not again"));
        } else if let Some(f) = &v.fix {
            notes.push(format!("fix: {f}"));
        }
        for n in notes {
            self.write_wrapped(&" ".repeat(VERDICT_W + 2), &inert(&n), VERDICT_W + 2)?;
        }
        Ok(())
    }

    /// The causes to fix: the suspects localisation named first, then the rest grouped by
    /// trap, failures first, the most widespread first.
    fn what_to_fix(&mut self, r: &RunResults) -> io::Result<()> {
        let suspects: Vec<&str> = r.suspects.iter().map(|s| s.verdict.gate.as_str()).collect();
        // how many gates follow from each counted one (shown as `(FAIL)` in the table)
        let mut following: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::new();
        for g in r.verdicts().filter_map(|v| v.follows.as_deref()) {
            *following.entry(g).or_default() += 1;
        }
        let mut groups: Vec<(Outcome, String, Vec<&Verdict>)> = Vec::new();
        for v in r.verdicts() {
            if v.outcome == Outcome::Ok
                || v.follows.is_some()
                || suspects.contains(&v.gate.as_str())
            {
                continue;
            }
            let trap = v.trap_name.clone().unwrap_or_else(|| "problem".into());
            match groups
                .iter_mut()
                .find(|(o, t, _)| *o == v.outcome && *t == trap)
            {
                Some((_, _, vs)) => vs.push(v),
                None => groups.push((v.outcome, trap, vec![v])),
            }
        }
        if groups.is_empty() && r.suspects.is_empty() {
            return Ok(());
        }
        groups.sort_by(|a, b| b.0.cmp(&a.0).then(b.2.len().cmp(&a.2.len())));
        writeln!(self.out)?;
        writeln!(self.out, "what to fix, worst first:")?;
        for (i, s) in r.suspects.iter().enumerate() {
            let v = &s.verdict;
            let head = format!(
                "{}. {} {}: {} ({} flow{})",
                i + 1,
                v.outcome.as_str(),
                inert(&s.name),
                inert(v.trap_name.as_deref().unwrap_or("at fault")),
                s.flows.len(),
                if s.flows.len() == 1 { "" } else { "s" }
            );
            writeln!(self.out, "  {}", self.paint(&head, Some(v.outcome)))?;
            self.write_wrapped("     ", &format!("seen: {}", inert(&v.detail)), 5)?;
            let mut flows: Vec<String> = s.flows.iter().take(3).cloned().collect();
            if s.flows.len() > 3 {
                flows.push(format!("and {} more", s.flows.len() - 3));
            }
            self.write_wrapped("     ", &format!("flows: {}", inert(&flows.join(", "))), 5)?;
            // gates of other tests that follow from it (a collective over its node, say)
            let more: Vec<&str> = r
                .jobs
                .iter()
                .filter(|j| j.kind != s.kind)
                .flat_map(|j| &j.verdicts)
                .filter(|f| f.follows.as_deref() == Some(v.gate.as_str()))
                .map(|f| f.gate.as_str())
                .collect();
            if !more.is_empty() {
                let mut named: Vec<String> =
                    more.iter().take(3).map(|g| inert(g).into_owned()).collect();
                if more.len() > 3 {
                    named.push(format!("and {} more", more.len() - 3));
                }
                self.write_wrapped(
                    "     ",
                    &format!("also follows from it: {}", named.join("; ")),
                    5,
                )?;
            }
            if let Some(f) = &v.fix {
                self.write_wrapped("     ", &format!("fix: {}", inert(f)), 5)?;
            }
        }
        let first = r.suspects.len();
        for (i, (o, trap, vs)) in groups.iter().enumerate() {
            let head = format!(
                "{}. {} {} ({} gate{})",
                first + i + 1,
                o.as_str(),
                inert(trap),
                vs.len(),
                if vs.len() == 1 { "" } else { "s" }
            );
            writeln!(self.out, "  {}", self.paint(&head, Some(*o)))?;
            let mut gates: Vec<String> = vs
                .iter()
                .take(3)
                .map(|v| inert(&v.gate).into_owned())
                .collect();
            if vs.len() > 3 {
                gates.push(format!("and {} more", vs.len() - 3));
            }
            self.write_wrapped("     ", &format!("where: {}", gates.join("; ")), 5)?;
            let followers: usize = vs
                .iter()
                .filter_map(|v| following.get(v.gate.as_str()))
                .sum();
            if followers > 0 {
                self.write_wrapped(
                    "     ",
                    &format!(
                        "and {followers} more gate{} that follow from {} (the same cause seen again)",
                        if followers == 1 { "" } else { "s" },
                        if vs.len() == 1 { "it" } else { "these" }
                    ),
                    5,
                )?;
            }
            let first_detail = vs.iter().map(|v| v.detail.as_str()).find(|d| !d.is_empty());
            if let Some(d) = first_detail {
                self.write_wrapped("     ", &format!("seen: {}", inert(d)), 5)?;
            }
            if let Some(f) = vs.iter().find_map(|v| v.fix.as_deref()) {
                self.write_wrapped("     ", &format!("fix: {}", inert(f)), 5)?;
            }
        }
        Ok(())
    }

    /// Blamed nodes out of service and healthy ones back (under Slurm, or when asked).
    fn service(&mut self, r: &RunResults) -> io::Result<()> {
        let Some(s) = &r.service else {
            return Ok(());
        };
        let lines = super::service::lines(s);
        if lines.is_empty() {
            return Ok(());
        }
        writeln!(self.out)?;
        writeln!(self.out, "out of service:")?;
        for l in lines {
            self.write_wrapped("  ", &l, 4)?;
        }
        Ok(())
    }

    fn finish(&mut self, r: &RunResults) -> io::Result<()> {
        let cols = Columns::fit(r, self.width);
        writeln!(self.out)?;
        if r.simulated {
            writeln!(
                self.out,
                "SIMULATED FABRIC (--sim): a model of the plan, not a measurement of hardware"
            )?;
        }
        writeln!(
            self.out,
            "{:<vw$}{:<gw$}  {:>mw$}  threshold or evidence",
            "verdict",
            "gate",
            "measured",
            vw = VERDICT_W,
            gw = cols.gate,
            mw = MEASURED_W
        )?;
        for v in r.verdicts() {
            self.verdict(v, &cols)?;
        }
        for j in r.jobs.iter().filter(|j| j.verdicts.is_empty()) {
            let gate = inert(&format!("{} {}", j.kind, j.label)).into_owned();
            let reason = inert(j.reason.as_deref().unwrap_or_default()).into_owned();
            self.row("SKIP", None, &cols, &gate, "", &reason)?;
        }
        self.what_to_fix(r)?;
        self.service(r)?;
        writeln!(self.out)?;
        if !self.run_dir.is_empty() {
            writeln!(self.out, "evidence: {}", self.run_dir)?;
            writeln!(self.out, "  {}", kept_line(r))?;
        }
        let line = if r.simulated {
            format!("{} (simulated)", r.summary.verdict)
        } else {
            r.summary.verdict.clone()
        };
        let worst = if r.summary.fail > 0 || r.summary.exit_code != 0 {
            Outcome::Fail
        } else if r.summary.warn > 0 {
            Outcome::Warn
        } else {
            Outcome::Ok
        };
        let line = paint(self.color, Style::new().bold(), &line, Some(worst));
        writeln!(self.out, "{line}")
    }
}

impl Sink for Terminal {
    fn name(&self) -> String {
        "the terminal".into()
    }

    fn outputs(&self) -> Vec<(std::path::PathBuf, crate::files::output::Existing)> {
        Vec::new()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        self.progress(e);
        match e {
            Event::Finished(r) => {
                self.finish(r)?;
                self.out.flush()
            }
            _ => Ok(()),
        }
    }
}

/// `--format json`: the run's results on stdout when it ends.
pub struct JsonStdout {
    out: Box<dyn Write + Send>,
}

impl JsonStdout {
    pub fn new(out: Box<dyn Write + Send>) -> JsonStdout {
        JsonStdout { out }
    }
}

impl Sink for JsonStdout {
    fn name(&self) -> String {
        "stdout".into()
    }

    fn outputs(&self) -> Vec<(std::path::PathBuf, crate::files::output::Existing)> {
        Vec::new()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        let mut w = io::BufWriter::with_capacity(1 << 16, &mut self.out);
        super::sink::results_json::write(r, &mut w)?;
        writeln!(w)?;
        w.flush()?;
        drop(w);
        self.out.flush()
    }
}

/// What the run directory holds of the jobs' outputs, and why: the two lines under
/// `evidence:`.
pub fn kept_line(r: &RunResults) -> String {
    let why = match (r.keep_evidence_chosen, r.keep_evidence_failed_above_jobs) {
        (Some(KeepChosen::Default), Some(n)) => {
            format!(" (the default: all up to {n} jobs, failed above)")
        }
        (Some(KeepChosen::Option), _) => " (as asked)".to_string(),
        _ => String::new(),
    };
    match r.keep_evidence {
        Some(KeepEvidence::Failed) => format!(
            "--keep-evidence failed{why}:\n  outputs of WARN, FAIL and unmeasured jobs under jobs/, \
             OK jobs' as sha256 digests in results.json"
        ),
        _ => format!("--keep-evidence all{why}: every job's outputs under jobs/"),
    }
}

/// `text` in `style` and its outcome's colour (green OK, yellow WARN, red FAIL, cyan for no
/// outcome) when `color`, else as it is.
fn paint(color: bool, style: Style, text: &str, o: Option<Outcome>) -> String {
    if !color {
        return text.to_string();
    }
    let c = match o {
        Some(Outcome::Ok) => AnsiColor::Green,
        Some(Outcome::Warn) => AnsiColor::Yellow,
        Some(Outcome::Fail) => AnsiColor::Red,
        None => AnsiColor::Cyan,
    };
    let style = style.fg_color(Some(c.into()));
    format!("{style}{text}{style:#}")
}
