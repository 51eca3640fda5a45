//! The cables, from who answers. A port whose halves each hear one far end is a direct cable
//! (its halves must reach the same far box and port, half a to half a); a port that hears
//! several far ends, or a switch by LLDP, is on a switch, and ports that hear each other share
//! it (the switch's LLDP name, else `switch-1`...). Direct cables that close a cycle of three or
//! more boxes, each leaving by one port and arriving by another, are a ring.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::boxes::{BoxInfo, Boxes};
use super::links::{Far, Links, Source};

/// A node port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct End {
    pub r#box: usize,
    pub port: String,
}

/// Where a switched port lands.
#[derive(Debug, Clone, PartialEq)]
pub struct Attach {
    pub end: End,
    pub switch: String,
    pub switch_port: Option<String>,
}

/// A cable's shape as the plan writes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Direct([End; 2]),
    /// The nodes in ring order; node[i].out faces node[i+1].inn.
    Ring {
        nodes: Vec<usize>,
        out: String,
        inn: String,
    },
    Switched(Vec<Attach>),
}

/// One layer-2 segment (a cable's half): its members in the order the plan derives addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct Seg {
    pub half: String,
    /// (box, netdev)
    pub members: Vec<(usize, String)>,
    pub subnet: Option<Ipv4Net>,
    /// Each member's address: found on it, or proposed.
    pub addresses: Vec<Option<Ipv4Addr>>,
    /// The subnet was found in use (else proposed).
    pub in_use: bool,
}

/// A drafted cable.
#[derive(Debug, Clone, PartialEq)]
pub struct Cable {
    pub name: String,
    pub shape: Shape,
    pub halves: Vec<String>,
    pub segs: Vec<Seg>,
    /// Where it came from, one comment line each.
    pub evidence: Vec<String>,
    pub todos: Vec<String>,
}

/// A comment at a node: about one of its ports.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub r#box: usize,
    pub text: String,
    pub todo: bool,
}

/// What the drawing gives.
#[derive(Debug, Clone, Default)]
pub struct Cabling {
    pub cables: Vec<Cable>,
    /// Switches: name, and where the name came from.
    pub switches: Vec<(String, String)>,
    /// ISLs: the two switches, and the TODO about them.
    pub isls: Vec<(String, String, String)>,
    pub notes: Vec<Note>,
    /// Every source that proved something.
    pub sources: BTreeSet<Source>,
    /// Who answered and is no host given, and the halves that heard it (box, half).
    pub strangers: BTreeMap<String, Vec<(usize, String)>>,
}

/// `spark-a.f0.a`
pub fn half_text(b: &BoxInfo, port: &str, half: &str) -> String {
    format!("{}.{port}.{half}", b.name)
}

/// A far end in words: `spark-b.enp1s0f1np1 (spark-b.f1.a)`, `sw-a swp3`.
pub fn far_text(boxes: &Boxes, far: &Far) -> String {
    match far {
        Far::Node { r#box, netdev } => {
            let b = &boxes.boxes[*r#box];
            match b.half_of(netdev) {
                Some((p, h)) => format!("{}.{netdev} ({})", b.name, half_text(b, &p.name, &h.name)),
                None => format!("{}.{netdev}", b.name),
            }
        }
        Far::Switch { name, port } => match port {
            Some(p) => format!("switch {name} port {p}"),
            None => format!("switch {name}"),
        },
        Far::Stranger(s) => s.clone(),
    }
}

/// A port's reading: per half, what it heard.
struct PortHeard<'a> {
    end: End,
    halves: Vec<(&'a str, Option<&'a super::links::Heard>)>,
}

/// Draw the cables.
pub fn draw(boxes: &Boxes, links: &Links) -> Cabling {
    let mut c = Cabling::default();
    let mut claims: BTreeMap<End, Claim> = BTreeMap::new();
    let mut switched: Vec<End> = Vec::new();
    for (i, b) in boxes.boxes.iter().enumerate() {
        for p in &b.ports {
            let ph = PortHeard {
                end: End {
                    r#box: i,
                    port: p.name.clone(),
                },
                halves: p
                    .halves
                    .iter()
                    .map(|h| (h.name.as_str(), links.get(&(i, h.netdev.clone()))))
                    .collect(),
            };
            read_port(boxes, &ph, &mut c, &mut claims, &mut switched);
        }
    }
    let directs = pair_claims(boxes, links, claims, &mut c);
    rings_and_directs(boxes, directs, &mut c);
    switched_cables(boxes, links, &switched, &mut c);
    for (who, halves) in std::mem::take(&mut c.strangers) {
        let names: Vec<&str> = halves.iter().map(|(_, h)| h.as_str()).take(4).collect();
        let more = halves.len().saturating_sub(names.len());
        c.notes.push(Note {
            r#box: halves.first().map(|h| h.0).unwrap_or_default(),
            text: format!(
                "{who} answered on {}{}, and it is none of the hosts given (a switch's own address, or a host to add to the command line): left out of the plan",
                names.join(", "),
                if more > 0 { format!(" and {more} more half(s)") } else { String::new() }
            ),
            todo: true,
        });
    }
    c
}

/// One port's claim of a direct cable: the far port, the halves heard, how.
#[derive(Debug, Clone)]
pub struct Claim {
    pub far: End,
    pub halves: Vec<String>,
    pub source: Source,
    pub evidence: Vec<String>,
}

/// Classify one port: nothing heard, direct (a claim), switched, or a TODO.
fn read_port(
    boxes: &Boxes,
    ph: &PortHeard<'_>,
    c: &mut Cabling,
    claims: &mut BTreeMap<End, Claim>,
    switched: &mut Vec<End>,
) {
    let b = &boxes.boxes[ph.end.r#box];
    let port = &ph.end.port;
    if ph.halves.iter().all(|(_, h)| h.is_none()) {
        let up = b.ports.iter().find(|p| &p.name == port).is_some_and(|p| {
            p.halves.iter().any(|h| {
                b.probe.device(&h.device).is_some_and(|d| d.active())
                    && b.probe.interface(&h.netdev).is_some_and(|i| i.up)
            })
        });
        let (text, todo) = if up {
            (
                format!(
                    "{}.{port}: its link is up but nothing answered on it (no LLDP neighbour, no IPv6 or IPv4 neighbour): is the far end one of the hosts given? Cable it into the plan by hand",
                    b.name
                ),
                true,
            )
        } else {
            (
                format!(
                    "{}.{port}: no link (device not ACTIVE or no carrier): not cabled in this plan",
                    b.name
                ),
                false,
            )
        };
        c.notes.push(Note {
            r#box: ph.end.r#box,
            text,
            todo,
        });
        return;
    }
    for (h, heard) in &ph.halves {
        // beside LLDP's switch, the neighbour table's strangers too: a host on the fabric that
        // was not given is no less one for the switch announcing itself
        for f in heard.iter().flat_map(|x| x.fars.iter().chain(&x.segment)) {
            if let Far::Stranger(s) = f {
                let at = (ph.end.r#box, half_text(b, port, h));
                let halves = c.strangers.entry(s.clone()).or_default();
                if !halves.contains(&at) {
                    halves.push(at);
                }
            }
        }
    }
    let known = |h: &super::links::Heard| -> Vec<Far> {
        h.fars
            .iter()
            .filter(|f| !matches!(f, Far::Stranger(_)))
            .cloned()
            .collect()
    };
    let is_switched = ph.halves.iter().filter_map(|(_, h)| *h).any(|h| {
        let k = known(h);
        k.len() >= 2 || k.iter().any(|f| matches!(f, Far::Switch { .. }))
    });
    if is_switched {
        switched.push(ph.end.clone());
        return;
    }
    if let Some(claim) = direct_claim(boxes, ph, c) {
        claims.insert(ph.end.clone(), claim);
    }
}

/// A direct port's claim: every heard half reaches one netdev of one far port, half for half.
fn direct_claim(boxes: &Boxes, ph: &PortHeard<'_>, c: &mut Cabling) -> Option<Claim> {
    let b = &boxes.boxes[ph.end.r#box];
    let mut fars: Vec<(String, End, String)> = Vec::new();
    let mut evidence = Vec::new();
    let mut source = Source::Ipv4;
    for (h, heard) in &ph.halves {
        let Some(heard) = heard else { continue };
        let Some(Far::Node { r#box: fb, netdev }) =
            heard.fars.iter().find(|f| !matches!(f, Far::Stranger(_)))
        else {
            continue;
        };
        let fbox = &boxes.boxes[*fb];
        let Some((fp, fh)) = fbox.half_of(netdev) else {
            c.notes.push(Note {
                r#box: ph.end.r#box,
                text: format!(
                    "{} reaches {}.{netdev}, which is no RDMA half of {}: not cabled in this plan",
                    half_text(b, &ph.end.port, h),
                    fbox.name,
                    fbox.name
                ),
                todo: true,
            });
            return None;
        };
        evidence.push(format!(
            "{} hears {} ({})",
            half_text(b, &ph.end.port, h),
            far_text(
                boxes,
                &Far::Node {
                    r#box: *fb,
                    netdev: netdev.clone()
                }
            ),
            heard.source.text()
        ));
        source = source.min(heard.source);
        fars.push((
            h.to_string(),
            End {
                r#box: *fb,
                port: fp.name.clone(),
            },
            fh.name.clone(),
        ));
    }
    let first = fars.first()?.1.clone();
    if fars.iter().any(|(_, e, _)| *e != first) {
        let each: Vec<String> = fars
            .iter()
            .map(|(h, e, fh)| {
                format!(
                    "{} reaches {}",
                    half_text(b, &ph.end.port, h),
                    half_text(&boxes.boxes[e.r#box], &e.port, fh)
                )
            })
            .collect();
        c.notes.push(Note { r#box: ph.end.r#box, text: format!("{}.{}: its halves reach different ports ({}): two halves of one port share one cable; check which cable is in this port", b.name, ph.end.port, each.join("; ")), todo: true });
        return None;
    }
    if let Some((h, e, fh)) = fars.iter().find(|(h, _, fh)| h != fh) {
        c.notes.push(Note { r#box: ph.end.r#box, text: format!("{} reaches {}: half {h} meets half {fh}, which a plan's cable does not join; check the halves' names on both boxes", half_text(b, &ph.end.port, h), half_text(&boxes.boxes[e.r#box], &e.port, fh)), todo: true });
        return None;
    }
    if first == ph.end || first.r#box == ph.end.r#box {
        c.notes.push(Note {
            r#box: ph.end.r#box,
            text: format!(
                "{}.{} reaches its own box ({}.{}): a loop cable is not a plan's cable",
                b.name, ph.end.port, b.name, first.port
            ),
            todo: true,
        });
        return None;
    }
    Some(Claim {
        far: first,
        halves: fars.into_iter().map(|(h, _, _)| h).collect(),
        source,
        evidence,
    })
}

/// Pair the claims into direct cables: both ends agree, or one end proves it and the other
/// heard nothing. Two ends that disagree are a TODO at both.
fn pair_claims(
    boxes: &Boxes,
    links: &Links,
    claims: BTreeMap<End, Claim>,
    c: &mut Cabling,
) -> Vec<(End, End, Claim)> {
    let mut out: Vec<(End, End, Claim)> = Vec::new();
    let mut claimants: BTreeMap<&End, Vec<&End>> = BTreeMap::new();
    for (end, claim) in &claims {
        claimants.entry(&claim.far).or_default().push(end);
    }
    for (end, claim) in &claims {
        let back = claims.get(&claim.far);
        let others = claimants.get(&claim.far).map(|v| v.len()).unwrap_or(0);
        if back.is_none() && (others > 1 || heard_any(boxes, links, &claim.far)) {
            // one-sided: the far port said nothing that names us, or another port claims it too
            let me = &boxes.boxes[end.r#box];
            let far = &boxes.boxes[claim.far.r#box];
            c.notes.push(Note { r#box: end.r#box, text: format!("{}.{} hears {}.{}, but that port's own evidence does not name it back{}: check both cables", me.name, end.port, far.name, claim.far.port, if others > 1 { format!(" ({others} ports hear it)") } else { String::new() }), todo: true });
            continue;
        }
        match back {
            Some(b) if b.far != *end => {
                let me = &boxes.boxes[end.r#box];
                c.notes.push(Note { r#box: end.r#box, text: format!("{}.{} hears {}.{}, but that port hears {}.{}: the evidence disagrees; check both cables", me.name, end.port, boxes.boxes[claim.far.r#box].name, claim.far.port, boxes.boxes[b.far.r#box].name, b.far.port), todo: true });
                continue;
            }
            Some(_) if claim.far < *end => continue,
            _ => {}
        }
        let mut merged = claim.clone();
        if let Some(b) = back {
            for h in &b.halves {
                if !merged.halves.contains(h) {
                    merged.halves.push(h.clone());
                }
            }
            merged.source = merged.source.min(b.source);
            merged.evidence.extend(b.evidence.iter().cloned());
        }
        let order = |h: &String| {
            boxes.boxes[end.r#box]
                .ports
                .iter()
                .find(|p| p.name == end.port)
                .and_then(|p| p.halves.iter().position(|x| &x.name == h))
                .unwrap_or(usize::MAX)
        };
        merged.halves.sort_by_key(order);
        out.push((end.clone(), claim.far.clone(), merged));
    }
    out
}

/// The netdev of a box's port half.
pub(super) fn netdev(boxes: &Boxes, e: &End, half: &str) -> String {
    boxes.boxes[e.r#box]
        .ports
        .iter()
        .find(|p| p.name == e.port)
        .and_then(|p| p.halves.iter().find(|h| h.name == half))
        .map(|h| h.netdev.clone())
        .unwrap_or_default()
}

/// Direct cables, and the rings among them.
fn rings_and_directs(boxes: &Boxes, directs: Vec<(End, End, Claim)>, c: &mut Cabling) {
    let rings = super::ring::find(&directs);
    let mut used = vec![false; directs.len()];
    for (k, r) in rings.iter().enumerate() {
        let (_, _, first) = &directs[r.edges[0]];
        let mut evidence = Vec::new();
        let mut segs = Vec::new();
        for (li, &ei) in r.edges.iter().enumerate() {
            used[ei] = true;
            c.sources.insert(directs[ei].2.source);
            evidence.extend(directs[ei].2.evidence.iter().cloned());
            let a = End {
                r#box: r.nodes[li],
                port: r.out.clone(),
            };
            let b = End {
                r#box: r.nodes[(li + 1) % r.nodes.len()],
                port: r.inn.clone(),
            };
            for h in &first.halves {
                segs.push(seg(
                    h,
                    vec![
                        (a.r#box, netdev(boxes, &a, h)),
                        (b.r#box, netdev(boxes, &b, h)),
                    ],
                ));
            }
        }
        c.cables.push(Cable {
            name: if k == 0 {
                "ring".into()
            } else {
                format!("ring-{}", k + 1)
            },
            shape: Shape::Ring {
                nodes: r.nodes.clone(),
                out: r.out.clone(),
                inn: r.inn.clone(),
            },
            halves: first.halves.clone(),
            segs,
            evidence,
            todos: Vec::new(),
        });
    }
    for (k, (a, b, claim)) in directs.into_iter().enumerate() {
        if used[k] {
            continue;
        }
        c.sources.insert(claim.source);
        c.cables.push(direct_cable(boxes, a, b, claim));
    }
}

/// A direct cable between two ports.
pub fn direct_cable(boxes: &Boxes, a: End, b: End, claim: Claim) -> Cable {
    let (na, nb) = (&boxes.boxes[a.r#box].name, &boxes.boxes[b.r#box].name);
    let name = format!("{na}-{}-{nb}-{}", a.port, b.port);
    let name = if name.len() <= 63 {
        name
    } else {
        format!("cable-{}-{}", a.r#box, b.r#box)
    };
    let segs = claim
        .halves
        .iter()
        .map(|h| {
            seg(
                h,
                vec![
                    (a.r#box, netdev(boxes, &a, h)),
                    (b.r#box, netdev(boxes, &b, h)),
                ],
            )
        })
        .collect();
    Cable {
        name,
        shape: Shape::Direct([a, b]),
        halves: claim.halves,
        segs,
        evidence: claim.evidence,
        todos: Vec::new(),
    }
}

pub(super) fn seg(half: &str, members: Vec<(usize, String)>) -> Seg {
    let n = members.len();
    Seg {
        half: half.to_string(),
        members,
        subnet: None,
        addresses: vec![None; n],
        in_use: false,
    }
}

/// The switched cables: ports joined by what they hear (each other, one switch's LLDP name).
fn switched_cables(boxes: &Boxes, links: &Links, ports: &[End], c: &mut Cabling) {
    let groups = super::switch::group(boxes, links, ports);
    let mut unnamed = 0;
    for (k, g) in groups.into_iter().enumerate() {
        let cable = super::switch::cable(boxes, links, g, k, &mut unnamed, c);
        if let Some(cable) = cable {
            c.cables.push(cable);
        }
    }
}

/// Whether any half of port `e` heard something.
fn heard_any(boxes: &Boxes, links: &Links, e: &End) -> bool {
    boxes.boxes[e.r#box]
        .ports
        .iter()
        .filter(|p| p.name == e.port)
        .flat_map(|p| &p.halves)
        .any(|h| links.contains_key(&(e.r#box, h.netdev.clone())))
}
