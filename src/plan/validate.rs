//! `RawPlan` -> `Plan`: every semantic check, every problem collected, one pass.
//!
//! Checks are grouped by what they look at (names, nodes, cables, addresses, gates, tests,
//! templates). Each problem points at the span it is about, with a help line; where two places
//! disagree both are labelled.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use ipnet::Ipv4Net;
use toml::Spanned;

use super::diag::{Problem, did_you_mean};
use super::model::*;
use super::raw::*;
use crate::gate::GateSpec;
use crate::gate::threshold::{Metric, Threshold, parse_threshold};
use crate::gate::trap::Trap;

pub const FORMAT_VERSION: u32 = 1;

/// Names referenced by other parts of the plan (nodes, switches, cables, rounds, jobs) may use
/// only these characters, so they can appear in commands, paths and selectors unquoted.
pub fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Device and netdev names: as the kernel allows, minus anything a shell would read.
pub fn is_safe_ifname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

struct Ctx<'a> {
    problems: Vec<Problem>,
    base_dir: &'a Path,
    /// Declared node names -> ids (the first declaration of each name), set once the nodes
    /// are read: references resolve in constant time, not by a scan of every node.
    node_ids: HashMap<String, NodeId>,
}

impl Ctx<'_> {
    fn push(&mut self, p: Problem) {
        self.problems.push(p);
    }
}

fn span<T>(s: &Spanned<T>) -> Range<usize> {
    s.span()
}

/// Device and netdev names, wherever the plan gives one (profiles, pins): they reach commands
/// and the fixes shown to operators.
fn ifname_check(ctx: &mut Ctx, v: &Spanned<String>) {
    if !is_safe_ifname(v.get_ref()) {
        ctx.push(
            Problem::error(
                "plan::unsafe-name",
                format!("`{}` is not a device or interface name", v.get_ref()),
            )
            .at(span(v), "not a device name")
            .help("device and netdev names use letters, digits, `-`, `_`, `.` and `:`"),
        );
    }
}

fn name_check(ctx: &mut Ctx, what: &str, name: &Spanned<String>) {
    if !is_safe_name(name.get_ref()) {
        ctx.push(
            Problem::error(
                "plan::unsafe-name",
                format!("{what} name `{}` uses characters outside the safe set", name.get_ref()),
            )
            .at(span(name), "not a safe name")
            .help("names use letters, digits, `-` and `_`, start with a letter or digit, at most 63 characters"),
        );
    }
}

/// Names declared in one scope: a second declaration is reported with both places.
struct Declared {
    what: &'static str,
    /// ` in profile `gb10``, or empty.
    scope: String,
    at: HashMap<String, Range<usize>>,
}

impl Declared {
    fn new(what: &'static str, scope: String) -> Declared {
        Declared {
            what,
            scope,
            at: HashMap::new(),
        }
    }

    /// Check a name's characters and that it is new in its scope; false when declared before.
    fn declare(&mut self, ctx: &mut Ctx, name: &Spanned<String>) -> bool {
        name_check(ctx, self.what, name);
        if let Some(first) = self.at.get(name.get_ref()) {
            ctx.push(
                Problem::error(
                    "plan::duplicate-name",
                    format!(
                        "{} `{}` is declared twice{}",
                        self.what,
                        name.get_ref(),
                        self.scope
                    ),
                )
                .at(span(name), "declared again here")
                .also(first.clone(), "first declared here")
                .help(format!("{} names must be unique{}", self.what, self.scope)),
            );
            return false;
        }
        self.at.insert(name.get_ref().clone(), span(name));
        true
    }
}

/// A keyword from a fixed set, or an error with "did you mean".
fn keyword<T: Copy>(
    ctx: &mut Ctx,
    code: &'static str,
    what: &str,
    value: &Spanned<String>,
    options: &[(&str, T)],
) -> Option<T> {
    if let Some((_, v)) = options.iter().find(|(k, _)| *k == value.get_ref()) {
        return Some(*v);
    }
    let names: Vec<&str> = options.iter().map(|(k, _)| *k).collect();
    let mut p = Problem::error(code, format!("unknown {what} `{}`", value.get_ref()))
        .at(span(value), format!("unknown {what}"));
    p = match did_you_mean(value.get_ref(), names.iter().copied()) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help(format!(
            "one of {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    ctx.push(p);
    None
}

/// Validate a parsed plan. Returns the plan when there is no error; all problems (errors and
/// warnings) in either case.
pub fn validate(
    raw: RawPlan,
    path: &Path,
    text: &str,
    base_dir: &Path,
) -> (Option<Plan>, Vec<Problem>) {
    let mut ctx = Ctx {
        problems: Vec::new(),
        base_dir,
        node_ids: HashMap::new(),
    };
    let plan = build(&mut ctx, raw, path, text);
    let has_error = ctx.problems.iter().any(Problem::is_error);
    (if has_error { None } else { plan }, ctx.problems)
}

fn build(ctx: &mut Ctx, raw: RawPlan, path: &Path, text: &str) -> Option<Plan> {
    if *raw.format_version.get_ref() != FORMAT_VERSION {
        ctx.push(
            Problem::error(
                "plan::format-version",
                format!(
                    "plan format version {} is not supported",
                    raw.format_version.get_ref()
                ),
            )
            .at(span(&raw.format_version), "this version")
            .help(format!(
                "this fabricplan reads `format-version = {FORMAT_VERSION}`"
            )),
        );
    }
    name_check(ctx, "plan", &raw.name);

    let profiles = profiles(ctx, &raw.profile);
    let nodes = nodes(ctx, &raw.node, &profiles);
    ctx.node_ids = nodes.iter().map(|n| (n.name.clone(), n.id)).collect();
    let switches = switches(ctx, &raw.switch);
    let isls = isls(ctx, &raw.isl, &switches, &nodes);
    let mut cabled = Cabled::default();
    let (cables, segments, seg_spans) =
        cables(ctx, &raw.cable, &nodes, &profiles, &switches, &mut cabled);
    subnets_and_addresses(ctx, &segments, &seg_spans);
    ring_crossing(ctx, &raw.cable, &cables, &segments, &nodes, &profiles);
    let gates = gates(ctx, &raw.gates);
    let tests = tests(ctx, &raw.tests, &nodes, &segments);
    let templates = templates(ctx, &raw.templates);
    let capacity = capacity(ctx, raw.capacity.as_ref());
    let sim = sim(ctx, raw.sim.as_ref(), &nodes, &switches);
    let ssh = ssh_defaults(raw.ssh.as_ref(), ctx.base_dir);
    let setup = raw.setup.as_ref().map(|s| Setup {
        packages: s.packages.clone().unwrap_or_else(|| {
            [
                "perftest",
                "rdma-core",
                "ibverbs-utils",
                "openmpi-bin",
                "libnccl2",
                "libnccl-dev",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        }),
        build_nccl_tests: s.build_nccl_tests.unwrap_or(false),
        nccl_tests_repo: s.nccl_tests_repo.clone(),
    });

    Some(Plan {
        name: raw.name.into_inner(),
        description: raw.description,
        path: path.to_path_buf(),
        text: text.to_string(),
        ssh,
        profiles,
        nodes,
        switches,
        isls,
        cables,
        segments,
        gates,
        tests,
        templates,
        capacity,
        sim,
        setup,
    })
}

fn ssh_defaults(raw: Option<&RawSshDefaults>, base: &Path) -> SshDefaults {
    let Some(r) = raw else {
        return SshDefaults {
            connect_timeout_s: 10,
            ..SshDefaults::default()
        };
    };
    SshDefaults {
        user: r.user.clone(),
        known_hosts: r.known_hosts.as_ref().map(|p| resolve_path(base, p)),
        config: r.config.as_ref().map(|p| resolve_path(base, p)),
        connect_timeout_s: r.connect_timeout_s.unwrap_or(10),
    }
}

fn resolve_path(base: &Path, p: &str) -> PathBuf {
    if let Some(rest) = p.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

fn profiles(ctx: &mut Ctx, raw: &[RawProfile]) -> Vec<Profile> {
    let mut out = vec![Profile::gb10()];
    let mut seen = Declared::new("profile", String::new());
    for p in raw {
        let name = p.name.get_ref().clone();
        if name == "gb10" {
            ctx.push(
                Problem::error("plan::duplicate-name", "profile `gb10` is built in")
                    .at(span(&p.name), "redefines the built-in profile")
                    .help("give the site profile another name"),
            );
            continue;
        }
        if !seen.declare(ctx, &p.name) {
            continue;
        }
        let mut ports = Vec::new();
        let mut port_names = Declared::new("port", format!(" in profile `{name}`"));
        for port in &p.port {
            if !port_names.declare(ctx, &port.name) {
                continue;
            }
            let mut halves = Vec::new();
            let mut half_names =
                Declared::new("half", format!(" on port `{}`", port.name.get_ref()));
            for h in &port.half {
                half_names.declare(ctx, &h.name);
                for v in [&h.device, &h.netdev] {
                    ifname_check(ctx, v);
                }
                halves.push(ProfileHalf {
                    name: h.name.get_ref().clone(),
                    device: h.device.get_ref().clone(),
                    netdev: h.netdev.get_ref().clone(),
                });
            }
            ports.push(ProfilePort {
                name: port.name.get_ref().clone(),
                halves,
            });
        }
        out.push(Profile {
            name,
            half_rate_gbps: p.half_rate_gbps,
            port_rate_gbps: p.port_rate_gbps,
            ports,
        });
    }
    out
}

fn nodes(ctx: &mut Ctx, raw: &[RawNode], profiles: &[Profile]) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    let mut seen = Declared::new("node", String::new());
    for n in raw {
        let name = n.name.get_ref().clone();
        if !seen.declare(ctx, &n.name) {
            continue;
        }
        let profile = match &n.profile {
            None => ProfileId(0),
            Some(p) => match profiles.iter().position(|x| &x.name == p.get_ref()) {
                Some(i) => ProfileId(i),
                None => {
                    let mut pr = Problem::error(
                        "plan::unknown-profile",
                        format!(
                            "node `{name}` names profile `{}`, which is not declared",
                            p.get_ref()
                        ),
                    )
                    .at(span(p), "unknown profile");
                    pr = match did_you_mean(p.get_ref(), profiles.iter().map(|x| x.name.as_str())) {
                        Some(s) => pr.help(format!("did you mean `{s}`?")),
                        None => pr.help("use `gb10` or declare the profile under `[[profile]]`"),
                    };
                    ctx.push(pr);
                    ProfileId(0)
                }
            },
        };
        let prof = &profiles[profile.0];
        let ssh = match &n.ssh {
            None => SshTarget::Alias(name.clone()),
            Some(s) => match (&s.alias, &s.host) {
                (Some(a), None) => SshTarget::Alias(a.clone()),
                (None, Some(h)) => SshTarget::Host {
                    host: h.clone(),
                    user: s.user.clone(),
                    port: s.port,
                    identity_file: s
                        .identity_file
                        .as_ref()
                        .map(|p| resolve_path(ctx.base_dir, p)),
                },
                _ => {
                    ctx.push(
                        Problem::error(
                            "plan::ssh-target",
                            format!("node `{name}` must give exactly one of `ssh.alias` and `ssh.host`"),
                        )
                        .at(span(&n.name), "this node")
                        .help("`ssh = { alias = \"spark-a\" }` for an ssh_config alias, or `ssh = { host = \"...\", user = \"...\" }`"),
                    );
                    SshTarget::Alias(name.clone())
                }
            },
        };
        if let SshTarget::Host { host, .. } | SshTarget::Alias(host) = &ssh
            && (host.starts_with('-') || host.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            ctx.push(
                Problem::error(
                    "plan::ssh-target",
                    format!("node `{name}` has an unusable SSH host `{host}`"),
                )
                .at(span(&n.name), "this node")
                .help("a host name, address or alias: no spaces, not starting with `-`"),
            );
        }
        for k in n.env.keys() {
            if !(k
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            {
                ctx.push(
                    Problem::error("plan::env-name", format!("node `{name}` sets environment variable `{k}`, which is not a valid name"))
                        .at(span(&n.name), "this node")
                        .help("environment variable names use letters, digits and `_`"),
                );
            }
        }
        let mut pins = BTreeMap::new();
        for (key, pin) in &n.pin {
            let (port, half) = key.get_ref().split_once('.').unwrap_or((key.get_ref(), ""));
            if prof.half(port, half).is_none() {
                let all: Vec<String> = prof
                    .ports
                    .iter()
                    .flat_map(|p| {
                        p.halves
                            .iter()
                            .map(move |h| format!("{}.{}", p.name, h.name))
                    })
                    .collect();
                let mut pr = Problem::error(
                    "plan::unknown-half",
                    format!(
                        "node `{name}` pins `{}`, which is not a half of profile `{}`",
                        key.get_ref(),
                        prof.name
                    ),
                )
                .at(span(key), "no such port.half");
                pr = match did_you_mean(key.get_ref(), all.iter().map(String::as_str)) {
                    Some(s) => pr.help(format!("did you mean `{s}`?")),
                    None => pr.help(format!(
                        "pins are keyed `PORT.HALF`: one of {}",
                        all.join(", ")
                    )),
                };
                ctx.push(pr);
                continue;
            }
            for v in [&pin.device, &pin.netdev].into_iter().flatten() {
                ifname_check(ctx, v);
            }
            pins.insert(
                (port.to_string(), half.to_string()),
                Pin {
                    device: pin.device.as_ref().map(|s| s.get_ref().clone()),
                    netdev: pin.netdev.as_ref().map(|s| s.get_ref().clone()),
                    gid_index: pin.gid_index,
                },
            );
        }
        out.push(Node {
            id: NodeId(out.len()),
            name,
            ssh,
            profile,
            env: n.env.clone(),
            nccl_tests_dir: n.nccl_tests_dir.clone(),
            pins,
        });
    }
    out
}

fn switches(ctx: &mut Ctx, raw: &[RawSwitch]) -> Vec<Switch> {
    let mut out: Vec<Switch> = Vec::new();
    let mut seen = Declared::new("switch", String::new());
    for s in raw {
        let name = s.name.get_ref().clone();
        if !seen.declare(ctx, &s.name) {
            continue;
        }
        if ctx.node_ids.contains_key(&name) {
            ctx.push(
                Problem::error(
                    "plan::duplicate-name",
                    format!("switch `{name}` has the name of a node"),
                )
                .at(span(&s.name), "also a node name")
                .help("nodes and switches share one namespace: rename one"),
            );
        }
        out.push(Switch {
            id: SwitchId(out.len()),
            name,
            description: s.description.clone(),
        });
    }
    out
}

fn switch_ref(
    ctx: &mut Ctx,
    r: &Spanned<String>,
    switches: &[Switch],
    nodes: &[Node],
    what: &str,
) -> Option<SwitchId> {
    if let Some(s) = switches.iter().find(|s| &s.name == r.get_ref()) {
        return Some(s.id);
    }
    let mut p = if nodes.iter().any(|n| &n.name == r.get_ref()) {
        Problem::error(
            "plan::not-a-switch",
            format!("{what} `{}` is a node, not a switch", r.get_ref()),
        )
        .at(span(r), "a node")
    } else {
        Problem::error(
            "plan::unknown-switch",
            format!("{what} `{}` is not a declared switch", r.get_ref()),
        )
        .at(span(r), "unknown switch")
    };
    let is_node = nodes.iter().any(|n| &n.name == r.get_ref());
    let declared = switches
        .iter()
        .map(|s| format!("`{}`", s.name))
        .collect::<Vec<_>>()
        .join(", ");
    p = match did_you_mean(r.get_ref(), switches.iter().map(|s| s.name.as_str())) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None if is_node && declared.is_empty() => p.help("name a switch declared under `[[switch]]`; nodes land on switches through a `switched` cable's `attach`"),
        None if is_node => p.help(format!("name a switch ({declared}); nodes land on switches through a `switched` cable's `attach`")),
        None => p.help("declare it under `[[switch]]`"),
    };
    ctx.push(p);
    None
}

fn isls(ctx: &mut Ctx, raw: &[RawIsl], switches: &[Switch], nodes: &[Node]) -> Vec<Isl> {
    let mut out = Vec::new();
    for isl in raw {
        let ends = isl.ends.get_ref();
        if ends.len() != 2 {
            ctx.push(
                Problem::error(
                    "plan::isl-ends",
                    format!(
                        "an ISL joins exactly two switches, this one lists {}",
                        ends.len()
                    ),
                )
                .at(span(&isl.ends), "here")
                .help("`ends = [\"sw-a\", \"sw-b\"]`"),
            );
            continue;
        }
        let a = switch_ref(ctx, &ends[0], switches, nodes, "ISL end");
        let b = switch_ref(ctx, &ends[1], switches, nodes, "ISL end");
        let cap = *isl.capacity_gbps.get_ref();
        if !(cap.is_finite() && cap > 0.0) {
            ctx.push(
                Problem::error(
                    "plan::isl-capacity",
                    "an ISL's capacity must be a positive number of Gb/s",
                )
                .at(span(&isl.capacity_gbps), "here")
                .help("capacity per direction, e.g. `capacity-gbps = 200`"),
            );
        }
        if let (Some(a), Some(b)) = (a, b) {
            if a == b {
                ctx.push(
                    Problem::error(
                        "plan::isl-ends",
                        format!("ISL joins switch `{}` to itself", switches[a.0].name),
                    )
                    .at(span(&isl.ends), "same switch twice")
                    .help("an ISL joins two different switches"),
                );
                continue;
            }
            let name = isl
                .name
                .clone()
                .unwrap_or_else(|| format!("{}-{}", switches[a.0].name, switches[b.0].name));
            out.push(Isl {
                id: IslId(out.len()),
                name,
                a,
                b,
                capacity_gbps: cap,
            });
        }
    }
    out
}

/// Where each endpoint was cabled, to catch a half cabled twice.
#[derive(Default)]
struct Cabled {
    at: HashMap<Endpoint, Range<usize>>,
}

fn node_ref(
    ctx: &mut Ctx,
    name: &str,
    at: Range<usize>,
    nodes: &[Node],
    what: &str,
) -> Option<NodeId> {
    if let Some(id) = ctx.node_ids.get(name) {
        return Some(*id);
    }
    let mut p = Problem::error(
        "plan::unknown-node",
        format!("{what} names node `{name}`, which is not declared"),
    )
    .at(at, "unknown node");
    p = match did_you_mean(name, nodes.iter().map(|n| n.name.as_str())) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help("declare it under `[[node]]`"),
    };
    ctx.push(p);
    None
}

fn port_check(
    ctx: &mut Ctx,
    node: &Node,
    profiles: &[Profile],
    port: &str,
    at: Range<usize>,
) -> bool {
    let prof = &profiles[node.profile.0];
    if prof.port(port).is_some() {
        return true;
    }
    let mut p = Problem::error(
        "plan::unknown-port",
        format!(
            "node `{}` has no port `{port}` (profile `{}`)",
            node.name, prof.name
        ),
    )
    .at(at, "no such port");
    p = match did_you_mean(port, prof.ports.iter().map(|p| p.name.as_str())) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help(format!(
            "profile `{}` has ports {}",
            prof.name,
            prof.ports
                .iter()
                .map(|p| format!("`{}`", p.name))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    ctx.push(p);
    false
}

/// `NODE.PORT` -> (node, port)
fn node_port(
    ctx: &mut Ctx,
    r: &Spanned<String>,
    nodes: &[Node],
    profiles: &[Profile],
) -> Option<(NodeId, String)> {
    let Some((node, port)) = r.get_ref().split_once('.') else {
        ctx.push(
            Problem::error(
                "plan::port-ref",
                format!("`{}` does not name a node port", r.get_ref()),
            )
            .at(span(r), "expected `NODE.PORT`")
            .help("write the node and its port, e.g. `spark-a.f0`"),
        );
        return None;
    };
    let id = node_ref(ctx, node, span(r), nodes, "cable end")?;
    if !port_check(ctx, &nodes[id.0], profiles, port, span(r)) {
        return None;
    }
    Some((id, port.to_string()))
}

fn halves_for(
    ctx: &mut Ctx,
    raw: Option<&Vec<Spanned<String>>>,
    ends: &[(NodeId, String)],
    nodes: &[Node],
    profiles: &[Profile],
) -> Vec<String> {
    // default: every half the first end's port has
    let default: Vec<String> = ends
        .first()
        .and_then(|(n, p)| profiles[nodes[n.0].profile.0].port(p))
        .map(|p| p.halves.iter().map(|h| h.name.clone()).collect())
        .unwrap_or_default();
    let Some(raw) = raw else {
        return default;
    };
    let mut out = Vec::new();
    for h in raw {
        let mut ok = true;
        for (n, p) in ends {
            let prof = &profiles[nodes[n.0].profile.0];
            if prof.half(p, h.get_ref()).is_none() {
                ok = false;
                let halves: Vec<&str> = prof
                    .port(p)
                    .map(|pp| pp.halves.iter().map(|x| x.name.as_str()).collect())
                    .unwrap_or_default();
                let mut pr = Problem::error(
                    "plan::unknown-half",
                    format!(
                        "port `{}.{p}` has no half `{}`",
                        nodes[n.0].name,
                        h.get_ref()
                    ),
                )
                .at(span(h), "no such half");
                pr = match did_you_mean(h.get_ref(), halves.iter().copied()) {
                    Some(s) => pr.help(format!("did you mean `{s}`?")),
                    None => pr.help(format!("its halves are {}", halves.join(", "))),
                };
                ctx.push(pr);
                break;
            }
        }
        if ok {
            if out.contains(h.get_ref()) {
                ctx.push(
                    Problem::error(
                        "plan::duplicate-name",
                        format!("half `{}` is listed twice", h.get_ref()),
                    )
                    .at(span(h), "again here")
                    .help("list each half once"),
                );
            } else {
                out.push(h.get_ref().clone());
            }
        }
    }
    out
}

fn mark_cabled(
    ctx: &mut Ctx,
    cabled: &mut Cabled,
    e: Endpoint,
    at: Range<usize>,
    nodes: &[Node],
) -> bool {
    if let Some(first) = cabled.at.get(&e) {
        ctx.push(
            Problem::error(
                "plan::cabled-twice",
                format!(
                    "`{}.{}.{}` is cabled twice",
                    nodes[e.node.0].name, e.port, e.half
                ),
            )
            .at(at, "cabled again here")
            .also(first.clone(), "first cabled here")
            .help("a port half carries one link: remove one of the two cables or use another port"),
        );
        return false;
    }
    cabled.at.insert(e, at);
    true
}

fn parse_net(ctx: &mut Ctx, s: &Spanned<String>) -> Option<Ipv4Net> {
    match s.get_ref().parse::<Ipv4Net>() {
        Ok(n) => {
            if n.network() != n.addr() {
                ctx.push(
                    Problem::warning(
                        "plan::subnet-host-bits",
                        format!(
                            "subnet `{}` has host bits set; it means `{}`",
                            s.get_ref(),
                            n.trunc()
                        ),
                    )
                    .at(span(s), "host bits set")
                    .help(format!("write `{}`", n.trunc())),
                );
            }
            Some(n.trunc())
        }
        Err(_) => {
            ctx.push(
                Problem::error(
                    "plan::subnet",
                    format!("`{}` is not an IPv4 subnet", s.get_ref()),
                )
                .at(span(s), "not ADDRESS/PREFIX")
                .help("write a subnet such as `198.51.100.0/30`"),
            );
            None
        }
    }
}

fn nth_host(net: Ipv4Net, n: usize) -> Option<Ipv4Addr> {
    net.hosts().nth(n)
}

type SegSpans = Vec<(Range<usize>, BTreeMap<usize, Range<usize>>)>;

fn cables(
    ctx: &mut Ctx,
    raw: &[RawCable],
    nodes: &[Node],
    profiles: &[Profile],
    switches: &[Switch],
    cabled: &mut Cabled,
) -> (Vec<Cable>, Vec<Segment>, SegSpans) {
    let mut out = Vec::new();
    let mut segments: Vec<Segment> = Vec::new();
    // per segment: span of its subnet, and spans of explicit addresses by member index
    let mut seg_spans: SegSpans = Vec::new();
    let mut names = Declared::new("cable", String::new());
    for (ci, c) in raw.iter().enumerate() {
        let kinds = [
            ("direct", CableKind::Direct),
            ("ring", CableKind::Ring),
            ("switched", CableKind::Switched),
        ];
        let Some(kind) = keyword(ctx, "plan::cable-kind", "cable kind", &c.kind, &kinds) else {
            continue;
        };
        let name = match &c.name {
            Some(n) => {
                names.declare(ctx, n);
                n.get_ref().clone()
            }
            None => format!("{}{}", c.kind.get_ref(), ci + 1),
        };
        let kind_field =
            |field: &str| format!("a `{}` cable does not take `{field}`", c.kind.get_ref());
        // fields that do not belong to the kind
        let stray: Vec<(&str, bool)> = vec![
            ("ends", c.ends.is_some() && kind != CableKind::Direct),
            ("nodes", c.nodes.is_some() && kind != CableKind::Ring),
            ("ports", c.ports.is_some() && kind != CableKind::Ring),
            ("attach", c.attach.is_some() && kind != CableKind::Switched),
            (
                "subnet-pool",
                c.subnet_pool.is_some() && kind != CableKind::Ring,
            ),
            (
                "link-subnets",
                c.link_subnets.is_some() && kind != CableKind::Ring,
            ),
        ];
        for (field, bad) in stray {
            if bad {
                ctx.push(
                    Problem::error("plan::cable-field", kind_field(field))
                        .at(span(&c.kind), "this kind")
                        .help("direct: `ends`; ring: `nodes` (and `ports`, `subnet-pool`); switched: `attach`"),
                );
            }
        }
        let mut cable = Cable {
            name: name.clone(),
            kind,
            segments: Vec::new(),
        };
        let first_seg = segments.len();
        match kind {
            CableKind::Direct => direct_cable(
                ctx,
                c,
                &name,
                ci,
                nodes,
                profiles,
                cabled,
                &mut segments,
                &mut seg_spans,
            ),
            CableKind::Ring => ring_cable(
                ctx,
                c,
                &name,
                ci,
                nodes,
                profiles,
                cabled,
                &mut segments,
                &mut seg_spans,
            ),
            CableKind::Switched => switched_cable(
                ctx,
                c,
                &name,
                ci,
                nodes,
                profiles,
                switches,
                cabled,
                &mut segments,
                &mut seg_spans,
            ),
        }
        cable.segments = (first_seg..segments.len()).map(SegmentId).collect();
        out.push(cable);
    }
    (out, segments, seg_spans)
}

/// Explicit addresses of a cable: `{ "NODE" | "NODE.PORT" = { HALF = "ADDR" } }`.
fn explicit_address<'a>(
    c: &'a RawCable,
    node: &str,
    port: &str,
    half: &str,
) -> Option<&'a Spanned<String>> {
    if c.addresses.is_empty() {
        return None;
    }
    // keys are unique and `NODE` sorts before `NODE.PORT`: look both up, in that order
    c.addresses.get(node).and_then(|v| v.get(half)).or_else(|| {
        c.addresses
            .get(format!("{node}.{port}").as_str())
            .and_then(|v| v.get(half))
    })
}

fn check_address_keys(ctx: &mut Ctx, c: &RawCable, nodes: &[Node]) {
    for (k, v) in &c.addresses {
        let node = k.get_ref().split('.').next().unwrap_or("");
        node_ref(ctx, node, span(k), nodes, "address");
        for a in v.values() {
            if a.get_ref().parse::<Ipv4Addr>().is_err() {
                ctx.push(
                    Problem::error(
                        "plan::address",
                        format!("`{}` is not an IPv4 address", a.get_ref()),
                    )
                    .at(span(a), "not an address")
                    .help("write a dotted quad such as `198.51.100.1`"),
                );
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn member_address(
    ctx: &mut Ctx,
    c: &RawCable,
    nodes: &[Node],
    e: &Endpoint,
    subnet: Ipv4Net,
    index: usize,
    spans: &mut BTreeMap<usize, Range<usize>>,
    member_idx: usize,
    at: Range<usize>,
) -> Ipv4Addr {
    let node = &nodes[e.node.0].name;
    if let Some(a) = explicit_address(c, node, &e.port, &e.half)
        && let Ok(addr) = a.get_ref().parse::<Ipv4Addr>()
    {
        spans.insert(member_idx, span(a));
        return addr;
    }
    match nth_host(subnet, index) {
        Some(a) => a,
        None => {
            ctx.push(
                Problem::error(
                    "plan::subnet-too-small",
                    format!(
                        "subnet `{subnet}` has no room for `{node}.{}.{}`",
                        e.port, e.half
                    ),
                )
                .at(at, "subnet too small")
                .help("use a larger subnet or give addresses explicitly"),
            );
            Ipv4Addr::UNSPECIFIED
        }
    }
}

/// A segment about to be added: its name, half, subnet, and where each end lands.
struct NewSegment {
    name: String,
    half: String,
    subnet: Ipv4Net,
    subnet_span: Range<usize>,
    /// (end, where the plan names it, its switch)
    ends: Vec<(Endpoint, Range<usize>, Option<SwitchId>)>,
}

/// Add a segment: mark each end cabled (a half cabled twice is an error), give each its
/// address (explicit or derived from the subnet, in end order), and record the spans.
#[allow(clippy::too_many_arguments)]
fn push_segment(
    ctx: &mut Ctx,
    c: &RawCable,
    ci: usize,
    nodes: &[Node],
    cabled: &mut Cabled,
    segments: &mut Vec<Segment>,
    seg_spans: &mut SegSpans,
    seg: NewSegment,
) {
    let mut members = Vec::new();
    let mut spans = BTreeMap::new();
    for (i, (e, at, switch)) in seg.ends.into_iter().enumerate() {
        mark_cabled(ctx, cabled, e.clone(), at, nodes);
        let address = member_address(
            ctx,
            c,
            nodes,
            &e,
            seg.subnet,
            i,
            &mut spans,
            i,
            seg.subnet_span.clone(),
        );
        members.push(Member {
            endpoint: e,
            address,
            switch,
        });
    }
    segments.push(Segment {
        id: SegmentId(segments.len()),
        name: seg.name,
        cable: ci,
        half: seg.half,
        subnet: seg.subnet,
        members,
    });
    seg_spans.push((seg.subnet_span, spans));
}

#[allow(clippy::too_many_arguments)]
fn direct_cable(
    ctx: &mut Ctx,
    c: &RawCable,
    name: &str,
    ci: usize,
    nodes: &[Node],
    profiles: &[Profile],
    cabled: &mut Cabled,
    segments: &mut Vec<Segment>,
    seg_spans: &mut SegSpans,
) {
    let Some(ends) = &c.ends else {
        ctx.push(
            Problem::error("plan::cable-ends", "a direct cable needs `ends`")
                .at(span(&c.kind), "this cable")
                .help("`ends = [\"spark-a.f0\", \"spark-b.f0\"]`"),
        );
        return;
    };
    if ends.get_ref().len() != 2 {
        ctx.push(
            Problem::error(
                "plan::cable-ends",
                format!(
                    "a direct cable has two ends, this one lists {}",
                    ends.get_ref().len()
                ),
            )
            .at(span(ends), "here")
            .help("`ends = [\"spark-a.f0\", \"spark-b.f0\"]`"),
        );
        return;
    }
    check_address_keys(ctx, c, nodes);
    let resolved: Vec<Option<(NodeId, String)>> = ends
        .get_ref()
        .iter()
        .map(|e| node_port(ctx, e, nodes, profiles))
        .collect();
    let (Some(a), Some(b)) = (resolved[0].clone(), resolved[1].clone()) else {
        return;
    };
    if a.0 == b.0 {
        ctx.push(
            Problem::error(
                "plan::cable-ends",
                format!(
                    "direct cable `{name}` joins node `{}` to itself",
                    nodes[a.0.0].name
                ),
            )
            .at(span(ends), "both ends on one node")
            .help("a direct cable joins two nodes"),
        );
        return;
    }
    let halves = halves_for(
        ctx,
        c.halves.as_ref(),
        &[a.clone(), b.clone()],
        nodes,
        profiles,
    );
    let subnets = per_half_subnets(ctx, c, &halves, name);
    for half in &halves {
        let Some((subnet, sub_span)) = subnets.get(half).cloned() else {
            continue;
        };
        let seg_ends = [a.clone(), b.clone()]
            .into_iter()
            .zip(ends.get_ref())
            .map(|((node, port), raw_end)| {
                let e = Endpoint {
                    node,
                    port,
                    half: half.clone(),
                };
                (e, span(raw_end), None)
            })
            .collect();
        push_segment(
            ctx,
            c,
            ci,
            nodes,
            cabled,
            segments,
            seg_spans,
            NewSegment {
                name: format!("{name}.{half}"),
                half: half.clone(),
                subnet,
                subnet_span: sub_span,
                ends: seg_ends,
            },
        );
    }
}

fn per_half_subnets(
    ctx: &mut Ctx,
    c: &RawCable,
    halves: &[String],
    name: &str,
) -> BTreeMap<String, (Ipv4Net, Range<usize>)> {
    let mut out = BTreeMap::new();
    match &c.subnets {
        None => {
            ctx.push(
                Problem::error("plan::subnet-missing", format!("cable `{name}` gives no subnets"))
                    .at(span(&c.kind), "this cable")
                    .help("one subnet per half: `subnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }`"),
            );
        }
        Some(s) => {
            let map = s.get_ref();
            {
                for (h, net) in map {
                    if !halves.contains(h.get_ref()) {
                        ctx.push(
                            Problem::error("plan::unknown-half", format!("cable `{name}` gives a subnet for half `{}`, which it does not carry", h.get_ref()))
                                .at(span(h), "not a carried half")
                                .help(format!("this cable carries {}", halves.join(", "))),
                        );
                        continue;
                    }
                    if let Some(n) = parse_net(ctx, net) {
                        out.insert(h.get_ref().clone(), (n, span(net)));
                    }
                }
                for h in halves {
                    if !map.keys().any(|k| k.get_ref() == h) {
                        ctx.push(
                            Problem::error(
                                "plan::subnet-missing",
                                format!("cable `{name}` gives no subnet for half `{h}`"),
                            )
                            .at(span(s), "half missing")
                            .help(format!(
                                "add `{h} = \"ADDRESS/PREFIX\"`: each half is its own subnet"
                            )),
                        );
                    }
                }
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn ring_cable(
    ctx: &mut Ctx,
    c: &RawCable,
    name: &str,
    ci: usize,
    nodes: &[Node],
    profiles: &[Profile],
    cabled: &mut Cabled,
    segments: &mut Vec<Segment>,
    seg_spans: &mut SegSpans,
) {
    let Some(list) = &c.nodes else {
        ctx.push(
            Problem::error("plan::ring-nodes", "a ring cable needs `nodes`")
                .at(span(&c.kind), "this cable")
                .help("`nodes = [\"spark-1\", \"spark-2\", \"spark-3\"]`: node[i].f0 faces node[i+1].f1"),
        );
        return;
    };
    let n = list.get_ref().len();
    if n < 3 {
        ctx.push(
            Problem::error(
                "plan::ring-too-small",
                format!("a ring needs at least 3 nodes, this one has {n}"),
            )
            .at(span(list), "too few nodes")
            .help("two nodes are a `direct` cable"),
        );
        return;
    }
    check_address_keys(ctx, c, nodes);
    let ids: Vec<Option<NodeId>> = list
        .get_ref()
        .iter()
        .map(|r| node_ref(ctx, r.get_ref(), span(r), nodes, "ring"))
        .collect();
    let mut seen = BTreeMap::new();
    for (r, id) in list.get_ref().iter().zip(&ids) {
        if let Some(id) = id
            && let Some(first) = seen.insert(*id, span(r))
        {
            ctx.push(
                Problem::error(
                    "plan::ring-nodes",
                    format!("node `{}` appears twice in the ring", r.get_ref()),
                )
                .at(span(r), "again here")
                .also(first, "first here")
                .help("each node appears once; the ring wraps from the last to the first"),
            );
            return;
        }
    }
    if ids.iter().any(Option::is_none) {
        return;
    }
    let ids: Vec<NodeId> = ids.into_iter().flatten().collect();
    let (out_port, in_port, ports_span) = match &c.ports {
        None => ("f0".to_string(), "f1".to_string(), span(list)),
        Some(p) if p.get_ref().len() == 2 => (
            p.get_ref()[0].get_ref().clone(),
            p.get_ref()[1].get_ref().clone(),
            span(p),
        ),
        Some(p) => {
            ctx.push(
                Problem::error(
                    "plan::ring-ports",
                    "a ring's `ports` names the outgoing and the incoming port",
                )
                .at(span(p), "expected two ports")
                .help("`ports = [\"f0\", \"f1\"]`: node[i].f0 faces node[i+1].f1"),
            );
            return;
        }
    };
    for id in &ids {
        if !port_check(ctx, &nodes[id.0], profiles, &out_port, ports_span.clone())
            || !port_check(ctx, &nodes[id.0], profiles, &in_port, ports_span.clone())
        {
            return;
        }
    }
    if out_port == in_port {
        // every node's one port would face both neighbours: two cables in one cage
        ctx.push(
            Problem::error(
                "plan::ring-ports",
                format!("ring `{name}` uses `{out_port}` both ways: every node's `{out_port}` would carry two cables"),
            )
            .at(ports_span.clone(), "same port both ways")
            .help("a ring node's outgoing port faces the next node and its incoming port the previous one: `ports = [\"f0\", \"f1\"]`"),
        );
        return;
    }
    let pairs: Vec<(NodeId, String)> = ids.iter().map(|id| (*id, out_port.clone())).collect();
    let halves = halves_for(ctx, c.halves.as_ref(), &pairs, nodes, profiles);
    // subnets: an explicit list (one per link and half, in order) or carved from a pool
    let needed = n * halves.len();
    let mut nets: Vec<(Ipv4Net, Range<usize>)> = Vec::new();
    if let Some(s) = &c.subnets {
        ctx.push(
            Problem::error("plan::subnet-count", format!("ring `{name}` needs a subnet for every link, not one per half"))
                .at(span(s), "one per half")
                .help("give `link-subnets` (link 1 a, link 1 b, ...) or `subnet-pool = \"198.19.0.0/16\"`"),
        );
        return;
    }
    match (&c.link_subnets, &c.subnet_pool) {
        (Some(s), None) => {
            let list = s.get_ref();
            if list.len() != needed {
                ctx.push(
                    Problem::error("plan::subnet-count", format!("ring `{name}` has {n} links x {} halves = {needed} subnets to give, the list has {}", halves.len(), list.len()))
                        .at(span(s), "wrong count")
                        .help("list them in order: link 1 half a, link 1 half b, link 2 half a, ... (link i joins node i to node i+1), or use `subnet-pool`"),
                );
                return;
            }
            for net in list {
                if let Some(x) = parse_net(ctx, net) {
                    nets.push((x, span(net)));
                }
            }
            if nets.len() != needed {
                return;
            }
        }
        (None, Some(pool)) => {
            let Some(pool_net) = parse_net(ctx, pool) else {
                return;
            };
            let prefix = c.pool_prefix.unwrap_or(24);
            match pool_net.subnets(prefix) {
                Ok(iter) => {
                    nets = iter.take(needed).map(|x| (x, span(pool))).collect();
                    if nets.len() < needed {
                        ctx.push(
                            Problem::error(
                                "plan::subnet-pool",
                                format!(
                                    "pool `{pool_net}` holds fewer than {needed} /{prefix} subnets"
                                ),
                            )
                            .at(span(pool), "pool too small")
                            .help("use a larger pool or a longer `pool-prefix`"),
                        );
                        return;
                    }
                }
                Err(_) => {
                    ctx.push(
                        Problem::error(
                            "plan::subnet-pool",
                            format!("`pool-prefix = {prefix}` does not fit in `{pool_net}`"),
                        )
                        .at(span(pool), "here")
                        .help("the pool prefix must be longer than the pool's own"),
                    );
                    return;
                }
            }
        }
        (Some(s), Some(_)) => {
            ctx.push(
                Problem::error(
                    "plan::subnet-pool",
                    format!("ring `{name}` gives both `link-subnets` and `subnet-pool`"),
                )
                .at(span(s), "here")
                .help("keep one of them"),
            );
            return;
        }
        (None, None) => {
            ctx.push(
                Problem::error("plan::subnet-missing", format!("ring `{name}` gives no subnets"))
                    .at(span(list), "this ring")
                    .help("each link is its own subnet: `subnet-pool = \"198.19.0.0/16\"` or `link-subnets = [...]`"),
            );
            return;
        }
    }
    let node_spans: Vec<Range<usize>> = list.get_ref().iter().map(span).collect();
    for i in 0..n {
        let j = (i + 1) % n;
        for (hi, half) in halves.iter().enumerate() {
            let (subnet, sub_span) = nets[i * halves.len() + hi].clone();
            let ends = [
                (
                    Endpoint {
                        node: ids[i],
                        port: out_port.clone(),
                        half: half.clone(),
                    },
                    node_spans[i].clone(),
                ),
                (
                    Endpoint {
                        node: ids[j],
                        port: in_port.clone(),
                        half: half.clone(),
                    },
                    node_spans[j].clone(),
                ),
            ];
            push_segment(
                ctx,
                c,
                ci,
                nodes,
                cabled,
                segments,
                seg_spans,
                NewSegment {
                    name: format!("{name}.l{}.{half}", i + 1),
                    half: half.clone(),
                    subnet,
                    subnet_span: sub_span,
                    ends: ends.into_iter().map(|(e, at)| (e, at, None)).collect(),
                },
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn switched_cable(
    ctx: &mut Ctx,
    c: &RawCable,
    name: &str,
    ci: usize,
    nodes: &[Node],
    profiles: &[Profile],
    switches: &[Switch],
    cabled: &mut Cabled,
    segments: &mut Vec<Segment>,
    seg_spans: &mut SegSpans,
) {
    let Some(attach) = &c.attach else {
        ctx.push(
            Problem::error("plan::attach", "a switched cable needs `attach`")
                .at(span(&c.kind), "this cable")
                .help("`attach = { \"gb10-01.f0\" = \"sw-a\", \"gb10-04.f0\" = \"sw-b\" }`"),
        );
        return;
    };
    check_address_keys(ctx, c, nodes);
    let mut att: Vec<((NodeId, String), SwitchId, Range<usize>)> = Vec::new();
    for (port, sw) in attach {
        let np = node_port(ctx, port, nodes, profiles);
        let s = switch_ref(ctx, sw, switches, nodes, "attachment switch");
        if let (Some(np), Some(s)) = (np, s) {
            att.push((np, s, span(port)));
        }
    }
    if att.is_empty() {
        return;
    }
    let ends: Vec<(NodeId, String)> = att.iter().map(|(np, _, _)| np.clone()).collect();
    let halves = halves_for(ctx, c.halves.as_ref(), &ends, nodes, profiles);
    let subnets = per_half_subnets(ctx, c, &halves, name);
    for half in &halves {
        let Some((subnet, sub_span)) = subnets.get(half).cloned() else {
            continue;
        };
        let seg_ends = att
            .iter()
            .map(|((node, port), sw, at)| {
                let e = Endpoint {
                    node: *node,
                    port: port.clone(),
                    half: half.clone(),
                };
                (e, at.clone(), Some(*sw))
            })
            .collect();
        push_segment(
            ctx,
            c,
            ci,
            nodes,
            cabled,
            segments,
            seg_spans,
            NewSegment {
                name: format!("{name}.{half}"),
                half: half.clone(),
                subnet,
                subnet_span: sub_span,
                ends: seg_ends,
            },
        );
    }
}

/// Direct cables that close a switchless ring of GB10s joining a port to the same port
/// (`f0` to `f0`): GB10 rings cross f0 to f1, and NCCL fails on the other wiring with
/// ibv_modify_qp error 110. A warning: the links themselves work.
fn ring_crossing(
    ctx: &mut Ctx,
    raw: &[RawCable],
    cables: &[Cable],
    segments: &[Segment],
    nodes: &[Node],
    profiles: &[Profile],
) {
    // node-to-node links of switchless cables, one per cable and node pair
    let mut links: HashSet<(usize, NodeId, NodeId)> = HashSet::new();
    // per node: (cable, node at the other end) of each link, for the searches below
    let mut adjacent: Vec<Vec<(usize, NodeId)>> = vec![Vec::new(); nodes.len()];
    for s in segments {
        if s.members.len() == 2 && s.members.iter().all(|m| m.switch.is_none()) {
            let (a, b) = (s.members[0].endpoint.node, s.members[1].endpoint.node);
            if links.insert((s.cable, a, b)) {
                adjacent[a.0].push((s.cable, b));
                adjacent[b.0].push((s.cable, a));
            }
        }
    }
    let gb10 = |n: NodeId| profiles[nodes[n.0].profile.0].name == "gb10";
    // raw cable index -> its validated cable (the first with a segment from it)
    let mut by_raw: HashMap<usize, &Cable> = HashMap::new();
    for x in cables {
        if let Some(s) = x.segments.first() {
            by_raw.entry(segments[s.0].cable).or_insert(x);
        }
    }
    for (ci, c) in raw.iter().enumerate() {
        let Some(cable) = by_raw.get(&ci).copied() else {
            continue;
        };
        if cable.kind != CableKind::Direct {
            continue;
        }
        let seg = &segments[cable.segments[0].0];
        let (a, b) = (&seg.members[0].endpoint, &seg.members[1].endpoint);
        if a.port != b.port || !gb10(a.node) || !gb10(b.node) {
            continue;
        }
        // is there another way round from a to b without this cable?
        let mut seen = vec![false; nodes.len()];
        seen[a.node.0] = true;
        let mut stack = vec![a.node];
        let mut ring = false;
        while let Some(n) = stack.pop() {
            for &(lc, next) in &adjacent[n.0] {
                if lc == ci {
                    continue;
                }
                if next == b.node {
                    ring = true;
                }
                if !seen[next.0] {
                    seen[next.0] = true;
                    stack.push(next);
                }
            }
        }
        if ring {
            let at = c.ends.as_ref().map(span).unwrap_or_else(|| span(&c.kind));
            ctx.push(
                Problem::warning(
                    "plan::ring-crossing",
                    format!(
                        "cable `{}` closes a switchless ring joining `{}` to `{}`: GB10 rings cross f0 to f1",
                        cable.name, a.port, b.port
                    ),
                )
                .at(at, "same port on both ends")
                .help("cable each node's f0 to the next node's f1; a ring wired port 0 to port 0 fails NCCL with ibv_modify_qp error 110 (a `ring` cable wires it for you)"),
            );
        }
    }
}

/// Does any pair of subnets overlap? Two prefixes overlap only when one holds the other, so
/// sorted by network address (then shorter prefix first) an overlap shows between neighbours:
/// O(n log n), where checking every pair is O(n^2).
fn any_subnet_overlap(segments: &[Segment]) -> bool {
    let mut nets: Vec<Ipv4Net> = segments.iter().map(|s| s.subnet).collect();
    nets.sort_unstable_by_key(|n| (n.network(), n.prefix_len()));
    nets.windows(2).any(|w| w[0].contains(&w[1].network()))
}

fn subnets_and_addresses(ctx: &mut Ctx, segments: &[Segment], spans: &SegSpans) {
    // the pairwise pass names every overlapping pair; run it only when there is one
    let pairs: &[Segment] = if any_subnet_overlap(segments) {
        segments
    } else {
        &[]
    };
    for (i, a) in pairs.iter().enumerate() {
        for (j, b) in pairs.iter().enumerate().skip(i + 1) {
            if a.subnet.contains(&b.subnet.network()) || b.subnet.contains(&a.subnet.network()) {
                let same = a.subnet == b.subnet;
                ctx.push(
                    Problem::error(
                        "plan::subnet-overlap",
                        if same {
                            format!(
                                "links `{}` and `{}` are in one subnet `{}`",
                                a.name, b.name, a.subnet
                            )
                        } else {
                            format!(
                                "subnets of `{}` ({}) and `{}` ({}) overlap",
                                a.name, a.subnet, b.name, b.subnet
                            )
                        },
                    )
                    .at(spans[j].0.clone(), format!("`{}`", b.name))
                    .also(spans[i].0.clone(), format!("`{}`", a.name))
                    .help("each link half is its own subnet: routing is ambiguous otherwise"),
                );
            }
        }
    }
    let mut used: HashMap<Ipv4Addr, (usize, usize)> = HashMap::new();
    for (si, s) in segments.iter().enumerate() {
        for (mi, m) in s.members.iter().enumerate() {
            if m.address.is_unspecified() {
                continue;
            }
            let at = spans[si]
                .1
                .get(&mi)
                .cloned()
                .unwrap_or_else(|| spans[si].0.clone());
            let bcast = s.subnet.prefix_len() < 31
                && (m.address == s.subnet.broadcast() || m.address == s.subnet.network());
            if !s.subnet.contains(&m.address) || bcast {
                ctx.push(
                    Problem::error(
                        "plan::address-outside-subnet",
                        format!(
                            "address `{}` of `{}` is not a host address of its link's subnet `{}`",
                            m.address, s.name, s.subnet
                        ),
                    )
                    .at(at.clone(), "outside the subnet")
                    .also(spans[si].0.clone(), "the link's subnet")
                    .help(format!("use a host address of `{}`", s.subnet)),
                );
            }
            if let Some((psi, pmi)) = used.get(&m.address) {
                let pat = spans[*psi]
                    .1
                    .get(pmi)
                    .cloned()
                    .unwrap_or_else(|| spans[*psi].0.clone());
                ctx.push(
                    Problem::error(
                        "plan::address-twice",
                        format!("address `{}` is used twice", m.address),
                    )
                    .at(at, "used again here")
                    .also(pat, "first used here")
                    .help("every link end needs its own address"),
                );
            } else {
                used.insert(m.address, (si, mi));
            }
        }
    }
}

fn gates(ctx: &mut Ctx, raw: &BTreeMap<Spanned<String>, RawGate>) -> BTreeMap<Metric, GateSpec> {
    let mut out: BTreeMap<Metric, GateSpec> = Metric::ALL
        .iter()
        .map(|m| (*m, GateSpec::default_for(*m)))
        .collect();
    for (key_spanned, g) in raw {
        let key = key_spanned.get_ref();
        let Some(metric) = Metric::from_name(key) else {
            let mut p = Problem::error(
                "plan::unknown-metric",
                format!("`[gates.{key}]` is not a metric fabricplan gates"),
            )
            .at(span(key_spanned), "not a metric");
            let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
            p = match did_you_mean(key, names.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!("metrics: {}", names.join(", "))),
            };
            ctx.push(p);
            continue;
        };
        let spec = out.get_mut(&metric).expect("every metric has a default");
        let parse = |ctx: &mut Ctx, s: &Spanned<String>| match parse_threshold(s.get_ref(), metric)
        {
            Ok(t) => Some(t),
            Err(e) => {
                let help = match &e {
                    crate::gate::threshold::ThresholdError::UnknownUnit(u) => {
                        let units: Vec<&str> = crate::gate::threshold::Unit::SPELLINGS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect();
                        match did_you_mean(u, units.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => format!(
                                "units: Gb/s, GB/s, us, ms, or `%` of the expected value; `{}` is in {}",
                                metric.name(),
                                metric.unit().symbol()
                            ),
                        }
                    }
                    crate::gate::threshold::ThresholdError::WrongDimension { .. } => {
                        let example = match metric.unit() {
                            crate::gate::threshold::Unit::Gbps => "90 Gb/s",
                            crate::gate::threshold::Unit::GBps => "9 GB/s",
                            _ => "3 us",
                        };
                        format!(
                            "`{}` is in {}: write e.g. `\"{example}\"`, or a percentage of the expected value such as `\"90%\"`",
                            metric.name(),
                            metric.unit().symbol()
                        )
                    }
                    _ => format!(
                        "write a number and a unit, e.g. `\"90 Gb/s\"`, `\"3 us\"` or `\"85%\"`; `{}` is in {}",
                        metric.name(),
                        metric.unit().symbol()
                    ),
                };
                ctx.push(
                    Problem::error(
                        "plan::threshold",
                        format!("threshold of `{}`: {e}", metric.name()),
                    )
                    .at(span(s), "here")
                    .help(help),
                );
                None
            }
        };
        let mut pass = g.pass.as_ref().and_then(|s| parse(ctx, s));
        let mut warn = g.warn.as_ref().and_then(|s| parse(ctx, s));
        let mut pass_span = g.pass.as_ref().map(span);
        let mut warn_span = g.warn.as_ref().map(span);
        if let Some(p) = &g.min_pct_of_expected {
            pass = Some(Threshold::PctOfExpected { pct: *p.get_ref() });
            pass_span = Some(span(p));
        }
        if let Some(w) = &g.warn_pct_of_expected {
            warn = Some(Threshold::PctOfExpected { pct: *w.get_ref() });
            warn_span = Some(span(w));
        }
        if g.pass.is_some() && g.min_pct_of_expected.is_some() {
            ctx.push(
                Problem::error(
                    "plan::threshold",
                    format!(
                        "`{}` gives both `pass` and `min-pct-of-expected`",
                        metric.name()
                    ),
                )
                .at(pass_span.clone().unwrap_or(0..0), "here")
                .help("keep one pass threshold"),
            );
        }
        // a plan that sets a pass threshold but no warn keeps the default warn threshold when it
        // lies on the right side of the new pass (same kind), and otherwise gets no WARN band
        if let Some(p) = pass
            && warn.is_none()
            && g.warn.is_none()
            && g.warn_pct_of_expected.is_none()
        {
            let keep = match (p, spec.warn) {
                (Threshold::Absolute { value: p }, Some(Threshold::Absolute { value: w }))
                | (
                    Threshold::PctOfExpected { pct: p },
                    Some(Threshold::PctOfExpected { pct: w }),
                ) => {
                    if metric.higher_is_better() {
                        w <= p
                    } else {
                        w >= p
                    }
                }
                _ => false,
            };
            warn = if keep { spec.warn } else { Some(p) };
        }
        if let (Some(p), Some(w), Some(ps), Some(ws)) =
            (pass, warn, pass_span.clone(), warn_span.clone())
        {
            let wrong = match (p, w) {
                (Threshold::Absolute { value: p }, Threshold::Absolute { value: w }) => {
                    if metric.higher_is_better() {
                        w > p
                    } else {
                        w < p
                    }
                }
                (Threshold::PctOfExpected { pct: p }, Threshold::PctOfExpected { pct: w }) => {
                    if metric.higher_is_better() {
                        w > p
                    } else {
                        w < p
                    }
                }
                _ => false,
            };
            if wrong {
                let side = if metric.higher_is_better() {
                    "below"
                } else {
                    "above"
                };
                ctx.push(
                    Problem::error("plan::warn-wrong-side", format!("the warn threshold of `{}` is on the wrong side of its pass threshold", metric.name()))
                        .at(ws, "warn threshold")
                        .also(ps, "pass threshold")
                        .help(format!("for `{}` the warn threshold lies {side} the pass threshold: values between them WARN, beyond warn FAIL", metric.name())),
                );
            }
        }
        spec.pass = pass.or(spec.pass);
        spec.warn = warn.or(spec.warn);
        if g.trap.is_some() {
            spec.trap_text = g.trap.clone();
        }
        if g.fix.is_some() {
            spec.fix_text = g.fix.clone();
        }
        let attempts = g.attempts.unwrap_or(1).max(1);
        spec.attempts = attempts;
        spec.pass_if = attempts;
        if let Some(k) = &g.pass_if {
            if *k.get_ref() == 0 || *k.get_ref() > attempts {
                ctx.push(
                    Problem::error(
                        "plan::pass-if",
                        format!(
                            "`pass-if = {}` of {attempts} attempts of `{}`",
                            k.get_ref(),
                            metric.name()
                        ),
                    )
                    .at(span(k), "out of range")
                    .help(format!("pass-if is between 1 and `attempts` ({attempts})")),
                );
            } else {
                spec.pass_if = *k.get_ref();
            }
        }
        if spec.trap == Trap::Site && spec.trap_text.is_none() {
            spec.trap_text = Some("site trap".into());
        }
    }
    out
}

fn schedule_kind(ctx: &mut Ctx, s: Option<&Spanned<String>>, has_rounds: bool) -> ScheduleKind {
    match s {
        None if has_rounds => ScheduleKind::Rounds,
        None => ScheduleKind::PerLink,
        Some(s) => keyword(
            ctx,
            "plan::schedule",
            "schedule",
            s,
            &[
                ("per-link", ScheduleKind::PerLink),
                ("rounds", ScheduleKind::Rounds),
                ("all-pairs", ScheduleKind::AllPairs),
            ],
        )
        .unwrap_or(ScheduleKind::PerLink),
    }
}

fn test_halves(
    ctx: &mut Ctx,
    raw: Option<&Vec<Spanned<String>>>,
    segments: &[Segment],
) -> Vec<String> {
    let Some(raw) = raw else { return Vec::new() };
    let known: BTreeSet<&str> = segments.iter().map(|s| s.half.as_str()).collect();
    let mut out = Vec::new();
    for h in raw {
        if !known.contains(h.get_ref().as_str()) {
            let mut p = Problem::error(
                "plan::unknown-half",
                format!("no cable carries half `{}`", h.get_ref()),
            )
            .at(span(h), "unknown half");
            p = match did_you_mean(h.get_ref(), known.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!(
                    "cabled halves: {}",
                    known.iter().copied().collect::<Vec<_>>().join(", ")
                )),
            };
            ctx.push(p);
        } else {
            out.push(h.get_ref().clone());
        }
    }
    out
}

/// Resolve `NODE[.PORT[.HALF]]` on one side of a flow to candidate endpoints.
fn endpoint_candidates(
    spec: &str,
    nodes: &[Node],
    segments: &[Segment],
) -> Result<Vec<Endpoint>, String> {
    let mut parts = spec.split('.');
    let node = parts.next().unwrap_or("");
    let port = parts.next();
    let half = parts.next();
    if parts.next().is_some() {
        return Err(format!("`{spec}` has too many parts"));
    }
    let Some(n) = nodes.iter().find(|n| n.name == node) else {
        return Err(
            match did_you_mean(node, nodes.iter().map(|n| n.name.as_str())) {
                Some(s) => format!("node `{node}` is not declared; did you mean `{s}`?"),
                None => format!("node `{node}` is not declared"),
            },
        );
    };
    Ok(segments
        .iter()
        .flat_map(|s| s.members.iter().map(|m| m.endpoint.clone()))
        .filter(|e| {
            e.node == n.id && port.is_none_or(|p| p == e.port) && half.is_none_or(|h| h == e.half)
        })
        .collect())
}

fn resolve_flow(
    ctx: &mut Ctx,
    f: &Spanned<String>,
    nodes: &[Node],
    segments: &[Segment],
) -> Option<Flow> {
    let Some((c, s)) = f.get_ref().split_once("->") else {
        ctx.push(
            Problem::error("plan::flow", format!("`{}` is not a flow", f.get_ref()))
                .at(span(f), "expected `CLIENT -> SERVER`")
                .help("write `\"gb10-04 -> gb10-01\"` or with port and half `\"gb10-04.f0.a -> gb10-01.f0.a\"`"),
        );
        return None;
    };
    let (c, s) = (c.trim(), s.trim());
    let cands = |x: &str, ctx: &mut Ctx| match endpoint_candidates(x, nodes, segments) {
        Ok(v) => Some(v),
        Err(msg) => {
            ctx.push(
                Problem::error("plan::unknown-node", msg)
                    .at(span(f), "in this flow")
                    .help("flow ends are `NODE[.PORT[.HALF]]` of declared, cabled nodes"),
            );
            None
        }
    };
    let cc = cands(c, ctx)?;
    let sc = cands(s, ctx)?;
    let mut options: Vec<Flow> = Vec::new();
    for ce in &cc {
        for se in &sc {
            if ce.node == se.node {
                continue;
            }
            for seg in segments {
                if seg.half == ce.half
                    && seg.half == se.half
                    && seg.members.iter().any(|m| &m.endpoint == ce)
                    && seg.members.iter().any(|m| &m.endpoint == se)
                {
                    options.push(Flow {
                        client: ce.clone(),
                        server: se.clone(),
                        segment: seg.id,
                    });
                }
            }
        }
    }
    if options.is_empty() {
        ctx.push(
            Problem::error("plan::no-path", format!("no link joins the two ends of `{}`", f.get_ref()))
                .at(span(f), "no path")
                .help("a flow's ends must share a cable half (a direct link, or the same switched fabric half)"),
        );
        return None;
    }
    // unspecified halves default to `a` (the report's matrix ran one half per pair)
    if options.len() > 1 {
        let first_half = options
            .iter()
            .map(|o| o.client.half.clone())
            .min()
            .unwrap_or_default();
        options.retain(|o| o.client.half == first_half);
    }
    if options.len() > 1 {
        ctx.push(
            Problem::error(
                "plan::flow-ambiguous",
                format!(
                    "`{}` could use {} different links",
                    f.get_ref(),
                    options.len()
                ),
            )
            .at(span(f), "ambiguous")
            .help("name the port and half: `NODE.PORT.HALF -> NODE.PORT.HALF`"),
        );
        return None;
    }
    options.pop()
}

fn tests(ctx: &mut Ctx, raw: &RawTests, nodes: &[Node], segments: &[Segment]) -> Tests {
    let bw = |ctx: &mut Ctx, t: &RawBwTest, both: bool| -> Option<BwTest> {
        if t.enabled == Some(false) {
            return None;
        }
        let schedule = schedule_kind(ctx, t.schedule.as_ref(), !t.round.is_empty());
        if schedule == ScheduleKind::Rounds && t.round.is_empty() {
            ctx.push(
                Problem::error(
                    "plan::rounds-missing",
                    "schedule `rounds` declares no rounds",
                )
                .at(t.schedule.as_ref().map(span).unwrap_or(0..0), "here")
                .help("add `[[tests.rdma-bw.round]]` tables with `name` and `flows`"),
            );
        }
        if both && schedule != ScheduleKind::PerLink {
            ctx.push(
                Problem::error(
                    "plan::schedule",
                    "`rdma-bw-both` always runs both halves of each cable together",
                )
                .at(t.schedule.as_ref().map(span).unwrap_or(0..0), "here")
                .help("remove `schedule` from `[tests.rdma-bw-both]`"),
            );
        }
        let mut rounds = Vec::new();
        let mut round_names = Declared::new("round", String::new());
        for r in &t.round {
            round_names.declare(ctx, &r.name);
            let mut flows = Vec::new();
            let mut busy: HashMap<Endpoint, Range<usize>> = HashMap::new();
            for f in &r.flows {
                if let Some(flow) = resolve_flow(ctx, f, nodes, segments) {
                    for e in [&flow.client, &flow.server] {
                        if let Some(first) = busy.get(e) {
                            ctx.push(
                                Problem::error("plan::round-conflict", format!("`{}.{}.{}` is in two jobs of round `{}` at once", nodes[e.node.0].name, e.port, e.half, r.name.get_ref()))
                                    .at(span(f), "second job")
                                    .also(first.clone(), "first job")
                                    .help("a node half carries one measurement at a time: move one flow to another round"),
                            );
                        }
                        busy.insert(e.clone(), span(f));
                    }
                    flows.push(flow);
                }
            }
            if flows.is_empty() && r.flows.is_empty() {
                ctx.push(
                    Problem::error(
                        "plan::round-empty",
                        format!("round `{}` has no flows", r.name.get_ref()),
                    )
                    .at(span(&r.name), "empty")
                    .help("list flows as `\"CLIENT -> SERVER\"`"),
                );
            }
            rounds.push(DeclaredRound {
                name: r.name.get_ref().clone(),
                flows,
            });
        }
        let duration_s = t.duration_s.unwrap_or(6).max(1);
        Some(BwTest {
            duration_s,
            size_bytes: t.size_bytes.unwrap_or(65536),
            qps: t.qps.unwrap_or(1).max(1),
            schedule,
            halves: test_halves(ctx, t.halves.as_ref(), segments),
            rounds,
            timeout_s: t.timeout_s.unwrap_or(duration_s + 30),
        })
    };
    let rdma_bw = raw.rdma_bw.as_ref().and_then(|t| bw(ctx, t, false));
    let rdma_bw_both = raw.rdma_bw_both.as_ref().and_then(|t| bw(ctx, t, true));
    let rdma_lat = raw
        .rdma_lat
        .as_ref()
        .filter(|t| t.enabled != Some(false))
        .map(|t| LatTest {
            size_bytes: t.size_bytes.unwrap_or(2),
            iterations: t.iterations.unwrap_or(1000),
            halves: test_halves(ctx, t.halves.as_ref(), segments),
            timeout_s: t.timeout_s.unwrap_or(30),
        });
    let iperf3 = raw
        .iperf3
        .as_ref()
        .filter(|t| t.enabled != Some(false))
        .map(|t| {
            let d = t.duration_s.unwrap_or(2).max(1);
            IperfTest {
                duration_s: d,
                streams: t.streams.unwrap_or(1).max(1),
                halves: test_halves(ctx, t.halves.as_ref(), segments),
                timeout_s: t.timeout_s.unwrap_or(d + 20),
            }
        });
    let mut nccl = Vec::new();
    let mut nccl_names = Declared::new("NCCL test", String::new());
    for t in &raw.nccl {
        let collectives = [
            ("all_reduce", Collective::AllReduce),
            ("all_gather", Collective::AllGather),
            ("sendrecv", Collective::Sendrecv),
        ];
        let Some(collective) = keyword(
            ctx,
            "plan::collective",
            "collective",
            &t.collective,
            &collectives,
        ) else {
            continue;
        };
        let name = match &t.name {
            Some(n) => {
                nccl_names.declare(ctx, n);
                n.get_ref().clone()
            }
            None => collective.name().to_string(),
        };
        let (ids, at): (Vec<NodeId>, Range<usize>) = match &t.nodes {
            Some(list) => (
                list.get_ref()
                    .iter()
                    .filter_map(|r| node_ref(ctx, r.get_ref(), span(r), nodes, "NCCL test"))
                    .collect(),
                span(list),
            ),
            None => (nodes.iter().map(|n| n.id).collect(), span(&t.collective)),
        };
        if ids.len() < 2 {
            ctx.push(
                Problem::error(
                    "plan::nccl-ranks",
                    format!("NCCL test `{name}` needs at least two nodes"),
                )
                .at(at.clone(), "here")
                .help("list the ranks' nodes in `nodes`"),
            );
        }
        let halves = test_halves(ctx, t.halves.as_ref(), segments);
        // every pair of ranks needs a fabric path (a shared segment on some half): each node's
        // eligible segments, sorted, and a pair is joined when their lists meet
        let mut segs_of: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for s in segments
            .iter()
            .filter(|s| halves.is_empty() || halves.contains(&s.half))
        {
            for m in &s.members {
                let list = &mut segs_of[m.endpoint.node.0];
                if list.last() != Some(&s.id.0) {
                    list.push(s.id.0);
                }
            }
        }
        let shared = |a: &[usize], b: &[usize]| {
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                match a[i].cmp(&b[j]) {
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                    std::cmp::Ordering::Equal => return true,
                }
            }
            false
        };
        // one segment holding every rank (a switched fabric) joins every pair
        let mut common: Vec<usize> = ids
            .first()
            .map(|a| segs_of[a.0].clone())
            .unwrap_or_default();
        for r in ids.iter().skip(1) {
            common.retain(|s| segs_of[r.0].binary_search(s).is_ok());
        }
        let all_joined = !common.is_empty();
        for (i, a) in ids.iter().enumerate() {
            if all_joined {
                break;
            }
            for b in ids.iter().skip(i + 1) {
                let joined = shared(&segs_of[a.0], &segs_of[b.0]);
                if !joined {
                    ctx.push(
                        Problem::error("plan::no-path", format!("NCCL test `{name}`: no fabric path between `{}` and `{}`", nodes[a.0].name, nodes[b.0].name))
                            .at(at.clone(), "these ranks")
                            .help("every pair of ranks needs a direct link or a shared switch; a switchless ring of four or more has no path between opposite nodes: add a switch or run the test on adjacent nodes"),
                    );
                }
            }
        }
        for (k, v) in [("min-bytes", &t.min_bytes), ("max-bytes", &t.max_bytes)] {
            if let Some(v) = v
                && parse_size(v.get_ref()).is_none()
            {
                ctx.push(Problem::error("plan::size", format!("`{k} = \"{}\"` is not a size", v.get_ref())).at(span(v), "not a size").help("bytes with an optional K, M or G suffix (binary multiples, as nccl-tests reads them): `8`, `128M`, `1G`"));
            }
        }
        for k in t.env.keys() {
            if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || k.is_empty() {
                ctx.push(
                    Problem::error(
                        "plan::env-name",
                        format!("`{k}` is not an environment variable name"),
                    )
                    .at(span(&t.collective), "in this test")
                    .help("letters, digits and `_`"),
                );
            }
        }
        let iterations = t.iterations.unwrap_or(20).max(1);
        nccl.push(NcclTest {
            name,
            collective,
            nodes: ids,
            halves,
            min_bytes: t
                .min_bytes
                .as_ref()
                .map(|s| s.get_ref().trim().to_string())
                .unwrap_or_else(|| "8".into()),
            max_bytes: t
                .max_bytes
                .as_ref()
                .map(|s| s.get_ref().trim().to_string())
                .unwrap_or_else(|| "128M".into()),
            step_factor: t.step_factor.unwrap_or(2).max(2),
            warmup: t.warmup.unwrap_or(5),
            iterations,
            env: t.env.clone(),
            timeout_s: t.timeout_s.unwrap_or(300),
        });
    }
    Tests {
        preflight: raw.preflight.unwrap_or(true),
        rdma_bw,
        rdma_bw_both,
        rdma_lat,
        nccl,
        iperf3,
    }
}

/// `8`, `64K`, `128M`, `1G` -> bytes (binary multiples, as nccl-tests reads them).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

fn templates(
    ctx: &mut Ctx,
    raw: &BTreeMap<Spanned<String>, RawTemplate>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name_spanned, t) in raw {
        let name = name_spanned.get_ref();
        let at = t
            .inline
            .as_ref()
            .map(span)
            .or_else(|| t.path.as_ref().map(span))
            .unwrap_or_else(|| span(name_spanned));
        if !crate::render::TEMPLATE_NAMES.contains(&name.as_str()) {
            let mut p = Problem::error(
                "plan::unknown-template",
                format!("`[templates.{name}]` overrides no built-in template"),
            )
            .at(span(name_spanned), "no such template");
            p = match did_you_mean(name, crate::render::TEMPLATE_NAMES.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!(
                    "templates: {}",
                    crate::render::TEMPLATE_NAMES.join(", ")
                )),
            };
            ctx.push(p);
            continue;
        }
        let source = match (&t.inline, &t.path) {
            (Some(i), None) => i.get_ref().clone(),
            (None, Some(p)) => {
                let full = resolve_path(ctx.base_dir, p.get_ref());
                match std::fs::read_to_string(&full) {
                    Ok(s) => s,
                    Err(e) => {
                        ctx.push(
                            Problem::error(
                                "plan::template-path",
                                format!("template file `{}` cannot be read: {e}", p.get_ref()),
                            )
                            .at(span(p), "not found")
                            .help(format!(
                                "paths are relative to the plan file's folder (looked for `{}`)",
                                full.display()
                            )),
                        );
                        continue;
                    }
                }
            }
            _ => {
                ctx.push(
                    Problem::error(
                        "plan::template",
                        format!("`[templates.{name}]` needs exactly one of `inline` and `path`"),
                    )
                    .at(span(name_spanned), "this override")
                    .help("`inline = \"...\"` or `path = \"templates/bw.j2\"`"),
                );
                continue;
            }
        };
        if let Err(msg) = crate::render::check_template(name, &source) {
            ctx.push(
                Problem::error(
                    "plan::template-variable",
                    format!("template `{name}`: {msg}"),
                )
                .at(at, "this template")
                .help(format!(
                    "variables available to `{name}`: {}",
                    crate::render::variables_of(name).join(", ")
                )),
            );
            continue;
        }
        out.insert(name.clone(), source);
    }
    out
}

fn capacity(ctx: &mut Ctx, raw: Option<&RawCapacity>) -> CapacityConfig {
    let mut c = CapacityConfig::default();
    if let Some(r) = raw {
        if let Some(es) = &r.efficiency {
            let e = *es.get_ref();
            if !(e > 0.0 && e <= 1.0) {
                ctx.push(
                    Problem::error("plan::capacity", format!("`capacity.efficiency = {e}` is outside (0, 1]"))
                        .at(span(es), "not a share")
                        .help("the share of an oversubscribed hop flows really get, a fraction such as 0.82 (not a percentage)"),
                );
            } else {
                c.efficiency = e;
            }
        }
        if let Some(p) = r.switch_penalty_pct {
            c.switch_penalty_pct = p.clamp(0.0, 100.0);
        }
    }
    c
}

/// Fault kinds the simulated fabric understands.
pub const SIM_FAULTS: [&str; 7] = [
    "throttle",
    "mtu1500",
    "crossed",
    "dead-host",
    "server-dies",
    "rstp-block",
    "nccl-socket",
];

fn sim(ctx: &mut Ctx, raw: Option<&RawSim>, nodes: &[Node], switches: &[Switch]) -> SimConfig {
    let Some(r) = raw else {
        return SimConfig {
            seed: 1,
            faults: Vec::new(),
        };
    };
    let mut faults = Vec::new();
    for f in &r.faults {
        match check_sim_fault(f.get_ref(), nodes, switches) {
            Ok(()) => faults.push(f.get_ref().clone()),
            Err(msg) => ctx.push(
                Problem::error("plan::sim-fault", msg)
                    .at(span(f), "here")
                    .help(format!("faults: {}", SIM_FAULTS.join(", "))),
            ),
        }
    }
    SimConfig {
        seed: r.seed.unwrap_or(1),
        faults,
    }
}

/// Check a `KIND:TARGET` fault against the plan's names.
pub fn check_sim_fault(f: &str, nodes: &[Node], switches: &[Switch]) -> Result<(), String> {
    let Some((kind, target)) = f.split_once(':') else {
        return Err(format!("fault `{f}` is not `KIND:TARGET`"));
    };
    if !SIM_FAULTS.contains(&kind) {
        return Err(match did_you_mean(kind, SIM_FAULTS.iter().copied()) {
            Some(s) => format!("unknown fault `{kind}`; did you mean `{s}`?"),
            None => format!("unknown fault `{kind}`"),
        });
    }
    if kind == "rstp-block" {
        let Some((a, b)) = target
            .split_once('-')
            .filter(|(a, b)| {
                switches.iter().any(|s| s.name == *a) && switches.iter().any(|s| s.name == *b)
            })
            .or_else(|| {
                // switch names may contain `-`: try every split
                target
                    .match_indices('-')
                    .map(|(i, _)| (&target[..i], &target[i + 1..]))
                    .find(|(a, b)| {
                        switches.iter().any(|s| s.name == *a)
                            && switches.iter().any(|s| s.name == *b)
                    })
            })
        else {
            return Err(format!(
                "fault `{f}`: `{target}` does not name two switches `A-B`"
            ));
        };
        let _ = (a, b);
        return Ok(());
    }
    let node = target.split('.').next().unwrap_or("");
    if !nodes.iter().any(|n| n.name == node) {
        return Err(format!(
            "fault `{f}` names node `{node}`, which is not declared"
        ));
    }
    Ok(())
}
