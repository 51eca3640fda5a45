//! Who each RDMA netdev reaches, by who answers: LLDP where lldpd runs (the far chassis and
//! port), otherwise the IPv6 link-local neighbours the all-nodes ping left (no address needed on
//! the link), otherwise the IPv4 neighbours. Each MAC is matched to the box and netdev that
//! owns it; a MAC no given box owns, or an LLDP chassis that is no given box and announces its
//! port by MAC (a host, not a switch), is a stranger.

use std::collections::HashMap;

use super::boxes::Boxes;

/// How a far end was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Lldp,
    Ipv6,
    Ipv4,
}

impl Source {
    pub fn text(self) -> &'static str {
        match self {
            Source::Lldp => "LLDP",
            Source::Ipv6 => "IPv6 neighbour",
            Source::Ipv4 => "IPv4 neighbour",
        }
    }
}

/// A far end as found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Far {
    /// A netdev of a given box.
    Node { r#box: usize, netdev: String },
    /// A switch (LLDP's chassis name) and its port.
    Switch { name: String, port: Option<String> },
    /// Something that is no given box: what it said (a MAC and address, a chassis name).
    Stranger(String),
}

/// What one netdev heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    pub fars: Vec<Far>,
    pub source: Source,
    /// Beside LLDP's far end (a switch announces only itself): the boxes the neighbour table
    /// says share the layer-2 segment.
    pub segment: Vec<Far>,
}

/// Per (box, netdev): what it heard. Netdevs that heard nothing are absent.
pub type Links = HashMap<(usize, String), Heard>;

/// Every RDMA netdev's far ends.
pub fn find(boxes: &Boxes) -> Links {
    let mut owner: HashMap<String, (usize, String)> = HashMap::new();
    for (i, b) in boxes.boxes.iter().enumerate() {
        for iface in &b.probe.interfaces {
            if let Some(m) = &iface.mac {
                owner.entry(m.clone()).or_insert((i, iface.name.clone()));
            }
        }
    }
    let mut out = Links::new();
    for (i, b) in boxes.boxes.iter().enumerate() {
        for p in &b.ports {
            for h in &p.halves {
                let nd = neighbours(&owner, b, i, &h.netdev, true)
                    .or_else(|| neighbours(&owner, b, i, &h.netdev, false));
                let heard = match (lldp(boxes, &owner, i, &h.netdev), nd) {
                    (Some(mut l), Some(n)) => {
                        l.segment = n.fars;
                        Some(l)
                    }
                    (l, n) => l.or(n),
                };
                if let Some(heard) = heard {
                    out.insert((i, h.netdev.clone()), heard);
                }
            }
        }
    }
    out
}

/// The box a chassis name is: by node name, name as given, or hostname (first labels).
fn box_named(boxes: &Boxes, chassis: &str) -> Option<usize> {
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    boxes.boxes.iter().position(|b| {
        b.name == chassis
            || b.given == chassis
            || (!b.probe.hostname.is_empty() && short(&b.probe.hostname) == short(chassis))
    })
}

/// What lldpd on box `i` heard on `netdev`.
fn lldp(
    boxes: &Boxes,
    owner: &HashMap<String, (usize, String)>,
    i: usize,
    netdev: &str,
) -> Option<Heard> {
    let report = boxes.boxes[i].probe.lldp.as_ref()?;
    let mut fars = Vec::new();
    for n in report.neighbours.iter().filter(|n| n.interface == netdev) {
        let chassis = n.chassis_name.clone().unwrap_or_default();
        let by_mac = n.port_mac().and_then(|m| owner.get(m)).cloned();
        let far = match (box_named(boxes, &chassis), by_mac) {
            (_, Some((b, nd))) => Far::Node {
                r#box: b,
                netdev: nd,
            },
            (Some(b), None) => match &n.port_descr {
                Some(d) => Far::Node {
                    r#box: b,
                    netdev: d.clone(),
                },
                None => Far::Stranger(format!("{chassis} (LLDP, no port named)")),
            },
            (None, None) if n.port_mac().is_some() => Far::Stranger(format!(
                "{} port {} (LLDP)",
                if chassis.is_empty() {
                    "a chassis with no name"
                } else {
                    &chassis
                },
                n.port_mac().unwrap_or_default()
            )),
            (None, None) => Far::Switch {
                name: chassis,
                port: n
                    .port_id
                    .as_ref()
                    .filter(|p| p.kind != "mac")
                    .map(|p| p.value.clone())
                    .or_else(|| n.port_descr.clone()),
            },
        };
        if !fars.contains(&far) {
            fars.push(far);
        }
    }
    (!fars.is_empty()).then(|| {
        fars.sort();
        Heard {
            fars,
            source: Source::Lldp,
            segment: Vec::new(),
        }
    })
}

/// The neighbours of `netdev` that answered, IPv6 or IPv4 ones, by the owners of their MACs.
fn neighbours(
    owner: &HashMap<String, (usize, String)>,
    b: &super::boxes::BoxInfo,
    i: usize,
    netdev: &str,
    v6: bool,
) -> Option<Heard> {
    let mut fars = Vec::new();
    for h in b
        .extra
        .heard
        .iter()
        .filter(|h| h.netdev == netdev && h.ipv6() == v6)
    {
        let far = match owner.get(&h.mac) {
            Some((o, nd)) if (*o, nd.as_str()) == (i, netdev) => continue,
            Some((o, nd)) => Far::Node {
                r#box: *o,
                netdev: nd.clone(),
            },
            None => Far::Stranger(format!("MAC {} ({})", h.mac, h.dst)),
        };
        if !fars.contains(&far) {
            fars.push(far);
        }
    }
    (!fars.is_empty()).then(|| {
        fars.sort();
        Heard {
            fars,
            source: if v6 { Source::Ipv6 } else { Source::Ipv4 },
            segment: Vec::new(),
        }
    })
}
