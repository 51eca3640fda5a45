//! Discovery: which RDMA device and netdev carry each planned half on each box, and which RoCE
//! v2 GID index maps its address. Read-only; the probe is one script per node.

pub mod checks;
pub mod probe;
pub mod resolve;

pub use probe::{PROBE_SCRIPT, PROBE_TIMEOUT, Probe, counters_script};
pub use resolve::{HalfResolution, resolve_node};
