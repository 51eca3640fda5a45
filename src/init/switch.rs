//! Switched cables: ports that hear several far ends, or a switch by LLDP. Ports hearing each
//! other (or the same switch) share one layer-2 fabric, one `switched` cable; each port lands on
//! the switch LLDP names, else on `switch-N` (the hosts cannot tell several switches joined by
//! ISLs from one without LLDP from the switches).

use std::collections::BTreeMap;

use super::boxes::Boxes;
use super::cabling::{Attach, Cable, Cabling, End, Note, Shape, far_text, half_text, netdev, seg};
use super::links::{Far, Links};

/// Union-find over the ports and the switches' names.
struct Sets {
    parent: Vec<usize>,
}

impl Sets {
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        self.parent[x] = r;
        r
    }

    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// The port of `netdev` on box `b`.
fn port_of(boxes: &Boxes, b: usize, netdev: &str) -> Option<End> {
    boxes.boxes[b].half_of(netdev).map(|(p, _)| End {
        r#box: b,
        port: p.name.clone(),
    })
}

/// What a port's halves heard: (half, netdev, far ends).
fn heard_of<'a>(
    boxes: &'a Boxes,
    links: &'a Links,
    e: &End,
) -> Vec<(String, String, &'a super::links::Heard)> {
    let b = &boxes.boxes[e.r#box];
    b.ports
        .iter()
        .filter(|p| p.name == e.port)
        .flat_map(|p| p.halves.iter())
        .filter_map(|h| {
            links
                .get(&(e.r#box, h.netdev.clone()))
                .map(|x| (h.name.clone(), h.netdev.clone(), x))
        })
        .collect()
}

/// The switched ports in groups sharing a fabric, each group in port order.
pub fn group(boxes: &Boxes, links: &Links, ports: &[End]) -> Vec<Vec<End>> {
    let mut keys: Vec<String> = Vec::new();
    let mut key = |k: String| match keys.iter().position(|x| *x == k) {
        Some(i) => i,
        None => {
            keys.push(k);
            keys.len() - 1
        }
    };
    let index: Vec<usize> = ports
        .iter()
        .map(|e| key(format!("{}.{}", e.r#box, e.port)))
        .collect();
    let mut joins: Vec<(usize, usize)> = Vec::new();
    for (i, e) in ports.iter().enumerate() {
        for (_, _, heard) in heard_of(boxes, links, e) {
            for f in heard.fars.iter().chain(&heard.segment) {
                let other = match f {
                    Far::Node { r#box, netdev } => match port_of(boxes, *r#box, netdev) {
                        Some(fe) if ports.contains(&fe) => key(format!("{}.{}", fe.r#box, fe.port)),
                        _ => continue,
                    },
                    Far::Switch { name, .. } => key(format!("switch:{name}")),
                    Far::Stranger(_) => continue,
                };
                joins.push((index[i], other));
            }
        }
    }
    let mut sets = Sets {
        parent: (0..keys.len()).collect(),
    };
    for (a, b) in joins {
        sets.join(a, b);
    }
    let mut groups: BTreeMap<usize, Vec<End>> = BTreeMap::new();
    for (i, e) in ports.iter().enumerate() {
        groups
            .entry(sets.find(index[i]))
            .or_default()
            .push(e.clone());
    }
    groups.into_values().collect()
}

/// `swp12` from its breakouts `swp12s0`, `swp12s1`; a single port as it is.
fn base_port(ports: &[String]) -> Option<String> {
    let first = ports.first()?;
    if ports.len() == 1 {
        return Some(first.clone());
    }
    let strip = |p: &str| -> Option<String> {
        let (base, n) = p.rsplit_once('s')?;
        (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && !base.is_empty())
            .then(|| base.to_string())
    };
    let b = strip(first)?;
    ports
        .iter()
        .all(|p| strip(p).as_deref() == Some(b.as_str()))
        .then_some(b)
}

/// What a switched port's halves say: each its evidence line; the switches LLDP names and the
/// switch ports it lands on.
fn said(
    boxes: &Boxes,
    b: &super::boxes::BoxInfo,
    e: &End,
    heard: &[(String, String, &super::links::Heard)],
    c: &mut Cabling,
    evidence: &mut Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut sw_ports: Vec<String> = Vec::new();
    for (h, _, x) in heard {
        c.sources.insert(x.source);
        let known: Vec<&Far> = x
            .fars
            .iter()
            .filter(|f| !matches!(f, Far::Stranger(_)))
            .collect();
        evidence.push(match known.as_slice() {
            [one] => format!(
                "{} hears {} ({})",
                half_text(b, &e.port, h.as_str()),
                far_text(boxes, one),
                x.source.text()
            ),
            many => format!(
                "{} hears {} far ends ({}): {}",
                half_text(b, &e.port, h.as_str()),
                many.len(),
                x.source.text(),
                many.iter()
                    .take(4)
                    .map(|f| far_text(boxes, f))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if many.len() > 4 { ", ..." } else { "" }
            ),
        });
        for f in &x.fars {
            if let Far::Switch { name, port } = f {
                if !names.contains(name) {
                    names.push(name.clone());
                }
                sw_ports.extend(port.iter().cloned());
            }
        }
    }
    (names, sw_ports)
}

/// One group's switched cable; `None` (with a TODO) when its ports share no half.
pub fn cable(
    boxes: &Boxes,
    links: &Links,
    ports: Vec<End>,
    k: usize,
    unnamed: &mut usize,
    c: &mut Cabling,
) -> Option<Cable> {
    let mut attach: Vec<Attach> = Vec::new();
    let mut evidence = Vec::new();
    let mut todos = Vec::new();
    let mut halves_of: Vec<Vec<String>> = Vec::new();
    let mut local_name: Option<String> = None;
    for e in &ports {
        let b = &boxes.boxes[e.r#box];
        let heard = heard_of(boxes, links, e);
        let (names, sw_ports) = said(boxes, b, e, &heard, c, &mut evidence);
        halves_of.push(heard.iter().map(|(h, _, _)| h.clone()).collect());
        if names.len() > 1 {
            todos.push(format!("{}.{}: its halves hear different switches ({}): two halves of one port land on one switch; check the cabling", b.name, e.port, names.join(", ")));
        }
        let switch = match names.first() {
            Some(n) => n.clone(),
            None => local_name
                .get_or_insert_with(|| {
                    *unnamed += 1;
                    format!("switch-{unnamed}")
                })
                .clone(),
        };
        let switch_port = (!names.is_empty()).then(|| base_port(&sw_ports)).flatten();
        attach.push(Attach {
            end: e.clone(),
            switch,
            switch_port,
        });
    }
    let common: Vec<String> = halves_of
        .first()
        .map(|f| {
            f.iter()
                .filter(|h| halves_of.iter().all(|o| o.contains(h)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for (e, hs) in ports.iter().zip(&halves_of) {
        let extra: Vec<&String> = hs.iter().filter(|h| !common.contains(h)).collect();
        if !extra.is_empty() {
            let b = &boxes.boxes[e.r#box];
            todos.push(format!("{}.{}: half {} hears the fabric, but not every port's does: left out of this cable; check that half's cable or switch port", b.name, e.port, extra.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
        }
    }
    if common.is_empty() {
        for t in todos {
            c.notes.push(Note {
                r#box: ports.first().map(|p| p.r#box).unwrap_or_default(),
                text: t,
                todo: true,
            });
        }
        c.notes.push(Note {
            r#box: ports.first().map(|p| p.r#box).unwrap_or_default(),
            text: "these switched ports share no half: no cable drafted for them".into(),
            todo: true,
        });
        return None;
    }
    switches_of(&attach, local_name.as_deref(), c);
    let segs = common
        .iter()
        .map(|h| {
            seg(
                h,
                attach
                    .iter()
                    .map(|a| (a.end.r#box, netdev(boxes, &a.end, h)))
                    .collect(),
            )
        })
        .collect();
    Some(Cable {
        name: if k == 0 {
            "fabric".into()
        } else {
            format!("fabric-{}", k + 1)
        },
        shape: Shape::Switched(attach),
        halves: common,
        segs,
        evidence,
        todos,
    })
}

/// Declare the group's switches, and the ISLs that must join them (they share one layer-2
/// fabric): each a TODO for its capacity.
fn switches_of(attach: &[Attach], local: Option<&str>, c: &mut Cabling) {
    let mut names: Vec<&str> = Vec::new();
    for a in attach {
        if !names.contains(&a.switch.as_str()) {
            names.push(&a.switch);
        }
    }
    for n in &names {
        if c.switches.iter().any(|(s, _)| s == n) {
            continue;
        }
        let why = if Some(*n) == local {
            "named here: these ports hear each other, and no switch announced itself by LLDP. Several switches joined by ISLs look like one from the hosts: if so, name them, attach each port to its own and add their [[isl]]. A non-blocking ISL changes no expectation of this plan; an oversubscribed one shows on the first run as the flows across it below their gate".to_string()
        } else {
            format!("its own name, announced by LLDP (chassis `{n}`)")
        };
        c.switches.push((n.to_string(), why));
    }
    for w in names.windows(2) {
        c.isls.push((w[0].to_string(), w[1].to_string(), format!("{} and {} carry one layer-2 fabric (their ports hear each other), so an ISL joins them; its capacity cannot be seen from the hosts: set capacity-gbps to the ISL's real rate (the value written is one host port's)", w[0], w[1])));
    }
}
