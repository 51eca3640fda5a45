//! `ethtool -S NETDEV`: a NIC's statistics, read by name (mlx5's physical-layer counters by
//! what they mean; unknown names kept, never guessed), and what a simulated NIC prints.

pub mod parse;
pub mod sim;
