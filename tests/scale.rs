//! Generated switched all-pairs plans (the scale benchmarks' generator): exact round counts,
//! no node half twice in a round, every pair once, and the indexed look-ups agree with the
//! plan's own. Behaviour only, never wall-clock time.

#[path = "../benches/support/plangen.rs"]
mod plangen;

use std::collections::HashSet;
use std::path::Path;

use fabricplan::plan::{LoadError, NodeId, Plan};
use fabricplan::schedule::{KindId, Round};
use fabricplan::topology::Fabric;

fn load(n: usize, switches: usize) -> Plan {
    load_text(&plangen::switched_plan(n, switches))
}

/// No node half in two jobs of the round; returns the round's unordered node pairs.
fn check_round(n: usize, round: &Round) -> Vec<(NodeId, NodeId)> {
    let mut busy = HashSet::new();
    let mut ports = HashSet::new();
    let mut pairs = Vec::new();
    for j in &round.jobs {
        assert!(ports.insert(j.port), "{n} nodes: port twice in a round");
        for e in &j.resources {
            assert!(
                busy.insert(e.clone()),
                "{n} nodes: `{}.{}.{}` twice in round {}",
                e.node.0,
                e.port,
                e.half,
                round.index
            );
        }
        let p = j.pair.as_ref().expect("all-pairs jobs are pairs");
        assert_eq!(p.client.half, "a", "the test measures half a only");
        // ordered: client, server (each pair runs each way)
        pairs.push((p.client.node, p.server.node));
    }
    pairs
}

#[test]
fn all_pairs_round_counts_are_exact() {
    for (n, rounds) in [
        (2, 1),
        (3, 3),
        (4, 3),
        (5, 5),
        (6, 5),
        (7, 7),
        (63, 63),
        (64, 63),
        (65, 65),
        (128, 127),
    ] {
        let plan = load(n, 2);
        let schedule = fabricplan::kinds::schedule(&plan);
        // the all-pairs stage each way, then one NCCL round
        let rounds = 2 * rounds;
        assert_eq!(schedule.len(), rounds + 1, "{n} nodes");
        let fabric = Fabric::build(&plan);
        let kinds: Vec<KindId> = schedule.rounds(&plan, &fabric).map(|r| r.kind).collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == KindId("rdma-bw")).count(),
            rounds,
            "{n} nodes"
        );
        assert_eq!(kinds.last(), Some(&KindId("nccl")));
    }
}

#[test]
fn every_pair_once_no_half_twice() {
    for n in [64, 65] {
        let plan = load(n, 2);
        let fabric = Fabric::build(&plan);
        let schedule = fabricplan::kinds::schedule(&plan);
        let mut seen = HashSet::new();
        for round in schedule.rounds(&plan, &fabric) {
            if round.kind != KindId("rdma-bw") {
                continue;
            }
            // even n: everyone plays; odd n: one node rests each round
            assert_eq!(round.jobs.len(), n / 2, "{n} nodes");
            for pair in check_round(n, &round) {
                assert!(seen.insert(pair), "{n} nodes: pair {pair:?} twice");
            }
        }
        assert_eq!(
            seen.len(),
            n * (n - 1),
            "{n} nodes: every pair once each way"
        );
    }
}

#[test]
fn cross_switch_jobs_take_the_isl() {
    let n = 64;
    let plan = load(n, 4);
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    let round = schedule.round(&plan, &fabric, 7).expect("round 8");
    for j in &round.jobs {
        let p = j.pair.as_ref().expect("pair");
        let sw = |node: NodeId| node.0 * 4 / n;
        let (a, b) = (sw(p.client.node), sw(p.server.node));
        assert_eq!(p.path.switches.len(), a.abs_diff(b) + 1, "{}", j.id);
        assert_eq!(p.path.isl_hops().count(), a.abs_diff(b), "{}", j.id);
    }
    // the capacity model covers every job of the round
    let expected = fabricplan::capacity::expected(&plan, &round);
    assert!(expected.iter().all(|e| e.is_some_and(|g| g > 0.0)));
}

#[test]
fn indexed_member_lookup_agrees_with_the_plan() {
    let plan = load(96, 3);
    let fabric = Fabric::build(&plan);
    for s in &plan.segments {
        for m in &s.members {
            let (ps, pm) = plan.member_of(&m.endpoint).expect("plan");
            let (fs, fm) = fabric.member_of(&plan, &m.endpoint).expect("fabric");
            assert_eq!(ps.id, fs.id);
            assert!(std::ptr::eq(pm, fm));
        }
    }
}

/// All-pairs on 4096 nodes (16.8 M jobs in 8,191 rounds) cannot finish: it is refused at
/// validation, with its count, without building a round.
#[test]
fn four_thousand_nodes_all_pairs_are_refused_with_their_count() {
    let text = plangen::switched_plan(4096, 2);
    let d = match fabricplan::kinds::load_str(Path::new("gen.toml"), &text, Path::new(".")) {
        Err(LoadError::Invalid(d)) => d,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("4096-node all-pairs loaded"),
    };
    let codes: Vec<&str> = d.problems.iter().map(|p| p.problem.code).collect();
    assert_eq!(codes, ["plan::too-large"]);
    let shown = d.render(false, 100);
    assert!(shown.contains("16,773,121 jobs in 8,191 rounds"), "{shown}");
}

/// The same 4096 nodes sampled: rounds built one at a time, each a perfect matching.
#[test]
fn four_thousand_nodes_sampled_expand_lazily() {
    let n = 4096;
    let plan = load_text(&plangen::switched_plan_with(n, 2, "sampled"));
    assert_eq!(plan.nodes.len(), n);
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    // 8 pairings each way, then the NCCL round
    assert_eq!(schedule.len(), 17);
    for r in [0, 7, 15] {
        let round = schedule.round(&plan, &fabric, r).expect("round");
        assert_eq!(round.kind, KindId("rdma-bw"));
        assert_eq!(round.jobs.len(), n / 2);
        check_round(n, &round);
    }
    let nccl = schedule.round(&plan, &fabric, 16).expect("nccl round");
    assert_eq!(nccl.kind, KindId("nccl"));
    assert_eq!(nccl.jobs[0].resources.len(), n, "every rank's half a");
    assert!(schedule.round(&plan, &fabric, 17).is_none());
}

/// Generated plan text that must load without a warning.
fn load_text(text: &str) -> Plan {
    match fabricplan::kinds::load_str(Path::new("gen.toml"), text, Path::new(".")) {
        Ok(l) => {
            assert!(
                l.warnings.problems.is_empty(),
                "{}",
                l.warnings.render(false, 100)
            );
            l.plan
        }
        Err(LoadError::Invalid(d)) => panic!("{}", d.render(false, 100)),
        Err(e) => panic!("{e}"),
    }
}
