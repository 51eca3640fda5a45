//! The hardware inventory: per planned half, its device, firmware, PCIe link and driver; a big
//! run's page lists only the halves that stand out (a narrow link, an odd firmware).

use serde::Serialize;

use crate::discover::inventory::unusual;
use crate::results::RunResults;

/// One half's row, as the page shows it.
#[derive(Serialize)]
pub(super) struct Row {
    node: String,
    half: String,
    device: String,
    netdev: String,
    firmware: String,
    /// The firmware is not the one most halves run.
    odd_firmware: bool,
    pcie: String,
    /// The link trained below its maximum, and what it carries then.
    degraded: bool,
    carries: Option<f64>,
    driver: String,
    kernel: String,
}

/// The inventory section: its rows, and how many a big run leaves out.
#[derive(Serialize)]
pub(super) struct Inventory {
    rows: Vec<Row>,
    not_listed: usize,
}

/// `None` when discovery gave no inventory (a run from before it was kept, or none reached).
pub(super) fn inventory(r: &RunResults) -> Option<Inventory> {
    if r.inventory.is_empty() {
        return None;
    }
    let big = super::big(r);
    let odd = unusual(&r.inventory);
    let dash = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
    let mut rows = Vec::new();
    let mut not_listed = 0;
    for (i, odd) in r.inventory.iter().zip(odd) {
        if big && !odd {
            not_listed += 1;
            continue;
        }
        rows.push(Row {
            node: i.node.clone(),
            half: i.half.clone(),
            device: dash(&i.device),
            netdev: dash(&i.netdev),
            firmware: dash(&i.firmware),
            odd_firmware: odd && !i.pcie_degraded,
            pcie: i.pcie_text(),
            degraded: i.pcie_degraded,
            carries: i.pcie_gbps.filter(|_| i.pcie_degraded),
            driver: i.driver_text(),
            kernel: dash(&i.kernel),
        });
    }
    Some(Inventory { rows, not_listed })
}
