//! `fabricplan parse TOOL [FILE]`: what fabricplan reads in a saved tool output.
//!
//! Exit codes: 0 the output was read (ok, incomplete, or an error the tool itself reported);
//! 1 the input is empty or nothing in it is this tool's output; 2 the input cannot be read.

use std::io::Read;
use std::path::Path;

use clap::ValueEnum;
use clap::builder::PossibleValue;

use super::{Format, Stdout};
use crate::parse::{self, Status, Tool};

impl ValueEnum for Tool {
    fn value_variants<'a>() -> &'a [Self] {
        &Tool::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

pub fn run(tool: Tool, file: Option<&Path>, format: Format) -> i32 {
    // `-` is stdin, as for most tools
    let file = file.filter(|f| f.as_os_str() != "-");
    let bytes = match file {
        Some(f) => match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: cannot read `{}`: {e}", f.display());
                return parse::EXIT_UNREADABLE;
            }
        },
        None => {
            let mut b = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut b) {
                eprintln!("error: cannot read stdin: {e}");
                return parse::EXIT_UNREADABLE;
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
            serde_json::to_string_pretty(&parsed.to_json(tool)).unwrap_or_default()
        )),
        Format::Text => out.write(&format!("{}\n", parsed.summary())),
    }
    match parsed.status() {
        Status::Empty => eprintln!("error: the input is empty: nothing to read"),
        Status::Unrecognized => eprintln!(
            "error: nothing in the input reads as {} output",
            tool.name()
        ),
        _ => {}
    }
    parse::input_exit_code(&parsed)
}
