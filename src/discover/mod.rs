//! Discovery: which RDMA device and netdev carry each planned half on each box, which RoCE v2
//! GID index maps its address, and what hardware is under it (firmware, PCIe link, driver).
//! Read-only; the probe is one script per node.

pub mod changes;
pub mod checks;
pub mod hardware;
pub mod inventory;
pub mod phy;
pub mod probe;
pub mod proof;
pub mod resolve;

pub use probe::{PROBE_SCRIPT, PROBE_TIMEOUT, Probe, counters_script};
pub use resolve::{HalfResolution, resolve_node};
