//! `fabricplan completions SHELL`: the shell completion script (bash, zsh, fish, elvish,
//! powershell), generated from the command line's own definition.

use clap::CommandFactory;

use super::{Cli, Outcome, Stdout};
use crate::exit;

pub fn run(shell: clap_complete::Shell) -> Outcome {
    let mut cmd = Cli::command();
    let mut out = Stdout::new();
    clap_complete::generate(shell, &mut cmd, "fabricplan", &mut out);
    Ok(exit::OK)
}
