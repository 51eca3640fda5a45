//! `[[switch]]` and `[[isl]]`.

use toml::Spanned;

use super::names::Declared;
use super::names::list_of;
use super::{Ctx, span};
use crate::plan::diag::Problem;
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
    seen.finish(ctx);
    out
}

pub(super) fn switch_ref(
    ctx: &mut Ctx,
    r: &Spanned<String>,
    switches: &[Switch],
    what: &str,
) -> Option<SwitchId> {
    if let Some(&id) = ctx.switch_ids.get(r.get_ref()) {
        return Some(id);
    }
    let is_node = ctx.node_ids.contains_key(r.get_ref());
    let mut p = if is_node {
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
    let names: Vec<&str> = switches.iter().map(|s| s.name.as_str()).collect();
    let declared = list_of(&names, 10);
    p = match ctx.suggest(r.get_ref(), names.iter().copied()) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None if is_node && declared.is_empty() => p.help("name a switch declared under `[[switch]]`; nodes land on switches through a `switched` cable's `attach`"),
        None if is_node => p.help(format!("name a switch ({declared}); nodes land on switches through a `switched` cable's `attach`")),
        None => p.help("declare it under `[[switch]]`"),
    };
    ctx.push(p);
    None
}

pub(super) fn isls(ctx: &mut Ctx, raw: &[RawIsl], switches: &[Switch]) -> Vec<Isl> {
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
        let a = switch_ref(ctx, &ends[0], switches, "ISL end");
        let b = switch_ref(ctx, &ends[1], switches, "ISL end");
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
