//! The fabric picture as SVG: where nodes and switches sit, then the direct and ring links,
//! the cables to switches, the ISLs, the switches and the nodes, each coloured by its mark.

use serde::Serialize;

use super::{Mark, Marks};
use crate::plan::{Member, Plan, Segment};
use crate::report::html::format::fmt_val;

/// A node's box.
const NODE_W: f64 = 112.0;
const NODE_H: f64 = 40.0;

/// Where everything sits: the picture's size, the centre of each node and switch.
struct Layout {
    width: f64,
    height: f64,
    nodes: Vec<(f64, f64)>,
    switches: Vec<(f64, f64)>,
}

impl Layout {
    fn of(p: &Plan) -> Layout {
        let n = p.nodes.len().max(1);
        let width: f64 = (n as f64 * (NODE_W + 36.0) + 80.0).clamp(560.0, 1180.0);
        if p.switches.is_empty() {
            Layout::circle(p, n, width)
        } else {
            Layout::rows(p, n, width)
        }
    }

    /// Nodes in a row, grouped by the first switch they land on; switches below them.
    fn rows(p: &Plan, n: usize, width: f64) -> Layout {
        let first_switch = |ni: usize| -> usize {
            p.segments
                .iter()
                .flat_map(|s| s.members.iter())
                .find(|m| m.endpoint.node.0 == ni && m.switch.is_some())
                .and_then(|m| m.switch)
                .map(|s| s.0)
                .unwrap_or(usize::MAX)
        };
        let mut order: Vec<usize> = (0..p.nodes.len()).collect();
        order.sort_by_key(|i| (first_switch(*i), *i));
        let per = n.min(((width - 40.0) / (NODE_W + 16.0)).floor().max(1.0) as usize);
        let rows = n.div_ceil(per);
        let mut pos = vec![(0.0, 0.0); p.nodes.len()];
        for (k, ni) in order.iter().enumerate() {
            let (row, col) = (k / per, k % per);
            let in_row = if row + 1 == rows { n - row * per } else { per };
            let step = (width - 40.0) / in_row as f64;
            pos[*ni] = (20.0 + step * (col as f64 + 0.5), 40.0 + row as f64 * 70.0);
        }
        let sy = 40.0 + rows as f64 * 70.0 + 90.0;
        let mut sw_pos: Vec<(f64, f64)> = Vec::new();
        for s in &p.switches {
            let xs: Vec<f64> = p
                .segments
                .iter()
                .flat_map(|seg| seg.members.iter())
                .filter(|m| m.switch == Some(s.id))
                .map(|m| pos[m.endpoint.node.0].0)
                .collect();
            let x = if xs.is_empty() {
                width / 2.0
            } else {
                xs.iter().sum::<f64>() / xs.len() as f64
            };
            sw_pos.push((x, sy));
        }
        // switches at the same place: spread them
        for i in 0..sw_pos.len() {
            for j in 0..i {
                if (sw_pos[i].0 - sw_pos[j].0).abs() < 150.0 {
                    sw_pos[i].0 = (sw_pos[j].0 + 170.0).min(width - 80.0);
                }
            }
        }
        Layout {
            width,
            height: sy + 60.0,
            nodes: pos,
            switches: sw_pos,
        }
    }

    /// Nodes on a circle (two nodes: side by side).
    fn circle(p: &Plan, n: usize, width: f64) -> Layout {
        let cx = width / 2.0;
        let rad = if n <= 2 {
            210.0
        } else {
            150.0 + 12.0 * n as f64
        };
        let cy = if n <= 2 { 90.0 } else { rad + 50.0 };
        let mut pos = Vec::new();
        for k in 0..p.nodes.len() {
            let a = if n <= 2 {
                std::f64::consts::PI * k as f64
            } else {
                -std::f64::consts::FRAC_PI_2 + std::f64::consts::TAU * k as f64 / n as f64
            };
            pos.push((
                cx - rad * a.cos() * if n <= 2 { 1.0 } else { -1.0 },
                cy + rad * a.sin() * if n <= 2 { 0.0 } else { 1.0 },
            ));
        }
        Layout {
            width,
            height: if n <= 2 { 180.0 } else { cy + rad + 50.0 },
            nodes: pos,
            switches: Vec::new(),
        }
    }

    /// The middle of the nodes.
    fn centre(&self) -> (f64, f64) {
        let n = self.nodes.len().max(1) as f64;
        (
            self.nodes.iter().map(|p| p.0).sum::<f64>() / n,
            self.nodes.iter().map(|p| p.1).sum::<f64>() / n,
        )
    }
}

/// The picture as the template draws it: its size, each pair of directly linked nodes (their
/// links, ports and name), the cables to switches, the ISLs, the switches and the nodes, in
/// that order (the later drawn over the earlier). An element's class is its mark: `fab-ok`,
/// `fab-warn`, `fab-fail`, or `fab-none` when nothing crossed it.
#[derive(Serialize)]
pub(super) struct Drawing {
    width: f64,
    height: f64,
    node_w: f64,
    node_h: f64,
    pairs: Vec<Pair>,
    cables: Vec<Cable>,
    isls: Vec<IslLine>,
    switches: Vec<SwitchBox>,
    nodes: Vec<NodeBox>,
}

/// The links of one pair of nodes (one curve per half), the port near each end, the link's
/// name beside them.
#[derive(Serialize)]
struct Pair {
    links: Vec<Link>,
    ports: Vec<(f64, f64, String)>,
    /// Where the name goes, its anchor (`start`, `middle`, `end`), the name.
    name: (f64, f64, &'static str, String),
}

/// A link as a quadratic curve from one node to the other through `q`; its half's name at the
/// curve's middle `c`.
#[derive(Serialize)]
struct Link {
    class: &'static str,
    title: Vec<String>,
    from: (f64, f64),
    q: (f64, f64),
    to: (f64, f64),
    c: (f64, f64),
    half: String,
}

/// A line from a node's half to its switch.
#[derive(Serialize)]
struct Cable {
    class: &'static str,
    title: Vec<String>,
    from: (f64, f64),
    to: (f64, f64),
}

#[derive(Serialize)]
struct IslLine {
    class: &'static str,
    title: Vec<String>,
    from: (f64, f64),
    to: (f64, f64),
    name: String,
    capacity_gbps: f64,
}

#[derive(Serialize)]
struct SwitchBox {
    x: f64,
    y: f64,
    name: String,
    description: Option<String>,
}

/// A node's box: outlined red when a check on it failed, amber when one named it.
#[derive(Serialize)]
struct NodeBox {
    class: &'static str,
    title: Vec<String>,
    x: f64,
    y: f64,
    name: String,
}

/// The picture of the plan's fabric with its marks.
pub(super) fn draw(p: &Plan, marks: &Marks) -> Drawing {
    let lay = Layout::of(p);
    Drawing {
        width: lay.width,
        height: lay.height,
        node_w: NODE_W,
        node_h: NODE_H,
        pairs: link_pairs(p)
            .iter()
            .map(|(_, segs)| pair(p, &lay, marks, segs))
            .collect(),
        cables: cables(p, &lay, marks),
        isls: isls(p, &lay, marks),
        switches: p
            .switches
            .iter()
            .enumerate()
            .map(|(si, s)| SwitchBox {
                x: lay.switches[si].0,
                y: lay.switches[si].1,
                name: s.name.clone(),
                description: s.description.clone(),
            })
            .collect(),
        nodes: nodes(p, &lay, marks),
    }
}

fn class_name(c: Option<&'static str>) -> &'static str {
    c.unwrap_or("fab-none")
}

fn worst_class(a: Option<&'static str>, b: Option<&'static str>) -> Option<&'static str> {
    let rank = |c: Option<&str>| match c {
        Some("fab-fail") => 3,
        Some("fab-warn") => 2,
        Some("fab-ok") => 1,
        _ => 0,
    };
    if rank(a) >= rank(b) { a } else { b }
}

/// The direct and ring links (two members, no switch), by the pair of nodes they join, in
/// order of appearance.
fn link_pairs(p: &Plan) -> Vec<((usize, usize), Vec<&Segment>)> {
    let mut pairs: Vec<((usize, usize), Vec<&Segment>)> = Vec::new();
    for s in &p.segments {
        if s.members.len() == 2 && s.members.iter().all(|m| m.switch.is_none()) {
            let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
            let key = (a.min(b), a.max(b));
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(s),
                None => pairs.push((key, vec![s])),
            }
        }
    }
    pairs
}

/// The links of one pair of nodes: one curve per segment (half), the halves fanned out; the
/// ports at each end and the link's name once per pair, as on a cabling diagram.
fn pair(p: &Plan, lay: &Layout, marks: &Marks, segs: &[&Segment]) -> Pair {
    let c = segs.len();
    let mut max_off: f64 = 0.0;
    let mut links = Vec::new();
    for (k, s) in segs.iter().enumerate() {
        let off = (k as f64 - (c as f64 - 1.0) / 2.0) * 40.0;
        max_off = max_off.max(off.abs());
        links.push(link(p, lay, marks, s, off));
    }
    let (ports, name) = pair_labels(lay, segs[0], max_off);
    Pair { links, ports, name }
}

/// What a mark says, its lines; `nothing measured over it` without one.
fn mark_lines(mk: Option<&Mark>) -> Vec<String> {
    mk.map(Mark::lines)
        .unwrap_or_else(|| vec!["nothing measured over it".into()])
}

/// One link as a curve bowed by `off`, with its half's name at its middle.
fn link(p: &Plan, lay: &Layout, marks: &Marks, s: &Segment, off: f64) -> Link {
    let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
    let mk = marks.segs.get(&(s.id.0, 0));
    let mk2 = marks.segs.get(&(s.id.0, 1));
    let cls = worst_class(mk.and_then(Mark::class), mk2.and_then(Mark::class));
    let (x1, y1) = lay.nodes[a];
    let (x2, y2) = lay.nodes[b];
    let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (qx, qy) = (mx - dy / len * off, my + dx / len * off);
    let end = |m: &Member| {
        format!(
            "{} {}.{} {}",
            p.node(m.endpoint.node).name,
            m.endpoint.port,
            m.endpoint.half,
            m.address
        )
    };
    let mut title = vec![format!(
        "link {} ({}): {} \u{2014} {}",
        s.name,
        s.subnet,
        end(&s.members[0]),
        end(&s.members[1]),
    )];
    title.extend(mark_lines(mk));
    Link {
        class: class_name(cls),
        title,
        from: (x1, y1),
        q: (qx, qy),
        to: (x2, y2),
        // the curve's own middle (t = 1/2 of the quadratic)
        c: ((x1 + 2.0 * qx + x2) / 4.0, (y1 + 2.0 * qy + y2) / 4.0),
        half: s.half.clone(),
    }
}

/// The ports near each end of a pair's links, and the link's name beside the pair, away from
/// the picture's middle (`max_off`: how far the curves bow).
#[allow(clippy::type_complexity)]
fn pair_labels(
    lay: &Layout,
    s: &Segment,
    max_off: f64,
) -> (Vec<(f64, f64, String)>, (f64, f64, &'static str, String)) {
    let (fx, fy) = lay.centre();
    let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
    let (x1, y1) = lay.nodes[a];
    let (x2, y2) = lay.nodes[b];
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    let reach = (NODE_W / 2.0 + 20.0).min(len / 3.0);
    let ports = [
        (&s.members[0], (x1, y1), 1.0),
        (&s.members[1], (x2, y2), -1.0),
    ]
    .into_iter()
    .map(|(m, (x, y), dir)| {
        (
            x + ux * reach * dir,
            y + uy * reach * dir + if uy.abs() < 0.3 { -10.0 } else { 4.0 },
            m.endpoint.port.clone(),
        )
    })
    .collect();
    let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
    let (mut nx, mut ny) = (-uy, ux);
    if (mx + nx - fx).powi(2) + (my + ny - fy).powi(2) < (mx - fx).powi(2) + (my - fy).powi(2) {
        (nx, ny) = (-nx, -ny);
    }
    let name = s
        .name
        .strip_suffix(&format!(".{}", s.half))
        .unwrap_or(&s.name);
    let d = max_off / 2.0 + 18.0;
    let anchor = if nx > 0.3 {
        "start"
    } else if nx < -0.3 {
        "end"
    } else {
        "middle"
    };
    (
        ports,
        (mx + nx * d, my + ny * d + 4.0, anchor, name.to_string()),
    )
}

/// Switched: a line from each node half to its switch.
fn cables(p: &Plan, lay: &Layout, marks: &Marks) -> Vec<Cable> {
    let mut out = Vec::new();
    for s in &p.segments {
        for (mi, m) in s.members.iter().enumerate() {
            let Some(sw) = m.switch else { continue };
            let mk = marks.segs.get(&(s.id.0, mi));
            let (x1, y1) = lay.nodes[m.endpoint.node.0];
            let (x2, y2) = lay.switches[sw.0];
            let off = if m.endpoint.half == "a" { -8.0 } else { 8.0 };
            let mut title = vec![format!(
                "{} {}.{} on {} ({}, {})",
                p.node(m.endpoint.node).name,
                m.endpoint.port,
                m.endpoint.half,
                p.switches[sw.0].name,
                s.name,
                m.address,
            )];
            title.extend(mark_lines(mk));
            out.push(Cable {
                class: class_name(mk.and_then(Mark::class)),
                title,
                from: (x1 + off, y1 + NODE_H / 2.0),
                to: (x2 + off * 2.0, y2 - 16.0),
            });
        }
    }
    out
}

/// The ISLs between switches, with their name and capacity.
fn isls(p: &Plan, lay: &Layout, marks: &Marks) -> Vec<IslLine> {
    p.isls
        .iter()
        .enumerate()
        .map(|(ii, isl)| {
            let mut title = vec![format!(
                "ISL {} {} \u{2014} {}, {} Gb/s per direction",
                isl.name,
                p.switches[isl.a.0].name,
                p.switches[isl.b.0].name,
                fmt_val(isl.capacity_gbps),
            )];
            title.extend(marks.isls[ii].lines());
            IslLine {
                class: class_name(marks.isls[ii].class()),
                title,
                from: lay.switches[isl.a.0],
                to: lay.switches[isl.b.0],
                name: isl.name.clone(),
                capacity_gbps: isl.capacity_gbps,
            }
        })
        .collect()
}

/// The nodes: outlined red when a check on them failed, amber when one named them.
fn nodes(p: &Plan, lay: &Layout, marks: &Marks) -> Vec<NodeBox> {
    p.nodes
        .iter()
        .enumerate()
        .map(|(ni, node)| {
            let mk = &marks.nodes[ni];
            let class = if mk.check_fail {
                "fab-node fab-fail"
            } else if !mk.notes.is_empty() {
                "fab-node fab-warn"
            } else {
                "fab-node"
            };
            let mut title = vec![format!("node {}", node.name)];
            title.extend(mk.notes.iter().cloned());
            NodeBox {
                class,
                title,
                x: lay.nodes[ni].0,
                y: lay.nodes[ni].1,
                name: node.name.clone(),
            }
        })
        .collect()
}
