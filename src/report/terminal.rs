//! The terminal reporter: a sink of the run's events. Progress while a run goes (indicatif on
//! stderr, hidden off a tty and under CI), then the verdict table and one summary line on its
//! output. With the CLI, the only code that prints.
#![allow(clippy::print_stderr)]

use std::io::{self, IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::sink::Sink;
use crate::exec::runner::Event;
use crate::gate::judge::Outcome;
use crate::results::RunResults;
use crate::text::inert;

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
            Event::Preflight(_) => {}
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
            Event::Finished(_) => self.bar.finish_and_clear(),
        }
    }

    fn paint(&self, o: Outcome) -> String {
        let s = o.as_str();
        if !self.color {
            return s.to_string();
        }
        let code = match o {
            Outcome::Ok => 32,
            Outcome::Warn => 33,
            Outcome::Fail => 31,
        };
        format!("\x1b[{code}m{s}\x1b[0m")
    }

    fn finish(&mut self, r: &RunResults) -> io::Result<()> {
        let run_dir = self.run_dir.clone();
        let _ = self.width;
        let w = r
            .verdicts()
            .map(|v| v.gate.chars().count())
            .chain(r.jobs.iter().map(|j| j.kind.len() + j.label.len() + 1))
            .max()
            .unwrap_or(4)
            .clamp(4, 90);
        let tw = r
            .verdicts()
            .map(|v| v.threshold.chars().count())
            .max()
            .unwrap_or(9)
            .max(9);
        writeln!(self.out)?;
        if r.simulated {
            writeln!(
                self.out,
                "SIMULATED FABRIC (--sim): a model of the plan, not a measurement of hardware"
            )?;
        }
        writeln!(
            self.out,
            "{:<w$} {:<5} {:>14}  {:<tw$} trap and fix",
            "gate",
            "",
            "measured",
            "threshold",
            w = w
        )?;
        for v in r.verdicts() {
            let measured = v
                .measured
                .map(|m| format!("{m:.2} {}", v.unit))
                .unwrap_or_default();
            let trap = match (&v.trap_name, &v.fix) {
                (Some(t), Some(f)) => format!("{t}: {f}"),
                _ => v.detail.clone(),
            };
            writeln!(
                self.out,
                "{:<w$} {:<5} {:>14}  {:<tw$} {}",
                inert(&v.gate),
                self.paint(v.outcome),
                measured,
                inert(&v.threshold),
                inert(&trap),
                w = w
            )?;
        }
        for j in r.jobs.iter().filter(|j| j.verdicts.is_empty()) {
            writeln!(
                self.out,
                "{:<w$} SKIP  {}",
                inert(&format!("{} {}", j.kind, j.label)),
                inert(j.reason.as_deref().unwrap_or_default()),
                w = w
            )?;
        }
        writeln!(self.out)?;
        if !run_dir.is_empty() {
            writeln!(self.out, "evidence: {run_dir}")?;
        }
        let line = if r.interrupted {
            format!("INTERRUPTED: {}", r.summary.verdict)
        } else {
            r.summary.verdict.clone()
        };
        let line = if r.simulated {
            format!("{line} (simulated)")
        } else {
            line
        };
        if self.color {
            let code = if r.summary.fail > 0 || r.summary.exit_code != 0 {
                31
            } else if r.summary.warn > 0 {
                33
            } else {
                32
            };
            writeln!(self.out, "\x1b[1;{code}m{line}\x1b[0m")?;
        } else {
            writeln!(self.out, "{line}")?;
        }
        Ok(())
    }
}

impl Sink for Terminal {
    fn name(&self) -> String {
        "the terminal".into()
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

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        serde_json::to_writer_pretty(&mut self.out, r.as_ref()).map_err(io::Error::other)?;
        writeln!(self.out)?;
        self.out.flush()
    }
}
