//! The physical-layer faults (`flap`, `phy-errors`, `congestion`) as the counters read around
//! each job show them.

use super::State;
use super::fault::CongestionRole;
use super::world::{CARRIER, World};
use crate::plan::NodeId;

/// `flap` and `phy-errors` in the counters read around each job, once discovery has read the
/// node: a flapped device's link goes down and comes back during the first job on it (between
/// the first two readings: its carrier changes twice, `link_downed` once); a device taking
/// errors counts `symbol_error` at its rate since discovery.
pub(super) fn faults_show(w: &World, st: &mut State, node: NodeId, devs: &[String]) {
    let Some(since) = st.probed.get_mut(&node).map(|t| {
        *t += 1;
        *t as f64
    }) else {
        return;
    };
    for name in devs {
        let Some(d) = w.dev(node, name) else { continue };
        let key = (node, name.clone());
        if w.flapped(d) {
            let reads = st.flap_reads.entry(key.clone()).or_insert(0);
            *reads += 1;
            if *reads == 2
                && let Some(c) = st.counters.get_mut(&key)
            {
                *c.entry(CARRIER.into()).or_insert(0) += 2;
                *c.entry("link_downed".into()).or_insert(0) += 1;
            }
        }
        if let (Some(role), Some(c)) = (d.congestion, st.counters.get_mut(&key)) {
            // CNPs at 500 a second since discovery: sent by a held-back receiver, handled by
            // a paused sender, ECN-marked by its switch
            let n = ((500.0 * since).ceil() as u64).max(1);
            let names: &[&str] = match role {
                CongestionRole::Sends => &["np_cnp_sent", "np_ecn_marked_roce_packets"],
                CongestionRole::Paused => &["rp_cnp_handled"],
            };
            for k in names {
                let e = c.entry(k.to_string()).or_insert(0);
                *e = (*e).max(n);
            }
        }
        if let (Some(r), Some(c)) = (d.phy_errors_per_s, st.counters.get_mut(&key)) {
            let n = ((r * since).ceil() as u64).max(1);
            let e = c.entry("symbol_error".into()).or_insert(0);
            *e = (*e).max(n);
        }
    }
}
