//! `ethtool -S NETDEV` as an mlx5 NIC prints it, for the simulated fabric: the physical-layer
//! counters fabricplan reads, the rest left out (the parser keeps what it does not know).

/// The counters a simulated port shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Phy {
    /// Symbol errors forward error correction did not correct.
    pub symbol_errors: u64,
    pub link_down_events: u64,
    /// Pause frames received (held back by the far end) and sent (holding it back).
    pub rx_pause: u64,
    pub tx_pause: u64,
}

/// What `ethtool -S` prints for a port with counters `p`, each line ending in a newline.
pub fn stats(p: &Phy) -> String {
    format!(
        "NIC statistics:\n     rx_crc_errors_phy: 0\n     rx_symbol_err_phy: {}\n     rx_corrected_bits_phy: 0\n     link_down_events_phy: {}\n     rx_pause_ctrl_phy: {}\n     tx_pause_ctrl_phy: {}\n",
        p.symbol_errors, p.link_down_events, p.rx_pause, p.tx_pause
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_reads_back_what_the_simulated_nic_prints() {
        use crate::tools::ethtool::parse::{Meaning, parse};
        let text = stats(&Phy {
            symbol_errors: 7,
            link_down_events: 1,
            rx_pause: 3,
            tx_pause: 0,
        });
        let r = parse(&text);
        assert_eq!(r.known.get(&Meaning::SymbolErrors), Some(&7), "{r:?}");
        assert_eq!(r.known.get(&Meaning::LinkDownEvents), Some(&1), "{r:?}");
    }
}
