//! mpirun + nccl-tests on the simulated fabric: reads the launch line (app contexts, `-H`
//! hosts, `-x NCCL_...`), decides per rank what NCCL would find (the devices `NCCL_IB_HCA`
//! names that are up and carry the GID index; none under `nccl-socket`), builds the ring and
//! its bandwidth from the wires it crosses, and prints the current nccl-tests output with the
//! NCCL INFO lines (FORMATS.md sections 2 and 3).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use super::noise::Rng;
use super::shell;
use super::world::{Dev, World};
use crate::capacity::nccl as nccl_model;
use crate::exec::Output;
use crate::plan::{Collective, IslId, NodeId, SwitchId};

/// NCCL's usable rate of one RoCE half (Gb/s): the capacity model's share of a GB10 half.
const LANE_GBPS: f64 = nccl_model::HALF_SHARE * crate::capacity::DEFAULT_HALF_GBPS;
/// A firmware-throttled half.
const THROTTLED_GBPS: f64 = 11.4;
/// Traffic forced through an RSTP-blocked ISL.
const BLOCKED_GBPS: f64 = 4.5;
/// NET/Socket over the fabric netdevs, GB/s of bus bandwidth at large sizes.
const SOCKET_GBS: f64 = 2.2;

#[derive(Debug, Default)]
struct App {
    np: Option<usize>,
    hosts: Vec<String>,
    env: BTreeMap<String, String>,
    binary: Option<String>,
    args: Vec<String>,
}

/// Bytes each device moved: (node, device) -> (sent, received).
pub(crate) type Traffic = HashMap<(NodeId, String), (u64, u64)>;

struct Rank {
    node: NodeId,
    env: BTreeMap<String, String>,
    ib: Vec<usize>,
    pid: u64,
}

fn list_match(spec: &str, name: &str) -> bool {
    if spec.is_empty() {
        return true;
    }
    let (exclude, spec) = match spec.strip_prefix('^') {
        Some(s) => (true, s),
        None => (false, spec),
    };
    let (exact, spec) = match spec.strip_prefix('=') {
        Some(s) => (true, s),
        None => (false, spec),
    };
    let hit = spec.split(',').any(|item| {
        let item = item.split(':').next().unwrap_or("").trim();
        !item.is_empty()
            && if exact {
                name == item
            } else {
                name.starts_with(item)
            }
    });
    hit != exclude
}

/// `%g` as C prints it (6 significant digits, no trailing zeros).
pub(crate) fn fmt_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            format!("{v}")
        };
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{v:.5e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// nccl-tests' width-limited number formatter (2025-10+).
fn float_str(value: f64, width: usize) -> String {
    let mut power = 0usize;
    let mut val = 1.0;
    while value >= val {
        power += 1;
        val *= 10.0;
    }
    if power + 2 < width {
        format!("{value:>width$.2}")
    } else if power + 1 < width {
        format!("{value:>width$.1}")
    } else if power < width + 1 {
        format!("{value:>width$.0}")
    } else {
        format!("{value:>width$.1e}")
    }
}

fn orte_box() -> String {
    let d = "-".repeat(74);
    format!(
        "{d}\nORTE was unable to reliably start one or more daemons.\nThis usually is caused by:\n\n* not finding the required libraries and/or binaries on\n  one or more nodes. Please check your PATH and LD_LIBRARY_PATH\n  settings, or configure OMPI with --enable-orterun-prefix-by-default\n\n* lack of authority to execute on one or more specified nodes.\n\n* the inability to write startup files into /tmp (--tmpdir/orte_tmpdir_base).\n\n* compilation of the orted with dynamic libraries when static are required\n\n* an inability to create a connection back to mpirun due to a\n  lack of common network interfaces and/or no route found between\n  them. Please check network connectivity (including firewalls\n  and network routing requirements).\n{d}\n"
    )
}

/// Run an mpirun launch line on the simulated fabric.
pub(crate) fn run(
    world: &World,
    launcher: NodeId,
    args: &[String],
    exported: &BTreeMap<String, String>,
) -> (Output, Traffic) {
    let mut traffic = Traffic::new();
    // app contexts
    let mut apps: Vec<App> = vec![App::default()];
    let mut i = 0;
    while i < args.len() {
        let w = args[i].as_str();
        let app = apps.last_mut().expect("one app at least");
        if app.binary.is_some() {
            if w == ":" {
                apps.push(App::default());
            } else {
                app.args.push(w.to_string());
            }
            i += 1;
            continue;
        }
        match w {
            ":" => apps.push(App::default()),
            "-np" | "-n" | "--np" | "-c" => {
                i += 1;
                app.np = args.get(i).and_then(|v| v.parse().ok());
            }
            "-H" | "--host" | "-host" => {
                i += 1;
                if let Some(h) = args.get(i) {
                    app.hosts.extend(
                        h.split(',')
                            .filter(|x| !x.is_empty())
                            .map(|x| x.split(':').next().unwrap_or(x).to_string()),
                    );
                }
            }
            "-x" => {
                i += 1;
                if let Some(kv) = args.get(i) {
                    match kv.split_once('=') {
                        Some((k, v)) => {
                            app.env.insert(k.to_string(), v.to_string());
                        }
                        None => {
                            if let Some(v) = exported.get(kv) {
                                app.env.insert(kv.clone(), v.clone());
                            }
                        }
                    }
                }
            }
            "--mca" | "-mca" => i += 2,
            "--map-by" | "--bind-to" | "--rank-by" | "--hostfile" | "-hostfile" | "--prefix" => {
                i += 1
            }
            _ if w.starts_with('-') => {}
            _ => app.binary = Some(w.to_string()),
        }
        i += 1;
    }
    let host_name = |n: NodeId| world.name(n).to_string();
    let mut rng = Rng::keyed(
        world.seed,
        &["mpirun", world.name(launcher), &args.join(" ")],
    );
    // ranks
    let mut ranks: Vec<Rank> = Vec::new();
    for app in &apps {
        let np = app.np.unwrap_or(app.hosts.len().max(1));
        for k in 0..np {
            let Some(h) = app.hosts.get(k % app.hosts.len().max(1)) else {
                return (
                    Output {
                        status: 1,
                        stdout: String::new(),
                        stderr: orte_box(),
                    },
                    traffic,
                );
            };
            let node = h
                .parse::<Ipv4Addr>()
                .ok()
                .and_then(|ip| world.dev_by_ip(ip).map(|d| d.node))
                .or_else(|| world.node_by_name(h));
            let Some(node) = node.filter(|n| !world.dead(*n)) else {
                return (
                    Output {
                        status: 1,
                        stdout: String::new(),
                        stderr: orte_box(),
                    },
                    traffic,
                );
            };
            let mut env = app.env.clone();
            if node == launcher {
                for (k, v) in exported {
                    env.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            let hca = env.get("NCCL_IB_HCA").cloned().unwrap_or_default();
            let gid: Option<u32> = env.get("NCCL_IB_GID_INDEX").and_then(|g| g.parse().ok());
            let ib: Vec<usize> = if world.nccl_socket(node) {
                Vec::new()
            } else {
                world
                    .devs
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| {
                        d.node == node
                            && list_match(&hca, &d.name)
                            && d.active()
                            && gid.is_none_or(|g| d.roce_v2(g))
                    })
                    .map(|(i, _)| i)
                    .collect()
            };
            ranks.push(Rank {
                node,
                env,
                ib,
                pid: rng.range(2000, 400000),
            });
        }
    }
    let n = ranks.len();
    if apps
        .first()
        .and_then(|a| a.binary.as_deref())
        .is_some_and(|b| b.rsplit('/').next() == Some("hostname"))
    {
        // the launch check: every rank prints its host name
        let names: String = ranks
            .iter()
            .map(|r| format!("{}\n", host_name(r.node)))
            .collect();
        return (Output::ok(names), traffic);
    }
    let binary = apps
        .first()
        .and_then(|a| a.binary.clone())
        .unwrap_or_default();
    let prog = binary.rsplit('/').next().unwrap_or(&binary).to_string();
    let targs = apps.first().map(|a| a.args.clone()).unwrap_or_default();
    // nccl-tests arguments
    let mut opt: HashMap<&str, String> = HashMap::new();
    let mut k = 0;
    while k < targs.len() {
        let key = match targs[k].as_str() {
            "-b" | "--minbytes" => "b",
            "-e" | "--maxbytes" => "e",
            "-f" | "--stepfactor" => "f",
            "-i" | "--stepbytes" => "i",
            "-g" | "--ngpus" => "g",
            "-t" | "--nthreads" => "t",
            "-w" | "--warmup_iters" => "w",
            "-n" | "--iters" => "n",
            "-c" | "--check" => "c",
            "-d" | "--datatype" => "d",
            "-o" | "--op" => "o",
            "-m" | "--agg_iters" => "m",
            _ => "",
        };
        if let Some(v) = targs.get(k + 1)
            && !key.is_empty()
        {
            opt.insert(key, v.clone());
            k += 1;
        }
        k += 1;
    }
    let get = |key: &str, d: &str| opt.get(key).cloned().unwrap_or_else(|| d.to_string());
    let min_b = shell::size(&get("b", "32M")).unwrap_or(32 << 20);
    let max_b = shell::size(&get("e", "32M")).unwrap_or(32 << 20);
    let step_f: u64 = get("f", "1").parse().unwrap_or(1);
    let step_b = shell::size(&get("i", "1M")).unwrap_or(1 << 20);
    let ngpus: u64 = get("g", "1").parse().unwrap_or(1);
    let nthreads: u64 = get("t", "1").parse().unwrap_or(1);
    let warmup: u64 = get("w", "1").parse().unwrap_or(1);
    let iters: u64 = get("n", "20").parse().unwrap_or(20);
    let agg: u64 = get("m", "1").parse().unwrap_or(1);
    let check: u64 = get("c", "1").parse().unwrap_or(1);
    let dtype = get("d", "float");
    let op = get("o", "sum");
    let word: u64 = match dtype.as_str() {
        "int8" | "char" | "uint8" => 1,
        "half" | "float16" | "bfloat16" => 2,
        "int64" | "uint64" | "double" | "float64" => 8,
        _ => 4,
    };
    let coll = prog.trim_end_matches("_perf").to_string();
    if ngpus * nthreads > 1 {
        let h = host_name(ranks[0].node);
        return (
            Output {
                status: 1,
                stdout: String::new(),
                stderr: format!(
                    "Invalid number of GPUs: {} requested but only 1 were found.\nPlease check the number of processes and GPUs per process.\n .. {h} pid {}: Test failure common.cu:1137\n",
                    ngpus * nthreads,
                    ranks[0].pid
                ),
            },
            traffic,
        );
    }
    // the network: IB only if every rank found a device
    let use_ib = ranks.iter().all(|r| !r.ib.is_empty());
    // the ring and its lanes (device pairs on one wire), per hop
    let mut hops: Vec<Vec<(usize, usize, f64)>> = Vec::new();
    if n > 1 {
        let mut isl_load: HashMap<(IslId, SwitchId), Vec<(usize, usize)>> = HashMap::new();
        for r in 0..n {
            let (a, b) = (&ranks[r], &ranks[(r + 1) % n]);
            let mut lanes = Vec::new();
            for &da in &a.ib {
                for &db in &b.ib {
                    let (x, y): (&Dev, &Dev) = (&world.devs[da], &world.devs[db]);
                    if !world.linked(x, y) {
                        continue;
                    }
                    let mut g = LANE_GBPS;
                    if x.throttled || y.throttled {
                        g = THROTTLED_GBPS;
                    }
                    if x.mtu < 9000 || y.mtu < 9000 {
                        g *= 0.8;
                    }
                    for (isl, from) in world.isl_hops(x, y) {
                        if world.isl_blocked(isl) {
                            g = g.min(BLOCKED_GBPS);
                        }
                        isl_load
                            .entry((isl, from))
                            .or_default()
                            .push((r, lanes.len()));
                    }
                    lanes.push((da, db, g));
                }
            }
            hops.push(lanes);
        }
        // an ISL direction carrying more than it can: every lane on it scaled down
        for ((isl, _), users) in isl_load {
            let cap = world.plan.isls[isl.0].capacity_gbps
                * if users.len() >= 2 {
                    world.plan.capacity.efficiency
                } else {
                    1.0
                };
            let sum: f64 = users.iter().map(|(h, l)| hops[*h][*l].2).sum();
            if sum > cap {
                for (h, l) in users {
                    hops[h][l].2 *= cap / sum;
                }
            }
        }
    }
    let broken = use_ib && hops.iter().any(|h| h.is_empty());
    let ring_gbs = if use_ib {
        hops.iter()
            .map(|h| h.iter().map(|l| l.2).sum::<f64>())
            .fold(f64::INFINITY, f64::min)
            / 8.0
    } else {
        SOCKET_GBS
    };
    let ring_gbs = if ring_gbs.is_finite() {
        rng.jitter(ring_gbs, 0.01)
    } else {
        0.0
    };
    // the capacity model's own constants: the simulated fabric answers what the gates expect of a
    // healthy one
    let collective = match coll.as_str() {
        "all_reduce" => Some(Collective::AllReduce),
        "all_gather" => Some(Collective::AllGather),
        "sendrecv" => Some(Collective::Sendrecv),
        _ => None,
    };
    let (factor, t0, eff) = match collective {
        Some(c) => (
            nccl_model::bus_factor(c, n),
            nccl_model::base_latency_us(c, n),
            nccl_model::efficiency(c, n),
        ),
        None => {
            let nf = n as f64;
            ((nf - 1.0) / nf, 18.0 + 3.0 * nf, 1.0)
        }
    };
    let ring_gbs = if use_ib { ring_gbs * eff } else { ring_gbs };
    let t0 = if use_ib { t0 } else { t0 * 2.5 };
    let redop = if matches!(
        coll.as_str(),
        "all_reduce" | "sendrecv" | "reduce" | "reduce_scatter"
    ) {
        op.clone()
    } else {
        "none".to_string()
    };

    // output
    let mut out = String::new();
    let step = if step_f > 1 { step_f } else { step_b };
    let _ = writeln!(
        out,
        "# nccl-tests version 2.19.6 nccl-headers=22907 nccl-library=22907"
    );
    let _ = writeln!(out, "# Collective test starting: {prog}");
    let _ = writeln!(
        out,
        "# nThread {nthreads} nGpus {ngpus} minBytes {min_b} maxBytes {max_b} step: {step}({}) warmup iters: {warmup} iters: {iters} agg iters: {agg} validation: {check} graph: 0 unalign: 0",
        if step_f > 1 { "factor" } else { "bytes" }
    );
    out.push_str("#\n# Using devices\n");
    for (r, rank) in ranks.iter().enumerate() {
        let _ = writeln!(
            out,
            "#  Rank {r:>2} Group {:>2} Pid {:>6} on {:>10} device {:>2} [{:04x}:{:02x}:{:02x}] NVIDIA GB10",
            0,
            rank.pid,
            host_name(rank.node),
            0,
            0x000f,
            0x01,
            0x00
        );
    }
    let comm_id = rng.next_u64();
    for (r, rank) in ranks.iter().enumerate() {
        let host = host_name(rank.node);
        let tid = rank.pid + 7;
        let pre = format!("{host}:{}:{tid} [0] NCCL INFO ", rank.pid);
        let ifspec = rank
            .env
            .get("NCCL_SOCKET_IFNAME")
            .cloned()
            .unwrap_or_default();
        let oob_dev = world
            .devs_of(rank.node)
            .find(|d| d.address.is_some() && list_match(&ifspec, &d.netdev) && d.active())
            .or_else(|| world.devs_of(rank.node).find(|d| d.address.is_some()));
        let oob = match oob_dev.and_then(|d| d.address.map(|(ip, _)| (d.netdev.clone(), ip))) {
            Some((nd, ip)) => format!("{nd}:{ip}<0>"),
            None => format!("enP7s7:{}<0>", world.mgmt_ip(rank.node)),
        };
        let mut info: Vec<String> = vec![
            format!("Bootstrap: Using {oob}"),
            "cudaDriverVersion 13000".into(),
        ];
        if r == 0 {
            info.push("NCCL version 2.29.7+cuda13.0".into());
        }
        for (k, v) in &rank.env {
            if k.starts_with("NCCL_") && !k.starts_with("NCCL_DEBUG") {
                info.push(format!("{k} set by environment to {v}."));
            }
        }
        if rank.ib.is_empty() {
            info.push("NET/IB : No device found.".into());
        } else {
            let list: Vec<String> = rank
                .ib
                .iter()
                .enumerate()
                .map(|(i, d)| format!("[{i}]{}:1/RoCE", world.devs[*d].name))
                .collect();
            info.push(format!("NET/IB : Using {} [RO]; OOB {oob}", list.join(" ")));
        }
        let via = if use_ib {
            info.push("Using network IB".into());
            "NET/IB/0"
        } else {
            info.push(format!("NET/Socket : Using [0]{oob}"));
            info.push("Using network Socket".into());
            "NET/Socket/0"
        };
        let comm = format!("0x{:x}", 0x55_0000_0000u64 + rank.pid * 0x1000);
        info.push(format!(
            "ncclCommInitRank comm {comm} rank {r} nranks {n} cudaDev 0 nvmlDev 0 busId f01000 commId 0x{comm_id:016x} - Init START"
        ));
        if n > 1 {
            let order: String = (0..n).map(|x| format!(" {x:>4}")).collect();
            info.push(format!("Channel 00/02 :{order}"));
            info.push(format!("Channel 01/02 :{order}"));
            let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
            for ch in 0..2 {
                info.push(format!(
                    "Channel {ch:02}/0 : {prev}[0] -> {r}[0] [receive] via {via}"
                ));
            }
            for ch in 0..2 {
                info.push(format!(
                    "Channel {ch:02}/0 : {r}[0] -> {next}[0] [send] via {via}"
                ));
            }
            info.push("Connected all rings, use ring PXN 0 GDR 0".into());
        }
        info.push(format!(
            "comm {comm} rank {r} nranks {n} cudaDev 0 nvmlDev 0 busId f01000 commId 0x{comm_id:016x} - Init COMPLETE"
        ));
        for l in info {
            out.push_str(&pre);
            out.push_str(&l);
            out.push('\n');
        }
    }
    if broken {
        // a hop with no RDMA path: the QPs never connect
        let r = hops.iter().position(|h| h.is_empty()).unwrap_or(0);
        let host = host_name(ranks[r].node);
        let pid = ranks[r].pid;
        let mut err = String::new();
        let _ = writeln!(
            err,
            "\n[2026-01-01 00:00:00] {host}:{pid}:{} [0] transport/net_ib/connect.cc:1000 NCCL WARN NET/IB : ibv_modify_qp failed with 110 Connection timed out, on dev {}:1, curr state INIT, next state RTR, local GID index {}, local GID ::ffff:0.0.0.0, remote GID ::ffff:0.0.0.0\n",
            pid + 7,
            ranks[r]
                .ib
                .first()
                .map(|d| world.devs[*d].name.clone())
                .unwrap_or_default(),
            ranks[r]
                .env
                .get("NCCL_IB_GID_INDEX")
                .cloned()
                .unwrap_or_else(|| "3".into())
        );
        let _ = writeln!(
            err,
            "{host}: Test NCCL failure common.cu:1279 'remote process exited or there was a network error / NET/IB : ibv_modify_qp failed with 110 Connection timed out'"
        );
        let _ = writeln!(err, " .. {host} pid {pid}: Test failure common.cu:1137");
        let d = "-".repeat(74);
        let _ = write!(
            err,
            "{d}\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.\n{d}\n{d}\nmpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[4242,1],{r}]\n  Exit code:    3\n{d}\n"
        );
        return (
            Output {
                status: 3,
                stdout: out,
                stderr: err,
            },
            traffic,
        );
    }
    // the sweep
    let mut sizes = Vec::new();
    let mut s = min_b;
    while s <= max_b && sizes.len() < 64 {
        sizes.push(s);
        if max_b == 0 {
            break;
        }
        s = if step_f > 1 {
            s * step_f
        } else {
            s + step_b.max(1)
        };
    }
    let mut busbws = Vec::new();
    let mut wire_total: f64 = 0.0;
    for (idx, &bytes) in sizes.iter().enumerate() {
        let mut count = bytes / word;
        let mut shown = count * word;
        if coll == "all_gather" {
            count = bytes / word / n.max(1) as u64;
            shown = count * word * n.max(1) as u64;
        }
        let mut line = format!(
            "{shown:>12}  {count:>12}  {dtype:>8}  {redop:>6}  {:>6}",
            -1
        );
        for _half in 0..2 {
            let wire = shown as f64 * factor;
            let t = rng.jitter(t0, 0.03) + wire / (ring_gbs.max(1e-6) * 1e3);
            let algbw = shown as f64 / t / 1e3;
            let busbw = algbw * factor;
            busbws.push(busbw);
            wire_total += wire * (warmup + iters * agg) as f64;
            if check > 0 {
                let _ = write!(
                    line,
                    "  {}  {}  {}  {:>6}",
                    float_str(t, 7),
                    float_str(algbw, 6),
                    float_str(busbw, 6),
                    0
                );
            } else {
                let _ = write!(
                    line,
                    "  {}  {}  {}    N/A",
                    float_str(t, 7),
                    float_str(algbw, 6),
                    float_str(busbw, 6)
                );
            }
        }
        if idx == 0 {
            out.push_str("#\n");
            let _ = writeln!(
                out,
                "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          ",
                "", "", "", "", ""
            );
            let _ = writeln!(
                out,
                "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
                "size",
                "count",
                "type",
                "redop",
                "root",
                "time",
                "algbw",
                "busbw",
                "#wrong",
                "time",
                "algbw",
                "busbw",
                "#wrong"
            );
            let _ = writeln!(
                out,
                "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
                "(B)",
                "(elements)",
                "",
                "",
                "",
                "(us)",
                "(GB/s)",
                "(GB/s)",
                "",
                "(us)",
                "(GB/s)",
                "(GB/s)",
                ""
            );
        }
        out.push_str(&line);
        out.push('\n');
    }
    let avg = if busbws.is_empty() {
        0.0
    } else {
        busbws.iter().sum::<f64>() / busbws.len() as f64
    };
    let _ = writeln!(out, "# {:<20} : 0 OK", "Out of bounds values");
    let _ = writeln!(out, "# {:<20} : {} ", "Avg bus bandwidth", fmt_g(avg));
    let _ = writeln!(out, "#\n# Collective test concluded: {prog}\n\n#");
    if use_ib && n > 1 {
        // every rank sends its share to the next and receives from the previous, split over
        // the lanes of each hop
        let per_rank = wire_total as u64;
        for lanes in &hops {
            let share = per_rank / lanes.len().max(1) as u64;
            for (da, db, _) in lanes {
                let a = &world.devs[*da];
                let b = &world.devs[*db];
                traffic.entry((a.node, a.name.clone())).or_default().0 += share;
                traffic.entry((b.node, b.name.clone())).or_default().1 += share;
            }
        }
    }
    (Output::ok(out), traffic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format() {
        assert_eq!(fmt_g(10.2345678), "10.2346");
        assert_eq!(fmt_g(0.5), "0.5");
        assert_eq!(fmt_g(23.0), "23");
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(0.000012345), "1.2345e-05");
    }

    #[test]
    fn width_limited_numbers() {
        assert_eq!(float_str(28.71, 7), "  28.71");
        assert_eq!(float_str(5663.2, 7), "5663.20");
        assert_eq!(float_str(23.7, 6), " 23.70");
        assert_eq!(float_str(1715.44, 6), "1715.4");
    }

    #[test]
    fn hca_matching() {
        assert!(list_match("rocep1s0f0,roceP2p1s0f0", "roceP2p1s0f0"));
        assert!(!list_match("rocep1s0f0", "roceP2p1s0f0"));
        assert!(list_match("^rocep1s0f0", "roceP2p1s0f0"));
        assert!(list_match("", "x"));
    }
}
