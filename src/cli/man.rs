//! `fabricplan man [COMMAND]`: the man page (roff) of fabricplan or of one of its commands,
//! generated from the command line's own definition.

use clap::CommandFactory;

use super::{Cli, CliError, Outcome, Stdout};
use crate::exit;

pub fn run(command: Option<&str>) -> Outcome {
    let root = Cli::command();
    let (cmd, title) = match command {
        None => (root, "fabricplan".to_string()),
        Some(name) => {
            let Some(sub) = root.find_subcommand(name).cloned() else {
                let names: Vec<String> = root
                    .get_subcommands()
                    .map(|s| s.get_name().to_string())
                    .collect();
                return Err(CliError::Usage(format!(
                    "no command `{name}`; one of: {}",
                    names.join(", ")
                )));
            };
            // `fabricplan-run(1)`, as git and cargo name their commands' pages
            let title = format!("fabricplan-{}", sub.get_name());
            (sub.bin_name(format!("fabricplan {name}")), title)
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .title(title)
        .render(&mut buf)
        .map_err(|e| CliError::Failed(format!("cannot render the man page: {e}")))?;
    let mut out = Stdout::new();
    out.write(&String::from_utf8_lossy(&buf));
    Ok(exit::OK)
}
