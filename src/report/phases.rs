//! `fabricplan run --verbose`: before the first round, one line saying where the time of
//! discovery and preflight went (`before_rounds` in results.json), and after each round one
//! line saying where its time went (the round's `phases`).
#![allow(clippy::print_stderr)]

use std::io::{self, Write};

use indicatif::ProgressBar;

use super::sink::Sink;
use crate::results::Event;
use crate::results::{RoundPhases, RoundRecord, StartPhases};

/// `6021.7` -> `6,021 ms`: whole milliseconds (floored), thousands separated.
fn ms(v: f64) -> String {
    format!("{} ms", crate::text::thousands(v.max(0.0).floor() as u64))
}

/// The line of round `index` (0-based) of `total`:
/// `round 3/9 phases: counters 12 ms | servers 140 ms | ready 35 ms | staged 160 ms | release 4 ms
/// | tool 6,021 ms | stop+logs 80 ms | counters 11 ms | judge 1 ms | overhead 0.31 s`.
pub fn line(index: usize, total: usize, p: &RoundPhases) -> String {
    let release = match p.release_ms {
        Some(v) => ms(v),
        None => "n/a".to_string(),
    };
    let tool = match p.tool_source.as_str() {
        "sent" => format!("{} (from its sending)", ms(p.longest_tool_ms)),
        _ => ms(p.longest_tool_ms),
    };
    let ready = match p.server_tool_start_ms {
        Some(s) if s > 0.0 => format!("{} (servers' own start-up {})", ms(p.readiness_ms), ms(s)),
        _ => ms(p.readiness_ms),
    };
    let fabricplan = match p.fabricplan_ms {
        Some(f) => format!(" (fabricplan {:.2} s)", f / 1000.0),
        None => String::new(),
    };
    let attempts = if p.attempts > 1 {
        format!(" ({} attempts, summed)", p.attempts)
    } else {
        String::new()
    };
    format!(
        "round {}/{total} phases{attempts}: counters {} | servers {} | ready {ready} | staged {} | \
         release {release} | tool {tool} | stop+logs {} | counters {} | judge {} | overhead {:.2} \
         s{fabricplan}",
        index + 1,
        ms(p.counters_before_ms),
        ms(p.server_start_ms),
        ms(p.staging_ms),
        ms(p.server_stop_and_logs_ms),
        ms(p.counters_after_ms),
        ms(p.judge_ms),
        p.overhead_ms / 1000.0,
    )
}

/// The line of the time before the first round:
/// `before the first round: open 0 ms | discovery 215 ms | pings 274 ms | launch check 964 ms
/// (mpirun's own 871 ms) | total 966 ms (0.10 s beyond the launch check)`.
pub fn before_line(p: &StartPhases) -> String {
    let launch = match (p.launch_checks_ms, p.launch_check_tool_ms) {
        (Some(all), Some(own)) => format!(" | launch check {} (its own run {})", ms(all), ms(own)),
        (Some(all), None) => format!(" | launch check {}", ms(all)),
        (None, _) => String::new(),
    };
    let beyond = match p.launch_check_tool_ms {
        Some(_) => format!(
            " ({:.2} s beyond the launch check's own run)",
            p.beyond_launch_check_ms / 1000.0
        ),
        None => String::new(),
    };
    format!(
        "before the first round: open {} | discovery {} | pings {}{launch} | total {}{beyond}",
        ms(p.open_ms),
        ms(p.discovery_ms),
        ms(p.pings_ms),
        ms(p.total_ms),
    )
}

/// Writes each round's phase line to stderr as the round ends (above the progress bar, when
/// one is drawn).
pub struct PhaseLines {
    out: Box<dyn Write + Send>,
    bar: Option<ProgressBar>,
    total: usize,
    /// The reader went away (`2>&1 | head -1`): the lines are for a person, not evidence, so
    /// the run goes on without them.
    closed: bool,
}

impl PhaseLines {
    /// Lines to `out`; `bar` is the terminal's progress bar, hidden while a line is written.
    pub fn new(out: Box<dyn Write + Send>, bar: Option<ProgressBar>) -> PhaseLines {
        PhaseLines {
            out,
            bar,
            total: 0,
            closed: false,
        }
    }

    fn write(&mut self, r: &RoundRecord) -> io::Result<()> {
        let Some(p) = &r.phases else {
            return Ok(());
        };
        let text = line(r.index, self.total, p);
        self.put(&text)
    }

    /// `text` as a line of its own, above the progress bar.
    fn put(&mut self, text: &str) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let out = &mut self.out;
        let mut put = || writeln!(out, "{text}").and_then(|()| out.flush());
        let done = match &self.bar {
            Some(bar) => bar.suspend(put),
            None => put(),
        };
        match done {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl Sink for PhaseLines {
    fn name(&self) -> String {
        "phases (stderr)".into()
    }

    fn outputs(&self) -> Vec<(std::path::PathBuf, crate::files::output::Existing)> {
        Vec::new()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        match e {
            Event::RoundStart { total, .. } => {
                self.total = *total;
                Ok(())
            }
            Event::RoundDone(r) => self.write(r),
            Event::BeforeRounds(p) => self.put(&before_line(p)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_are_whole_and_grouped() {
        assert_eq!(ms(0.4), "0 ms");
        assert_eq!(ms(12.9), "12 ms");
        assert_eq!(ms(999.0), "999 ms");
        assert_eq!(ms(6021.7), "6,021 ms");
        assert_eq!(ms(1_234_567.0), "1,234,567 ms");
    }

    /// A reader that takes one write, then is gone.
    struct Gone(usize);

    impl Write for Gone {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            self.0 -= 1;
            Ok(b.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_stderr_stops_the_lines_not_the_run() {
        let mut lines = PhaseLines::new(Box::new(Gone(1)), None);
        let before = Event::BeforeRounds(StartPhases::default());
        assert!(lines.event(&before).is_ok());
        // the reader is gone: no error (the run's evidence is whole), and nothing tried again
        assert!(lines.event(&before).is_ok());
        assert!(lines.closed);
        assert!(lines.event(&before).is_ok());
        // any other error is one
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut full = PhaseLines::new(Box::new(Full), None);
        assert!(full.event(&before).is_err());
    }

    #[test]
    fn the_time_before_the_first_round_reads_in_one_line() {
        let mut p = StartPhases {
            open_ms: 0.2,
            discovery_ms: 215.4,
            pings_ms: 274.0,
            launch_checks_ms: Some(964.9),
            launch_check_tool_ms: Some(871.3),
            total_ms: 966.1,
            beyond_launch_check_ms: 94.8,
        };
        assert_eq!(
            before_line(&p),
            "before the first round: open 0 ms | discovery 215 ms | pings 274 ms | launch check \
             964 ms (its own run 871 ms) | total 966 ms (0.09 s beyond the launch check's own run)"
        );
        // no launch check (no NCCL test, or no preflight): nothing said of it
        p.launch_checks_ms = None;
        p.launch_check_tool_ms = None;
        assert_eq!(
            before_line(&p),
            "before the first round: open 0 ms | discovery 215 ms | pings 274 ms | total 966 ms"
        );
    }

    #[test]
    fn the_line_reads_like_the_issue_says() {
        let p = RoundPhases {
            attempts: 1,
            counters_before_ms: 12.3,
            server_start_ms: 140.0,
            readiness_ms: 35.0,
            staging_ms: 160.0,
            release_ms: Some(4.2),
            longest_tool_ms: 6021.0,
            tool_source: "remote".into(),
            server_stop_and_logs_ms: 80.0,
            counters_after_ms: 11.0,
            judge_ms: 1.0,
            overhead_ms: 310.0,
            ..RoundPhases::default()
        };
        assert_eq!(
            line(2, 9, &p),
            "round 3/9 phases: counters 12 ms | servers 140 ms | ready 35 ms | staged 160 ms | \
             release 4 ms | tool 6,021 ms | stop+logs 80 ms | counters 11 ms | judge 1 ms | \
             overhead 0.31 s"
        );
        let lab = RoundPhases {
            server_tool_start_ms: Some(25.4),
            fabricplan_ms: Some(284.6),
            ..p.clone()
        };
        let l = line(2, 9, &lab);
        assert!(
            l.contains("| ready 35 ms (servers' own start-up 25 ms) |"),
            "{l}"
        );
        assert!(l.ends_with("| overhead 0.31 s (fabricplan 0.28 s)"), "{l}");
        let sim = RoundPhases {
            attempts: 3,
            release_ms: None,
            tool_source: "sent".into(),
            ..p
        };
        let l = line(0, 1, &sim);
        assert!(
            l.starts_with("round 1/1 phases (3 attempts, summed): "),
            "{l}"
        );
        assert!(
            l.contains("release n/a | tool 6,021 ms (from its sending)"),
            "{l}"
        );
    }
}
