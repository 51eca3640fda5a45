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
    fn value_variants<'a>() -> &'a [Self] {
        &Tool::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

pub fn run(tool: Tool, file: Option<&Path>, format: Format) -> Outcome {
    // `-` is stdin, as for most tools
    let file = file.filter(|f| f.as_os_str() != "-");
    let bytes = match file {
        Some(f) => std::fs::read(f)
            .map_err(|e| CliError::Unreadable(format!("cannot read `{}`: {e}", f.display())))?,
        None => {
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .map_err(|e| CliError::Unreadable(format!("cannot read stdin: {e}")))?;
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
        Format::Text => out.write(&format!("{}\n", parsed.summary())),
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
