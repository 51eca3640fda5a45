//! What every parse result promises, as a check the fuzz tests and the `fuzz/` libFuzzer
//! targets run on whatever they feed the parsers:
//!
//! * status `ok` comes with no error and at least one complete result (a row, a rate, the
//!   statistics); status `error` always carries the error;
//! * no accepted value is impossible: every time, rate, bandwidth, latency and jitter is finite
//!   and non-negative, no bandwidth or rate is above its physical ceiling, a ping loss lies in 0-100 % and received never exceeds transmitted, an
//!   iperf3 loss never exceeds 100 %;
//! * every neighbour entry names an IP address and, when it has one, a lowercase six-octet MAC;
//!   every LLDP neighbour names its local interface, and an id of type `mac` is a MAC.
//!
//! Each report keeps its own promises in its `Report::check`, beside its parser (a test kind's
//! own tool, iperf3's, in `crate::kinds`); this file names no tool: it holds only the promises
//! every report shares and the helper the reports' checks use.

use super::{Parsed, Status};

/// A value a tool can print: finite and non-negative.
fn nonneg(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// `Err` naming `name` when `v` is above `max`, its metric's physical ceiling (see
/// [`super::ceiling`]).
pub(crate) fn check_max(name: &str, v: Option<f64>, max: f64) -> Result<(), String> {
    match v {
        Some(x) if x > max => Err(format!("{name} = {x} accepted, above {max}")),
        _ => Ok(()),
    }
}

/// `Err` naming `name` when `v` holds an impossible value (negative, NaN, infinite).
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
