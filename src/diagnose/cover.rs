//! The fewest parts that explain every failing verdict.
//!
//! Each failing verdict names the parts its evidence points at, most specific first; one of
//! them is broken. The choice is a set cover, made greedily in an order a fabric engineer would
//! reason in:
//!
//! 1. a part that is the only one some verdict names is broken: that verdict has no other
//!    explanation (an MTU of 1500 on one netdev, a half that fails alone against its own
//!    loopback, a cable that lands on another port);
//! 2. then the part that explains the most verdicts still unexplained; among parts that explain
//!    as many, one no passing verdict vouched for (a node that ran its other jobs is not the one
//!    at fault; two ends that pass their own loopback leave the cable between them), then the
//!    part more verdicts name first, then the more specific kind of part.
//!
//! Pure: indices in, indices out.

use std::collections::{BTreeMap, BTreeSet};

use crate::gate::part::Part;

/// What a failing verdict says: the parts it implicates, most specific first.
pub struct Evidence<'a> {
    pub parts: &'a [Part],
}

/// One chosen part and the verdicts (their indices in the input) it explains, in input order.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub part: Part,
    pub explains: Vec<usize>,
}

/// How specific a kind of part is: a half before its port before the cable, the node's own
/// software before the node, fabricplan's reach and the plan last.
pub(super) fn rank(p: &Part) -> u8 {
    match p {
        Part::Half { .. } => 0,
        Part::Port { .. } => 1,
        Part::Software { .. } => 2,
        Part::Cable { .. } => 3,
        Part::Isl { .. } => 4,
        Part::Switch { .. } => 5,
        Part::Node { .. } => 6,
        Part::Plan { .. } => 7,
        Part::Reach { .. } => 8,
    }
}

/// Choose the parts. `cleared` holds the parts some passing verdict vouched for. Verdicts that
/// name no part are left out of every choice (the caller gives them a finding of their own).
pub fn cover(evidence: &[Evidence<'_>], cleared: &BTreeSet<Part>) -> Vec<Chosen> {
    let mut open: BTreeSet<usize> = (0..evidence.len())
        .filter(|i| !evidence[*i].parts.is_empty())
        .collect();
    let mut out: Vec<Chosen> = Vec::new();
    while !open.is_empty() {
        let Some(part) = best(evidence, &open, cleared) else {
            break;
        };
        let explains: Vec<usize> = open
            .iter()
            .copied()
            .filter(|i| evidence[*i].parts.contains(&part))
            .collect();
        for i in &explains {
            open.remove(i);
        }
        out.push(Chosen { part, explains });
    }
    out
}

/// The score of a candidate: higher is chosen first.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    sole: usize,
    covers: usize,
    uncleared: bool,
    first: usize,
    specific: u8,
}

fn best(
    evidence: &[Evidence<'_>],
    open: &BTreeSet<usize>,
    cleared: &BTreeSet<Part>,
) -> Option<Part> {
    let mut scores: BTreeMap<&Part, Score> = BTreeMap::new();
    for &i in open {
        let parts = evidence[i].parts;
        for (at, p) in parts.iter().enumerate() {
            let s = scores.entry(p).or_insert_with(|| Score {
                uncleared: !cleared.contains(p),
                specific: u8::MAX - rank(p),
                ..Score::default()
            });
            s.covers += 1;
            if at == 0 {
                s.first += 1;
            }
            if parts.iter().all(|q| q == p) {
                s.sole += 1;
            }
        }
    }
    // the sole explanation of something first, whatever else scores; then the rest in order
    let key = |s: &Score| (s.sole > 0, s.covers, s.uncleared, s.first, s.specific);
    scores
        .into_iter()
        .max_by(|a, b| key(&a.1).cmp(&key(&b.1)).then_with(|| b.0.cmp(a.0)))
        .map(|(p, _)| p.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: &str, half: &str) -> Part {
        Part::half(n, "f0", half)
    }

    fn run(lists: &[Vec<Part>], cleared: &[Part]) -> Vec<Chosen> {
        let ev: Vec<Evidence<'_>> = lists.iter().map(|l| Evidence { parts: l }).collect();
        cover(&ev, &cleared.iter().cloned().collect())
    }

    #[test]
    fn a_sole_explanation_is_chosen_and_explains_the_rest() {
        // mtu on b's half; the jumbo ping names both ends and the cable
        let b = h("b", "b");
        let chosen = run(
            &[
                vec![b.clone()],
                vec![b.clone(), h("a", "b"), Part::cable("a.f0", "b.f0")],
            ],
            &[],
        );
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].part, b);
        assert_eq!(chosen[0].explains, vec![0, 1]);
    }

    #[test]
    fn a_part_that_passed_elsewhere_is_not_blamed() {
        // a failed multi-node step names both nodes' slurmd; node 1 ran its other jobs
        let s1 = Part::software("n1", crate::gate::part::Software::Slurmd);
        let s2 = Part::software("n2", crate::gate::part::Software::Slurmd);
        let chosen = run(&[vec![s1.clone(), s2.clone()]], std::slice::from_ref(&s1));
        assert_eq!(chosen[0].part, s2);
    }

    #[test]
    fn the_part_that_explains_most_wins() {
        // every cross-switch flow names its two ends and the ISL
        let isl = Part::isl("sw-a-sw-b");
        let lists: Vec<Vec<Part>> = (0..4)
            .map(|i| {
                vec![
                    h(&format!("a{i}"), "a"),
                    h(&format!("b{i}"), "a"),
                    isl.clone(),
                ]
            })
            .collect();
        let chosen = run(&lists, &[]);
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].part, isl);
    }

    #[test]
    fn two_independent_faults_are_two_parts() {
        let a = h("a", "a");
        let c = h("c", "b");
        let chosen = run(
            &[
                vec![a.clone()],
                vec![c.clone()],
                vec![a.clone(), h("b", "a")],
            ],
            &[],
        );
        let parts: Vec<&Part> = chosen.iter().map(|c| &c.part).collect();
        assert_eq!(parts, vec![&a, &c]);
    }

    #[test]
    fn verdicts_naming_nothing_are_left_out() {
        let chosen = run(&[vec![], vec![h("a", "a")]], &[]);
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].explains, vec![1]);
    }

    #[test]
    fn ties_break_to_the_cleared_ends_cable() {
        // both ends passed their own loopback: the cable between them is left
        let cable = Part::cable("a.f0", "b.f0");
        let lists = vec![
            vec![h("a", "a"), h("b", "a"), cable.clone()],
            vec![h("b", "a"), h("a", "a"), cable.clone()],
        ];
        let chosen = run(&lists, &[h("a", "a"), h("b", "a")]);
        assert_eq!(chosen[0].part, cable);
    }

    #[test]
    fn a_nodes_sshd_before_the_node_when_both_explain_alike() {
        // a refused connection: sshd on the node, or the node; the more specific is named,
        // and neither is a sole explanation (the last part of a list is not alone in it)
        let l = vec![
            Part::software("n05", crate::gate::part::Software::Sshd),
            Part::node("n05"),
        ];
        let l2 = vec![
            Part::software("n20", crate::gate::part::Software::Sshd),
            Part::node("n20"),
        ];
        let chosen = run(&[l.clone(), l2.clone()], &[]);
        assert_eq!(chosen.len(), 2);
        assert_eq!(chosen[0].part, l[0]);
        assert_eq!(chosen[1].part, l2[0]);
    }
}
