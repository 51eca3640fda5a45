//! perftest (`ib_write_bw`, `ib_read_bw`, `ib_write_lat`, `ib_send_lat`...): its output read,
//! and its half of the simulated fabric.

pub mod parse;
pub mod sim;
