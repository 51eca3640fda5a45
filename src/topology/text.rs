//! `fabricplan graph --format text`: the fabric drawn for a terminal. Each node with its
//! profile and the ports the plan cables; each cable with its links (a direct pair, a ring's
//! links in order, a switched cable as a tree under each switch), each link's halves and
//! subnets; the ISLs between switches with their capacity. Plain text, names made inert.

use std::collections::BTreeMap;

use crate::plan::{Cable, CableKind, Plan, Segment};
use crate::text::inert;

/// The fabric as text.
pub fn to_text(plan: &Plan) -> String {
    let mut out = format!(
        "fabric `{}`: {} node(s), {} switch(es), {} cable(s), {} ISL(s)\n",
        inert(&plan.name),
        plan.nodes.len(),
        plan.switches.len(),
        plan.cables.len(),
        plan.isls.len()
    );
    out.push_str("\nnodes\n");
    let w = plan.nodes.iter().map(|n| n.name.len()).max().unwrap_or(0);
    for n in &plan.nodes {
        let mut used: Vec<&str> = plan
            .segments
            .iter()
            .flat_map(|s| &s.members)
            .filter(|m| m.endpoint.node == n.id)
            .map(|m| m.endpoint.port.as_str())
            .collect();
        used.sort();
        used.dedup();
        let profile = plan.profile_of(n.id);
        out.push_str(&format!(
            "  [{}]{}  {}, cabled: {}\n",
            inert(&n.name),
            " ".repeat(w - n.name.len()),
            inert(&profile.name),
            if used.is_empty() {
                "nothing".to_string()
            } else {
                used.join(" ")
            }
        ));
    }
    for c in &plan.cables {
        out.push('\n');
        out.push_str(&cable(plan, c));
    }
    if !plan.isls.is_empty() {
        out.push_str("\nISLs (switch to switch)\n");
        for i in &plan.isls {
            out.push_str(&format!(
                "  ({}) ==== ({})   `{}`, {} Gb/s per direction\n",
                inert(&plan.switches[i.a.0].name),
                inert(&plan.switches[i.b.0].name),
                inert(&i.name),
                format!("{:.2}", i.capacity_gbps)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            ));
        }
    }
    out
}

/// A node port: `spark-a.f0`.
fn port(plan: &Plan, s: &Segment, i: usize) -> String {
    let e = &s.members[i].endpoint;
    format!("{}.{}", inert(&plan.node(e.node).name), inert(&e.port))
}

/// One cable: its links, each with its halves' subnets.
fn cable(plan: &Plan, c: &Cable) -> String {
    let segs: Vec<&Segment> = c.segments.iter().map(|s| plan.segment(*s)).collect();
    let halves = |ss: &[&Segment]| -> String {
        ss.iter()
            .map(|s| format!("{} {}", inert(&s.half), s.subnet))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match c.kind {
        CableKind::Direct | CableKind::Ring => {
            // one link per pair of ports, its halves together, in the cable's order
            let mut links: Vec<((String, String), Vec<&Segment>)> = Vec::new();
            for s in segs.iter().copied().filter(|s| s.members.len() == 2) {
                let key = (port(plan, s, 0), port(plan, s, 1));
                match links.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(s),
                    None => links.push((key, vec![s])),
                }
            }
            let kind = match c.kind {
                CableKind::Ring => format!("ring of {} links", links.len()),
                _ => "direct".to_string(),
            };
            let mut out = format!("cable `{}` ({kind})\n", inert(&c.name));
            let wa = links.iter().map(|((a, _), _)| a.len()).max().unwrap_or(0);
            let wb = links.iter().map(|((_, b), _)| b.len()).max().unwrap_or(0);
            for ((a, b), ss) in &links {
                out.push_str(&format!(
                    "  [{a}]{} ------ [{b}]{}   {}\n",
                    " ".repeat(wa - a.len()),
                    " ".repeat(wb - b.len()),
                    halves(ss)
                ));
            }
            out
        }
        CableKind::Switched => switched(plan, c, &segs),
    }
}

/// A switched cable: under each switch, a branch per node port landing on it.
fn switched(plan: &Plan, c: &Cable, segs: &[&Segment]) -> String {
    let mut out = format!(
        "cable `{}` (switched: {})\n",
        inert(&c.name),
        segs.iter()
            .map(|s| format!("half {} {}", inert(&s.half), s.subnet))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // switch -> node port -> its halves
    let mut by: BTreeMap<usize, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for s in segs {
        for m in &s.members {
            let Some(sw) = m.switch else { continue };
            let p = format!(
                "{}.{}",
                inert(&plan.node(m.endpoint.node).name),
                inert(&m.endpoint.port)
            );
            let ports = by.entry(sw.0).or_default();
            let half = format!("{} {}", inert(&m.endpoint.half), m.address);
            match ports.iter_mut().find(|(q, _)| *q == p) {
                Some((_, h)) => h.push(half),
                None => ports.push((p, vec![half])),
            }
        }
    }
    for (sw, ports) in by {
        out.push_str(&format!("  ({})\n", inert(&plan.switches[sw].name)));
        let w = ports.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
        for (i, (p, h)) in ports.iter().enumerate() {
            let branch = if i + 1 == ports.len() { "`--" } else { "|--" };
            out.push_str(&format!(
                "    {branch} [{p}]{}   {}\n",
                " ".repeat(w - p.len()),
                h.join(", ")
            ));
        }
    }
    out
}
