//! `ping` (the small and the jumbo do-not-fragment probe of each cable): its output read, and
//! its half of the simulated fabric.

pub mod parse;
pub mod sim;
