//! What every parse result promises, as a check the fuzz tests and the `fuzz/` libFuzzer
//! targets run on whatever they feed the parsers:
//!
//! * status `ok` comes with no error and at least one complete result (a row, a rate, the
//!   statistics); status `error` always carries the error;
//! * no accepted value is impossible: every time, rate, bandwidth, latency and jitter is finite
//!   and non-negative, a ping loss lies in 0-100 % and received never exceeds transmitted, an
//!   iperf3 loss never exceeds 100 % (a test kind's own tool keeps its report's promises in its
//!   `Report::check`: iperf3's in `crate::kinds`);
//! * every neighbour entry names an IP address and, when it has one, a lowercase six-octet MAC;
//!   every LLDP neighbour names its local interface, and an id of type `mac` is a MAC.

use super::lldp::LldpReport;
use super::nccl_tests::NcclReport;
use super::neigh::NeighReport;
use super::perftest::{BwReport, LatReport};
use super::ping::PingReport;
use super::{Parsed, Status};

fn nonneg(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

pub(crate) fn check_opt(name: &str, v: Option<f64>) -> Result<(), String> {
    match v {
        Some(x) if !nonneg(x) => Err(format!("{name} = {x} accepted")),
        _ => Ok(()),
    }
}

/// Check what every parse result guarantees; `Err` names the broken promise.
pub fn check_invariants(p: &Parsed) -> Result<(), String> {
    let st = p.status();
    if st == Status::Ok && p.error().is_some() {
        return Err("status ok with an error".into());
    }
    if st == Status::Error && p.error().is_none() {
        return Err("status error without an error".into());
    }
    p.check()
}

/// [`check_invariants`] of a BwReport.
pub(super) fn bw(r: &BwReport) -> Result<(), String> {
    let st = r.status;
    if st == Status::Ok && r.rows.is_empty() && r.bare_values.is_empty() {
        return Err("ok without a row".into());
    }
    for row in &r.rows {
        for (n, v) in [
            ("bw_peak", row.bw_peak_gbps),
            ("bw_avg", row.bw_avg_gbps),
            ("msg_rate", row.msg_rate_mpps),
        ] {
            check_opt(n, Some(v))?;
        }
        check_opt("cpu_util", row.cpu_util_pct)?;
    }
    for v in &r.bare_values {
        check_opt("bare", Some(*v))?;
    }
    check_opt("bw_avg_gbps", r.bw_avg_gbps)?;
    Ok(())
}

/// [`check_invariants`] of a LatReport.
pub(super) fn lat(r: &LatReport) -> Result<(), String> {
    let st = r.status;
    if st == Status::Ok && r.rows.is_empty() && r.bare_values.is_empty() {
        return Err("ok without a row".into());
    }
    for row in &r.rows {
        for v in [
            row.t_min,
            row.t_max,
            row.t_typical,
            row.t_avg,
            row.t_stdev,
            row.p99,
            row.p999,
            row.tps_avg,
            row.cpu_util_pct,
        ] {
            check_opt("latency", v)?;
        }
    }
    Ok(())
}

/// [`check_invariants`] of a NcclReport.
pub(super) fn nccl(r: &NcclReport) -> Result<(), String> {
    let st = r.status;
    if st == Status::Ok && r.rows.is_empty() {
        return Err("ok without a row".into());
    }
    check_opt("avg_busbw_gbs", r.avg_busbw_gbs)?;
    for row in &r.rows {
        for h in [&row.out_of_place, &row.in_place].into_iter().flatten() {
            check_opt("time", Some(h.time_us))?;
            check_opt("algbw", Some(h.algbw_gbs))?;
            check_opt("busbw", Some(h.busbw_gbs))?;
            if let Some(pi) = &h.per_iter {
                for v in [pi.min_us, pi.max_us, pi.p99_us, pi.cv_pct] {
                    check_opt("per-iteration", v)?;
                }
            }
        }
    }
    Ok(())
}

/// [`check_invariants`] of a PingReport.
pub(super) fn ping(r: &PingReport) -> Result<(), String> {
    let st = r.status;
    if st == Status::Ok && (r.transmitted.is_none() || r.received.is_none()) {
        return Err("ok without statistics".into());
    }
    if let (Some(t), Some(rx)) = (r.transmitted, r.received) {
        if rx > t {
            return Err(format!("{rx} received of {t}"));
        }
    }
    if r.loss_pct.is_some_and(|l| !(0.0..=100.0).contains(&l)) {
        return Err(format!("loss {:?}", r.loss_pct));
    }
    for (n, v) in [
        ("rtt_min", r.rtt_min_ms),
        ("rtt_avg", r.rtt_avg_ms),
        ("rtt_max", r.rtt_max_ms),
        ("rtt_mdev", r.rtt_mdev_ms),
        ("time", r.time_ms),
    ] {
        check_opt(n, v)?;
    }
    Ok(())
}

/// [`check_invariants`] of a NeighReport.
pub(super) fn neigh(r: &NeighReport) -> Result<(), String> {
    if r.status == Status::Ok && r.format.is_none() {
        return Err("ok without a table".into());
    }
    for e in &r.entries {
        if e.dst.parse::<std::net::IpAddr>().is_err() {
            return Err(format!("neighbour `{}` accepted", e.dst));
        }
        if let Some(m) = &e.lladdr
            && super::neigh::mac(m).as_deref() != Some(m.as_str())
        {
            return Err(format!("lladdr `{m}` accepted"));
        }
    }
    Ok(())
}

/// [`check_invariants`] of a LldpReport.
pub(super) fn lldp(r: &LldpReport) -> Result<(), String> {
    for n in &r.neighbours {
        if n.interface.trim().is_empty() {
            return Err("a neighbour on no interface".into());
        }
        for i in [&n.port_id, &n.chassis_id].into_iter().flatten() {
            if i.kind == "mac" && super::neigh::mac(&i.value).as_deref() != Some(i.value.as_str()) {
                return Err(format!("mac id `{}` accepted", i.value));
            }
        }
    }
    Ok(())
}
