//! mpirun + nccl-tests on the simulated fabric: reads the launch line (app contexts, `-H`
//! hosts, `-x NCCL_...`), decides per rank what NCCL would find (the devices `NCCL_IB_HCA`
//! names that are up and carry the GID index; none under `nccl-socket`), builds the ring and
//! its bandwidth from the wires it crosses, and prints the current nccl-tests output with the
//! NCCL INFO lines (FORMATS.md sections 2 and 3).

mod launch;
mod ring;

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;

use crate::exec::Output;
use crate::plan::NodeId;
use crate::sim::noise::Rng;
use crate::sim::world::World;
use launch::Launch;

pub(crate) use launch::fmt_g;

/// One app context of the launch line (app contexts are separated by `:`).
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

/// One MPI rank: its node, its environment, the devices NCCL finds there (indices into the
/// world's devices; none on sockets) and its pid.
struct Rank {
    node: NodeId,
    env: BTreeMap<String, String>,
    ib: Vec<usize>,
    pid: u64,
}

/// The options of an nccl-tests binary, with nccl-tests' defaults.
struct TestArgs {
    min_bytes: u64,
    max_bytes: u64,
    step_factor: u64,
    step_bytes: u64,
    ngpus: u64,
    nthreads: u64,
    warmup: u64,
    iters: u64,
    agg: u64,
    check: u64,
    dtype: String,
    op: String,
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
    let apps = read_apps(args, exported);
    let mut rng = Rng::keyed(
        world.seed,
        &["mpirun", world.name(launcher), &args.join(" ")],
    );
    let Some(ranks) = place_ranks(world, launcher, &apps, exported, &mut rng) else {
        return (failure(1, String::new(), orte_box()), Traffic::new());
    };
    let first = apps.first();
    let binary = first.and_then(|a| a.binary.clone()).unwrap_or_default();
    let prog = binary.rsplit('/').next().unwrap_or(&binary).to_string();
    if prog == "hostname" {
        // the launch check: every rank prints its host name
        let names: String = ranks
            .iter()
            .map(|r| format!("{}\n", world.name(r.node)))
            .collect();
        return (Output::ok(names), Traffic::new());
    }
    let test = TestArgs::read(first.map(|a| a.args.as_slice()).unwrap_or_default());
    if test.ngpus * test.nthreads > 1 {
        let h = world.name(ranks[0].node);
        let stderr = format!(
            "Invalid number of GPUs: {} requested but only 1 were found.\nPlease check the number of processes and GPUs per process.\n .. {h} pid {}: Test failure common.cu:1137\n",
            test.ngpus * test.nthreads,
            ranks[0].pid
        );
        return (failure(1, String::new(), stderr), Traffic::new());
    }
    Launch::new(world, ranks, test, prog, rng).run()
}

/// A failed launch.
fn failure(status: i32, stdout: String, stderr: String) -> Output {
    Output {
        status,
        stdout,
        stderr,
        ..Output::default()
    }
}

/// The launch line's app contexts: `-np`, `-H`, `-x` (a bare name takes the exported value),
/// the binary and its arguments; mpirun's other options skipped.
fn read_apps(args: &[String], exported: &BTreeMap<String, String>) -> Vec<App> {
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
                    read_export(app, kv, exported);
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
    apps
}

/// `-x NAME=VALUE`, or `-x NAME` passing on the launcher's exported value.
fn read_export(app: &mut App, kv: &str, exported: &BTreeMap<String, String>) {
    match kv.split_once('=') {
        Some((k, v)) => {
            app.env.insert(k.to_string(), v.to_string());
        }
        None => {
            if let Some(v) = exported.get(kv) {
                app.env.insert(kv.to_string(), v.clone());
            }
        }
    }
}

/// The ranks of every app context, in order, each with a pid from `rng`; `None` when a host
/// is unknown or does not answer (the daemons do not start).
fn place_ranks(
    world: &World,
    launcher: NodeId,
    apps: &[App],
    exported: &BTreeMap<String, String>,
    rng: &mut Rng,
) -> Option<Vec<Rank>> {
    let mut ranks: Vec<Rank> = Vec::new();
    for app in apps {
        let np = app.np.unwrap_or(app.hosts.len().max(1));
        for k in 0..np {
            let h = app.hosts.get(k % app.hosts.len().max(1))?;
            let node = h
                .parse::<Ipv4Addr>()
                .ok()
                .and_then(|ip| world.dev_by_ip(ip).map(|d| d.node))
                .or_else(|| world.node_by_name(h));
            let node = node.filter(|n| !world.dead(*n))?;
            let mut env = app.env.clone();
            if node == launcher {
                for (k, v) in exported {
                    env.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            let ib = ib_devices(world, node, &env);
            ranks.push(Rank {
                node,
                env,
                ib,
                pid: rng.range(2000, 400000),
            });
        }
    }
    Some(ranks)
}

/// The devices NCCL finds on `node` with the rank's environment: named by `NCCL_IB_HCA`, up,
/// and carrying RoCE v2 at `NCCL_IB_GID_INDEX`; none when the node is on sockets.
fn ib_devices(world: &World, node: NodeId, env: &BTreeMap<String, String>) -> Vec<usize> {
    if world.nccl_socket(node) {
        return Vec::new();
    }
    let hca = env.get("NCCL_IB_HCA").cloned().unwrap_or_default();
    let gid: Option<u32> = env.get("NCCL_IB_GID_INDEX").and_then(|g| g.parse().ok());
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
}

impl TestArgs {
    /// Read the binary's arguments (short and long forms, each followed by its value).
    fn read(targs: &[String]) -> TestArgs {
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
        let num = |key: &str, d: u64| get(key, &d.to_string()).parse().unwrap_or(d);
        TestArgs {
            min_bytes: crate::text::size::parse(&get("b", "32M")).unwrap_or(32 << 20),
            max_bytes: crate::text::size::parse(&get("e", "32M")).unwrap_or(32 << 20),
            step_factor: num("f", 1),
            step_bytes: crate::text::size::parse(&get("i", "1M")).unwrap_or(1 << 20),
            ngpus: num("g", 1),
            nthreads: num("t", 1),
            warmup: num("w", 1),
            iters: num("n", 20),
            agg: num("m", 1),
            check: num("c", 1),
            dtype: get("d", "float"),
            op: get("o", "sum"),
        }
    }

    /// Bytes per element of the data type.
    fn word(&self) -> u64 {
        match self.dtype.as_str() {
            "int8" | "char" | "uint8" => 1,
            "half" | "float16" | "bfloat16" => 2,
            "int64" | "uint64" | "double" | "float64" => 8,
            _ => 4,
        }
    }

    /// The sizes swept: from the minimum, by the factor (when over 1) or the byte step, up to
    /// the maximum; 64 at most.
    fn sizes(&self) -> Vec<u64> {
        let mut sizes = Vec::new();
        let mut s = self.min_bytes;
        while s <= self.max_bytes && sizes.len() < 64 {
            sizes.push(s);
            if self.max_bytes == 0 {
                break;
            }
            s = if self.step_factor > 1 {
                s * self.step_factor
            } else {
                s + self.step_bytes.max(1)
            };
        }
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hca_matching() {
        assert!(list_match("rocep1s0f0,roceP2p1s0f0", "roceP2p1s0f0"));
        assert!(!list_match("rocep1s0f0", "roceP2p1s0f0"));
        assert!(list_match("^rocep1s0f0", "roceP2p1s0f0"));
        assert!(list_match("", "x"));
    }
}
