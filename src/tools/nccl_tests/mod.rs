//! nccl-tests (`all_reduce_perf` and its siblings), with NCCL's own log lines in the same
//! capture: its output read, and its half of the simulated fabric.

pub mod parse;
pub mod sim;
