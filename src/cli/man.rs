//! `fabricplan man [COMMAND]`: the man page (roff) of fabricplan or of one of its commands,
//! generated from the command line's own definition.

use clap::CommandFactory;

use super::{Cli, Stdout};
use crate::exit;

pub fn run(command: Option<&str>) -> i32 {
    let root = Cli::command();
    let (cmd, title) = match command {
        None => (root, "fabricplan".to_string()),
        Some(name) => {
            let Some(sub) = root.find_subcommand(name).cloned() else {
                let names: Vec<String> = root
                    .get_subcommands()
                    .map(|s| s.get_name().to_string())
                    .collect();
                eprintln!("error: no command `{name}`; one of: {}", names.join(", "));
                return exit::USAGE;
            };
            // `fabricplan-run(1)`, as git and cargo name their commands' pages
            let title = format!("fabricplan-{}", sub.get_name());
            (sub.bin_name(format!("fabricplan {name}")), title)
        }
    };
    let mut buf = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd).title(title).render(&mut buf) {
        eprintln!("error: cannot render the man page: {e}");
        return exit::FAIL;
    }
    let mut out = Stdout::new();
    out.write(&String::from_utf8_lossy(&buf));
    exit::OK
}
