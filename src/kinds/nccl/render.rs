//! Rendering an NCCL job: its ranks and the devices each uses, the NCCL environment (every
//! rank's own device names, the GID index from discovery, the ring playbook's settings), and
//! the mpirun line; and the launch check that starts `hostname` on every rank.

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;

use minijinja::{Value, context};

use super::section::NcclTest;
use crate::plan::{CableKind, Endpoint, NodeId, Plan, Segment};
use crate::render::job::{JobCommands, Rank, Resolution, Role, Step, Val, known_or};
use crate::render::launch::{LaunchStyle, MpiApp, MpiLaunch};
use crate::render::{NamePart, RenderError, Renderer, name_list};
use crate::schedule::Job;

/// An environment value for the NCCL launch: data from the plan (always quoted), or names the
/// renderer put together (discovered or still placeholders).
#[derive(Debug, Clone, PartialEq)]
enum EnvValue {
    Data(String),
    Names(Vec<NamePart>),
}

impl EnvValue {
    fn text(&self) -> String {
        match self {
            EnvValue::Data(s) => s.clone(),
            EnvValue::Names(parts) => parts
                .iter()
                .map(NamePart::text)
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    fn value(&self) -> Result<Value, RenderError> {
        match self {
            EnvValue::Data(s) => Ok(Value::from(s.clone())),
            EnvValue::Names(parts) => name_list(parts, ","),
        }
    }
}

/// Which nodes are ranks of `t`: a lookup table (ranks may be thousands).
fn rank_table(plan: &Plan, t: &NcclTest) -> impl Fn(NodeId) -> bool {
    let mut is_rank = vec![false; plan.nodes.len()];
    for n in &t.nodes {
        if let Some(x) = is_rank.get_mut(n.0) {
            *x = true;
        }
    }
    move |n: NodeId| is_rank.get(n.0).copied().unwrap_or(false)
}

/// The segments an NCCL test may use: those joining two of its ranks, on the chosen halves.
fn nccl_segments<'p>(plan: &'p Plan, t: &NcclTest) -> Vec<&'p crate::plan::Segment> {
    let ranked = rank_table(plan, t);
    plan.segments
        .iter()
        .filter(|s| t.halves.is_empty() || t.halves.contains(&s.half))
        .filter(|s| s.members.iter().filter(|m| ranked(m.endpoint.node)).count() >= 2)
        .collect()
}

/// The address mpirun reaches a rank on: one on a segment the launcher shares, so the launcher
/// can route to it (in a switchless ring a node's other links are not reachable from every
/// node); the rank's first fabric address otherwise.
fn rank_address(
    segs: &[&crate::plan::Segment],
    node: NodeId,
    launcher: NodeId,
) -> Option<Ipv4Addr> {
    let shared = segs.iter().find(|s| {
        s.members.iter().any(|m| m.endpoint.node == launcher)
            && s.members.iter().any(|m| m.endpoint.node == node)
    });
    shared
        .into_iter()
        .chain(segs.iter())
        .flat_map(|s| s.members.iter())
        .find(|m| m.endpoint.node == node)
        .map(|m| m.address)
}

/// The preflight launch check of NCCL test `ti`: the launcher starts `hostname` on every rank
/// over the fabric subnets. Returns the step and the rank count.
pub fn mpi_hostname(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    ti: usize,
) -> Result<(Step, usize), RenderError> {
    let Some(t) = super::tests(plan).get(ti).copied() else {
        return Err(RenderError {
            name: format!("nccl test {ti}"),
            message: "no such NCCL test in the plan".into(),
        });
    };
    let segs = nccl_segments(plan, t);
    let first = t.nodes.first().copied().unwrap_or(NodeId(0));
    let ranks: Vec<(NodeId, Ipv4Addr)> = t
        .nodes
        .iter()
        .filter_map(|n| rank_address(&segs, *n, first).map(|a| (*n, a)))
        .collect();
    let mut subnets: Vec<String> = segs.iter().map(|s| s.subnet.to_string()).collect();
    subnets.dedup();
    let hosts: Vec<String> = ranks.iter().map(|(_, a)| a.to_string()).collect();
    let launch = MpiLaunch {
        first,
        apps: vec![MpiApp {
            nodes: ranks.iter().map(|(n, _)| *n).collect(),
            hosts: ranks.iter().map(|(_, a)| *a).collect(),
            env: Value::from(BTreeMap::<String, Value>::new()),
            binary: "hostname".into(),
        }],
        subnets: subnets.clone(),
        args: Vec::new(),
        template: "mpi-hostname",
        vars: context! { hosts => hosts, subnets => subnets },
        timeout_s: LAUNCH_CHECK_TIMEOUT_S,
    };
    let w = style.mpi(plan, renderer, &launch)?;
    Ok((
        Step {
            node: w.node,
            host: plan.node(w.node).name.clone(),
            role: Role::Launcher,
            command: w.command,
            script: w.script,
            timeout_s: LAUNCH_CHECK_TIMEOUT_S,
        },
        ranks.len(),
    ))
}

/// How long the launch check may take on the launching node: `hostname` over mpirun starts in
/// about a second; a launch that hangs (mpirun's TCP over an MTU 1500 hop) gives up long before
/// an NCCL job's own timeout would.
pub const LAUNCH_CHECK_TIMEOUT_S: u32 = 20;

/// What the ranks of an NCCL test use: each rank's halves, its device and netdev names (or the
/// placeholders of what discovery must still find), and its GID index.
struct RankSet {
    ranks: Vec<Rank>,
    /// Each rank's GID index; `None` when its halves disagree (left to NCCL).
    gids: Vec<Option<Val>>,
    /// Each rank's (device names, netdev names), typed for the environment.
    names: Vec<(Vec<NamePart>, Vec<NamePart>)>,
    notes: Vec<String>,
    unresolved: Vec<String>,
}

impl RankSet {
    /// The ranks of `t` over `segs`, each with its own names from `res`.
    fn of(plan: &Plan, res: &Resolution, t: &NcclTest, segs: &[&Segment]) -> RankSet {
        let ranked = rank_table(plan, t);
        // each rank's members of those segments, in segment then member order
        let mut members_of: HashMap<NodeId, Vec<&crate::plan::Member>> = HashMap::new();
        for s in segs {
            for m in s.members.iter().filter(|m| ranked(m.endpoint.node)) {
                members_of.entry(m.endpoint.node).or_default().push(m);
            }
        }
        let mut set = RankSet {
            ranks: Vec::new(),
            gids: Vec::new(),
            names: Vec::new(),
            notes: Vec::new(),
            unresolved: Vec::new(),
        };
        let launcher = t.nodes.first().copied().unwrap_or(NodeId(0));
        for n in &t.nodes {
            let mut endpoints: Vec<Endpoint> = Vec::new();
            for m in members_of.get(n).into_iter().flatten() {
                if !endpoints.contains(&m.endpoint) {
                    endpoints.push(m.endpoint.clone());
                }
            }
            let address = rank_address(segs, *n, launcher);
            set.add(plan, res, *n, address, endpoints);
        }
        set.unresolved.sort();
        set.unresolved.dedup();
        set
    }

    /// One rank: its halves' facts, and one GID index for the process when its halves agree.
    fn add(
        &mut self,
        plan: &Plan,
        res: &Resolution,
        n: NodeId,
        address: Option<Ipv4Addr>,
        endpoints: Vec<Endpoint>,
    ) {
        let mut devices = Vec::new();
        let mut netdevs = Vec::new();
        let mut rank_gids: Vec<Val> = Vec::new();
        for e in &endpoints {
            let name = plan.endpoint_name(e);
            let f = res.facts(e);
            let d = known_or(f.device, &name, "device");
            let nd = known_or(f.netdev, &name, "netdev");
            let g = known_or(f.gid_index.map(|g| g.to_string()), &name, "gid");
            for v in [&d, &nd, &g] {
                if let Some(p) = &v.placeholder {
                    self.unresolved.push(p.to_string());
                }
            }
            rank_gids.push(g);
            devices.push(d.part());
            netdevs.push(nd.part());
        }
        // one NCCL_IB_GID_INDEX per process: when this rank's halves map their addresses at
        // different indices no single value is right for both, so NCCL chooses per device
        let same = rank_gids.iter().any(|g| g.placeholder.is_some())
            || rank_gids.windows(2).all(|w| w[0].text == w[1].text);
        let gid = if same {
            rank_gids.into_iter().next()
        } else {
            self.notes.push(format!(
                "{}: its halves use GID indices {}; NCCL_IB_GID_INDEX is left to NCCL for this rank",
                plan.node(n).name,
                rank_gids.iter().map(|g| g.text.as_str()).collect::<Vec<_>>().join(" and ")
            ));
            None
        };
        self.gids.push(gid);
        self.names.push((devices.clone(), netdevs.clone()));
        self.ranks.push(Rank {
            node: n,
            address: address.unwrap_or(Ipv4Addr::UNSPECIFIED),
            endpoints,
            devices: devices.iter().map(|p| p.text().to_string()).collect(),
            netdevs: netdevs.iter().map(|p| p.text().to_string()).collect(),
        });
    }

    /// Every rank has the same GID index (or none), and none is left to a placeholder.
    fn gids_uniform(&self) -> bool {
        self.gids.windows(2).all(|w| {
            w[0].as_ref().map(|g| g.text.as_str()) == w[1].as_ref().map(|g| g.text.as_str())
        }) && self.gids.iter().flatten().all(|g| g.placeholder.is_none())
    }

    /// One GID index for every rank, known: then a single value in the common environment.
    fn uniform_gid(&self) -> Option<&Val> {
        if self.gids_uniform() {
            self.gids.first().and_then(Option::as_ref)
        } else {
            None
        }
    }

    /// The environment every rank shares: NCCL on the native path with every rank's own device
    /// and netdev names (the f0/f1 naming asymmetry between boxes), the ring playbook's settings
    /// on a switchless ring, and the plan's own values (data: quoted, whatever they look like).
    fn environment(&self, ring: bool, t: &NcclTest) -> BTreeMap<String, EnvValue> {
        let mut hca: Vec<NamePart> = Vec::new();
        let mut ifs: Vec<NamePart> = Vec::new();
        for (devices, netdevs) in &self.names {
            for d in devices {
                if !hca.contains(d) {
                    hca.push(d.clone());
                }
            }
            for d in netdevs {
                if !ifs.contains(d) {
                    ifs.push(d.clone());
                }
            }
        }
        let data = |s: &str| EnvValue::Data(s.to_string());
        let mut env: BTreeMap<String, EnvValue> = BTreeMap::new();
        env.insert("NCCL_NET_PLUGIN".into(), data("none"));
        env.insert("NCCL_DEBUG".into(), data("INFO"));
        env.insert("NCCL_IB_HCA".into(), EnvValue::Names(hca));
        env.insert("NCCL_SOCKET_IFNAME".into(), EnvValue::Names(ifs));
        if ring {
            // NVIDIA's ring playbook: without these a switchless ring fails with ibv_modify_qp 110
            env.insert("NCCL_IB_SUBNET_AWARE_ROUTING".into(), data("1"));
            env.insert("NCCL_IB_MERGE_NICS".into(), data("0"));
        } else {
            env.insert("NCCL_IB_MERGE_NICS".into(), data("1"));
        }
        if let Some(g) = self.uniform_gid() {
            env.insert("NCCL_IB_GID_INDEX".into(), EnvValue::Names(vec![g.part()]));
        }
        for (k, v) in &t.env {
            env.insert(k.clone(), data(v));
        }
        env
    }
}

fn env_value(env: &BTreeMap<String, EnvValue>) -> Result<Value, RenderError> {
    let mut map: BTreeMap<String, Value> = BTreeMap::new();
    for (k, v) in env {
        map.insert(k.clone(), v.value()?);
    }
    Ok(Value::from(map))
}

/// The application contexts: one for every rank when they share a binary and an environment;
/// one per rank otherwise (a GID index or a node's environment differs). Each rank's node
/// environment (PATH, LD_LIBRARY_PATH, ...) travels with it: mpirun starts remote ranks with
/// sshd's environment, not the launcher's.
fn apps(
    plan: &Plan,
    t: &NcclTest,
    set: &RankSet,
    env: &BTreeMap<String, EnvValue>,
    binary_of: &dyn Fn(NodeId) -> String,
) -> Result<Vec<MpiApp>, RenderError> {
    let node_env = |n: NodeId| -> BTreeMap<String, EnvValue> {
        plan.node(n)
            .env
            .iter()
            .filter(|(k, _)| !env.contains_key(*k))
            .map(|(k, v)| (k.clone(), EnvValue::Data(v.clone())))
            .collect()
    };
    let ranks = &set.ranks;
    let per_rank = !set.gids_uniform()
        || ranks.iter().any(|r| {
            binary_of(r.node) != binary_of(ranks[0].node)
                || node_env(r.node) != node_env(ranks[0].node)
        });
    if per_rank {
        let mut apps = Vec::new();
        for (r, g) in ranks.iter().zip(&set.gids) {
            let mut e = env.clone();
            e.extend(node_env(r.node));
            if let Some(g) = g
                && !t.env.contains_key("NCCL_IB_GID_INDEX")
            {
                e.insert("NCCL_IB_GID_INDEX".into(), EnvValue::Names(vec![g.part()]));
            }
            apps.push(MpiApp {
                nodes: vec![r.node],
                hosts: vec![r.address],
                env: env_value(&e)?,
                binary: binary_of(r.node),
            });
        }
        return Ok(apps);
    }
    let mut e = env.clone();
    if let Some(r) = ranks.first() {
        e.extend(node_env(r.node));
    }
    Ok(vec![MpiApp {
        nodes: ranks.iter().map(|r| r.node).collect(),
        hosts: ranks.iter().map(|r| r.address).collect(),
        env: env_value(&e)?,
        binary: binary_of(ranks[0].node),
    }])
}

/// The MPI launch of NCCL test `ti` as `job`.
#[allow(clippy::too_many_arguments)]
pub fn nccl_commands(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    res: &Resolution,
    job: &Job,
    ti: usize,
) -> Result<JobCommands, RenderError> {
    let Some(t) = super::tests(plan).get(ti).copied() else {
        return Err(RenderError {
            name: format!("nccl test {ti}"),
            message: "no such NCCL test in the plan".into(),
        });
    };
    let segs = nccl_segments(plan, t);
    let ring = segs
        .iter()
        .any(|s| plan.cables[s.cable].kind == CableKind::Ring);
    let set = RankSet::of(plan, res, t, &segs);
    let env = set.environment(ring, t);
    let binary_of = |n: NodeId| match &plan.node(n).nccl_tests_dir {
        Some(d) => format!("{}/{}", d.trim_end_matches('/'), t.collective.binary()),
        None => t.collective.binary().to_string(),
    };
    let apps = apps(plan, t, &set, &env, &binary_of)?;
    let mut subnets: Vec<String> = segs.iter().map(|s| s.subnet.to_string()).collect();
    subnets.dedup();
    let args: Vec<String> = [
        ("-b", t.min_bytes.clone()),
        ("-e", t.max_bytes.clone()),
        ("-f", t.step_factor.to_string()),
        ("-g", "1".to_string()),
        ("-w", t.warmup.to_string()),
        ("-n", t.iterations.to_string()),
    ]
    .into_iter()
    .flat_map(|(f, v)| [f.to_string(), v])
    .collect();
    let ranks = set.ranks;
    let vars = context! {
        binary => binary_of(ranks.first().map(|r| r.node).unwrap_or(NodeId(0))),
        min_bytes => t.min_bytes.clone(), max_bytes => t.max_bytes.clone(),
        step_factor => t.step_factor, warmup => t.warmup, iterations => t.iterations,
        collective => t.collective.name(),
        hosts => ranks.iter().map(|r| r.address.to_string()).collect::<Vec<_>>(),
        env => env_value(&env)?,
    };
    let launch = MpiLaunch {
        first: ranks.first().map(|r| r.node).unwrap_or(NodeId(0)),
        apps,
        subnets,
        args,
        template: "nccl",
        vars,
        timeout_s: t.timeout_s,
    };
    let w = style.mpi(plan, renderer, &launch)?;
    Ok(JobCommands {
        job: job.id.clone(),
        steps: vec![Step {
            node: w.node,
            host: plan.node(w.node).name.clone(),
            role: Role::Launcher,
            command: w.command,
            script: w.script,
            timeout_s: t.timeout_s,
        }],
        unresolved: set.unresolved,
        ranks,
        nccl_env: env.iter().map(|(k, v)| (k.clone(), v.text())).collect(),
        notes: set.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;
    use crate::topology::Fabric;
    use std::path::Path;

    const PAIR: &str = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
env = { LD_LIBRARY_PATH = "/opt/nccl/lib" }
[[node]]
name = "spark-b"
env = { LD_LIBRARY_PATH = "/opt/nccl/lib" }
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
[[tests.nccl]]
collective = "all_reduce"
"#;

    fn nccl_cmd(gids: [(u32, u32); 2]) -> JobCommands {
        let plan = crate::kinds::load_str(Path::new("p.toml"), PAIR, Path::new("."))
            .unwrap()
            .plan;
        let fabric = Fabric::build(&plan);
        let s = kinds::schedule(&plan);
        let round = s.round(&plan, &fabric, 0).unwrap();
        let mut res = Resolution::from_plan(&plan);
        for (e, f) in res.halves.iter_mut() {
            let (ga, gb) = gids[e.node.0];
            f.device = Some(format!("dev{}{}", e.node.0, e.half));
            f.netdev = Some(format!("net{}{}", e.node.0, e.half));
            f.gid_index = Some(if e.half == "a" { ga } else { gb });
        }
        nccl_commands(
            &plan,
            &Renderer::new(&crate::kinds::templates(), &BTreeMap::new()),
            &crate::launchers::ssh::render::SshStyle,
            &res,
            &round.jobs[0],
            0,
        )
        .unwrap()
    }

    #[test]
    fn uniform_gid_is_one_app_with_node_env() {
        let c = nccl_cmd([(3, 3), (3, 3)]);
        let cmd = &c.steps[0].command;
        assert!(cmd.contains("-np 2 -H 198.51.100.1,198.51.100.2"), "{cmd}");
        assert!(cmd.contains("-x NCCL_IB_GID_INDEX=3"), "{cmd}");
        assert!(cmd.contains("-x LD_LIBRARY_PATH=/opt/nccl/lib"), "{cmd}");
        assert!(
            cmd.contains("-x NCCL_IB_HCA=dev0a,dev0b,dev1a,dev1b"),
            "{cmd}"
        );
        assert!(c.notes.is_empty());
    }

    #[test]
    fn gid_differing_between_ranks_goes_per_rank() {
        let c = nccl_cmd([(3, 3), (5, 5)]);
        let cmd = &c.steps[0].command;
        assert!(
            cmd.contains("-np 1 -H 198.51.100.1") && cmd.contains(" : -np 1 -H 198.51.100.2"),
            "{cmd}"
        );
        assert!(
            cmd.contains("NCCL_IB_GID_INDEX=3") && cmd.contains("NCCL_IB_GID_INDEX=5"),
            "{cmd}"
        );
    }

    #[test]
    fn gid_differing_within_a_rank_is_left_to_nccl_with_a_note() {
        let c = nccl_cmd([(3, 5), (3, 3)]);
        let cmd = &c.steps[0].command;
        assert_eq!(cmd.matches("NCCL_IB_GID_INDEX=").count(), 1, "{cmd}");
        assert!(c.notes[0].contains("spark-a"), "{:?}", c.notes);
    }
}

#[cfg(test)]
mod injection {
    use super::*;
    use crate::kinds;
    use crate::topology::Fabric;
    use std::path::Path;

    /// Regression: a plan `env` value shaped like a discovery placeholder (`<a:b>`) was taken for
    /// one and rendered unquoted, so `$(...)` in it ran on the launching host.
    #[test]
    fn placeholder_shaped_plan_values_are_quoted() {
        let text = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
env = { NODEV = "<y:$(touch /tmp/fabricplan-node-pwned)>" }
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
[[tests.nccl]]
collective = "all_reduce"
env = { FOO = "<x:$(touch /tmp/fabricplan-pwned)>", BAR = "<a:b>;touch /tmp/p;<c:d>" }
"#;
        let plan = crate::kinds::load_str(Path::new("p.toml"), text, Path::new("."))
            .unwrap()
            .plan;
        let fabric = Fabric::build(&plan);
        let s = kinds::schedule(&plan);
        let round = s.round(&plan, &fabric, 0).unwrap();
        // nothing discovered: device names are real placeholders beside the plan's look-alikes
        let res = Resolution::from_plan(&plan);
        let c = nccl_commands(
            &plan,
            &Renderer::new(&crate::kinds::templates(), &BTreeMap::new()),
            &crate::launchers::ssh::render::SshStyle,
            &res,
            &round.jobs[0],
            0,
        )
        .unwrap();
        let cmd = &c.steps[0].command;
        assert!(
            cmd.contains("-x FOO='<x:$(touch /tmp/fabricplan-pwned)>'"),
            "{cmd}"
        );
        assert!(cmd.contains("-x BAR='<a:b>;touch /tmp/p;<c:d>'"), "{cmd}");
        assert!(
            cmd.contains("-x NODEV='<y:$(touch /tmp/fabricplan-node-pwned)>'"),
            "{cmd}"
        );
        // the renderer's own placeholders stay visible as they are
        assert!(cmd.contains("NCCL_IB_HCA=<spark-a.f0.a:device>,"), "{cmd}");
        // and the plan values reach the tool as data under a real shell
        let words = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "printf '%s\\n' -x FOO={} -x BAR={}",
                crate::render::quote("<x:$(touch /tmp/fabricplan-pwned)>").unwrap(),
                crate::render::quote("<a:b>;touch /tmp/p;<c:d>").unwrap()
            ))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&words.stdout);
        assert!(
            out.contains("FOO=<x:$(touch /tmp/fabricplan-pwned)>"),
            "{out}"
        );
    }

    #[test]
    fn discovered_names_in_a_list_are_quoted_each() {
        use crate::render::{NamePart, Placeholder, name_list};
        let v = name_list(
            &[
                NamePart::Known("rocep1s0f0".into()),
                NamePart::Known("a b".into()),
                NamePart::Unknown(Placeholder::new("x.f0.a", "device")),
            ],
            ",",
        )
        .unwrap();
        assert_eq!(v.to_string(), "rocep1s0f0,'a b',<x.f0.a:device>");
        // all known: an ordinary value, left to the formatter's quoting
        let v = name_list(&[NamePart::Known("$(id)".into())], ",").unwrap();
        assert!(!v.is_safe());
    }
}
