//! A kind's own tool on the simulated fabric (see [`crate::kinds::simulated`]): the fabric's
//! half of the exchange is here, the same for every kind (the device, the listener, the wire,
//! the GIDs, the path's latency, a TCP stream's route and rate, the counters); the tool's words
//! are the kind's.

use std::net::Ipv4Addr;

use super::noise::Rng;
use super::world::{Dev, World};
use super::{
    Server, ServerKind, SimTransport, State, THROTTLE_GBPS, bump, listener, one_way_us, serve,
};
use crate::exec::Output;
use crate::kinds::simulated::{SimArgs, SimEnd, SimOutcome, SimStream, SimTool, simulated};
use crate::plan::NodeId;

/// Bits per microsecond the message itself takes on the wire (100 Gb/s).
const WIRE_BITS_PER_US: f64 = 100e3;

/// One TCP stream on GB10 ARM cores sits near 12 Gb/s whatever the link, Gb/s.
const TCP_STREAM_GBPS: f64 = 11.8;
/// A healthy link's rate for a TCP stream's cap, Gb/s (a stream gets at most 90 % of it).
const LINK_GBPS: f64 = 100.0;

/// The device `args` asks for on `node`, or the outcome of its absence or a down port.
fn device<'w>(w: &'w World, node: NodeId, args: &SimArgs) -> Result<&'w Dev, SimOutcome> {
    let any = w.devs_of(node).next().is_some();
    let dev = match &args.device {
        Some(d) => w.dev(node, d),
        None => w.devs_of(node).next(),
    };
    let Some(d) = dev else {
        return Err(SimOutcome::NoDevice {
            asked: args.device.clone().filter(|_| any),
        });
    };
    if !d.active() {
        return Err(SimOutcome::PortDown);
    }
    Ok(d)
}

/// A queue pair address on `d` at GID index `gid` (all zero without a RoCE v2 GID there).
fn end(rng: &mut Rng, d: &Dev, gid: u32) -> SimEnd {
    SimEnd {
        lid: 0,
        qpn: rng.range(0x100, 0x1ffff) as u32,
        psn: rng.range(0, 0xffffff) as u32,
        gid: if d.roce_v2(gid) {
            d.gid_bytes()
        } else {
            [0u8; 16]
        },
    }
}

/// The seed of a server's address: its node and job, so its client finds the same one.
fn server_rng(w: &World, node: NodeId, job: &str) -> Rng {
    Rng::keyed(w.seed, &["kind-server", w.name(node), job])
}

fn printed(tool: &dyn SimTool, args: &SimArgs, outcome: &SimOutcome) -> String {
    let a = tool.answer(args, outcome);
    a.stdout + &a.stderr
}

/// A server of a kind's tool: its kind, port, log and whether it died.
pub(super) fn server(
    w: &World,
    node: NodeId,
    job: &str,
    program: &str,
    args: &[String],
) -> (Option<ServerKind>, u16, String, bool) {
    let Some(tool) = simulated(program) else {
        return (None, 0, format!("sh: 1: {program}: not found\n"), true);
    };
    let a = match tool.read(args) {
        Ok(a) => a,
        Err(e) => return (None, 0, e, true),
    };
    if a.stream.is_some() {
        // a TCP server needs no device: it listens on its port
        let log = printed(tool, &a, &SimOutcome::Listening);
        let port = a.port;
        let kind = ServerKind::Kind(tool.program(), a);
        return (Some(kind), port, log, w.server_dies(node));
    }
    match device(w, node, &a) {
        Err(o) => (None, a.port, printed(tool, &a, &o), true),
        Ok(d) => {
            let local = end(
                &mut server_rng(w, node, job),
                d,
                a.gid.unwrap_or(d.gid_index),
            );
            let log = printed(tool, &a, &SimOutcome::Waiting { local });
            let kind = ServerKind::Kind(tool.program(), a.clone());
            (Some(kind), a.port, log, w.server_dies(node))
        }
    }
}

/// What happened between two ends that reached each other.
fn exchange(
    w: &World,
    rng: &mut Rng,
    c: (&Dev, SimEnd, u32),
    s: (&Dev, SimEnd, u32),
    a: &SimArgs,
) -> SimOutcome {
    let (cdev, local, cgid) = c;
    let (sdev, remote, sgid) = s;
    if !cdev.roce_v2(cgid) || !sdev.roce_v2(sgid) {
        return SimOutcome::NoGid { local, remote };
    }
    // a loopback (both ends on one device) runs inside its NIC: no wire needed
    let looped = cdev.node == sdev.node && cdev.name == sdev.name;
    if !looped && !w.linked(cdev, sdev) {
        return SimOutcome::NoWire { local, remote };
    }
    let round_trip = 2.0 * one_way_us(w, cdev, sdev) + 2.0 * a.size as f64 * 8.0 / WIRE_BITS_PER_US;
    SimOutcome::Done {
        local,
        remote,
        usec_per_iter: rng.jitter(round_trip, 0.02),
    }
}

/// The same outcome seen from the other end.
fn mirrored(o: &SimOutcome) -> SimOutcome {
    match o.clone() {
        SimOutcome::NoGid { local, remote } => SimOutcome::NoGid {
            local: remote,
            remote: local,
        },
        SimOutcome::NoWire { local, remote } => SimOutcome::NoWire {
            local: remote,
            remote: local,
        },
        SimOutcome::Done {
            local,
            remote,
            usec_per_iter,
        } => SimOutcome::Done {
            local: remote,
            remote: local,
            usec_per_iter,
        },
        other => other,
    }
}

fn output(tool: &dyn SimTool, args: &SimArgs, outcome: &SimOutcome) -> Output {
    let a = tool.answer(args, outcome);
    Output {
        status: a.status,
        stdout: a.stdout,
        stderr: a.stderr,
        ..Output::default()
    }
}

impl SimTransport {
    /// A client of a kind's tool: it reaches its server's listener, then the two ends exchange
    /// over the fabric; the server's log gains its side.
    pub(super) fn kind_client(&self, node: NodeId, tool: &dyn SimTool, args: &[String]) -> Output {
        let w = &self.world;
        let a = match tool.read(args) {
            Ok(a) => a,
            Err(e) => {
                return Output {
                    status: 1,
                    stdout: String::new(),
                    stderr: e,
                    ..Output::default()
                };
            }
        };
        if let Some(stream) = a.stream {
            return self.stream_client(node, tool, &a, stream, args);
        }
        let cdev = match device(w, node, &a) {
            Ok(d) => d.clone(),
            Err(o) => return output(tool, &a, &o),
        };
        let mut rng = Rng::keyed(w.seed, &["kind-client", w.name(node), &args.join(" ")]);
        let cgid = a.gid.unwrap_or(cdev.gid_index);
        let local = end(&mut rng, &cdev, cgid);
        let Some(server_ip) = a.server.clone() else {
            // a server in the foreground waits for a client that never comes
            let mut o = output(tool, &a, &SimOutcome::Waiting { local });
            o.status = 124;
            return o;
        };
        let ip: Option<Ipv4Addr> = server_ip.parse().ok();
        let mut st = self.lock();
        let found = tool_listener(w, &st, node, ip, a.port, tool.program());
        let Some((server, sa)) = found.and_then(|s| match &s.kind {
            Some(ServerKind::Kind(_, sa)) => Some((s.clone(), sa.clone())),
            _ => None,
        }) else {
            return refused(tool, &a, server_ip);
        };
        serve(&mut st, &server);
        let sdev = device(w, server.node, &sa)
            .ok()
            .cloned()
            .unwrap_or_else(|| cdev.clone());
        let sgid = sa.gid.unwrap_or(sdev.gid_index);
        let remote = end(&mut server_rng(w, server.node, &server.job), &sdev, sgid);
        let outcome = exchange(w, &mut rng, (&cdev, local, cgid), (&sdev, remote, sgid), &a);
        let log = printed(tool, &sa, &mirrored(&outcome));
        st.files
            .entry((server.node, format!("{}.log", server.job)))
            .or_default()
            .push_str(&log);
        if matches!(outcome, SimOutcome::Done { .. }) {
            let bytes = a.size * u64::from(a.iters);
            bump(&mut st, node, &cdev.name, bytes, bytes, cdev.ib_mtu(), 0);
            bump(
                &mut st,
                server.node,
                &sdev.name,
                bytes,
                bytes,
                sdev.ib_mtu(),
                0,
            );
        }
        output(tool, &a, &outcome)
    }

    /// A client of a TCP tool: routed to its server's address, to a live listener of the same
    /// tool on its port, it streams at what one host's TCP gets over the route's device; the
    /// server's log gains the connection, the client's device its bytes.
    fn stream_client(
        &self,
        node: NodeId,
        tool: &dyn SimTool,
        a: &SimArgs,
        stream: SimStream,
        args: &[String],
    ) -> Output {
        let w = &self.world;
        let Some(server_ip) = a.server.clone() else {
            // a server in the foreground waits for a client that never comes
            let mut o = output(tool, a, &SimOutcome::Listening);
            o.status = 124;
            return o;
        };
        let ip: Option<Ipv4Addr> = server_ip.parse().ok();
        let mut st = self.lock();
        let src = ip.and_then(|ip| w.route(node, ip)).cloned();
        let program = tool.program();
        let found = tool_listener(w, &st, node, ip, a.port, program);
        let (Some(server), Some(src)) = (found, src) else {
            return refused(tool, a, server_ip);
        };
        serve(&mut st, &server);
        let mut rng = Rng::keyed(w.seed, &[program, w.name(node), &args.join(" ")]);
        let link = if src.throttled {
            THROTTLE_GBPS
        } else {
            LINK_GBPS
        };
        let streams = f64::from(stream.streams);
        let gbps = rng.jitter((TCP_STREAM_GBPS * streams).min(link * 0.9), 0.02);
        let bytes = (gbps * 1e9 / 8.0 * stream.seconds) as u64;
        let outcome = SimOutcome::Streamed {
            client: src.address.map(|(a, _)| a.to_string()).unwrap_or_default(),
            server: server_ip,
            gbps,
            bytes,
        };
        if let Some(ServerKind::Kind(_, sa)) = &server.kind {
            let log = printed(tool, sa, &outcome);
            st.files
                .entry((server.node, format!("{}.log", server.job)))
                .or_default()
                .push_str(&log);
        }
        bump(
            &mut st,
            node,
            &src.name,
            bytes,
            bytes / 100,
            src.ib_mtu(),
            0,
        );
        output(tool, a, &outcome)
    }
}

/// The live listener of the kind tool `program` that a client on `node` reaches at
/// `ip`:`port`.
fn tool_listener(
    w: &World,
    st: &State,
    node: NodeId,
    ip: Option<Ipv4Addr>,
    port: u16,
    program: &str,
) -> Option<Server> {
    listener(
        w,
        st,
        node,
        ip,
        port,
        |k| matches!(k, ServerKind::Kind(p, _) if *p == program),
    )
}

/// What a client of `tool` prints when nothing listens at `server`:`a.port`.
fn refused(tool: &dyn SimTool, a: &SimArgs, server: String) -> Output {
    let outcome = SimOutcome::Refused {
        server,
        port: a.port,
    };
    output(tool, a, &outcome)
}
