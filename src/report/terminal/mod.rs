//! The terminal reporter: a sink of the run's events. Progress while a run goes (indicatif on
//! stderr, hidden off a tty and under CI), then the answer on its output: what to fix first,
//! one line per test, every gate that is not OK, what to fix again as the last lines, and the
//! verdict ([`compact`]); with `--verbose` (or `--all`) every gate in a table ([`table`]). With
//! the CLI, the only code that prints.
#![allow(clippy::print_stderr)]

mod compact;
mod findings;
mod table;

use std::io::{self, IsTerminal, Write};

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::sink::Sink;
use crate::gate::judge::Outcome;
use crate::results::Event;
use crate::results::{KeepChosen, KeepEvidence, RunResults};
use crate::text::inert;

/// Where the answer goes and how wide it may be.
pub(crate) struct Page {
    out: Box<dyn Write + Send>,
    width: usize,
    color: bool,
}

impl Page {
    /// `text` wrapped to `width` columns (at least one line).
    fn cell(text: &str, width: usize) -> Vec<String> {
        let opts = textwrap::Options::new(width.max(8))
            .word_separator(textwrap::WordSeparator::AsciiSpace)
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

    /// `lead` then `text` wrapped to the width, each line but the first indented to `start`:
    /// lines break at spaces only (never inside `Gb/s`, `8-25` or a flag).
    fn wrapped(&mut self, lead: &str, text: &str, start: usize) -> io::Result<()> {
        let indent = " ".repeat(start);
        let opts = textwrap::Options::new(self.width.max(start + 20))
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            .word_splitter(textwrap::WordSplitter::NoHyphenation)
            .initial_indent(lead)
            .subsequent_indent(&indent);
        for l in textwrap::wrap(text, opts) {
            writeln!(self.out, "{}", l.trim_end())?;
        }
        Ok(())
    }

    fn line(&mut self, text: &str) -> io::Result<()> {
        writeln!(self.out, "{text}")
    }

    /// `word` in its outcome's colour when the terminal shows colour.
    fn paint(&self, word: &str, o: Option<Outcome>) -> String {
        paint(self.color, Style::new(), word, o)
    }
}

pub struct Terminal {
    bar: ProgressBar,
    page: Page,
    run_dir: String,
    /// Every gate in a table (`--verbose`, `--all`), not the compact answer.
    all: bool,
    /// The command that ran the plan again (`fabricplan run PLAN`), for the last lines.
    again: Option<String>,
}

impl Terminal {
    /// The reporter of a run whose evidence goes to `run_dir`, writing its answer to `out`,
    /// lines wrapped to `width`, in colour when `color` (the CLI's `--color` and NO_COLOR
    /// decide), every gate in a table when `all`.
    pub fn new(out: Box<dyn Write + Send>, run_dir: String, width: usize, color: bool) -> Terminal {
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
        Terminal {
            bar,
            page: Page { out, width, color },
            run_dir,
            all: false,
            again: None,
        }
    }

    /// The command that runs the plan again, as the last lines suggest it (words quoted for a
    /// shell).
    pub fn again(mut self, command: String) -> Terminal {
        self.again = Some(command);
        self
    }

    /// Every gate in a table, as `--verbose` and `--all` ask.
    pub fn all(mut self, all: bool) -> Terminal {
        self.all = all;
        self
    }

    /// The progress bar (a handle to it), for other lines written to stderr while it is drawn.
    pub fn progress_bar(&self) -> ProgressBar {
        self.bar.clone()
    }

    /// Progress on stderr: the bar, and above it what went wrong as it happens (a node not
    /// reached, a preflight check or a job not OK, a part localisation named). Everything that
    /// went well is in the answer at the end, counted.
    fn progress(&self, e: &Event) {
        match e {
            // on a terminal, said before the progress starts; the answer says it again
            Event::Started(s) if s.simulated && !self.bar.is_hidden() => self.bar.println(
                "SIMULATED FABRIC: no host is contacted; numbers come from the capacity model",
            ),
            Event::Discovered { node, ok, detail } if !*ok => self.bar.println(format!(
                "discover {}: UNREACHABLE {}",
                inert(node),
                inert(detail)
            )),
            Event::Preflight(v) if v.outcome != Outcome::Ok => self.bar.println(format!(
                "preflight {} {}: {}",
                v.outcome.as_str(),
                inert(&v.gate),
                inert(&v.detail)
            )),
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
            Event::JobDone(j) if j.troubled() => {
                let worst = j.worst().map(|o| o.as_str()).unwrap_or("SKIP");
                let val = j
                    .main_value()
                    .map(|v| format!(" {v:.2}"))
                    .unwrap_or_default();
                self.bar.println(format!(
                    "  {worst:<4} {} {}{val}",
                    inert(&j.kind),
                    inert(&j.label)
                ));
            }
            Event::RoundDone(r) => self.bar.set_position(r.index as u64 + 1),
            Event::Suspect(s, _) => self.bar.println(format!(
                "  SUSPECT {} ({})",
                inert(&s.name),
                inert(&s.verdict.detail)
            )),
            Event::Finished(_) => self.bar.finish_and_clear(),
            _ => {}
        }
    }

    fn finish(&mut self, r: &RunResults) -> io::Result<()> {
        let p = &mut self.page;
        writeln!(p.out)?;
        if r.simulated {
            p.wrapped(
                "",
                "SIMULATED FABRIC (--sim): a model of the plan, not a measurement of hardware",
                0,
            )?;
        }
        if self.all {
            findings::block(p, r)?;
            table::table(p, r)?;
        } else {
            findings::block(p, r)?;
            compact::answer(p, r)?;
        }
        findings::last_lines(p, r)?;
        service(p, r)?;
        if !self.run_dir.is_empty() {
            p.line("")?;
            let dir = inert(&self.run_dir).into_owned();
            if self.all {
                p.wrapped("evidence: ", &dir, 10)?;
                p.line(&format!("  {}", kept_line(r)))?;
            } else {
                let kept = match r.keep_evidence {
                    Some(KeepEvidence::Failed) => "outputs of the jobs not OK, digests of the rest",
                    _ => "every job's outputs",
                };
                p.wrapped(
                    "evidence: ",
                    &format!("{dir} ({kept}); --verbose shows every gate"),
                    10,
                )?;
            }
        }
        let line = coverage_notes(p, r)?;
        if !self.run_dir.is_empty() {
            report_and_next(p, r, &self.run_dir, self.again.as_deref())?;
        }
        verdict_line(p, r, line)
    }
}

/// The page to open, and what to do next with its command (whole on one line: on the same
/// line as its words when it fits).
fn report_and_next(p: &mut Page, r: &RunResults, dir: &str, again: Option<&str>) -> io::Result<()> {
    let report = std::path::Path::new(dir).join("report.html");
    p.wrapped("report:   ", &inert(&report.display().to_string()), 10)?;
    if let Some(again) = again {
        let (what, cmd) = next_step(r, again, dir);
        if 10 + what.len() + 1 + cmd.len() <= p.width {
            p.line(&format!("next:     {} {}", inert(&what), inert(&cmd)))?;
        } else {
            p.wrapped("next:     ", &inert(&what), 10)?;
            p.line(&format!("          {}", inert(&cmd)))?;
        }
    }
    Ok(())
}

/// What to do next, with the command: fix and run again after a FAIL, run again after an
/// interruption, else judge the next run against this one.
fn next_step(r: &RunResults, again: &str, dir: &str) -> (String, String) {
    let dir = crate::render::quote::quote(dir).unwrap_or_else(|| dir.to_string());
    if r.interrupted {
        return ("run it again:".into(), again.to_string());
    }
    if r.summary.exit_code != 0 {
        let what = match r.findings.len() {
            0 => "what is listed above".to_string(),
            1 => "finding 1".to_string(),
            n => format!("findings 1-{n}"),
        };
        return (format!("fix {what}, then run again:"), again.to_string());
    }
    (
        "judge the next run against this one:".into(),
        format!("{again} --baseline {dir}"),
    )
}

/// Blamed nodes out of service and healthy ones back (under Slurm, or when asked).
fn service(p: &mut Page, r: &RunResults) -> io::Result<()> {
    let Some(s) = &r.service else {
        return Ok(());
    };
    let lines = super::service::lines(s);
    if lines.is_empty() {
        return Ok(());
    }
    p.line("")?;
    p.line("out of service:")?;
    for l in lines {
        p.wrapped("  ", &inert(&l), 4)?;
    }
    Ok(())
}

/// Names, the first few and how many more.
fn some_of(names: &[String], shown: usize) -> String {
    let head: Vec<&str> = names.iter().take(shown).map(String::as_str).collect();
    match names.len().saturating_sub(shown) {
        0 => head.join(", "),
        more => format!("{} and {more} more", head.join(", ")),
    }
}

/// What no test measured and what was measured only behind a finding (of a run with no FAIL),
/// said before the last lines; returns the verdict's text, with what a green run covered.
fn coverage_notes(p: &mut Page, r: &RunResults) -> io::Result<String> {
    let mut line = r.summary.verdict.clone();
    if let Some(c) = r.coverage.as_ref().filter(|_| r.summary.fail == 0) {
        if !c.not_measured.is_empty() {
            p.wrapped(
                "not measured: ",
                &format!(
                    "{} (no test of the plan measures them)",
                    inert(&some_of(&c.not_measured, 6))
                ),
                14,
            )?;
        }
        if !c.below_band.is_empty() {
            p.wrapped(
                "below the throttle band: ",
                &format!(
                    "{} (every flow of theirs had a share a throttled half passes too)",
                    inert(&some_of(&c.below_band, 6))
                ),
                25,
            )?;
        }
        if !c.not_cleared.is_empty() {
            p.wrapped(
                "not cleared: ",
                &format!(
                    "{} (measured again once the finding is fixed)",
                    inert(&some_of(&c.not_cleared, 3))
                ),
                13,
            )?;
        }
        let covered = c.line();
        if !covered.is_empty() && !r.interrupted {
            line = format!("{line}: {covered}");
        }
    }
    Ok(line)
}

/// The run's verdict, the last line.
fn verdict_line(p: &mut Page, r: &RunResults, mut line: String) -> io::Result<()> {
    if r.simulated {
        line = format!("{line} (simulated)");
    }
    let worst = if r.summary.fail > 0 || r.summary.exit_code != 0 {
        Outcome::Fail
    } else if r.summary.warn > 0 {
        Outcome::Warn
    } else {
        Outcome::Ok
    };
    // one line, never wrapped: scripts read the last line as the verdict
    let line = paint(p.color, Style::new().bold(), &inert(&line), Some(worst));
    writeln!(p.out, "{line}")
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
                self.page.out.flush()
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

/// What the run directory holds of the jobs' outputs, and why: the line under `evidence:`.
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
