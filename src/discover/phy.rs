//! Port error counters as evidence: what a half's port counters (its netdev's `ethtool -S`,
//! its RDMA device's counters; see [`super::resolve::RDMA_COUNTERS`]) did over an interval (a
//! run, the time between two checks), against the plan's `[gates.phy]`
//! ([`crate::plan::PhyGates`], whose defaults cite their vendor guidance). Link-down events are
//! a flap: a FAIL about the cable. Symbol errors FEC did not correct, over the bits the link
//! carried at its rate (its effective BER), and RDMA retransmissions per second past their
//! gates are a WARN about the cable with its fix. Corrected bits are normal on PAM4 links and
//! never judged. Pure.

use crate::capacity::DEFAULT_HALF_GBPS;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::Plan;
use crate::text::thousands;

use super::changes::{Span, gate};
use super::resolve::HalfResolution;

/// How much `name` grew from `b` to `a` (none when either did not read it, or it went back:
/// a reset counter says nothing of the interval).
pub fn grew(b: &HalfResolution, a: &HalfResolution, name: &str) -> Option<u64> {
    let (x, y) = (b.port_counters.get(name)?, a.port_counters.get(name)?);
    y.checked_sub(*x)
}

/// Of `names` (one thing counted by two sources: the netdev's `ethtool -S`, the RDMA device),
/// the one that grew most, and by how much.
fn grew_any(b: &HalfResolution, a: &HalfResolution, names: &[&str]) -> Option<(String, u64)> {
    names
        .iter()
        .filter_map(|n| grew(b, a, n).map(|d| (n.to_string(), d)))
        .max_by_key(|(_, d)| *d)
}

/// The part a link's counters point at: its cable, else the half.
fn cable_or_half(plan: &Plan, h: &HalfResolution) -> Vec<Part> {
    vec![
        plan.cable_part(&h.endpoint)
            .unwrap_or_else(|| plan.half_part(&h.endpoint)),
    ]
}

/// The port's own count of the link going down grew past `max-link-down-events` (a flap its
/// carrier count did not show, e.g. one the driver counted while the netdev stayed up).
pub fn link_down(
    plan: &Plan,
    (b, a): (&HalfResolution, &HalfResolution),
    span: &Span,
) -> Option<Verdict> {
    let (name, d) = grew_any(b, a, &["link-down-events", "link_downed"])?;
    if d <= plan.phy.max_link_down_events {
        return None;
    }
    Some(
        Verdict::check(
            gate(&b.name),
            Outcome::Fail,
            format!(
                "{}'s link went down {d} time(s) {} (`{name}`; [gates.phy] max-link-down-events = {})",
                b.name, span.during, plan.phy.max_link_down_events
            ),
            Some(Trap::LinkFlapped),
        )
        .about(cable_or_half(plan, b)),
    )
}

/// `0.4`, `90`.
fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.0}")
    }
}

/// Symbol errors past the effective BER, retransmissions past their rate: one WARN about the
/// cable saying both, with the fix.
pub fn errors(
    plan: &Plan,
    (b, a): (&HalfResolution, &HalfResolution),
    span: &Span,
) -> Option<Verdict> {
    let secs = span.seconds.filter(|s| *s > 0.0)?;
    let profile = plan.profile_of(b.endpoint.node);
    let rate = profile
        .port_rate_gbps
        .or(profile.half_rate_gbps)
        .unwrap_or(DEFAULT_HALF_GBPS);
    let mut said = Vec::new();
    if let Some((name, d)) =
        grew_any(b, a, &["symbol-errors", "symbol_error"]).filter(|(_, d)| *d > 0)
    {
        let ber = d as f64 / (secs * rate * 1e9);
        if ber > plan.phy.max_effective_ber {
            let crc = grew(b, a, "crc-errors").filter(|c| *c > 0);
            said.push(format!(
                "{} symbol errors in {} s (`{name}`{}), effective BER {ber:.1e} at {rate} Gb/s ([gates.phy] max-effective-ber = {:e})",
                thousands(d),
                seconds(secs),
                crc.map(|c| format!(", {} CRC errors", thousands(c))).unwrap_or_default(),
                plan.phy.max_effective_ber
            ));
        }
    }
    let retrans: u64 = ["out_of_sequence", "packet_seq_err", "local_ack_timeout_err"]
        .iter()
        .filter_map(|n| grew(b, a, n))
        .sum();
    let per_s = retrans as f64 / secs;
    if span.retransmits && per_s > plan.phy.max_retransmits_per_s {
        said.push(format!(
            "{} RDMA retransmissions in {} s ({per_s:.1}/s; [gates.phy] max-retransmits-per-s = {})",
            thousands(retrans),
            seconds(secs),
            plan.phy.max_retransmits_per_s
        ));
    }
    if said.is_empty() {
        return None;
    }
    Some(
        Verdict::check(
            format!("port counters {}", b.name),
            Outcome::Warn,
            format!("{} {}: {}", b.name, span.during, said.join("; ")),
            Some(Trap::LinkErrors),
        )
        .about(cable_or_half(plan, b)),
    )
}
