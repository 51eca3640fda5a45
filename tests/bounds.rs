//! Plans that cannot finish are refused or bounded at validation: a switchless ring past a
//! handful of nodes, and (see the other tests here) a plan whose tests run too many rounds or
//! jobs. Each refusal is one problem at its span with a help line, said by `validate` at once.

mod support;

use std::path::Path;

use fabricplan::plan::{LoadError, PlanDiagnostics};

/// A switchless ring of `n` nodes with rdma-bw per link (four rounds a node).
fn ring(n: usize) -> String {
    let mut s = format!("format-version = 1\nname = \"ring-{n}\"\n\n");
    for i in 1..=n {
        s.push_str(&format!("[[node]]\nname = \"n{i:05}\"\n"));
    }
    let names: Vec<String> = (1..=n).map(|i| format!("\"n{i:05}\"")).collect();
    s.push_str(&format!(
        "\n[[cable]]\nkind = \"ring\"\nname = \"ring\"\nnodes = [{}]\nsubnet-pool = \"10.0.0.0/8\"\npool-prefix = 30\n",
        names.join(", ")
    ));
    s.push_str("\n[tests.rdma-bw]\nschedule = \"per-link\"\n");
    s
}

/// The diagnostics of plan text that must not load.
fn refused(name: &str, text: &str) -> PlanDiagnostics {
    match fabricplan::kinds::load_str(Path::new(name), text, Path::new(".")) {
        Err(LoadError::Invalid(d)) => d,
        Err(e) => panic!("{name}: {e}"),
        Ok(_) => panic!("{name}: loaded"),
    }
}

fn codes(d: &PlanDiagnostics) -> Vec<&str> {
    d.problems.iter().map(|p| p.problem.code).collect()
}

#[test]
fn a_ring_of_sixteen_loads_and_one_of_seventeen_is_refused() {
    let plan = support::load_plan_text("ring-16.toml", &ring(16));
    assert_eq!(plan.nodes.len(), 16);
    let d = refused("ring-17.toml", &ring(17));
    assert_eq!(
        codes(&d),
        ["plan::ring-too-large"],
        "{}",
        d.render(false, 100)
    );
    let p = &d.problems[0].problem;
    assert_eq!(
        p.message,
        "a switchless ring has at most 16 nodes, this one has 17"
    );
    assert!(
        p.help
            .as_deref()
            .is_some_and(|h| h.contains("`kind = \"switched\"`"))
    );
}

#[test]
fn the_five_thousand_node_ring_is_one_problem() {
    let d = refused("ring-5000.toml", &ring(5000));
    assert_eq!(
        codes(&d),
        ["plan::ring-too-large"],
        "{}",
        d.render(false, 100)
    );
}

/// Two nodes joined by one direct cable, and `n` NCCL tests across them, each named (one round
/// and one job each).
fn nccl_tests(n: usize) -> String {
    let mut s = String::from(
        "format-version = 1\nname = \"pair\"\n\n[[node]]\nname = \"a\"\n\n[[node]]\nname = \"b\"\n\n[[cable]]\nkind = \"direct\"\nends = [\"a.f0\", \"b.f0\"]\nsubnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "\n[[tests.nccl]]\nname = \"t{i}\"\ncollective = \"all_reduce\"\n"
        ));
    }
    s
}

#[test]
fn a_plan_runs_at_most_five_thousand_rounds() {
    use fabricplan::plan::validate::MAX_ROUNDS;
    let plan = support::load_plan_text("nccl.toml", &nccl_tests(MAX_ROUNDS));
    assert_eq!(fabricplan::kinds::schedule(&plan).len(), MAX_ROUNDS);
    let d = refused("nccl.toml", &nccl_tests(MAX_ROUNDS + 1));
    assert_eq!(codes(&d), ["plan::too-large"]);
    let p = &d.problems[0].problem;
    assert!(
        p.message.contains("5,001 jobs in 5,001 rounds"),
        "{}",
        p.message
    );
    assert!(
        p.message
            .contains("more than the 5,000 rounds a run may take"),
        "{}",
        p.message
    );
    let label = &p.primary.as_ref().expect("a label").1;
    assert_eq!(label, "`nccl`: 5,001 jobs in 5,001 rounds");
}

/// Switched all-pairs on `n` nodes (each pair each way: n(n-1) jobs), and one NCCL job.
fn all_pairs(n: usize) -> String {
    #[path = "../benches/support/plangen.rs"]
    mod plangen;
    plangen::switched_plan(n, 2)
}

#[test]
fn a_plan_runs_at_most_fifty_thousand_jobs() {
    use fabricplan::plan::validate::MAX_JOBS;
    // 224 nodes: 49,952 + 1 jobs; 225 (odd: 225 rounds each way): 50,400 + 1
    let plan = support::load_plan_text("ap.toml", &all_pairs(224));
    let fabric = fabricplan::topology::Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    let jobs: usize = schedule.rounds(&plan, &fabric).map(|r| r.jobs.len()).sum();
    assert_eq!(jobs, 224 * 223 + 1);
    assert!(jobs <= MAX_JOBS);
    let d = refused("ap.toml", &all_pairs(225));
    assert_eq!(codes(&d), ["plan::too-large"]);
    let p = &d.problems[0].problem;
    assert!(
        p.message.contains("50,401 jobs in 451 rounds"),
        "{}",
        p.message
    );
    assert!(
        p.message
            .contains("more than the 50,000 jobs a run may take"),
        "{}",
        p.message
    );
    let label = &p.primary.as_ref().expect("a label").1;
    assert_eq!(label, "`rdma-bw`: 50,400 jobs in 450 rounds");
}

/// What validation counts is what the schedule builds, whatever the shape: per-link on a
/// switched segment, all-pairs with an odd count, sampled, declared rounds, NCCL.
#[test]
fn the_counted_jobs_are_the_built_ones() {
    let shapes = [
        ("per-link", 7, "[tests.rdma-bw]\nschedule = \"per-link\"\n"),
        (
            "all-pairs odd",
            9,
            "[tests.rdma-bw]\nschedule = \"all-pairs\"\n",
        ),
        (
            "sampled",
            10,
            "[tests.rdma-bw]\nschedule = \"sampled\"\nrounds = 3\n",
        ),
        ("latency", 6, "[tests.rdma-lat]\n"),
        ("nccl", 6, "[[tests.nccl]]\ncollective = \"all_gather\"\n"),
    ];
    for (what, n, test) in shapes {
        let mut text =
            String::from("format-version = 1\nname = \"s\"\n\n[[switch]]\nname = \"leaf\"\n");
        for i in 0..n {
            text += &format!("\n[[node]]\nname = \"n{i}\"\n");
        }
        text += "\n[[cable]]\nkind = \"switched\"\nsubnets = { a = \"10.0.0.0/24\", b = \"10.0.1.0/24\" }\n[cable.attach]\n";
        for i in 0..n {
            text += &format!("\"n{i}.f0\" = \"leaf\"\n");
        }
        text += &format!("\n{test}");
        let plan = support::load_plan_text("s.toml", &text);
        let fabric = fabricplan::topology::Fabric::build(&plan);
        let schedule = fabricplan::kinds::schedule(&plan);
        let built: usize = schedule.rounds(&plan, &fabric).map(|r| r.jobs.len()).sum();
        let counted: usize = fabricplan::kinds::ALL
            .iter()
            .map(|k| k.size(&plan))
            .map(|(_, jobs)| jobs)
            .sum();
        assert_eq!(counted, built, "{what}");
        let rounds: usize = fabricplan::kinds::ALL.iter().map(|k| k.size(&plan).0).sum();
        assert_eq!(rounds, schedule.len(), "{what}");
    }
}

/// 5,001 identical NCCL tables: one warning naming the repeats, and the plan refused for its
/// rounds; 5,000 load with the warning alone.
#[test]
fn identical_test_tables_are_one_warning() {
    let table = "\n[[tests.nccl]]\ncollective = \"all_reduce\"\nnodes = [\"a\", \"b\"]\n";
    let pair = nccl_tests(0);
    let d = refused("nccl.toml", &format!("{pair}{}", table.repeat(5_001)));
    assert_eq!(codes(&d), ["plan::duplicate-test", "plan::too-large"]);
    let w = &d.problems[0].problem;
    assert_eq!(
        w.message,
        "5,001 `[[tests.nccl]]` tables are the same test: it would run 5,001 times for one answer"
    );
    assert_eq!(
        w.primary.as_ref().map(|(_, l)| l.as_str()),
        Some("the same again")
    );
    assert!(w.help.as_deref().is_some_and(|h| h.contains("5001 places")));
    let l = fabricplan::kinds::load_str(
        Path::new("nccl.toml"),
        &format!("{pair}{}", table.repeat(5_000)),
        Path::new("."),
    )
    .expect("5,000 rounds load");
    let w: Vec<&str> = l.warnings.problems.iter().map(|p| p.problem.code).collect();
    assert_eq!(w, ["plan::duplicate-test"]);
    // named apart, or measuring something else: no warning
    let named = format!(
        "{pair}{}{}",
        table,
        table.replace("[[tests.nccl]]", "[[tests.nccl]]\nname = \"again\"")
    );
    let l = fabricplan::kinds::load_str(Path::new("n.toml"), &named, Path::new(".")).unwrap();
    assert!(l.warnings.problems.is_empty());
}
