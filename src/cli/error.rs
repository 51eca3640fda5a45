//! The command line's one error: why a command stopped short of its own result, and the exit
//! code that says so (as `just` does with its `Error`). A command returns `Ok(code)` for its
//! own result (a verdict, a comparison, a plan found invalid by `validate`) and `Err` for what
//! kept it from one; `main` says the error once on stderr and exits with its code.

use std::path::PathBuf;

use crate::exit;
use crate::parse;
use crate::plan::LoadError;

/// What kept a command from its result.
#[derive(Debug)]
pub enum CliError {
    /// The plan cannot be read or is invalid: its diagnostics (exit 2).
    Plan(LoadError),
    /// The command line, or an input it names, cannot be used (exit 2).
    Usage(String),
    /// A saved tool output that cannot be read (`parse`: exit 2).
    Unreadable(String),
    /// An input in which nothing is the tool's output (`parse`: exit 1).
    NothingRead(String),
    /// Something this machine could not do: start the runtime, render a page (exit 1).
    Failed(String),
    /// A file the command writes could not be written (exit 3).
    NotWritten(String),
    /// The run's evidence could not all be written: each write error, then the run directory
    /// (exit 3; the verdict was printed).
    Incomplete { lost: Vec<String>, dir: PathBuf },
    /// Several problems, each said; the exit code is the first one's.
    Many(Vec<CliError>),
}

impl CliError {
    /// The exit code the process ends with.
    pub fn code(&self) -> i32 {
        match self {
            CliError::Plan(_) => exit::INVALID_PLAN,
            CliError::Usage(_) => exit::USAGE,
            CliError::Unreadable(_) => parse::EXIT_UNREADABLE,
            CliError::NothingRead(_) => parse::EXIT_NOTHING_READ,
            CliError::Failed(_) => exit::FAIL,
            CliError::NotWritten(_) | CliError::Incomplete { .. } => exit::EVIDENCE,
            CliError::Many(all) => all.first().map_or(exit::USAGE, CliError::code),
        }
    }

    /// Say it on stderr (never a panic: a closed stderr says nothing).
    pub fn report(&self) {
        let mut text = String::new();
        self.write(&mut text, super::color(), super::width());
        super::say(&text);
    }

    /// What `report` says, with or without colour, at a terminal width.
    pub fn write(&self, out: &mut String, color: bool, width: usize) {
        // a message may hold a path or a value read from a file: shown inert
        let mut line = |l: &str| {
            out.push_str("error: ");
            out.push_str(&crate::text::inert_lines(l));
            out.push('\n');
        };
        match self {
            CliError::Plan(LoadError::Io { path, source }) => {
                line(&format!("cannot read plan `{}`: {source}", path.display()));
            }
            CliError::Plan(LoadError::Invalid(d)) => {
                out.push_str(&d.render(color, width));
                out.push_str(&format!(
                    "error: plan `{}` is invalid: {} error(s), {} warning(s)\n",
                    d.path,
                    d.errors(),
                    d.warnings()
                ));
            }
            CliError::Usage(m)
            | CliError::Unreadable(m)
            | CliError::NothingRead(m)
            | CliError::Failed(m)
            | CliError::NotWritten(m) => line(m),
            CliError::Incomplete { lost, dir } => {
                for l in lost {
                    line(&format!("evidence not written: {l}"));
                }
                line(&format!(
                    "the run directory `{}` is incomplete ({} write error(s)); exit {}",
                    dir.display(),
                    lost.len(),
                    exit::EVIDENCE
                ));
            }
            CliError::Many(all) => {
                for e in all {
                    e.write(out, color, width);
                }
            }
        }
    }
}

/// A command's result: its own exit code, or what kept it from one.
pub type Outcome = Result<i32, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    fn said(e: &CliError) -> String {
        let mut s = String::new();
        e.write(&mut s, false, 100);
        s
    }

    #[test]
    fn every_error_says_error_and_ends_with_its_code() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let cases = [
            (CliError::Usage("u".into()), 2, "error: u\n"),
            (CliError::Unreadable("r".into()), 2, "error: r\n"),
            (CliError::NothingRead("n".into()), 1, "error: n\n"),
            (CliError::Failed("f".into()), 1, "error: f\n"),
            (CliError::NotWritten("w".into()), 3, "error: w\n"),
            (
                CliError::Plan(LoadError::Io {
                    path: "p.toml".into(),
                    source: io(),
                }),
                2,
                "error: cannot read plan `p.toml`: entity not found\n",
            ),
        ];
        for (e, code, text) in cases {
            assert_eq!((e.code(), said(&e).as_str()), (code, text), "{e:?}");
        }
    }

    #[test]
    fn an_incomplete_run_lists_each_loss_then_its_directory() {
        let e = CliError::Incomplete {
            lost: vec!["a: full".into(), "b: full".into()],
            dir: "runs/x".into(),
        };
        assert_eq!(e.code(), 3);
        assert_eq!(
            said(&e),
            "error: evidence not written: a: full\nerror: evidence not written: b: full\n\
             error: the run directory `runs/x` is incomplete (2 write error(s)); exit 3\n"
        );
    }

    #[test]
    fn several_errors_are_each_said_under_the_first_ones_code() {
        let e = CliError::Many(vec![
            CliError::NotWritten("w".into()),
            CliError::Usage("u".into()),
        ]);
        assert_eq!(
            (e.code(), said(&e)),
            (3, "error: w\nerror: u\n".to_string())
        );
    }
}
