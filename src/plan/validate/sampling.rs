//! `schedule = "sampled"` of a bandwidth section: its `rounds` and `seed`, and what sampling
//! needs from the rest of the section and the plan.

use super::{Ctx, span};
use crate::plan::diag::Problem;
use crate::plan::model::{ScheduleKind, Segment};
use crate::plan::section::ScheduleKeys;

/// `rounds` and `seed` of `schedule = "sampled"`, checked: neither given to another schedule (a key read by nothing is a verdict on something else), no declared
/// rounds beside them, and a switched fabric among the test's halves to sample.
pub(super) fn sampling(
    ctx: &mut Ctx,
    t: ScheduleKeys<'_>,
    schedule: ScheduleKind,
    segments: &[Segment],
) -> ScheduleKind {
    let ScheduleKind::Sampled(mut s) = schedule else {
        for (key, at) in [("rounds", t.rounds.map(span)), ("seed", t.seed.map(span))] {
            let Some(at) = at else { continue };
            let mut p = Problem::error(
                "plan::sampled-only",
                format!("`{key}` is read by `schedule = \"sampled\"` only"),
            )
            .at(at, "read by nothing here")
            .help(format!(
                "set `schedule = \"sampled\"` to measure the fabric in random pairings, or remove `{key}`"
            ));
            if let Some(sc) = t.schedule {
                p = p.also(span(sc), "another schedule");
            }
            ctx.push(p);
        }
        return schedule;
    };
    // its range (2 to 1000) is the schema's, enforced by the shape walk
    if let Some(k) = t.rounds {
        s.rounds = *k.get_ref();
    }
    if let Some(seed) = t.seed {
        s.seed = *seed.get_ref();
    }
    if let (Some(first), Some(sc)) = (t.round.first(), t.schedule) {
        ctx.push(
            Problem::error(
                "plan::sampled-declared",
                "`schedule = \"sampled\"` draws its own rounds: declared rounds are not run",
            )
            .at(span(&first.name), "a declared round")
            .also(span(sc), "random pairings")
            .help("remove the `[[tests.<kind>.round]]` tables, or use `schedule = \"rounds\"`"),
        );
    }
    let halves = t.halves.map(|h| {
        h.iter()
            .map(|x| x.get_ref().as_str())
            .collect::<Vec<&str>>()
    });
    let switched = segments.iter().any(|seg| {
        halves
            .as_ref()
            .is_none_or(|h| h.contains(&seg.half.as_str()))
            && seg.members.len() >= 2
            && seg.members.iter().all(|m| m.switch.is_some())
    });
    if !switched && let Some(sc) = t.schedule {
        ctx.push(
            Problem::error(
                "plan::sampled-switched",
                "`schedule = \"sampled\"` pairs the members of a switched fabric, and this test's halves cable none",
            )
            .at(span(sc), "nothing to sample")
            .help("`per-link` measures direct and ring links; sample a `switched` cable"),
        );
    }
    ScheduleKind::Sampled(s)
}
