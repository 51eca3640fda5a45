//! ping on the simulated fabric: from the node's route (or `-I` netdev) to the destination,
//! with the MTU of both ends and the ISLs between them.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use crate::exec::Output;
use crate::plan::NodeId;
use crate::sim::noise::Rng;
use crate::sim::world::World;
use crate::tools::nccl_tests::sim as nccl;

/// What ping prints from `node` for its arguments: an error when it cannot start; every packet
/// lost when the frame is too large to leave or to arrive unfragmented (`-M do`), or when the
/// destination does not answer; else the replies, slower across a blocked ISL.
pub(crate) fn run(w: &World, node: NodeId, args: &[String]) -> Output {
    let p = PingArgs::read(args);
    let Some(dst_text) = p.dst.as_deref() else {
        return ping_error("ping: usage error: Destination address required\n".into());
    };
    let Ok(dst) = dst_text.parse::<Ipv4Addr>() else {
        return ping_error(format!("ping: {dst_text}: Name or service not known\n"));
    };
    let src = match &p.iface {
        Some(nd) => w.dev_by_netdev(node, nd),
        None => w.route(node, dst),
    };
    let Some(src) = src else {
        return ping_error(format!(
            "ping: SO_BINDTODEVICE {}: No such device\n",
            p.iface.clone().unwrap_or_default()
        ));
    };
    let src_ip = src
        .address
        .map(|(a, _)| a.to_string())
        .unwrap_or_else(|| w.mgmt_ip(node).to_string());
    let (size, count) = (p.size, p.count);
    let total = size + 28;
    let mut out = format!(
        "PING {dst} ({dst}) from {src_ip} {}: {size}({total}) bytes of data.\n",
        src.netdev
    );
    let mut err = String::new();
    if p.df && total > src.mtu {
        for _ in 0..count {
            let _ = writeln!(err, "ping: local error: message too long, mtu={}", src.mtu);
        }
        return ping_lost(out, err, dst, count);
    }
    let peer = w.dev_by_ip(dst);
    let reached = w.reaches(src, dst);
    if !reached {
        for s in 1..=count {
            let _ = writeln!(
                out,
                "From {src_ip} icmp_seq={s} Destination Host Unreachable"
            );
        }
        return ping_lost(out, err, dst, count);
    }
    let peer = peer.expect("reached implies a peer");
    if p.df && total > peer.mtu {
        for s in 1..=count {
            let _ = writeln!(
                out,
                "From {dst} icmp_seq={s} Frag needed and DF set (mtu = {})",
                peer.mtu
            );
        }
        return ping_lost(out, err, dst, count);
    }
    let slow = w.isl_hops(src, peer).iter().any(|(i, _)| w.isl_blocked(*i));
    let mut rng = Rng::keyed(w.seed, &["ping", w.name(node), &args.join(" ")]);
    let mut times = Vec::new();
    for s in 1..=count {
        let t = if slow {
            rng.jitter(2.4, 0.2)
        } else {
            rng.jitter(if size > 1000 { 0.12 } else { 0.06 }, 0.3)
        };
        times.push(t);
        let _ = writeln!(
            out,
            "{} bytes from {dst}: icmp_seq={s} ttl=64 time={t:.3} ms",
            size + 8
        );
    }
    ping_stats(&mut out, dst, count, count, 0);
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let max = times.iter().copied().fold(0.0, f64::max);
    let avg = times.iter().sum::<f64>() / times.len().max(1) as f64;
    let _ = writeln!(
        out,
        "rtt min/avg/max/mdev = {min:.3}/{avg:.3}/{max:.3}/{:.3} ms",
        (max - min) / 2.0
    );
    Output::ok(out)
}

/// The netdev a ping leaves by (its `-I`, else the route's) and its destination: the
/// neighbour entry it leaves behind on `node`.
pub(crate) fn neighbour_asked(
    w: &World,
    node: NodeId,
    args: &[String],
) -> Option<(String, Ipv4Addr)> {
    let p = PingArgs::read(args);
    let dst: Ipv4Addr = p.dst.as_deref()?.parse().ok()?;
    let netdev = match p.iface {
        Some(i) => i,
        None => w.route(node, dst)?.netdev.clone(),
    };
    Some((netdev, dst))
}

/// The options of a ping the runner sends (`-c`, `-I`, `-s`, `-M do`, the destination).
struct PingArgs {
    count: u32,
    iface: Option<String>,
    df: bool,
    size: u32,
    dst: Option<String>,
}

impl PingArgs {
    fn read(args: &[String]) -> PingArgs {
        let mut p = PingArgs {
            count: 3,
            iface: None,
            df: false,
            size: 56,
            dst: None,
        };
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "-c" => p.count = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(3),
                "-I" => p.iface = args.get(i + 1).cloned(),
                "-s" => p.size = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(56),
                "-M" => p.df = args.get(i + 1).map(String::as_str) == Some("do"),
                "-W" | "-i" | "-w" | "-t" => {}
                a if a.starts_with('-') => {
                    i += 1;
                    continue;
                }
                a => {
                    p.dst = Some(a.to_string());
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        p
    }
}

/// A ping that could not start (exit 2).
fn ping_error(stderr: String) -> Output {
    Output {
        status: 2,
        stdout: String::new(),
        stderr,
        ..Output::default()
    }
}

/// A ping whose `count` packets all failed: its statistics, exit 1.
fn ping_lost(mut out: String, err: String, dst: Ipv4Addr, count: u32) -> Output {
    ping_stats(&mut out, dst, count, 0, count);
    Output {
        status: 1,
        stdout: out,
        stderr: err,
        ..Output::default()
    }
}

/// ping's closing statistics: `count` sent, `rx` received, `errors` errors.
fn ping_stats(out: &mut String, dst: Ipv4Addr, count: u32, rx: u32, errors: u32) {
    let loss = if count == 0 {
        0.0
    } else {
        100.0 * f64::from(count - rx) / f64::from(count)
    };
    let _ = writeln!(out, "\n--- {dst} ping statistics ---");
    let _ = write!(out, "{count} packets transmitted, {rx} received");
    if errors > 0 {
        let _ = write!(out, ", +{errors} errors");
    }
    let _ = writeln!(
        out,
        ", {}% packet loss, time {}ms",
        nccl::fmt_g(loss),
        1000 * count.saturating_sub(1) + 3
    );
}
