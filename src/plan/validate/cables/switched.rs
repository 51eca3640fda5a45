//! `kind = "switched"`: node ports attached to switches, one segment per half.

use std::ops::Range;

use super::{Landing, NewSegment, Wiring, halves_for, node_port, per_half_subnets, push_segment};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::validate::addresses::check_address_keys;
use crate::plan::validate::names::{Places, token_check};
use crate::plan::validate::switches::switch_ref;
use crate::plan::validate::{Ctx, span};

pub(super) fn switched_cable(ctx: &mut Ctx, w: &mut Wiring, c: &RawCable, name: &str, ci: usize) {
    let (nodes, profiles, switches) = (w.nodes, w.profiles, w.switches);
    let Some(attach) = &c.attach else {
        ctx.push(
            Problem::error("plan::attach", "a switched cable needs `attach`")
                .at(span(&c.kind), "this cable")
                .help("`attach = { \"gb10-01.f0\" = \"sw-a\", \"gb10-04.f0\" = \"sw-b\" }`"),
        );
        return;
    };
    check_address_keys(ctx, c, nodes);
    let mut att: Vec<((NodeId, String), Landing, Range<usize>)> = Vec::new();
    let mut switch_ports: Places<(SwitchId, String)> = Places::new();
    for (port, value) in attach {
        let np = node_port(ctx, port, nodes, profiles);
        let s = switch_ref(
            ctx,
            &RawAttach::switch_at(value),
            switches,
            "attachment switch",
        );
        let sp = value.get_ref().switch_port.as_ref();
        if let Some(sp) = sp {
            token_check(ctx, "switch port", sp);
            if let Some(s) = s {
                switch_ports.add((s, sp.get_ref().clone()), span(sp));
            }
        }
        if let (Some(np), Some(s)) = (np, s) {
            att.push((np, (s, sp.map(|p| p.get_ref().clone())), span(port)));
        }
    }
    for ((s, p), at) in switch_ports.repeated() {
        let mut pr = Problem::error(
            "plan::switch-port-twice",
            format!(
                "switch port `{p}` of `{}` is given to more than one node port",
                switches[s.0].name
            ),
        );
        for (k, a) in at.into_iter().enumerate() {
            pr = if k == 0 {
                pr.at(a, "first here")
            } else {
                pr.also(a, "again here")
            };
        }
        ctx.push(pr.help("one cable per switch port: name each node port's own"));
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
            .map(|((node, port), landing, at)| {
                let e = Endpoint {
                    node: *node,
                    port: port.clone(),
                    half: half.clone(),
                };
                (e, at.clone(), Some(landing.clone()))
            })
            .collect();
        push_segment(
            ctx,
            w,
            c,
            ci,
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
