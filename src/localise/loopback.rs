//! The loopback round after a bandwidth test with one peer per half (a direct pair, a ring, the
//! links of a per-link schedule): a flow that fails both ways between two halves cannot say
//! which end is slow. Each end of a failing flow that no passing flow cleared is measured
//! against itself (server and client on its own device, the traffic looped inside its NIC): a
//! throttled half is slow alone, a healthy one is not, and two healthy ends leave the cable
//! between them.

use std::collections::BTreeSet;

use super::evidence::{Observed, Seen};
use crate::plan::{Endpoint, Plan};
use crate::schedule::{KindId, PairSpec, Round, pair_round};
use crate::topology::Fabric;

/// Ends measured in one loopback round at most: each is its own resource, so they all run at
/// once; past this the rest are left to the flows' own evidence.
pub const MAX_LOOPBACKS: usize = 256;

/// A passing flow clears an end of a failing one only when it carried this much more than the
/// failing flow measured (a throttled half passes a flow whose share is below its throttle).
const CLEAR_MARGIN: f64 = 1.25;

/// The loopback round of kind `kind` (numbered `index`) for what `observed` showed: none when
/// no failing flow leaves an end uncleared.
pub fn loopbacks(
    plan: &Plan,
    fabric: &Fabric,
    kind: KindId,
    index: usize,
    observed: &[Observed],
) -> Option<Round> {
    let ends = uncleared_ends(observed);
    if ends.is_empty() {
        return None;
    }
    let specs: Vec<PairSpec> = ends
        .into_iter()
        .take(MAX_LOOPBACKS)
        .filter_map(|e| {
            let (seg, _) = plan.member_of(&e)?;
            Some(PairSpec {
                client: e.clone(),
                server: e,
                segment: seg.id,
                group: None,
                bidirectional: false,
            })
        })
        .collect();
    (!specs.is_empty()).then(|| {
        pair_round(
            plan,
            fabric,
            kind,
            index,
            format!("{} loopback", kind.name()),
            specs,
        )
    })
}

/// The ends of failing flows (loopbacks themselves aside) that no passing flow cleared.
fn uncleared_ends(observed: &[Observed]) -> Vec<Endpoint> {
    let pair = |o: &Observed| o.job.pair.clone();
    let failing: Vec<&Observed> = observed
        .iter()
        .filter(|o| o.seen == Seen::Failed)
        .filter(|o| pair(o).is_some_and(|p| p.client != p.server))
        .collect();
    let mut out: BTreeSet<Endpoint> = BTreeSet::new();
    for f in failing {
        let Some(p) = pair(f) else { continue };
        for e in [&p.client, &p.server] {
            let cleared = observed.iter().any(|o| {
                o.seen == Seen::Passed
                    && pair(o).is_some_and(|q| &q.client == e || &q.server == e)
                    && match (o.measured, f.measured) {
                        (Some(c), Some(m)) => c >= CLEAR_MARGIN * m,
                        (Some(_), None) => true,
                        (None, _) => false,
                    }
            });
            if !cleared {
                out.insert(e.clone());
            }
        }
    }
    out.into_iter().collect()
}
