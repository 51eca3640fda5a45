//! `[[profile]]` and `[[node]]`: hardware profiles, SSH targets, environments and pins.

use std::collections::BTreeMap;
use std::ops::Range;

use super::names::{Declared, ifname_check, token_check};
use super::settings::resolve_path;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;

pub(super) fn profiles(ctx: &mut Ctx, raw: &[RawProfile]) -> Vec<Profile> {
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
            half_names.finish(ctx);
            ports.push(ProfilePort {
                name: port.name.get_ref().clone(),
                halves,
            });
        }
        port_names.finish(ctx);
        if let Some(f) = &p.firmware {
            token_check(ctx, "firmware version", f);
        }
        out.push(Profile {
            name,
            half_rate_gbps: p.half_rate_gbps,
            port_rate_gbps: p.port_rate_gbps,
            firmware: p.firmware.as_ref().map(|f| f.get_ref().clone()),
            unified_memory: p.unified_memory.unwrap_or(false),
            ports,
        });
    }
    seen.finish(ctx);
    out
}

pub(super) fn nodes(ctx: &mut Ctx, raw: &[RawNode], profiles: &[Profile]) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    let mut seen = Declared::new("node", String::new());
    for n in raw {
        if !seen.declare(ctx, &n.name) {
            continue;
        }
        let profile = node_profile(ctx, n, profiles);
        let ssh = node_ssh(ctx, n);
        env_names(ctx, n);
        let pins = node_pins(ctx, n, &profiles[profile.0]);
        out.push(Node {
            id: NodeId(out.len()),
            name: n.name.get_ref().clone(),
            ssh,
            profile,
            env: n.env.clone(),
            nccl_tests_dir: n.nccl_tests_dir.clone(),
            pins,
        });
    }
    seen.finish(ctx);
    out
}

/// The node's profile: `gb10` unless it names a declared one.
fn node_profile(ctx: &mut Ctx, n: &RawNode, profiles: &[Profile]) -> ProfileId {
    let Some(p) = &n.profile else {
        return ProfileId(0);
    };
    if let Some(i) = profiles.iter().position(|x| &x.name == p.get_ref()) {
        return ProfileId(i);
    }
    let mut pr = Problem::error(
        "plan::unknown-profile",
        format!(
            "node `{}` names profile `{}`, which is not declared",
            n.name.get_ref(),
            p.get_ref()
        ),
    )
    .at(span(p), "unknown profile");
    pr = match ctx.suggest(p.get_ref(), profiles.iter().map(|x| x.name.as_str())) {
        Some(s) => pr.help(format!("did you mean `{s}`?")),
        None => pr.help("use `gb10` or declare the profile under `[[profile]]`"),
    };
    ctx.push(pr);
    ProfileId(0)
}

/// How to reach the node: an ssh_config alias (default: its name) or an explicit host.
fn node_ssh(ctx: &mut Ctx, n: &RawNode) -> SshTarget {
    let name = n.name.get_ref();
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
                    .map(|p| resolve_path(&ctx.base_dir, p)),
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
    ssh
}

fn env_names(ctx: &mut Ctx, n: &RawNode) {
    for k in n.env.keys() {
        if !(k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            ctx.push(
                Problem::error(
                    "plan::env-name",
                    format!(
                        "node `{}` sets environment variable `{k}`, which is not a valid name",
                        n.name.get_ref()
                    ),
                )
                .at(span(&n.name), "this node")
                .help("environment variable names use letters, digits and `_`"),
            );
        }
    }
}

/// Pins keyed `PORT.HALF`, each a half of the node's profile.
fn node_pins(ctx: &mut Ctx, n: &RawNode, prof: &Profile) -> BTreeMap<(String, String), Pin> {
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
                    "node `{}` pins `{}`, which is not a half of profile `{}`",
                    n.name.get_ref(),
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
    pins
}

/// The node a plan value names, or a problem at `at` (with the nearest declared name).
pub(super) fn node_ref(
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
    p = match ctx.suggest(name, nodes.iter().map(|n| n.name.as_str())) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help("declare it under `[[node]]`"),
    };
    ctx.push(p);
    None
}
