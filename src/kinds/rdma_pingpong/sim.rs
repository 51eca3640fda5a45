//! `ibv_rc_pingpong` on the simulated fabric: its options read as rc_pingpong's getopt reads
//! them, and its words (the address lines, the two figures lines, its error lines) for what
//! the fabric did.

use std::fmt::Write as _;

use crate::kinds::simulated::{SimAnswer, SimArgs, SimEnd, SimOutcome, SimTool};

pub struct Pingpong;

/// rc_pingpong's default TCP port.
const DEFAULT_PORT: u16 = 18515;

fn address(side: &str, e: &SimEnd) -> String {
    let gid = std::net::Ipv6Addr::from(e.gid);
    // `local address:  ` and `remote address: ` line up in rc_pingpong's printf
    let pad = if side == "local" { "  " } else { " " };
    format!(
        "  {side} address:{pad}LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {gid}\n",
        e.lid, e.qpn, e.psn
    )
}

fn failed(stdout: String, stderr: impl Into<String>) -> SimAnswer {
    SimAnswer {
        status: 1,
        stdout,
        stderr: stderr.into(),
    }
}

impl SimTool for Pingpong {
    fn program(&self) -> &'static str {
        super::parse::TOOL.name
    }

    fn read(&self, args: &[String]) -> Result<SimArgs, String> {
        let mut a = SimArgs {
            device: None,
            gid: None,
            port: DEFAULT_PORT,
            server: None,
            size: 4096,
            iters: 1000,
            stream: None,
        };
        let usage = |w: &str| {
            format!(
                "ibv_rc_pingpong: invalid option -- '{w}'\nUsage:\n  ibv_rc_pingpong            start a server and wait for connection\n  ibv_rc_pingpong <host>     connect to server at <host>\n"
            )
        };
        let mut words = args.iter();
        while let Some(w) = words.next() {
            let mut value = || words.next().cloned().ok_or_else(|| usage(w));
            match w.as_str() {
                "-d" => a.device = Some(value()?),
                "-g" => a.gid = Some(value()?.parse().map_err(|_| usage(w))?),
                "-p" => a.port = value()?.parse().map_err(|_| usage(w))?,
                "-s" => a.size = value()?.parse().map_err(|_| usage(w))?,
                "-n" => a.iters = value()?.parse().map_err(|_| usage(w))?,
                "-i" | "-m" | "-r" | "-l" => {
                    value()?;
                }
                "-e" | "-o" | "-P" | "-j" | "-c" => {}
                x if x.starts_with('-') => return Err(usage(x.trim_start_matches('-'))),
                host => a.server = Some(host.to_string()),
            }
        }
        Ok(a)
    }

    fn answer(&self, args: &SimArgs, outcome: &SimOutcome) -> SimAnswer {
        let client = args.server.is_some();
        // a server's log already holds its local address, printed while it waited
        let both = |l: &SimEnd, r: &SimEnd| {
            let mut s = if client {
                address("local", l)
            } else {
                String::new()
            };
            s.push_str(&address("remote", r));
            s
        };
        match outcome {
            SimOutcome::Waiting { local } => SimAnswer {
                stdout: address("local", local),
                ..SimAnswer::default()
            },
            SimOutcome::NoDevice { asked: Some(d) } => {
                failed(String::new(), format!("IB device {d} not found\n"))
            }
            SimOutcome::NoDevice { asked: None } => failed(String::new(), "No IB devices found\n"),
            SimOutcome::PortDown => failed(String::new(), "Couldn't get port info\n"),
            SimOutcome::Refused { server, port } => failed(
                String::new(),
                format!("Couldn't connect to {server}:{port}\n"),
            ),
            SimOutcome::NoGid { local, remote } => {
                failed(both(local, remote), "Failed to modify QP to RTR\n")
            }
            SimOutcome::NoWire { local, remote } => failed(
                both(local, remote),
                "Failed status transport retry counter exceeded (12) for wr_id 2\nparse WC failed 1\n",
            ),
            SimOutcome::Done {
                local,
                remote,
                usec_per_iter,
            } => {
                let mut out = both(local, remote);
                let usec = usec_per_iter * f64::from(args.iters);
                let bytes = args.size * u64::from(args.iters) * 2;
                let _ = writeln!(
                    out,
                    "{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec",
                    usec / 1e6,
                    bytes as f64 * 8.0 / usec
                );
                let _ = writeln!(
                    out,
                    "{} iters in {:.2} seconds = {:.2} usec/iter",
                    args.iters,
                    usec / 1e6,
                    usec_per_iter
                );
                SimAnswer {
                    stdout: out,
                    ..SimAnswer::default()
                }
            }
            // a TCP outcome: never one of an RDMA tool (its arguments have no stream)
            SimOutcome::Listening | SimOutcome::Streamed { .. } => {
                failed(String::new(), "internal: not an RDMA exchange\n")
            }
        }
    }
}
