//! `fabricplan graph`: the fabric as Graphviz dot or Mermaid.

use crate::plan::{Plan, Segment};

fn seg_label(plan: &Plan, s: &Segment) -> String {
    let ends: Vec<String> = s
        .members
        .iter()
        .map(|m| format!("{}.{}", m.endpoint.port, m.endpoint.half))
        .collect();
    let _ = plan;
    format!("{} {}", ends.join("-"), s.subnet)
}

/// Graphviz dot.
pub fn to_dot(plan: &Plan) -> String {
    let mut out = format!("graph \"{}\" {{\n  node [shape=box];\n", plan.name);
    for n in &plan.nodes {
        out.push_str(&format!("  \"{}\";\n", n.name));
    }
    for s in &plan.switches {
        out.push_str(&format!("  \"{}\" [shape=ellipse];\n", s.name));
    }
    for seg in &plan.segments {
        if seg.members.iter().all(|m| m.switch.is_none()) && seg.members.len() == 2 {
            let a = &seg.members[0];
            let b = &seg.members[1];
            out.push_str(&format!(
                "  \"{}\" -- \"{}\" [label=\"{}\"];\n",
                plan.node(a.endpoint.node).name,
                plan.node(b.endpoint.node).name,
                seg_label(plan, seg)
            ));
        } else {
            for m in &seg.members {
                if let Some(sw) = m.switch {
                    out.push_str(&format!(
                        "  \"{}\" -- \"{}\" [label=\"{}.{} {}/{}\"];\n",
                        plan.node(m.endpoint.node).name,
                        plan.switches[sw.0].name,
                        m.endpoint.port,
                        m.endpoint.half,
                        m.address,
                        seg.subnet.prefix_len()
                    ));
                }
            }
        }
    }
    for isl in &plan.isls {
        out.push_str(&format!(
            "  \"{}\" -- \"{}\" [label=\"ISL {} Gb/s per direction\", style=bold];\n",
            plan.switches[isl.a.0].name, plan.switches[isl.b.0].name, isl.capacity_gbps
        ));
    }
    out.push_str("}\n");
    out
}

/// Mermaid flowchart.
pub fn to_mermaid(plan: &Plan) -> String {
    // ids by position: `a-b` and `a_b` are both valid names and must not collide
    let id = |s: &str| {
        if let Some(i) = plan.nodes.iter().position(|n| n.name == s) {
            format!("n{i}")
        } else {
            let i = plan.switches.iter().position(|x| x.name == s).unwrap_or(0);
            format!("s{i}")
        }
    };
    let mut out = String::from("graph LR\n");
    for n in &plan.nodes {
        out.push_str(&format!("  {}[\"{}\"]\n", id(&n.name), n.name));
    }
    for s in &plan.switches {
        out.push_str(&format!("  {}((\"{}\"))\n", id(&s.name), s.name));
    }
    for seg in &plan.segments {
        if seg.members.iter().all(|m| m.switch.is_none()) && seg.members.len() == 2 {
            let a = &seg.members[0];
            let b = &seg.members[1];
            out.push_str(&format!(
                "  {} ---|\"{}\"| {}\n",
                id(&plan.node(a.endpoint.node).name),
                seg_label(plan, seg),
                id(&plan.node(b.endpoint.node).name)
            ));
        } else {
            for m in &seg.members {
                if let Some(sw) = m.switch {
                    out.push_str(&format!(
                        "  {} ---|\"{}.{} {}/{}\"| {}\n",
                        id(&plan.node(m.endpoint.node).name),
                        m.endpoint.port,
                        m.endpoint.half,
                        m.address,
                        seg.subnet.prefix_len(),
                        id(&plan.switches[sw.0].name)
                    ));
                }
            }
        }
    }
    for isl in &plan.isls {
        out.push_str(&format!(
            "  {} ===|\"ISL {} Gb/s\"| {}\n",
            id(&plan.switches[isl.a.0].name),
            isl.capacity_gbps,
            id(&plan.switches[isl.b.0].name)
        ));
    }
    out
}
