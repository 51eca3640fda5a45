//! Tools, each one folder: what fabricplan knows of a program it runs on the nodes. A tool's
//! folder holds a part per layer it reaches into, named for that layer: `parse` (what it prints,
//! typed, never guessed) and `sim` (its half of the simulated fabric). Test kinds (`crate::kinds`)
//! say when a tool runs and what its numbers must reach; they point at the tools they run.

pub mod ethtool;
pub mod nccl_tests;
pub mod perftest;
pub mod ping;
