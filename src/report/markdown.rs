//! `summary.md`: the verdict table and a node x node bandwidth matrix.

use std::collections::BTreeSet;

use crate::results::RunResults;

pub fn render(r: &RunResults) -> String {
    let mut s = String::new();
    let sim = if r.simulated {
        " (SIMULATED fabric)"
    } else {
        ""
    };
    s.push_str(&format!(
        "# fabricplan: {}{sim}\n\nRun `{}` over {}: **{}**\n\n",
        r.plan, r.run_id, r.transport, r.summary.verdict
    ));
    s.push_str("| gate | verdict | measured | threshold | trap and fix |\n|---|---|---|---|---|\n");
    for v in r.verdicts() {
        let measured = v
            .measured
            .map(|m| format!("{m:.2} {}", v.unit))
            .unwrap_or_else(|| v.detail.replace('|', "/"));
        let trap = match (&v.trap_name, &v.fix) {
            (Some(t), Some(f)) => format!("{t}: {f}"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            v.gate.replace('|', "/"),
            v.outcome.as_str(),
            measured,
            v.threshold,
            trap.replace('|', "/")
        ));
    }
    let m = r.bandwidth_matrix();
    if !m.is_empty() {
        let names: BTreeSet<&String> = m.keys().flat_map(|(a, b)| [a, b]).collect();
        s.push_str("\n## Bandwidth matrix, Gb/s (row: client, column: server)\n\n| |");
        for n in &names {
            s.push_str(&format!(" {n} |"));
        }
        s.push_str("\n|---|");
        for _ in &names {
            s.push_str("---|");
        }
        s.push('\n');
        for a in &names {
            s.push_str(&format!("| {a} |"));
            for b in &names {
                match m.get(&((*a).clone(), (*b).clone())) {
                    Some(v) => s.push_str(&format!(
                        " {} |",
                        v.iter()
                            .map(|x| format!("{x:.1}"))
                            .collect::<Vec<_>>()
                            .join(" / ")
                    )),
                    None => s.push_str(" |"),
                }
            }
            s.push('\n');
        }
    }
    let skews: Vec<String> = r
        .rounds
        .iter()
        .filter_map(|x| x.launch_skew_ms.map(|k| format!("{} {k:.1} ms", x.name)))
        .collect();
    if !skews.is_empty() {
        s.push_str(&format!(
            "\nClient launch skew per concurrent round: {}\n",
            skews.join(", ")
        ));
    }
    s
}
