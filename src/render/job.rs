//! A job's command lines, per host and in order: detached server, then client; or the mpirun
//! launch for NCCL. Values known only at run time come from a [`Resolution`]; what is still
//! unknown renders as a named placeholder, never a guess.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::Ipv4Addr;

use minijinja::{Value, context};
use serde::Serialize;

use super::{RenderError, Renderer, placeholder, safe, wrap};
use crate::plan::{CableKind, Endpoint, NodeId, Plan};
use crate::schedule::{Job, TestKind};

/// What is known about one node half: from pins, from discovery, or not yet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HalfFacts {
    pub device: Option<String>,
    pub netdev: Option<String>,
    pub gid_index: Option<u32>,
}

/// Run-time facts per node half (discovery fills this; pins seed it).
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    pub halves: HashMap<Endpoint, HalfFacts>,
    /// Each cabled half's address, as [`Plan::member_of`] gives it: indexed once, so rendering a
    /// job never scans the plan's segments.
    addresses: HashMap<Endpoint, Ipv4Addr>,
}

impl Resolution {
    /// Only what the plan pins.
    pub fn from_plan(plan: &Plan) -> Resolution {
        let mut halves = HashMap::new();
        let mut addresses = HashMap::new();
        for seg in &plan.segments {
            for m in &seg.members {
                // the first segment holding the half wins, as in `Plan::member_of`
                addresses.entry(m.endpoint.clone()).or_insert(m.address);
                let pin = plan.pinned(&m.endpoint);
                halves.insert(
                    m.endpoint.clone(),
                    HalfFacts {
                        device: pin.device,
                        netdev: pin.netdev,
                        gid_index: pin.gid_index,
                    },
                );
            }
        }
        Resolution { halves, addresses }
    }

    /// The plan's address of a cabled half.
    fn address(&self, plan: &Plan, e: &Endpoint) -> Option<Ipv4Addr> {
        match self.addresses.get(e) {
            Some(a) => Some(*a),
            None => plan.member_of(e).map(|(_, m)| m.address),
        }
    }

    fn facts(&self, e: &Endpoint) -> HalfFacts {
        self.halves.get(e).cloned().unwrap_or(HalfFacts {
            device: None,
            netdev: None,
            gid_index: None,
        })
    }
}

/// Which side of a job a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Started detached before the clients.
    Server,
    /// Run in the foreground once every server of the round is ready.
    Client,
    /// mpirun on the job's first host.
    Launcher,
}

/// One command on one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub node: NodeId,
    pub host: String,
    pub role: Role,
    /// The tool's own command line (what the template rendered).
    pub command: String,
    /// The full shell script that runs it (environment, directory, detach or timeout).
    pub script: String,
    pub timeout_s: u32,
}

/// A rank of an NCCL job: which devices NCCL should use there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rank {
    pub node: NodeId,
    pub address: Ipv4Addr,
    pub endpoints: Vec<Endpoint>,
    pub devices: Vec<String>,
    pub netdevs: Vec<String>,
}

/// A job's rendered commands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobCommands {
    pub job: String,
    pub steps: Vec<Step>,
    /// Placeholders still in the commands (values discovery must supply).
    pub unresolved: Vec<String>,
    /// NCCL ranks, in rank order.
    pub ranks: Vec<Rank>,
    /// The rendered NCCL environment, for checks against discovery.
    pub nccl_env: BTreeMap<String, String>,
}

/// The remote directory of a run.
pub fn remote_dir(run_id: &str) -> String {
    format!("/tmp/fabricplan/{run_id}")
}

struct Val {
    value: Value,
    text: String,
    placeholder: Option<String>,
}

fn known_or(v: Option<String>, endpoint: &str, what: &str) -> Val {
    match v {
        Some(s) => Val {
            value: Value::from(s.clone()),
            text: s,
            placeholder: None,
        },
        None => {
            let p = placeholder(endpoint, what);
            Val {
                value: safe(p.clone()),
                text: p.clone(),
                placeholder: Some(p),
            }
        }
    }
}

fn tool_for(kind: TestKind) -> &'static str {
    match kind {
        TestKind::RdmaLat => "ib_write_lat",
        _ => "ib_write_bw",
    }
}

/// Render the commands of `job`.
pub fn job_commands(
    plan: &Plan,
    renderer: &Renderer,
    res: &Resolution,
    job: &Job,
    run_id: &str,
) -> Result<JobCommands, RenderError> {
    let dir = remote_dir(run_id);
    let mut unresolved = Vec::new();
    let mut steps = Vec::new();
    if let Some(pair) = &job.pair {
        let server_ip = res
            .address(plan, &pair.server)
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        let client_ip = res
            .address(plan, &pair.client)
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        let (server_t, client_t, timeout) = match job.kind {
            TestKind::RdmaBw | TestKind::RdmaBwBoth => {
                let t = plan
                    .tests
                    .rdma_bw
                    .as_ref()
                    .filter(|_| job.kind == TestKind::RdmaBw)
                    .or(plan.tests.rdma_bw_both.as_ref())
                    .or(plan.tests.rdma_bw.as_ref());
                let timeout = t.map(|t| t.timeout_s).unwrap_or(36);
                ("rdma-bw-server", "rdma-bw-client", timeout)
            }
            TestKind::RdmaLat => (
                "rdma-lat-server",
                "rdma-lat-client",
                plan.tests
                    .rdma_lat
                    .as_ref()
                    .map(|t| t.timeout_s)
                    .unwrap_or(30),
            ),
            TestKind::Iperf3 => (
                "iperf3-server",
                "iperf3-client",
                plan.tests
                    .iperf3
                    .as_ref()
                    .map(|t| t.timeout_s)
                    .unwrap_or(22),
            ),
            TestKind::Nccl => unreachable!("NCCL jobs have no pair"),
        };
        for (role, endpoint, local_ip, tmpl) in [
            (Role::Server, &pair.server, server_ip, server_t),
            (Role::Client, &pair.client, client_ip, client_t),
        ] {
            let name = plan.endpoint_name(endpoint);
            let f = res.facts(endpoint);
            let device = known_or(f.device, &name, "device");
            let netdev = known_or(f.netdev, &name, "netdev");
            let gid = known_or(f.gid_index.map(|g| g.to_string()), &name, "gid");
            let ctx = match job.kind {
                TestKind::RdmaBw | TestKind::RdmaBwBoth => {
                    let t = if job.kind == TestKind::RdmaBw {
                        plan.tests.rdma_bw.as_ref()
                    } else {
                        plan.tests.rdma_bw_both.as_ref()
                    };
                    let (d, s, q) = t
                        .map(|t| (t.duration_s, t.size_bytes, t.qps))
                        .unwrap_or((6, 65536, 1));
                    for v in [&device, &gid] {
                        if let Some(p) = &v.placeholder {
                            unresolved.push(p.clone());
                        }
                    }
                    context! {
                        tool => tool_for(job.kind), device => device.value.clone(), gid_index => gid.value.clone(),
                        port => job.port, duration_s => d, size_bytes => s, qps => q, netdev => netdev.value.clone(),
                        local_ip => local_ip.to_string(), server_ip => server_ip.to_string(),
                        node => plan.node(endpoint.node).name.clone(),
                    }
                }
                TestKind::RdmaLat => {
                    let t = plan.tests.rdma_lat.as_ref();
                    for v in [&device, &gid] {
                        if let Some(p) = &v.placeholder {
                            unresolved.push(p.clone());
                        }
                    }
                    context! {
                        tool => tool_for(job.kind), device => device.value.clone(), gid_index => gid.value.clone(),
                        port => job.port, size_bytes => t.map(|t| t.size_bytes).unwrap_or(2),
                        iterations => t.map(|t| t.iterations).unwrap_or(1000), netdev => netdev.value.clone(),
                        local_ip => local_ip.to_string(), server_ip => server_ip.to_string(),
                        node => plan.node(endpoint.node).name.clone(),
                    }
                }
                _ => {
                    let t = plan.tests.iperf3.as_ref();
                    context! {
                        port => job.port, local_ip => local_ip.to_string(), server_ip => server_ip.to_string(),
                        duration_s => t.map(|t| t.duration_s).unwrap_or(2), streams => t.map(|t| t.streams).unwrap_or(1),
                        node => plan.node(endpoint.node).name.clone(),
                    }
                }
            };
            let _ = &netdev.text;
            let command = renderer.render(tmpl, ctx)?;
            let env = &plan.node(endpoint.node).env;
            let script = match role {
                Role::Server => wrap::detached(&dir, &job.id, timeout, env, &command),
                _ => wrap::foreground(&dir, timeout, env, &command),
            };
            steps.push(Step {
                node: endpoint.node,
                host: plan.node(endpoint.node).name.clone(),
                role,
                command,
                script,
                timeout_s: timeout,
            });
        }
        unresolved.sort();
        unresolved.dedup();
        return Ok(JobCommands {
            job: job.id.clone(),
            steps,
            unresolved,
            ranks: Vec::new(),
            nccl_env: BTreeMap::new(),
        });
    }
    let Some(ti) = job.nccl else {
        return Err(RenderError {
            name: job.id.clone(),
            message: "job has neither a pair nor an NCCL test".into(),
        });
    };
    nccl_commands(plan, renderer, res, job, ti, &dir)
}

fn nccl_commands(
    plan: &Plan,
    renderer: &Renderer,
    res: &Resolution,
    job: &Job,
    ti: usize,
    dir: &str,
) -> Result<JobCommands, RenderError> {
    let t = &plan.tests.nccl[ti];
    let mut unresolved = Vec::new();
    // which nodes are ranks (a lookup table: ranks may be thousands)
    let mut is_rank = vec![false; plan.nodes.len()];
    for n in &t.nodes {
        if let Some(x) = is_rank.get_mut(n.0) {
            *x = true;
        }
    }
    let ranked = |n: NodeId| is_rank.get(n.0).copied().unwrap_or(false);
    // the segments NCCL may use: those joining two of the job's ranks, on the chosen halves
    let segs: Vec<&crate::plan::Segment> = plan
        .segments
        .iter()
        .filter(|s| t.halves.is_empty() || t.halves.contains(&s.half))
        .filter(|s| s.members.iter().filter(|m| ranked(m.endpoint.node)).count() >= 2)
        .collect();
    // each rank's members of those segments, in segment then member order
    let mut members_of: HashMap<NodeId, Vec<&crate::plan::Member>> = HashMap::new();
    for s in &segs {
        for m in s.members.iter().filter(|m| ranked(m.endpoint.node)) {
            members_of.entry(m.endpoint.node).or_default().push(m);
        }
    }
    let ring = segs
        .iter()
        .any(|s| plan.cables[s.cable].kind == CableKind::Ring);
    let mut ranks = Vec::new();
    let mut gids: Vec<Val> = Vec::new();
    for n in &t.nodes {
        let mut endpoints: Vec<Endpoint> = Vec::new();
        let mut address = None;
        for m in members_of.get(n).into_iter().flatten() {
            if !endpoints.contains(&m.endpoint) {
                endpoints.push(m.endpoint.clone());
            }
            address.get_or_insert(m.address);
        }
        let mut devices = Vec::new();
        let mut netdevs = Vec::new();
        let mut gid = None;
        for e in &endpoints {
            let name = plan.endpoint_name(e);
            let f = res.facts(e);
            let d = known_or(f.device, &name, "device");
            let nd = known_or(f.netdev, &name, "netdev");
            for v in [&d, &nd] {
                if let Some(p) = &v.placeholder {
                    unresolved.push(p.clone());
                }
            }
            if gid.is_none() {
                let g = known_or(f.gid_index.map(|g| g.to_string()), &name, "gid");
                if let Some(p) = &g.placeholder {
                    unresolved.push(p.clone());
                }
                gid = Some(g);
            }
            devices.push(d.text);
            netdevs.push(nd.text);
        }
        gids.push(gid.unwrap_or(Val {
            value: Value::from(""),
            text: String::new(),
            placeholder: None,
        }));
        ranks.push(Rank {
            node: *n,
            address: address.unwrap_or(Ipv4Addr::UNSPECIFIED),
            endpoints,
            devices,
            netdevs,
        });
    }
    // every rank's own names, in rank order: each rank matches whichever one is its own (the
    // f0/f1 naming asymmetry between boxes)
    let mut hca: Vec<&str> = Vec::new();
    let mut ifs: Vec<&str> = Vec::new();
    let (mut seen_hca, mut seen_ifs) = (HashSet::new(), HashSet::new());
    for r in &ranks {
        for d in &r.devices {
            if seen_hca.insert(d.as_str()) {
                hca.push(d);
            }
        }
        for d in &r.netdevs {
            if seen_ifs.insert(d.as_str()) {
                ifs.push(d);
            }
        }
    }
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert("NCCL_NET_PLUGIN".into(), "none".into());
    env.insert("NCCL_DEBUG".into(), "INFO".into());
    env.insert("NCCL_IB_HCA".into(), hca.join(","));
    env.insert("NCCL_SOCKET_IFNAME".into(), ifs.join(","));
    if ring {
        // NVIDIA's ring playbook: without these a switchless ring fails with ibv_modify_qp 110
        env.insert("NCCL_IB_SUBNET_AWARE_ROUTING".into(), "1".into());
        env.insert("NCCL_IB_MERGE_NICS".into(), "0".into());
    } else {
        env.insert("NCCL_IB_MERGE_NICS".into(), "1".into());
    }
    let gid_texts: Vec<&str> = gids.iter().map(|g| g.text.as_str()).collect();
    let uniform_gid =
        gid_texts.windows(2).all(|w| w[0] == w[1]) && gids.iter().all(|g| g.placeholder.is_none());
    if uniform_gid && let Some(g) = gid_texts.first().filter(|g| !g.is_empty()) {
        env.insert("NCCL_IB_GID_INDEX".into(), g.to_string());
    }
    for (k, v) in &t.env {
        env.insert(k.clone(), v.clone());
    }
    let binary_of = |n: NodeId| match &plan.node(n).nccl_tests_dir {
        Some(d) => format!("{}/{}", d.trim_end_matches('/'), t.collective.binary()),
        None => t.collective.binary().to_string(),
    };
    let env_value = |env: &BTreeMap<String, String>| -> Value {
        // names in NCCL_IB_HCA / NCCL_SOCKET_IFNAME may be placeholders (safe, ours); other
        // values are quoted by the formatter
        let map: BTreeMap<String, Value> = env
            .iter()
            .map(|(k, v)| {
                let val = if v.contains('<')
                    && v.split(',').all(|p| {
                        super::is_placeholder(p) || crate::plan::validate::is_safe_ifname(p)
                    }) {
                    safe(v.clone())
                } else {
                    Value::from(v.clone())
                };
                (k.clone(), val)
            })
            .collect();
        Value::from(map)
    };
    let per_rank = !uniform_gid
        || ranks
            .iter()
            .any(|r| binary_of(r.node) != binary_of(ranks[0].node));
    let apps: Vec<Value> = if per_rank {
        ranks
            .iter()
            .zip(&gids)
            .map(|(r, g)| {
                let mut e = env.clone();
                if !g.text.is_empty() && !t.env.contains_key("NCCL_IB_GID_INDEX") {
                    e.insert("NCCL_IB_GID_INDEX".into(), g.text.clone());
                }
                context! { np => 1, hosts => vec![r.address.to_string()], env => env_value(&e), binary => binary_of(r.node) }
            })
            .collect()
    } else {
        vec![context! {
            np => ranks.len(),
            hosts => ranks.iter().map(|r| r.address.to_string()).collect::<Vec<_>>(),
            env => env_value(&env),
            binary => binary_of(ranks[0].node),
        }]
    };
    let mut subnets: Vec<String> = segs.iter().map(|s| s.subnet.to_string()).collect();
    subnets.dedup();
    let ctx = context! {
        apps => apps,
        subnets => subnets,
        binary => binary_of(ranks.first().map(|r| r.node).unwrap_or(NodeId(0))),
        min_bytes => t.min_bytes.clone(), max_bytes => t.max_bytes.clone(),
        step_factor => t.step_factor, warmup => t.warmup, iterations => t.iterations,
        collective => t.collective.name(),
        hosts => ranks.iter().map(|r| r.address.to_string()).collect::<Vec<_>>(),
        env => env_value(&env),
    };
    let command = renderer.render("nccl", ctx)?;
    let launcher = ranks.first().map(|r| r.node).unwrap_or(NodeId(0));
    let script = wrap::foreground(dir, t.timeout_s, &plan.node(launcher).env, &command);
    unresolved.sort();
    unresolved.dedup();
    Ok(JobCommands {
        job: job.id.clone(),
        steps: vec![Step {
            node: launcher,
            host: plan.node(launcher).name.clone(),
            role: Role::Launcher,
            command,
            script,
            timeout_s: t.timeout_s,
        }],
        unresolved,
        ranks,
        nccl_env: env,
    })
}
