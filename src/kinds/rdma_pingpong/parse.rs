//! `ibv_rc_pingpong` as rdma-core's `libibverbs/examples/rc_pingpong.c` prints it: the two
//! address lines (`  local address:  LID 0x0000, QPN 0x000123, PSN 0x4a1b2c, GID fe80::...`),
//! then `8192000 bytes in 0.02 seconds = 3276.80 Mbit/sec` and
//! `1000 iters in 0.02 seconds = 20.00 usec/iter`; its errors are single lines on stderr
//! (`Couldn't connect to 10.0.0.1:18515`, `Failed to modify QP to RTR`, ...).

use serde::{Deserialize, Serialize};

use crate::parse::{
    AnyReport, ErrorKind, MAX_LINE_BYTES, MAX_STORED_NOTES, Rejected, Report, Status, ToolError,
    ToolSpec, read_as,
};

/// The tool: `fabricplan parse ibv_rc_pingpong`.
pub static TOOL: ToolSpec = ToolSpec {
    name: "ibv_rc_pingpong",
    parse: |t| Box::new(parse(t)) as Box<dyn AnyReport>,
    read: read_as::<PingpongReport>,
};

/// One end's queue pair, as printed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Address {
    pub lid: u32,
    pub qpn: u32,
    pub psn: u32,
    /// As printed (`::` when the port has no GID at the index asked).
    pub gid: String,
}

/// What an `ibv_rc_pingpong` capture says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PingpongReport {
    pub status: Status,
    pub error: Option<ToolError>,
    pub local: Option<Address>,
    pub remote: Option<Address>,
    /// `N bytes in T seconds = X Mbit/sec`: both ways summed.
    pub bytes: Option<u64>,
    pub mbit_per_sec: Option<f64>,
    /// `N iters in T seconds = Y usec/iter`: one iteration is a round trip.
    pub iters: Option<u64>,
    pub seconds: Option<f64>,
    pub usec_per_iter: Option<f64>,
    pub rejected: Vec<Rejected>,
}

impl Report for PingpongReport {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        let mut s = format!("status: {}", self.status.as_str());
        if let Some(u) = self.usec_per_iter {
            s.push_str(&format!("\nround trip: {u} usec/iter"));
        }
        if let Some(m) = self.mbit_per_sec {
            s.push_str(&format!("\nrate: {m} Mbit/sec"));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!("\nerror ({}): {}", e.kind.as_str(), e.message));
        }
        s
    }

    fn check(&self) -> Result<(), String> {
        match (self.status, self.usec_per_iter) {
            (Status::Ok, None) => Err("status ok without a usec/iter line".into()),
            (Status::Ok, Some(u)) if !(u.is_finite() && u >= 0.0) => {
                Err(format!("usec/iter {u} is not a time"))
            }
            _ => Ok(()),
        }
    }
}

/// The error kind of one of rc_pingpong's own error lines, when it is one.
fn error_kind(line: &str) -> Option<ErrorKind> {
    const KINDS: &[(&str, ErrorKind)] = &[
        ("No IB devices found", ErrorKind::NoDevice),
        ("IB device ", ErrorKind::NoDevice),
        ("Couldn't get port info", ErrorKind::PortState),
        ("Couldn't connect to ", ErrorKind::ConnectFailed),
        ("Couldn't listen to port", ErrorKind::ListenFailed),
        ("Failed to modify QP to RTR", ErrorKind::QpRtrFailed),
        ("Failed to modify QP to RTS", ErrorKind::QpRtsFailed),
        ("Failed status ", ErrorKind::CompletionError),
        ("Couldn't get local LID", ErrorKind::Gid),
        ("can't read sgid of index", ErrorKind::Gid),
        ("Could not get local gid", ErrorKind::Gid),
        ("Couldn't create QP", ErrorKind::Resource),
        ("Couldn't allocate", ErrorKind::Resource),
        ("Couldn't register MR", ErrorKind::Resource),
        ("Couldn't create CQ", ErrorKind::Resource),
        ("Couldn't post", ErrorKind::Resource),
        ("Couldn't ", ErrorKind::Other),
        ("Failed to ", ErrorKind::Other),
    ];
    KINDS
        .iter()
        .find(|(p, _)| line.starts_with(p))
        .map(|(_, k)| *k)
}

/// `LID 0x0000, QPN 0x000123, PSN 0x4a1b2c, GID fe80::1` (after `local address:`).
fn address(rest: &str) -> Option<Address> {
    let mut a = Address::default();
    let mut seen = 0;
    for field in rest.split(", ") {
        let (key, value) = field.trim().split_once(' ')?;
        let hex = || u32::from_str_radix(value.trim_start_matches("0x"), 16).ok();
        match key {
            "LID" => a.lid = hex()?,
            "QPN" => a.qpn = hex()?,
            "PSN" => a.psn = hex()?,
            "GID" => a.gid = value.to_string(),
            _ => return None,
        }
        seen += 1;
    }
    (seen == 4).then_some(a)
}

/// `N WHAT in T seconds = X UNIT`: (N, T, X), when the line says `WHAT` and `UNIT`.
fn figures(line: &str, what: &str, unit: &str) -> Option<(u64, f64, f64)> {
    let (n, rest) = line.split_once(&format!(" {what} in "))?;
    let (t, rest) = rest.split_once(" seconds = ")?;
    let x = rest.strip_suffix(unit)?.trim_end();
    Some((n.trim().parse().ok()?, t.parse().ok()?, x.parse().ok()?))
}

/// A figure a tool can print: finite and not negative.
fn sane(line: usize, what: &str, v: f64, out: &mut PingpongReport) -> bool {
    let ok = v.is_finite() && v >= 0.0;
    if !ok && out.rejected.len() < MAX_STORED_NOTES {
        out.rejected.push(Rejected {
            line,
            reason: format!("{what} `{v}` is not a figure rc_pingpong prints"),
        });
    }
    ok
}

/// Read one line into the report.
fn line(n: usize, l: &str, out: &mut PingpongReport) {
    let t = l.trim();
    if let Some(rest) = t.strip_prefix("local address:") {
        out.local = address(rest.trim()).or(out.local.take());
    } else if let Some(rest) = t.strip_prefix("remote address:") {
        out.remote = address(rest.trim()).or(out.remote.take());
    } else if let Some((b, s, m)) = figures(t, "bytes", "Mbit/sec") {
        if sane(n, "seconds", s, out) && sane(n, "Mbit/sec", m, out) {
            (out.bytes, out.mbit_per_sec) = (Some(b), Some(m));
        }
    } else if let Some((i, s, u)) = figures(t, "iters", "usec/iter") {
        if sane(n, "seconds", s, out) && sane(n, "usec/iter", u, out) {
            (out.iters, out.seconds, out.usec_per_iter) = (Some(i), Some(s), Some(u));
        }
    } else if let Some(kind) = error_kind(t) {
        match &mut out.error {
            // the first error is the cause; later lines say what followed from it
            Some(e) => {
                if e.message.lines().count() < MAX_STORED_NOTES {
                    e.message.push('\n');
                    e.message.push_str(t);
                }
            }
            None => {
                out.error = Some(ToolError {
                    kind,
                    message: t.to_string(),
                })
            }
        }
    }
}

/// Read an `ibv_rc_pingpong` capture (either end's).
pub fn parse(text: &str) -> PingpongReport {
    let mut out = PingpongReport::default();
    if text.trim().is_empty() {
        return out;
    }
    for (i, l) in text.lines().enumerate() {
        if l.len() <= MAX_LINE_BYTES {
            line(i + 1, l, &mut out);
        }
    }
    let read = out.local.is_some() || out.remote.is_some() || out.bytes.is_some();
    out.status = if out.error.is_some() {
        Status::Error
    } else if out.usec_per_iter.is_some() {
        Status::Ok
    } else if read || !out.rejected.is_empty() {
        Status::Incomplete
    } else {
        Status::Unrecognized
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_figures_line_needs_its_unit() {
        assert_eq!(
            figures(
                "1000 iters in 0.02 seconds = 20.00 usec/iter",
                "iters",
                "usec/iter"
            ),
            Some((1000, 0.02, 20.0))
        );
        assert_eq!(
            figures("1000 iters in 0.02 seconds = 20.00", "iters", "usec/iter"),
            None
        );
        assert_eq!(address("LID 0x0000, QPN 0x000123"), None);
    }
}
