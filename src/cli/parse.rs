//! `fabricplan parse TOOL [FILE]`: what fabricplan reads in a saved tool output.
//!
//! Exit codes: 0 the output was read (ok, incomplete, or an error the tool itself reported);
//! 1 the input is empty or nothing in it is this tool's output; 2 the input cannot be read.

use std::io::Read;
use std::path::Path;

use clap::ValueEnum;
use clap::builder::PossibleValue;

use super::{CliError, Format, Outcome, Stdout};
use crate::parse::{self, Status, Tool};

impl ValueEnum for Tool {
    /// The shared tools and every kind's own.
    fn value_variants<'a>() -> &'a [Self] {
        static TOOLS: std::sync::OnceLock<Vec<Tool>> = std::sync::OnceLock::new();
        TOOLS.get_or_init(crate::kinds::tools)
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

/// The largest tool output read.
const MAX: u64 = crate::files::input::STREAM_MAX;

pub fn run(tool: Tool, file: Option<&Path>, format: Format) -> Outcome {
    use crate::files::input::{self, Accept, InputError};
    // `-` is stdin, as for most tools
    let file = file.filter(|f| f.as_os_str() != "-");
    let bytes = match file {
        // a file or a pipe, never a device read forever, at most the input limit
        Some(f) => input::open(f, MAX, Accept::Stream)
            .and_then(|mut r| {
                let mut b = Vec::new();
                r.read_to_end(&mut b)
                    .map(|_| b)
                    .map_err(|source| InputError::Io {
                        path: f.to_path_buf(),
                        source,
                    })
            })
            .map_err(|e| CliError::Unreadable(e.to_string()))?,
        None => {
            let mut b = Vec::new();
            std::io::stdin()
                .take(MAX + 1)
                .read_to_end(&mut b)
                .map_err(|e| CliError::Unreadable(format!("cannot read stdin: {e}")))?;
            if b.len() as u64 > MAX {
                return Err(CliError::Unreadable(format!(
                    "stdin is larger than the {} limit",
                    crate::text::size::format(MAX)
                )));
            }
            b
        }
    };
    // captures may hold stray bytes (terminal noise): read what is text
    let text = String::from_utf8_lossy(&bytes);
    let parsed = parse::parse(tool, &text);
    let mut out = Stdout::new();
    match format {
        Format::Json => out.write(&format!(
            "{}\n",
            serde_json::to_string_pretty(&parsed.to_json()).unwrap_or_default()
        )),
        // what a tool printed reaches the terminal inert
        Format::Text => out.write(&format!(
            "{}\n",
            crate::text::inert_lines(&parsed.summary())
        )),
    }
    match parsed.status() {
        Status::Empty => Err(CliError::NothingRead(
            "the input is empty: nothing to read".into(),
        )),
        Status::Unrecognized => Err(CliError::NothingRead(format!(
            "nothing in the input reads as {} output",
            tool.name()
        ))),
        Status::Ok | Status::Incomplete | Status::Error => Ok(parse::input_exit_code(&parsed)),
    }
}
