//! A job's command lines, per host and in order: a server (it runs until stopped), then client; or one launch
//! over a set of ranks. The types every test kind renders into, and the rendering of a
//! client/server pair that perftest- and iperf3-like kinds share. Values known only at run time
//! come from a [`Resolution`]; what is still unknown renders as a named placeholder, never a
//! guess.

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;

use minijinja::Value;
use serde::Serialize;

use super::launch::LaunchStyle;
use super::{NamePart, Placeholder, RenderError, Renderer};
use crate::plan::{Endpoint, NodeId, Plan};
use crate::schedule::Job;

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
    pub fn address(&self, plan: &Plan, e: &Endpoint) -> Option<Ipv4Addr> {
        match self.addresses.get(e) {
            Some(a) => Some(*a),
            None => plan.member_of(e).map(|(_, m)| m.address),
        }
    }

    pub fn facts(&self, e: &Endpoint) -> HalfFacts {
        self.halves.get(e).cloned().unwrap_or(HalfFacts {
            device: None,
            netdev: None,
            gid_index: None,
        })
    }
}

/// Which side of a job a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Started before the clients, running until stopped.
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
    /// What a reader of the commands should know (a per-rank choice made, a value left to NCCL).
    pub notes: Vec<String>,
}

/// A run-time fact as a template value: known, or its placeholder.
pub struct Val {
    pub value: Value,
    pub text: String,
    pub placeholder: Option<Placeholder>,
}

impl Val {
    pub fn part(&self) -> NamePart {
        match &self.placeholder {
            Some(p) => NamePart::Unknown(p.clone()),
            None => NamePart::Known(self.text.clone()),
        }
    }
}

/// `v` when known, else the placeholder for `what` of `endpoint`.
pub fn known_or(v: Option<String>, endpoint: &str, what: &str) -> Val {
    match v {
        Some(s) => Val {
            value: Value::from(s.clone()),
            text: s,
            placeholder: None,
        },
        None => {
            let p = Placeholder::new(endpoint, what);
            Val {
                value: p.value(),
                text: p.to_string(),
                placeholder: Some(p),
            }
        }
    }
}

/// One end of a client/server pair, as a kind's template context sees it.
pub struct PairEnd<'a> {
    pub role: Role,
    pub endpoint: &'a Endpoint,
    pub node: &'a str,
    pub device: Val,
    pub netdev: Val,
    pub gid: Val,
    pub local_ip: Ipv4Addr,
    pub server_ip: Ipv4Addr,
    pub port: u16,
}

/// How a kind renders its client/server pair.
pub struct PairTemplates<'a> {
    pub server: &'a str,
    pub client: &'a str,
    pub timeout_s: u32,
    /// The facts each end must have resolved before it can run (device, GID for RDMA tools).
    pub needs_device: bool,
}

/// Render a pair job: the server (running until stopped), then the client in the foreground, each with the
/// context `context` builds for its end.
#[allow(clippy::too_many_arguments)]
pub fn pair_commands(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    res: &Resolution,
    job: &Job,
    t: &PairTemplates<'_>,
    context: impl Fn(&PairEnd<'_>) -> Value,
) -> Result<JobCommands, RenderError> {
    let Some(pair) = &job.pair else {
        return Err(RenderError {
            name: job.id.clone(),
            message: "not a client/server job".into(),
        });
    };
    let mut unresolved = Vec::new();
    let mut steps = Vec::new();
    let server_ip = res
        .address(plan, &pair.server)
        .unwrap_or(Ipv4Addr::UNSPECIFIED);
    let client_ip = res
        .address(plan, &pair.client)
        .unwrap_or(Ipv4Addr::UNSPECIFIED);
    for (role, endpoint, local_ip, tmpl) in [
        (Role::Server, &pair.server, server_ip, t.server),
        (Role::Client, &pair.client, client_ip, t.client),
    ] {
        let name = plan.endpoint_name(endpoint);
        let f = res.facts(endpoint);
        let end = PairEnd {
            role,
            endpoint,
            node: &plan.node(endpoint.node).name,
            device: known_or(f.device, &name, "device"),
            netdev: known_or(f.netdev, &name, "netdev"),
            gid: known_or(f.gid_index.map(|g| g.to_string()), &name, "gid"),
            local_ip,
            server_ip,
            port: job.port,
        };
        if t.needs_device {
            for v in [&end.device, &end.gid] {
                if let Some(p) = &v.placeholder {
                    unresolved.push(p.to_string());
                }
            }
        }
        let command = renderer.render(tmpl, context(&end))?;
        let script = match role {
            Role::Server => style.server(plan, endpoint.node, t.timeout_s, &command),
            _ => style.foreground(plan, endpoint.node, t.timeout_s, &command),
        };
        steps.push(Step {
            node: endpoint.node,
            host: plan.node(endpoint.node).name.clone(),
            role,
            command,
            script,
            timeout_s: t.timeout_s,
        });
    }
    unresolved.sort();
    unresolved.dedup();
    Ok(JobCommands {
        job: job.id.clone(),
        steps,
        unresolved,
        ranks: Vec::new(),
        nccl_env: BTreeMap::new(),
        notes: Vec::new(),
    })
}
