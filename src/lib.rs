//! fabricplan: prove a RoCE/RDMA GPU fabric is healthy before trusting it with a workload.
//!
//! Data flows one way: `plan` (raw TOML -> validated model) -> `topology` (the fabric graph) ->
//! `schedule` (rounds of jobs) -> `render` (command lines) -> `exec` (the runner, its launchers
//! and transports) -> `parse` -> `gate` -> `diagnose` -> `report`. The CLI reads the command
//! line into a run configuration; [`exec::runner::run`] owns the run from its `Started` event to
//! its `Finished` one; the sinks in `report` only listen. Everything but `exec` is pure and
//! synchronous; only the CLI and the reporters print. The README's "How fabricplan is built"
//! lists the layers.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod capacity;
pub mod check;
pub mod cli;
pub mod compare;
pub mod diagnose;
pub mod discover;
pub mod exec;
pub mod exit;
pub mod files;
pub mod gate;
pub mod init;
pub mod kinds;
pub mod launchers;
pub mod localise;
pub mod parse;
pub mod plan;
pub mod render;
pub mod report;
pub mod results;
pub mod schedule;
pub mod sim;
pub mod text;
pub mod tools;
pub mod topology;
