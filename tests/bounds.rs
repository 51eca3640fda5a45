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
    let text = d.render(false, 100);
    assert!(text.contains("at most 16 nodes, this one has 17"), "{text}");
    assert!(text.contains("switch"), "{text}");
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
