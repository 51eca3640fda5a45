//! The simulated fabric: a [`Transport`] that answers the runner's real scripts from a model
//! of the plan's fabric instead of hosts.
//!
//! It owns: recognising each script the runner sends (the discovery probe, counter snapshots,
//! readiness polls, clients, pings, mpirun) by reading it like a shell would ([`shell`]), and
//! the servers the runner starts and stops as jobs of their node's session
//! ([`Transport::spawn`]); a simulated sysfs and `ip` view per
//! node ([`world`]); the outputs of perftest, nccl-tests/NCCL and ping in their current
//! formats, produced from the capacity model ([`crate::capacity`]) with seeded noise; the
//! fabric's half of the kinds' own tools ([`kind`]: the tools' words are the kinds', see
//! [`crate::kinds::simulated`]); and the faults of `[sim] faults` / `--sim-fault` ([`fault`]).
//!
//! It must not: touch the network, start processes, sleep, or read the clock for its numbers.
//! Every answer is immediate and deterministic for a seed. It never judges: the runner's own
//! parsers and gates read what it prints, exactly as on hardware.
//!
//! Concurrency: the runner starts every server of a round, polls them, then releases the
//! clients together. The sim registers each server under its job id (which names its round)
//! until it is stopped; a client is matched to its server by address and port, and the
//! flows active together are the live servers of that round. Each gets its max-min fair share
//! from [`crate::capacity::expected`] on that round (faulted flows taken out at their fault's
//! rate first).

mod fault;
mod kind;
pub(crate) mod noise;
mod phy;
mod physical;
mod shell;
pub(crate) mod world;

use crate::tools::nccl_tests::sim as nccl;
use crate::tools::perftest::sim as perftest;
use crate::tools::ping::sim as ping;
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::time::Duration;

pub use fault::Fault;

use crate::capacity;
use crate::discover;
use crate::exec::transport::Spawned;
use crate::exec::{BoxFuture, Output, Transport, TransportError};
use crate::plan::{Node, NodeId, Plan};
use crate::schedule::{Round, Schedule};
use noise::Rng;
use world::{Dev, World};

/// A firmware-throttled half, Gb/s (the field reports' 12.74).
const THROTTLE_GBPS: f64 = 12.7;
/// A flow forced over an RSTP-blocked ISL, Gb/s (the report's 4.47).
const RSTP_GBPS: f64 = 4.5;
/// A flow whose sender's frames exceed the receiver's MTU: drops, retransmits.
const MTU_DROP_GBPS: f64 = 2.9;

#[derive(Debug, Clone)]
enum ServerKind {
    Perf(perftest::Args),
    /// A kind's own tool (see [`crate::kinds::simulated`]), by its program.
    Kind(&'static str, crate::kinds::simulated::SimArgs),
}

#[derive(Debug, Clone)]
struct Server {
    node: NodeId,
    job: String,
    round: Option<usize>,
    port: u16,
    pgid: u32,
    /// What listens; `None` when it exited before it could.
    kind: Option<ServerKind>,
    /// Exited before listening.
    died: bool,
    /// Served its one client.
    done: bool,
}

/// The server a client on `from` reaches at `ip:port`: routed there, and the newest live
/// listener of the right kind on that port (the one a TCP connect would find).
fn listener(
    w: &World,
    st: &State,
    from: NodeId,
    ip: Option<Ipv4Addr>,
    port: u16,
    kind: impl Fn(&ServerKind) -> bool,
) -> Option<Server> {
    // an address of the node's own is delivered locally (a loopback test); another is routed
    let own = |ip: &Ipv4Addr| {
        w.dev_by_ip(*ip)
            .is_some_and(|d| d.node == from && !w.dead(from))
    };
    let ip = ip.filter(|ip| own(ip) || w.route(from, *ip).is_some_and(|r| w.reaches(r, *ip)))?;
    let d = w.dev_by_ip(ip)?;
    st.servers
        .iter()
        .rev()
        .find(|s| {
            s.node == d.node
                && s.port == port
                && !s.died
                && !s.done
                && s.kind.as_ref().is_some_and(&kind)
        })
        .cloned()
}

/// A perftest client and the server it reached (see [`SimTransport::perf_connect`]): their
/// arguments and devices, and what the client printed before the exchange.
struct PerfPair {
    a: perftest::Args,
    cdev: Dev,
    server: Server,
    sa: perftest::Args,
    sdev: Dev,
    pre: String,
}

/// A tool's failure: exit status 1 and what it printed.
fn failed(stdout: String, stderr: String) -> Output {
    Output {
        status: 1,
        stdout,
        stderr,
        ..Output::default()
    }
}

/// Mark `server` as having served its one client.
fn serve(st: &mut State, server: &Server) {
    if let Some(s) = st
        .servers
        .iter_mut()
        .find(|s| s.node == server.node && s.job == server.job)
    {
        s.done = true;
    }
}

#[derive(Default)]
struct State {
    counters: HashMap<(NodeId, String), BTreeMap<String, u64>>,
    /// Started and not yet killed.
    servers: Vec<Server>,
    /// Bumped whenever `servers` changes: the flows of a round are live together until then.
    generation: u64,
    /// (node, `JOB.log`) -> what the server of JOB wrote so far. A round's logs go when a later
    /// round starts its first server (its servers are stopped by then): memory stays bounded by
    /// a round, not by the run.
    files: HashMap<(NodeId, String), String>,
    /// The last session job id given to a server.
    next_job: u64,
    /// The newest round a server started in.
    files_round: Option<usize>,
    /// The round last built (rounds run one after the other).
    round: Option<Round>,
    /// Every live flow's rate in one round with the servers of one generation: the capacity
    /// model runs once per round, not once per client.
    rates: Option<Rates>,
    /// The neighbour entries pings left, per node: (netdev, destination).
    neighbours: HashMap<NodeId, Vec<(String, Ipv4Addr)>>,
    /// The simulated seconds since each node was first probed (discovery): every later read of
    /// its probe or counters is one more. `flap`, `phy-errors` and `congestion` show after
    /// discovery, their counts at their rates over these seconds (never the wall clock: the same
    /// run counts the same).
    probed: HashMap<NodeId, u64>,
    /// How often a flapped device's counters were read around jobs (its flap shows at the
    /// second reading).
    flap_reads: HashMap<(NodeId, String), u32>,
}

/// The rates of a round's live flows (rate, packet_seq_err growth), per job id.
struct Rates {
    round: usize,
    generation: u64,
    of_job: HashMap<String, (f64, u64)>,
}

/// The simulated fabric transport.
pub struct SimTransport {
    world: World,
    schedule: Schedule,
    state: Mutex<State>,
}

impl SimTransport {
    /// A simulated fabric for `plan`, with the plan's `[sim] faults` plus `extra` faults
    /// (`KIND:TARGET`). An unreadable fault is an error.
    pub fn new(plan: &Plan, extra: &[String]) -> Result<SimTransport, String> {
        let mut faults = Vec::new();
        for f in plan.sim.faults.iter().chain(extra) {
            faults.push(fault::parse(plan, f)?);
        }
        let world = World::new(plan.clone(), faults);
        let state = State {
            counters: world.initial_counters(),
            ..State::default()
        };
        Ok(SimTransport {
            schedule: crate::kinds::schedule(plan),
            world,
            state: Mutex::new(state),
        })
    }

    /// The faults in effect.
    pub fn faults(&self) -> &[Fault] {
        &self.world.faults
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn answer(&self, node: NodeId, script: &str) -> Result<Output, TransportError> {
        let w = &self.world;
        if w.dead(node) {
            return Err(TransportError::Unreachable {
                host: w.name(node).to_string(),
                reason: "simulated: no route to host".into(),
            });
        }
        if script == discover::PROBE_SCRIPT
            || (script.contains("@host") && script.contains("/sys/class/infiniband"))
        {
            let mut st = self.lock();
            let lldp = physical::lldp_json(w, node);
            let later = st.probed.get_mut(&node).map(|t| {
                *t += 1;
                *t as f64
            });
            st.probed.entry(node).or_insert(0);
            return Ok(Output::ok(w.probe(node, &st.counters, &lldp, later)));
        }
        if script.contains("hw_counters") && script.contains("@dev") {
            let devs: Vec<String> = shell::commands(script)
                .into_iter()
                .filter(|c| c.first().map(String::as_str) == Some("echo"))
                .filter(|c| c.get(1).map(String::as_str) == Some("@dev"))
                .filter_map(|c| c.get(2).cloned())
                .collect();
            let mut st = self.lock();
            phy::faults_show(w, &mut st, node, &devs);
            return Ok(Output::ok(w.counters_dump(node, &devs, &st.counters)));
        }
        if script.contains("@machine-id") {
            // `fabricplan init`'s evidence: machine id, neighbours after the all-nodes ping
            return Ok(Output::ok(physical::init_evidence(w, node)));
        }
        if script.trim_end().ends_with("echo setup-ok") {
            // the setup stage: the simulated boxes come with the tooling installed
            return Ok(Output::ok("setup-ok\n"));
        }
        if script.contains("/proc/net/tcp") {
            return Ok(self.ready(node, script));
        }
        if let Some(inv) = shell::invocation(script) {
            if let Some(tool) = crate::kinds::simulated::simulated(&inv.tool) {
                return Ok(self.kind_client(node, tool, &inv.args));
            }
            return Ok(match inv.tool.as_str() {
                t if perftest::is_perftest(t) => self.perf_client(node, &inv.tool, &inv.args),
                "mpirun" => {
                    let (out, traffic) = nccl::run(w, node, &inv.args, &inv.env);
                    let mut st = self.lock();
                    for ((n, d), (tx, rx)) in traffic {
                        let mtu = w.dev(n, &d).map(Dev::ib_mtu).unwrap_or(4096);
                        bump(&mut st, n, &d, tx, rx, mtu, 0);
                    }
                    out
                }
                "ping" => {
                    if let Some(asked) = ping::neighbour_asked(w, node, &inv.args) {
                        let mut st = self.lock();
                        let list = st.neighbours.entry(node).or_default();
                        if !list.contains(&asked) {
                            list.push(asked);
                        }
                    }
                    ping::run(w, node, &inv.args)
                }
                "ip" if inv.args.iter().any(|a| a == "neigh") => {
                    let st = self.lock();
                    let asked = st.neighbours.get(&node).cloned().unwrap_or_default();
                    Output::ok(format!("{}\n", physical::neigh_json(w, node, &asked)))
                }
                other => Output {
                    status: 127,
                    stdout: String::new(),
                    stderr: format!("sh: 1: {other}: not found (not simulated)\n"),
                    ..Output::default()
                },
            });
        }
        Ok(Output {
            status: 127,
            stdout: String::new(),
            stderr: "fabricplan sim: no model for this command\n".into(),
            ..Output::default()
        })
    }

    /// Round `index` of the schedule, built once while it runs.
    fn round<'s>(&self, st: &'s mut State, index: usize) -> Option<&'s Round> {
        if st.round.as_ref().is_none_or(|r| r.index != index) {
            st.round = self
                .schedule
                .round(&self.world.plan, &self.world.fabric, index);
        }
        st.round.as_ref().filter(|r| r.index == index)
    }

    /// A server started as a job of `node`'s session: registered under `job` until stopped.
    fn start_server(&self, node: NodeId, job: &str, inner: &str) -> Spawned {
        let w = &self.world;
        let round = round_of(job);
        let mut rng = Rng::keyed(w.seed, &["pgid", w.name(node), job]);
        let pgid = rng.range(10_000, 4_000_000) as u32;
        let mut st = self.lock();
        st.next_job += 1;
        let spawned = Spawned {
            id: st.next_job,
            pgid,
            started_unix_ms: None,
        };
        st.generation += 1;
        if let Some(r) = round
            && st.files_round.is_none_or(|f| f < r)
        {
            st.files
                .retain(|(_, name), _| round_of(name).is_none_or(|x| x >= r));
            st.files_round = Some(r);
        }
        st.files.remove(&(node, format!("{job}.log")));
        let Some(inv) = shell::invocation(inner) else {
            st.files.insert(
                (node, format!("{job}.log")),
                "sh: 1: not found (not simulated)\n".into(),
            );
            return spawned;
        };
        let (kind, port, log, died) = match inv.tool.as_str() {
            t if perftest::is_perftest(t) => match perftest::parse(&inv.tool, &inv.args) {
                Err(e) => (None, 0, e, true),
                Ok(a) => {
                    let dev = match &a.dev {
                        Some(d) => w.dev(node, d),
                        None => w.devs_of(node).next(),
                    };
                    match perftest::check_device(&a, dev, w.devs_of(node).next().is_some()) {
                        Err(e) => (None, a.port, e, true),
                        Ok(_) => {
                            let died = w.server_dies(node);
                            let port = a.port;
                            (
                                Some(ServerKind::Perf(a)),
                                port,
                                perftest::waiting_box(),
                                died,
                            )
                        }
                    }
                }
            },
            t if crate::kinds::simulated::simulated(t).is_some() => {
                kind::server(w, node, job, &inv.tool, &inv.args)
            }
            other => (None, 0, format!("sh: 1: {other}: not found\n"), true),
        };
        st.files.insert((node, format!("{job}.log")), log);
        st.servers.retain(|s| !(s.node == node && s.job == job));
        st.servers.push(Server {
            node,
            job: job.to_string(),
            round,
            port,
            pgid,
            kind,
            died,
            done: false,
        });
        spawned
    }

    /// Stop the server `job` names: what it wrote, ended by the stop's SIGTERM (or by itself,
    /// when it exited before listening).
    fn stop_server(&self, node: NodeId, job: &Spawned) -> Output {
        let mut st = self.lock();
        let Some(at) = st
            .servers
            .iter()
            .position(|s| s.node == node && s.pgid == job.pgid)
        else {
            return Output {
                status: 143,
                ..Output::default()
            };
        };
        let server = st.servers.remove(at);
        st.generation += 1;
        let log = st
            .files
            .remove(&(node, format!("{}.log", server.job)))
            .unwrap_or_default();
        Output {
            status: if server.died { 1 } else { 143 },
            stdout: log,
            ..Output::default()
        }
    }

    fn ready(&self, node: NodeId, script: &str) -> Output {
        let Some(pgid) = shell::ready_pgid(script) else {
            return Output {
                status: 5,
                ..Output::default()
            };
        };
        let st = self.lock();
        match st.servers.iter().find(|s| s.node == node && s.pgid == pgid) {
            Some(s) if s.died => Output {
                status: 3,
                ..Output::default()
            },
            Some(_) => Output::ok(""),
            // nothing ever listened: the poll gives up after its limit (answered at once)
            None => Output {
                status: 4,
                ..Output::default()
            },
        }
    }

    /// The rate of the flow served by `server`, from the capacity model on the flows of its
    /// round that are live now, faults applied. Also the packet_seq_err growth it causes.
    fn flow_rate(&self, st: &mut State, server: &Server, cdev: &Dev, sdev: &Dev) -> (f64, u64) {
        let w = &self.world;
        let plan = &w.plan;
        let mut rng = Rng::keyed(w.seed, &["seq", &server.job, w.name(server.node)]);
        if let Some(index) = server.round {
            let fresh = st
                .rates
                .as_ref()
                .is_some_and(|r| r.round == index && r.generation == st.generation);
            if !fresh {
                st.rates = self.round_rates(st, index);
            }
            if let Some(r) = st.rates.as_ref().and_then(|r| r.of_job.get(&server.job)) {
                return *r;
            }
        }
        // a flow no planned job accounts for: alone on its wire
        let half = plan
            .profile_of(cdev.node)
            .half_rate_gbps
            .unwrap_or(capacity::DEFAULT_HALF_GBPS);
        let switched = w.path(cdev, sdev).is_some_and(|p| !p.switches.is_empty());
        let mut r = if switched {
            half * (1.0 - plan.capacity.switch_penalty_pct / 100.0)
        } else {
            half
        };
        let mut seq = 0;
        for d in [cdev, sdev] {
            if let Some(cap) = w.pcie_caps().get(&d.endpoint) {
                r = r.min(*cap);
            }
        }
        if cdev.throttled || sdev.throttled {
            r = THROTTLE_GBPS;
        }
        if cdev.congestion.is_some() || sdev.congestion.is_some() {
            r = r.min(fault::CONGESTED_GBPS);
        }
        if w.isl_hops(cdev, sdev)
            .iter()
            .any(|(i, _)| w.isl_blocked(*i))
        {
            r = RSTP_GBPS;
            seq = rng.range(400, 1500);
        }
        if cdev.ib_mtu() > sdev.ib_mtu() {
            r = MTU_DROP_GBPS;
            seq = rng.range(20_000, 60_000);
        }
        (r, seq)
    }

    /// The rate of every flow of round `index` whose server is live now: a faulted flow at its
    /// fault's rate, the healthy ones at their share from the kind's capacity model.
    fn round_rates(&self, st: &mut State, index: usize) -> Option<Rates> {
        let w = &self.world;
        let live: std::collections::HashSet<String> = st
            .servers
            .iter()
            .filter(|s| s.round == Some(index) && !s.died)
            .map(|s| s.job.clone())
            .collect();
        let generation = st.generation;
        let round = self.round(st, index)?;
        let mut sub = Round {
            index: round.index,
            name: round.name.clone(),
            kind: round.kind,
            jobs: round
                .jobs
                .iter()
                .filter(|j| live.contains(&j.id))
                .cloned()
                .collect(),
        };
        // the jobs crossing each blocked ISL direction share its trickle
        let mut sharing: HashMap<_, usize> = HashMap::new();
        for j in &sub.jobs {
            for hop in j.pair.iter().flat_map(|p| p.path.isl_hops()) {
                if w.isl_blocked(hop.0) {
                    *sharing.entry(hop).or_default() += 1;
                }
            }
        }
        let faulted = |job: &crate::schedule::Job| -> Option<(f64, u64)> {
            let pair = job.pair.as_ref()?;
            let c = w.dev_of_endpoint(&pair.client)?;
            let s = w.dev_of_endpoint(&pair.server)?;
            let mut r = Rng::keyed(w.seed, &["seqerr", &job.id]);
            if c.ib_mtu() > s.ib_mtu() {
                return Some((MTU_DROP_GBPS, r.range(20_000, 60_000)));
            }
            if let Some(hop) = pair.path.isl_hops().find(|(isl, _)| w.isl_blocked(*isl)) {
                let n = sharing.get(&hop).copied().unwrap_or(0).max(1);
                return Some((RSTP_GBPS / n as f64, r.range(400, 1500)));
            }
            if c.throttled || s.throttled {
                return Some((THROTTLE_GBPS, 0));
            }
            if c.congestion.is_some() || s.congestion.is_some() {
                return Some((fault::CONGESTED_GBPS, 0));
            }
            None
        };
        let mut of_job = HashMap::new();
        let mut healthy = Vec::new();
        for j in std::mem::take(&mut sub.jobs) {
            match faulted(&j) {
                Some(f) => {
                    of_job.insert(j.id.clone(), f);
                }
                None => healthy.push(j),
            }
        }
        sub.jobs = healthy;
        // the kind's own expected value (its share of the line rate, both ways summed), a half
        // on a narrowed PCIe link held to what it carries
        let rates = capacity::capped(
            &w.plan,
            &sub,
            crate::kinds::expected(&w.plan, &sub),
            w.pcie_caps(),
        );
        for (j, r) in sub.jobs.iter().zip(rates) {
            if let Some(r) = r {
                of_job.insert(j.id.clone(), (r, 0));
            }
        }
        Some(Rates {
            round: index,
            generation,
            of_job,
        })
    }

    /// A perftest client's way to its server: its arguments and device read, then the
    /// out-of-band TCP connection (routed, to a live listener of the same test on that port),
    /// the server marked as served. `Err` is what the client printed when it got no further.
    fn perf_connect(
        &self,
        st: &mut State,
        node: NodeId,
        tool: &str,
        args: &[String],
    ) -> Result<PerfPair, Output> {
        let w = &self.world;
        let a = perftest::parse(tool, args).map_err(|e| failed(String::new(), e))?;
        let Some(server_ip) = a.server.clone() else {
            // a server in the foreground waits for a client that never comes
            return Err(Output {
                status: 124,
                stdout: perftest::waiting_box(),
                stderr: String::new(),
                ..Output::default()
            });
        };
        let dev = match &a.dev {
            Some(d) => w.dev(node, d),
            None => w.devs_of(node).next(),
        };
        let cdev = perftest::check_device(&a, dev, w.devs_of(node).next().is_some())
            .map_err(|e| failed(String::new(), e))?
            .clone();
        let mut pre = String::new();
        if a.duration.is_some() && !a.lat {
            pre.push_str(" WARNING: BW peak won't be measured in this run.\n");
        }
        let ip: Option<Ipv4Addr> = server_ip.parse().ok();
        let server = listener(
            w,
            st,
            node,
            ip,
            a.port,
            |k| matches!(k, ServerKind::Perf(sa) if sa.lat == a.lat),
        );
        let Some((server, sa)) = server.and_then(|s| match &s.kind {
            Some(ServerKind::Perf(sa)) => Some((s.clone(), sa.clone())),
            _ => None,
        }) else {
            return Err(failed(pre, perftest::connect_failed(&server_ip, a.port)));
        };
        let sdev = match &sa.dev {
            Some(d) => w.dev(server.node, d),
            None => w.devs_of(server.node).next(),
        }
        .cloned()
        .unwrap_or_else(|| cdev.clone());
        serve(st, &server);
        Ok(PerfPair {
            a,
            cdev,
            server,
            sa,
            sdev,
            pre,
        })
    }

    fn perf_client(&self, node: NodeId, tool: &str, args: &[String]) -> Output {
        let w = &self.world;
        let mut st = self.lock();
        let PerfPair {
            a,
            cdev,
            server,
            sa,
            sdev,
            pre,
        } = match self.perf_connect(&mut st, node, tool, args) {
            Ok(p) => p,
            Err(out) => return out,
        };
        let sa = &sa;
        let (cgid, sgid) = (
            a.gid.unwrap_or(cdev.gid_index),
            sa.gid.unwrap_or(sdev.gid_index),
        );
        let mut rng = Rng::keyed(
            w.seed,
            &[
                "perf",
                w.name(node),
                &args.join(" "),
                &server.round.map(|r| r.to_string()).unwrap_or_default(),
            ],
        );
        let gid_or_zero = |d: &Dev, g: u32| {
            if d.roce_v2(g) {
                d.gid_bytes()
            } else {
                [0u8; 16]
            }
        };
        let local = perftest::dests(&mut rng, a.qps, gid_or_zero(&cdev, cgid));
        let remote = perftest::dests(&mut rng, sa.qps, gid_or_zero(&sdev, sgid));
        let cmtu = cdev.ib_mtu();
        let smtu = sdev.ib_mtu();
        let mut client = pre;
        client.push_str(&perftest::banner(&a, &cdev.name, cmtu, cgid, false));
        client.push_str(&perftest::addresses(&local, &remote));
        let mut slog = perftest::banner(sa, &sdev.name, smtu, sgid, true);
        slog.push_str(&perftest::addresses(&remote, &local));
        let log_key = (server.node, format!("{}.log", server.job));
        let append = |st: &mut State, text: &str| {
            st.files.entry(log_key.clone()).or_default().push_str(text);
        };
        if !cdev.roce_v2(cgid) || !sdev.roce_v2(sgid) {
            slog.push_str(&perftest::rtr_failed(remote.first_qpn()));
            append(&mut st, &slog);
            return failed(client, perftest::rtr_failed(local.first_qpn()));
        }
        // a loopback (client and server on one device) runs inside its NIC: no wire needed
        let looped = cdev.node == sdev.node && cdev.name == sdev.name;
        if !looped && !w.linked(&cdev, &sdev) {
            slog.push_str(&perftest::retry_exceeded(a.lat, true));
            append(&mut st, &slog);
            return failed(client, perftest::retry_exceeded(a.lat, false));
        }
        if a.lat {
            let typ = rng.jitter(one_way_us(w, &cdev, &sdev), 0.02);
            let table = perftest::lat_table(&a, typ, &mut rng);
            client.push_str(&table);
            let stable = perftest::lat_table(sa, rng.jitter(typ, 0.01), &mut rng);
            slog.push_str(&stable);
            append(&mut st, &slog);
            let bytes = a.size * u64::from(a.iters);
            bump(&mut st, node, &cdev.name, bytes, bytes, cmtu, 0);
            bump(&mut st, server.node, &sdev.name, bytes, bytes, smtu, 0);
            return Output::ok(client);
        }
        let (rate, seq) = self.flow_rate(&mut st, &server, &cdev, &sdev);
        let gbps = rng.jitter(rate, 0.004);
        let seconds = a
            .duration
            .map(f64::from)
            .unwrap_or_else(|| a.size as f64 * f64::from(a.iters) * 8.0 / (gbps * 1e9));
        let table = perftest::bw_table(&a, gbps, seconds);
        client.push_str(&table);
        slog.push_str(&table);
        append(&mut st, &slog);
        let bytes = (gbps * 1e9 / 8.0 * seconds) as u64;
        bump(&mut st, node, &cdev.name, bytes, bytes / 500, cmtu, seq);
        bump(
            &mut st,
            server.node,
            &sdev.name,
            bytes / 500,
            bytes,
            smtu,
            0,
        );
        Output::ok(client)
    }
}

/// The typical one-way latency between two devices, us: the wire, each switch and ISL on the
/// path, and an RSTP-blocked ISL's crawl.
fn one_way_us(w: &World, cdev: &Dev, sdev: &Dev) -> f64 {
    let path = w.path(cdev, sdev);
    let switches = path.as_ref().map(|p| p.switches.len()).unwrap_or(0) as f64;
    let isls = w.isl_hops(cdev, sdev);
    if isls.iter().any(|(i, _)| w.isl_blocked(*i)) {
        return 41.0;
    }
    1.45 + 0.28 * switches + 0.4 * isls.len() as f64
}

/// The round index in a job id (`rdma-bw-r003-j01` -> 2): the first `-r` followed by digits
/// (a kind's own name may hold `-r`, as `rdma-read-bw` does).
fn round_of(job: &str) -> Option<usize> {
    job.match_indices("-r").find_map(|(i, _)| {
        let digits: String = job[i + 2..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<usize>().ok()?.checked_sub(1)
    })
}

/// Advance a device's counters: bytes out and in (data counters are in 4-byte words), and
/// packet_seq_err.
fn bump(st: &mut State, node: NodeId, dev: &str, tx: u64, rx: u64, mtu: u32, seq: u64) {
    let Some(c) = st.counters.get_mut(&(node, dev.to_string())) else {
        return;
    };
    let mtu = u64::from(mtu.max(256));
    for (k, v) in [
        ("port_xmit_data", tx / 4),
        ("port_rcv_data", rx / 4),
        ("port_xmit_packets", tx.div_ceil(mtu)),
        ("port_rcv_packets", rx.div_ceil(mtu)),
        ("unicast_xmit_packets", tx.div_ceil(mtu)),
        ("packet_seq_err", seq),
        ("out_of_sequence", seq / 2),
    ] {
        if v > 0
            && let Some(x) = c.get_mut(k)
        {
            *x += v;
        }
    }
}

impl SimTransport {
    fn node_of(&self, node: &Node) -> Result<NodeId, TransportError> {
        self.world
            .node_by_name(&node.name)
            .ok_or_else(|| TransportError::Unreachable {
                host: node.name.clone(),
                reason: "simulated: not a node of this plan".into(),
            })
    }
}

impl Transport for SimTransport {
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move { self.answer(self.node_of(node)?, script) })
    }

    fn spawn<'a>(
        &'a self,
        node: &'a Node,
        job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<Spawned, TransportError>> {
        Box::pin(async move {
            let id = self.node_of(node)?;
            if self.world.dead(id) {
                return Err(self.answer(id, script).err().unwrap_or_else(|| {
                    TransportError::Unreachable {
                        host: node.name.clone(),
                        reason: "simulated: no route to host".into(),
                    }
                }));
            }
            Ok(self.start_server(id, job, script))
        })
    }

    fn stop_spawned<'a>(
        &'a self,
        node: &'a Node,
        job: &'a Spawned,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            let id = self.node_of(node)?;
            Ok(self.stop_server(id, job))
        })
    }

    fn name(&self) -> &'static str {
        "sim"
    }

    fn simulated(&self) -> bool {
        true
    }

    /// The round's flows, for the rates of its clients: the schedule's rounds and those the
    /// runner builds as it goes (re-tests, which the schedule cannot build). Only the round
    /// being run is kept.
    fn expect_round(&self, round: &Round) {
        self.lock().round = Some(round.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::round_of;

    #[test]
    fn round_from_job_id() {
        assert_eq!(round_of("rdma-bw-r003-j01"), Some(2));
        assert_eq!(round_of("nccl-r010-all_reduce"), Some(9));
        assert_eq!(round_of("rdma-read-bw-r012-j03"), Some(11));
        assert_eq!(round_of("custom"), None);
    }
}
