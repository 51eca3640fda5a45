//! The fabric picture as SVG: where nodes and switches sit, then the direct and ring links,
//! the cables to switches, the ISLs, the switches and the nodes, each coloured by its mark.

use std::fmt::Write as _;

use super::{Mark, Marks};
use crate::plan::{Member, Plan, Segment};
use crate::report::html::format::{esc, fmt_val};

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

/// The picture of the plan's fabric with its marks.
pub(super) fn draw(h: &mut String, p: &Plan, marks: &Marks) {
    let lay = Layout::of(p);
    let _ = write!(
        h,
        "<svg class=\"fabric\" width=\"{:.0}\" height=\"{:.0}\" viewBox=\"0 0 {:.0} {:.0}\" role=\"img\" aria-label=\"the fabric\">",
        lay.width, lay.height, lay.width, lay.height
    );
    for (_, segs) in &link_pairs(p) {
        pair_links(h, p, &lay, marks, segs);
    }
    cables(h, p, &lay, marks);
    isls(h, p, &lay, marks);
    switches(h, p, &lay);
    nodes(h, p, &lay, marks);
    h.push_str("</svg>");
}

fn mark_color(c: Option<&str>) -> &'static str {
    match c {
        Some("fab-fail") => "#cf222e",
        Some("fab-warn") => "#bf8700",
        Some("fab-ok") => "#2da44e",
        _ => "#8c959f",
    }
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
fn pair_links(h: &mut String, p: &Plan, lay: &Layout, marks: &Marks, segs: &[&Segment]) {
    let c = segs.len();
    let mut max_off: f64 = 0.0;
    for (k, s) in segs.iter().enumerate() {
        let off = (k as f64 - (c as f64 - 1.0) / 2.0) * 40.0;
        max_off = max_off.max(off.abs());
        link_curve(h, p, lay, marks, s, off);
    }
    pair_labels(h, lay, segs[0], max_off);
}

/// One link as a curve bowed by `off`, with its half's name at its middle.
fn link_curve(h: &mut String, p: &Plan, lay: &Layout, marks: &Marks, s: &Segment, off: f64) {
    let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
    let mk = marks.segs.get(&(s.id.0, 0));
    let mk2 = marks.segs.get(&(s.id.0, 1));
    let cls = worst_class(mk.and_then(Mark::class), mk2.and_then(Mark::class));
    let (x1, y1) = lay.nodes[a];
    let (x2, y2) = lay.nodes[b];
    let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (nx, ny) = (-dy / len * off, dx / len * off);
    let (qx, qy) = (mx + nx, my + ny);
    // the curve's own middle (t = 1/2 of the quadratic)
    let (cx, cy) = ((x1 + 2.0 * qx + x2) / 4.0, (y1 + 2.0 * qy + y2) / 4.0);
    let end = |m: &Member| {
        format!(
            "{} {}.{} {}",
            esc(&p.node(m.endpoint.node).name),
            esc(&m.endpoint.port),
            esc(&m.endpoint.half),
            m.address
        )
    };
    let title = format!(
        "link {} ({}): {} &#8212; {}\n{}",
        esc(&s.name),
        esc(&s.subnet.to_string()),
        end(&s.members[0]),
        end(&s.members[1]),
        esc(&mk
            .map(Mark::title)
            .unwrap_or_else(|| "nothing measured over it".into()))
    );
    let _ = write!(
        h,
        "<g class=\"fab-link {}\"><title>{title}</title><path d=\"M{x1:.1} {y1:.1} Q{qx:.1} {qy:.1} {x2:.1} {y2:.1}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"10.5\" font-weight=\"600\" text-anchor=\"middle\" fill=\"{}\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"4\">{}</text></g>",
        cls.unwrap_or("fab-none"),
        mark_color(cls),
        if cls == Some("fab-fail") { 5 } else { 3 },
        cy + 4.0,
        mark_color(cls),
        esc(&s.half),
    );
}

/// The ports near each end of a pair's links, and the link's name beside the pair, away from
/// the picture's middle (`max_off`: how far the curves bow).
fn pair_labels(h: &mut String, lay: &Layout, s: &Segment, max_off: f64) {
    let (fx, fy) = lay.centre();
    let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
    let (x1, y1) = lay.nodes[a];
    let (x2, y2) = lay.nodes[b];
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    let reach = (NODE_W / 2.0 + 20.0).min(len / 3.0);
    for (m, (x, y), dir) in [
        (&s.members[0], (x1, y1), 1.0),
        (&s.members[1], (x2, y2), -1.0),
    ] {
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" text-anchor=\"middle\" fill=\"#3d444d\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"4\">{}</text>",
            x + ux * reach * dir,
            y + uy * reach * dir + if uy.abs() < 0.3 { -10.0 } else { 4.0 },
            esc(&m.endpoint.port)
        );
    }
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
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"{anchor}\" fill=\"#59636e\">{}</text>",
        mx + nx * d,
        my + ny * d + 4.0,
        esc(name)
    );
}

/// Switched: a line from each node half to its switch.
fn cables(h: &mut String, p: &Plan, lay: &Layout, marks: &Marks) {
    for s in &p.segments {
        for (mi, m) in s.members.iter().enumerate() {
            let Some(sw) = m.switch else { continue };
            let mk = marks.segs.get(&(s.id.0, mi));
            let cls = mk.and_then(Mark::class);
            let (x1, y1) = lay.nodes[m.endpoint.node.0];
            let (x2, y2) = lay.switches[sw.0];
            let off = if m.endpoint.half == "a" { -8.0 } else { 8.0 };
            let title = format!(
                "{} {}.{} on {} ({}, {})\n{}",
                esc(&p.node(m.endpoint.node).name),
                esc(&m.endpoint.port),
                esc(&m.endpoint.half),
                esc(&p.switches[sw.0].name),
                esc(&s.name),
                m.address,
                esc(&mk
                    .map(Mark::title)
                    .unwrap_or_else(|| "nothing measured over it".into()))
            );
            let _ = write!(
                h,
                "<g class=\"fab-cable {}\"><title>{title}</title><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-width=\"{}\"/></g>",
                cls.unwrap_or("fab-none"),
                x1 + off,
                y1 + NODE_H / 2.0,
                x2 + off * 2.0,
                y2 - 16.0,
                mark_color(cls),
                if cls == Some("fab-fail") { 4 } else { 2 },
            );
        }
    }
}

/// The ISLs between switches, with their name and capacity.
fn isls(h: &mut String, p: &Plan, lay: &Layout, marks: &Marks) {
    for (ii, isl) in p.isls.iter().enumerate() {
        let (x1, y1) = lay.switches[isl.a.0];
        let (x2, y2) = lay.switches[isl.b.0];
        let cls = marks.isls[ii].class();
        let title = format!(
            "ISL {} {} &#8212; {}, {} Gb/s per direction\n{}",
            esc(&isl.name),
            esc(&p.switches[isl.a.0].name),
            esc(&p.switches[isl.b.0].name),
            fmt_val(isl.capacity_gbps),
            esc(&marks.isls[ii].title())
        );
        let _ = write!(
            h,
            "<g class=\"fab-isl {}\"><title>{title}</title><line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#3d444d\">{} &#183; {} Gb/s</text></g>",
            cls.unwrap_or("fab-none"),
            mark_color(cls),
            if cls == Some("fab-fail") { 8 } else { 6 },
            (x1 + x2) / 2.0,
            (y1 + y2) / 2.0 + 24.0,
            esc(&isl.name),
            fmt_val(isl.capacity_gbps)
        );
    }
}

fn switches(h: &mut String, p: &Plan, lay: &Layout) {
    for (si, s) in p.switches.iter().enumerate() {
        let (x, y) = lay.switches[si];
        let _ = write!(
            h,
            "<g class=\"fab-switch\"><title>switch {}{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"120\" height=\"32\" rx=\"4\" fill=\"#24292f\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"#fff\" text-anchor=\"middle\">{}</text></g>",
            esc(&s.name),
            s.description
                .as_deref()
                .map(|d| format!(": {}", esc(d)))
                .unwrap_or_default(),
            x - 60.0,
            y - 16.0,
            y + 4.0,
            esc(&s.name)
        );
    }
}

/// The nodes: outlined red when a check on them failed, amber when one named them.
fn nodes(h: &mut String, p: &Plan, lay: &Layout, marks: &Marks) {
    let (node_w, node_h) = (NODE_W, NODE_H);
    for (ni, node) in p.nodes.iter().enumerate() {
        let (x, y) = lay.nodes[ni];
        let mk = &marks.nodes[ni];
        let failed = mk.check_fail;
        let warned = !mk.notes.is_empty();
        let cls = if failed {
            "fab-node fab-fail"
        } else if warned {
            "fab-node fab-warn"
        } else {
            "fab-node"
        };
        let stroke = if failed {
            "#cf222e"
        } else if warned {
            "#bf8700"
        } else {
            "#57606a"
        };
        let mut title = format!("node {}", esc(&node.name));
        for x in &mk.notes {
            title.push('\n');
            title.push_str(&esc(x));
        }
        let _ = write!(
            h,
            "<g class=\"{cls}\"><title>{title}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{node_w}\" height=\"{node_h}\" rx=\"6\" fill=\"#fff\" stroke=\"{stroke}\" stroke-width=\"{}\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12.5\" font-weight=\"600\" text-anchor=\"middle\">{}</text></g>",
            x - node_w / 2.0,
            y - node_h / 2.0,
            if failed || warned { 3.0 } else { 1.5 },
            y + 4.5,
            esc(&node.name)
        );
    }
}
