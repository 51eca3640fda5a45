//! The hardware inventory: one row per planned half discovery reached, with what is under it
//! (firmware, board, PCI function, PCIe link now and at its maximum, driver, kernel). Carried by
//! results.json, summary.md and report.html.

use serde::Serialize;

use super::resolve::HalfResolution;

/// One row of the hardware inventory: a planned half and what is under it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct InventoryRow {
    pub node: String,
    /// The planned half (`spark-a.f0.b`).
    pub half: String,
    pub device: Option<String>,
    pub netdev: Option<String>,
    pub firmware: Option<String>,
    pub board_id: Option<String>,
    /// The PCI function's address.
    pub pci: Option<String>,
    /// The PCIe link now and at its maximum (`32 GT/s x2`, `32 GT/s x4`).
    pub pcie_now: Option<String>,
    pub pcie_max: Option<String>,
    /// It trained below its maximum.
    pub pcie_degraded: bool,
    /// What the link carries as it trained, Gb/s.
    pub pcie_gbps: Option<f64>,
    pub driver: Option<String>,
    pub driver_version: Option<String>,
    pub kernel: Option<String>,
}

impl InventoryRow {
    /// The rows of one node's planned halves, in discovery order.
    pub fn of_node(
        node: &str,
        kernel: Option<&str>,
        halves: &[HalfResolution],
    ) -> Vec<InventoryRow> {
        let mut out = Vec::new();
        {
            for h in halves {
                let hw = h.hardware.clone().unwrap_or_default();
                let link = hw.pcie.as_ref();
                out.push(InventoryRow {
                    node: node.to_string(),
                    half: h.name.clone(),
                    device: h.device.clone(),
                    netdev: h.netdev.clone(),
                    firmware: hw.firmware.clone(),
                    board_id: hw.board_id.clone(),
                    pci: hw.pci.clone(),
                    pcie_now: link.map(|l| l.now()),
                    pcie_max: link.map(|l| l.max()),
                    pcie_degraded: link.is_some_and(|l| l.degraded()),
                    pcie_gbps: link
                        .and_then(|l| l.carries_gbps())
                        .map(|g| (g * 10.0).round() / 10.0),
                    driver: hw.driver.clone(),
                    driver_version: hw.driver_version.clone(),
                    kernel: kernel.map(str::to_string),
                });
            }
        }
        out
    }

    /// `mlx5_core 24.10` or `mlx5_core`, or `-`.
    pub fn driver_text(&self) -> String {
        match (&self.driver, &self.driver_version) {
            (Some(d), Some(v)) => format!("{d} {v}"),
            (Some(d), None) => d.clone(),
            _ => "-".into(),
        }
    }
}
