//! What changed on the hosts while a run measured: every planned half as discovery found it
//! before the first round, against the same probe once the rounds are done. A port that went
//! down, a link that went down and came back (its carrier changed: a flap), an MTU that changed,
//! a planned address gone: the fabric changed under the run, and what was measured meanwhile
//! may not stand. Each is one FAIL about that half (a flap both ends saw: about their cable).
//! Pure: resolutions in, verdicts out.

use std::collections::HashMap;

use super::resolve::HalfResolution;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::{Endpoint, NodeId, Plan};

/// The gate of what changed on a half during the run.
pub fn gate(half: &str) -> String {
    format!("changed {half}")
}

/// The interval the two readings bound, in words, and whether the far ends were read too.
#[derive(Debug, Clone)]
pub struct Span {
    /// `at the start`, `at the last check (2026-12-07 19:20:01 UTC)`.
    pub then: String,
    /// `at the end of the run`, `now`.
    pub now: String,
    /// The same, short, beside a count: `at the end`, `now`.
    pub end: String,
    /// `during the run`, `since the last check`.
    pub during: String,
    /// Both ends of each link were read (a run): a flap one end alone saw is about that half.
    /// Otherwise (a node checking itself) a flap is about its cable.
    pub far_ends_read: bool,
    /// How long the interval was, seconds: the port counters' rates are over it (`None`: not
    /// known, only link-down events are judged).
    pub seconds: Option<f64>,
    /// Judge the RDMA retransmission counters over the interval (a check: nothing else reads
    /// them; a run judges them per job, beside what each job measured).
    pub retransmits: bool,
}

impl Span {
    /// Discovery against the probe once the rounds are done.
    pub fn run() -> Span {
        Span {
            then: "at the start".into(),
            now: "at the end of the run".into(),
            end: "at the end".into(),
            during: "during the run".into(),
            far_ends_read: true,
            seconds: None,
            retransmits: false,
        }
    }

    /// [`Span::run`] of `seconds`.
    pub fn run_of(seconds: f64) -> Span {
        Span {
            seconds: Some(seconds),
            ..Span::run()
        }
    }
}

/// The verdicts of what changed between `before` (discovery) and `after` (the probe once the
/// rounds are done), per node; a node not probed after is left out. Only a half that was
/// sound before is judged: a port already down at the start is discovery's finding.
pub fn verdicts(
    plan: &Plan,
    before: &HashMap<NodeId, Vec<HalfResolution>>,
    after: &HashMap<NodeId, Vec<HalfResolution>>,
) -> Vec<Verdict> {
    verdicts_over(plan, before, after, &Span::run())
}

/// [`verdicts`] over any interval (`check` against its last reading).
pub fn verdicts_over(
    plan: &Plan,
    before: &HashMap<NodeId, Vec<HalfResolution>>,
    after: &HashMap<NodeId, Vec<HalfResolution>>,
    span: &Span,
) -> Vec<Verdict> {
    let now: HashMap<&Endpoint, &HalfResolution> =
        after.values().flatten().map(|h| (&h.endpoint, h)).collect();
    let then: HashMap<&Endpoint, &HalfResolution> = before
        .values()
        .flatten()
        .map(|h| (&h.endpoint, h))
        .collect();
    let flapped = |e: &Endpoint| {
        matches!(
            (then.get(e).and_then(|h| h.carrier_changes), now.get(e).and_then(|h| h.carrier_changes)),
            (Some(a), Some(b)) if b > a
        )
    };
    let mut out = Vec::new();
    let mut nodes: Vec<&NodeId> = before.keys().filter(|n| after.contains_key(n)).collect();
    nodes.sort();
    for n in nodes {
        for b in &before[n] {
            let Some(a) = now.get(&b.endpoint) else {
                continue;
            };
            let half = plan.half_part(&b.endpoint);
            let cable = plan.cable_part(&b.endpoint);
            let with_cable = |first: Part| {
                let mut v = vec![first];
                v.extend(cable.clone());
                v
            };
            let fail = |detail: String, trap, parts| {
                Verdict::check(gate(&b.name), Outcome::Fail, detail, Some(trap)).about(parts)
            };
            if b.address_found && !a.address_found {
                out.push(fail(
                    format!(
                        "{}'s planned address {} was on its netdev {} and is gone {}",
                        b.name, b.address, span.then, span.now
                    ),
                    Trap::AddressMissing,
                    vec![half.clone()],
                ));
            }
            if b.active && !a.active {
                out.push(fail(
                    format!(
                        "{} was ACTIVE {} and is down {}",
                        b.name, span.then, span.now
                    ),
                    Trap::PortDown,
                    with_cable(half.clone()),
                ));
            } else if flapped(&b.endpoint) {
                // both ends saw it: the cable between them; one end alone: that half
                let far = plan.member_of(&b.endpoint).and_then(|(seg, _)| {
                    seg.members
                        .iter()
                        .find(|m| m.endpoint != b.endpoint && seg.members.len() == 2)
                        .map(|m| m.endpoint.clone())
                });
                let both = far.as_ref().is_some_and(&flapped);
                out.push(flap(plan, (b, a), both, span));
            } else if b.active {
                out.extend(super::phy::link_down(plan, (b, a), span));
            }
            if b.active && a.active {
                out.extend(super::phy::errors(plan, (b, a), span));
            }
            // from the planned MTU to another (back to it is a repair, not a fault)
            if let (Some(x), Some(y)) = (b.mtu, a.mtu)
                && x != y
                && x == super::checks::PLANNED_MTU
            {
                out.push(fail(
                    format!(
                        "{}'s MTU was {x} {} and is {y} {}",
                        b.name, span.then, span.now
                    ),
                    Trap::MtuMismatch,
                    vec![half.clone()],
                ));
            }
        }
    }
    out
}

/// A half whose carrier count grew between `b` and `a`: one FAIL about its cable when both ends
/// saw it (or only this end was read), else about the half first.
fn flap(
    plan: &Plan,
    (b, a): (&HalfResolution, &HalfResolution),
    both: bool,
    span: &Span,
) -> Verdict {
    let half = plan.half_part(&b.endpoint);
    let cable = plan.cable_part(&b.endpoint);
    let (from, to) = (
        b.carrier_changes.unwrap_or(0),
        a.carrier_changes.unwrap_or(0),
    );
    let parts = match (cable, both) {
        (Some(c), true) => vec![c, half],
        // one end read alone: its cable, the part a flap is about
        (Some(c), false) if !span.far_ends_read => vec![c],
        (c, _) => std::iter::once(half).chain(c).collect(),
    };
    Verdict::check(
        gate(&b.name),
        Outcome::Fail,
        format!(
            "{}'s link went down and came back {}: its netdev's carrier changed {} time(s) ({from} {}, {to} {})",
            b.name,
            span.during,
            to.saturating_sub(from),
            span.then,
            span.end
        ),
        Some(Trap::LinkFlapped),
    )
    .about(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        crate::plan::load_str(
            std::path::Path::new("p.toml"),
            "format-version = 1\nname = \"p\"\n[[node]]\nname = \"spark-a\"\n[[node]]\nname = \"spark-b\"\n\
             [[cable]]\nkind = \"direct\"\nends = [\"spark-a.f0\", \"spark-b.f0\"]\n\
             subnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n",
            std::path::Path::new("."),
            &crate::plan::NoKinds,
        )
        .unwrap()
        .plan
    }

    /// Every planned half of `plan` as discovery finds it on a healthy box.
    fn healthy(plan: &Plan) -> HashMap<NodeId, Vec<HalfResolution>> {
        let mut out: HashMap<NodeId, Vec<HalfResolution>> = HashMap::new();
        for seg in &plan.segments {
            for m in &seg.members {
                out.entry(m.endpoint.node)
                    .or_default()
                    .push(HalfResolution {
                        endpoint: m.endpoint.clone(),
                        name: plan.endpoint_name(&m.endpoint),
                        address: m.address,
                        prefix: 30,
                        device: Some("rocep1s0f0".into()),
                        netdev: Some("enp1s0f0np0".into()),
                        gid_index: Some(3),
                        active: true,
                        mtu: Some(9000),
                        rate_hint: None,
                        link_downed: Some(0),
                        carrier_changes: Some(2),
                        address_found: true,
                        problems: Vec::new(),
                        issue: None,
                        landed_on: None,
                        port_counters: Default::default(),
                        fix_command: None,
                        hardware: None,
                    });
            }
        }
        out
    }

    fn half_of<'a>(
        r: &'a mut HashMap<NodeId, Vec<HalfResolution>>,
        plan: &Plan,
        name: &str,
    ) -> &'a mut HalfResolution {
        r.values_mut()
            .flatten()
            .find(|h| plan.endpoint_name(&h.endpoint) == name)
            .unwrap()
    }

    #[test]
    fn nothing_changed_is_nothing_said() {
        let p = plan();
        assert!(verdicts(&p, &healthy(&p), &healthy(&p)).is_empty());
    }

    #[test]
    fn each_change_is_one_fail_about_its_half_or_its_cable() {
        let p = plan();
        let before = healthy(&p);
        // a flap both ends saw: the cable
        let mut after = healthy(&p);
        half_of(&mut after, &p, "spark-a.f0.a").carrier_changes = Some(4);
        half_of(&mut after, &p, "spark-b.f0.a").carrier_changes = Some(4);
        let v = verdicts(&p, &before, &after);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|v| v.trap == Some(Trap::LinkFlapped)));
        assert!(
            v.iter()
                .all(|v| matches!(v.implicates[0], Part::Cable { .. }))
        );
        assert!(
            v[0].detail
                .contains("changed 2 time(s) (2 at the start, 4 at the end)")
        );
        // one end alone: that half first
        let mut after = healthy(&p);
        half_of(&mut after, &p, "spark-b.f0.b").carrier_changes = Some(3);
        let v = verdicts(&p, &before, &after);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].implicates[0], Part::half("spark-b", "f0", "b"));
        assert_eq!(v[0].gate, "changed spark-b.f0.b");
        // an MTU, an address gone, a port down
        let mut after = healthy(&p);
        half_of(&mut after, &p, "spark-a.f0.b").mtu = Some(1500);
        half_of(&mut after, &p, "spark-b.f0.a").address_found = false;
        half_of(&mut after, &p, "spark-a.f0.a").active = false;
        let traps: Vec<Option<Trap>> = verdicts(&p, &before, &after)
            .iter()
            .map(|v| v.trap)
            .collect();
        assert_eq!(
            traps,
            [
                Some(Trap::PortDown),
                Some(Trap::MtuMismatch),
                Some(Trap::AddressMissing)
            ]
        );
        // a half already down at the start is not a change; a node not probed after says nothing
        let mut down = healthy(&p);
        half_of(&mut down, &p, "spark-a.f0.a").active = false;
        let mut after = down.clone();
        after.retain(|n, _| n.0 == 0);
        assert!(verdicts(&p, &down, &after).is_empty());
    }
}
