//! `[[switch]]` and `[[isl]]`.

use toml::Spanned;

use super::names::Declared;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;

pub(super) fn switches(ctx: &mut Ctx, raw: &[RawSwitch]) -> Vec<Switch> {
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

pub(super) fn switch_ref(
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

pub(super) fn isls(ctx: &mut Ctx, raw: &[RawIsl], switches: &[Switch], nodes: &[Node]) -> Vec<Isl> {
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
        // its range (above 0, finite) is the schema's, checked with the plan's shape
        let cap = *isl.capacity_gbps.get_ref();
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
