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

    /// `32 GT/s x2 of 32 GT/s x4`, `32 GT/s x4` (at its maximum), or `-`.
    pub fn pcie_text(&self) -> String {
        match (&self.pcie_now, &self.pcie_max) {
            (Some(n), Some(m)) if self.pcie_degraded => format!("{n} of {m}"),
            (Some(n), _) => n.clone(),
            _ => "-".into(),
        }
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

/// Which rows stand out: a PCIe link below its maximum, or firmware other than the one most
/// rows run (on a tie, the newest). A big run's reports list only these.
pub fn unusual(rows: &[InventoryRow]) -> Vec<bool> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for fw in rows.iter().filter_map(|r| r.firmware.as_deref()) {
        match counts.iter_mut().find(|(v, _)| *v == fw) {
            Some((_, n)) => *n += 1,
            None => counts.push((fw, 1)),
        }
    }
    let most = counts
        .iter()
        .fold(None::<(&str, usize)>, |best, &(v, n)| match best {
            Some((bv, b)) if b > n || (b == n && super::hardware::newer(bv, v).is_ge()) => best,
            _ => Some((v, n)),
        })
        .map(|(v, _)| v);
    rows.iter()
        .map(|r| r.pcie_degraded || (r.firmware.is_some() && r.firmware.as_deref() != most))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(fw: &str, degraded: bool) -> InventoryRow {
        InventoryRow {
            firmware: Some(fw.into()),
            pcie_now: Some("32 GT/s x2".into()),
            pcie_max: Some("32 GT/s x4".into()),
            pcie_degraded: degraded,
            ..InventoryRow::default()
        }
    }

    #[test]
    fn a_narrow_link_and_the_odd_firmware_stand_out() {
        let rows = [
            row("28.45.1200", false),
            row("28.39.2048", false),
            row("28.45.1200", true),
            row("28.45.1200", false),
        ];
        assert_eq!(unusual(&rows), [false, true, true, false]);
        // a tie: the newest is the common one
        let tie = [row("28.39.2048", false), row("28.45.1200", false)];
        assert_eq!(unusual(&tie), [true, false]);
        assert_eq!(rows[2].pcie_text(), "32 GT/s x2 of 32 GT/s x4");
        assert_eq!(InventoryRow::default().pcie_text(), "-");
    }
}
