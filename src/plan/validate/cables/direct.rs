//! `kind = "direct"`: two node ports, one segment per half.

use super::{NewSegment, Wiring, halves_for, node_port, per_half_subnets, push_segment};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;
use crate::plan::validate::addresses::check_address_keys;
use crate::plan::validate::{Ctx, span};

pub(super) fn direct_cable(ctx: &mut Ctx, w: &mut Wiring, c: &RawCable, name: &str, ci: usize) {
    let (nodes, profiles) = (w.nodes, w.profiles);
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
