//! `kind = "switched"`: node ports attached to switches, one segment per half.

use std::ops::Range;

use super::{NewSegment, Wiring, halves_for, node_port, per_half_subnets, push_segment};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::validate::addresses::check_address_keys;
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
    let mut att: Vec<((NodeId, String), SwitchId, Range<usize>)> = Vec::new();
    for (port, sw) in attach {
        let np = node_port(ctx, port, nodes, profiles);
        let s = switch_ref(ctx, sw, switches, "attachment switch");
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
