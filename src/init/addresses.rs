//! Each segment's subnet and addresses: the ones in use where its halves have them, else
//! proposed from the pool (aligned blocks overlapping nothing any box uses), the commands to
//! apply them written per host. A ring whose addresses in use are not the ones a ring derives
//! (first address to the leaving end) is written as its direct cables, each with its addresses.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::Options;
use super::boxes::Boxes;
use super::cabling::{Cable, Cabling, End, Seg, Shape};

/// Give every segment its subnet and addresses (TODOs where it cannot).
pub fn assign(boxes: &Boxes, c: &mut Cabling, opts: &Options) {
    let mut taken: Vec<Ipv4Net> = boxes
        .boxes
        .iter()
        .flat_map(|b| {
            b.probe
                .interfaces
                .iter()
                .flat_map(|i| i.ipv4.iter().map(|n| n.trunc()))
        })
        .collect();
    for cable in &mut c.cables {
        let mut todos = Vec::new();
        for s in &mut cable.segs {
            if let Some(t) = in_use(boxes, s) {
                todos.push(t);
            }
        }
        for s in &mut cable.segs {
            if s.subnet.is_none() && !propose(s, opts.pool, &mut taken) {
                todos.push(format!("no room left in the subnet pool {} for half {} of this cable: give a larger --subnet-pool", opts.pool, s.half));
            }
        }
        cable.todos.extend(todos);
    }
    let cables = std::mem::take(&mut c.cables);
    for cable in cables {
        match &cable.shape {
            Shape::Ring { .. } if !ring_derives(&cable) => {
                c.cables.extend(split_ring(boxes, cable))
            }
            _ => c.cables.push(cable),
        }
    }
}

/// The addresses found on a segment's members: all in one subnet (some may be missing: those
/// get free addresses in it), or a TODO when they disagree.
fn in_use(boxes: &Boxes, s: &mut Seg) -> Option<String> {
    let found: Vec<Option<Ipv4Net>> = s
        .members
        .iter()
        .map(|(b, nd)| {
            boxes.boxes[*b]
                .probe
                .interface(nd)
                .and_then(|i| i.ipv4.first().copied())
        })
        .collect();
    let nets: Vec<Ipv4Net> = found.iter().flatten().map(|n| n.trunc()).collect();
    let first = *nets.first()?;
    if nets.iter().any(|n| *n != first) {
        let each: Vec<String> = s
            .members
            .iter()
            .zip(&found)
            .filter_map(|((b, nd), f)| f.map(|f| format!("{}.{nd} {f}", boxes.boxes[*b].name)))
            .collect();
        return Some(format!(
            "half {}: the addresses in use are in different subnets ({}): a link is one subnet; new ones are proposed below, remove the old ones first",
            s.half,
            each.join(", ")
        ));
    }
    let used: Vec<Ipv4Addr> = found.iter().flatten().map(|n| n.addr()).collect();
    let mut free = first.hosts().filter(|h| !used.contains(h));
    s.addresses = found
        .iter()
        .map(|f| f.map(|n| n.addr()).or_else(|| free.next()))
        .collect();
    s.subnet = Some(first);
    s.in_use = true;
    None
}

/// The prefix of the smallest subnet holding `n` hosts (at most a /30).
fn prefix_for(n: usize) -> u8 {
    (1..=30u8)
        .rev()
        .find(|p| (1u64 << (32 - u32::from(*p))) >= n as u64 + 2)
        .unwrap_or(1)
}

/// A subnet from the pool for the segment, and its addresses in member order.
fn propose(s: &mut Seg, pool: Ipv4Net, taken: &mut Vec<Ipv4Net>) -> bool {
    let prefix = prefix_for(s.members.len()).max(pool.prefix_len());
    let Ok(mut blocks) = pool.subnets(prefix) else {
        return false;
    };
    let Some(net) = blocks.find(|b| !taken.iter().any(|t| t.contains(b) || b.contains(t))) else {
        return false;
    };
    taken.push(net);
    let mut hosts = net.hosts();
    s.addresses = s.members.iter().map(|_| hosts.next()).collect();
    s.subnet = Some(net);
    s.in_use = false;
    true
}

/// Whether each ring link's addresses are the ones the ring derives: the subnet's first host
/// on the leaving end, the second on the arriving one.
fn ring_derives(cable: &Cable) -> bool {
    cable.segs.iter().all(derived)
}

/// The segment's addresses are its subnet's hosts in member order.
pub fn derived(s: &Seg) -> bool {
    let Some(net) = s.subnet else { return false };
    net.hosts().zip(&s.addresses).all(|(h, a)| Some(h) == *a)
        && s.addresses.len() <= net.hosts().count()
}

/// A ring's links as direct cables.
fn split_ring(boxes: &Boxes, ring: Cable) -> Vec<Cable> {
    let Shape::Ring { nodes, out, inn } = &ring.shape else {
        return vec![ring];
    };
    let h = ring.halves.len().max(1);
    let n = nodes.len();
    (0..n)
        .map(|li| {
            let a = End { r#box: nodes[li], port: out.clone() };
            let b = End { r#box: nodes[(li + 1) % n], port: inn.clone() };
            let (na, nb) = (&boxes.boxes[a.r#box].name, &boxes.boxes[b.r#box].name);
            let mut evidence = vec![format!("link {} of a ring of {n} boxes ({}), written as a direct cable: the addresses in use are not the ones a ring cable derives", li + 1, nodes.iter().map(|x| boxes.boxes[*x].name.as_str()).collect::<Vec<_>>().join(" -> "))];
            evidence.extend(ring.evidence.iter().filter(|e| e.starts_with(&format!("{na}.{out}.")) || e.starts_with(&format!("{nb}.{inn}."))).cloned());
            Cable {
                name: format!("{na}-{out}-{nb}-{inn}"),
                shape: Shape::Direct([a, b]),
                halves: ring.halves.clone(),
                segs: ring.segs.iter().skip(li * h).take(h).cloned().collect(),
                evidence,
                todos: Vec::new(),
            }
        })
        .collect()
}
