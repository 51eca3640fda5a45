//! The fabric as a picture: nodes, switches, cables and ISLs, each marked by what was measured
//! over it and the checks that name it.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::ctx::{Ctx, bw_items};
use super::format::{esc, fmt_val};
use crate::gate::judge::Outcome;
use crate::plan::{Endpoint, Plan};

/// An element of the picture and what crossed it.
#[derive(Default)]
struct Mark {
    ok: usize,
    warn: usize,
    fail: usize,
    /// A check that names the element failed (discovery, MTU, ping).
    check_fail: bool,
    notes: Vec<String>,
}

impl Mark {
    fn add(&mut self, o: Outcome, note: String) {
        match o {
            Outcome::Ok => self.ok += 1,
            Outcome::Warn => self.warn += 1,
            Outcome::Fail => self.fail += 1,
        }
        if o != Outcome::Ok && self.notes.len() < 6 {
            self.notes.push(note);
        }
    }

    /// FAIL when every flow over it failed or a check on it failed, WARN when some did not
    /// pass, OK when all passed; `None` when nothing crossed it.
    fn class(&self) -> Option<&'static str> {
        let n = self.ok + self.warn + self.fail;
        if self.check_fail || (n > 0 && self.fail == n) {
            Some("fab-fail")
        } else if self.warn + self.fail > 0 {
            Some("fab-warn")
        } else if n > 0 {
            Some("fab-ok")
        } else {
            None
        }
    }

    fn title(&self) -> String {
        let n = self.ok + self.warn + self.fail;
        let mut s = if n == 0 {
            "nothing measured over it".to_string()
        } else {
            format!(
                "{n} measurement(s): {} OK, {} WARN, {} FAIL",
                self.ok, self.warn, self.fail
            )
        };
        for x in &self.notes {
            s.push('\n');
            s.push_str(x);
        }
        s
    }
}

pub(super) fn fabric(h: &mut String, ctx: &Ctx<'_>) {
    h.push_str("<section id=\"fabric\"><h2>The fabric</h2>\n");
    let (Some(p), Some(fab)) = (ctx.plan, ctx.fabric.as_ref()) else {
        let _ = writeln!(
            h,
            "<p class=\"note\">No picture: {}</p></section>",
            esc(ctx
                .plan_note
                .as_deref()
                .unwrap_or("the run directory has no plan.toml"))
        );
        return;
    };
    // marks: per node, per segment member (its cable), per ISL
    let mut node_mark: Vec<Mark> = p.nodes.iter().map(|_| Mark::default()).collect();
    let mut seg_mark: HashMap<(usize, usize), Mark> = HashMap::new();
    let mut isl_mark: Vec<Mark> = p.isls.iter().map(|_| Mark::default()).collect();
    let ep_names: Vec<(String, Endpoint, usize, usize)> =
        p.segments
            .iter()
            .flat_map(|s| {
                s.members.iter().enumerate().map(move |(mi, m)| {
                    (p.endpoint_name(&m.endpoint), m.endpoint.clone(), s.id.0, mi)
                })
            })
            .collect();
    let find = |name: &str| ep_names.iter().find(|(n, ..)| n == name);
    for d in &ctx.r.discovery {
        if !d.reachable
            && let Some(i) = p.nodes.iter().position(|n| n.name == d.node)
        {
            node_mark[i].check_fail = true;
            node_mark[i].add(
                Outcome::Fail,
                format!("unreachable: {}", d.error.clone().unwrap_or_default()),
            );
        }
    }
    // checks (preflight) name endpoints: mark their cables and nodes
    for v in &ctx.r.preflight {
        for tok in v.gate.split_whitespace() {
            if let Some((_, e, s, m)) = find(tok) {
                let mk = seg_mark.entry((*s, *m)).or_default();
                if v.outcome == Outcome::Fail {
                    mk.check_fail = true;
                    mk.notes.push(format!("{}: {}", v.gate, v.detail));
                }
                if v.outcome == Outcome::Fail {
                    node_mark[e.node.0].notes.push(format!("{}: FAIL", v.gate));
                }
            } else if let Some(i) = p.nodes.iter().position(|n| n.name == tok)
                && v.outcome != Outcome::Ok
            {
                node_mark[i]
                    .notes
                    .push(format!("{}: {}", v.gate, v.outcome.as_str()));
            }
        }
    }
    // measurements: every flow marks the cables at both ends and the ISLs it crossed
    for it in bw_items(ctx).iter().filter(|it| it.flow.half != "both") {
        let note = format!(
            "{} {}",
            it.v.gate,
            it.v.measured
                .map(|m| format!("{} {}", fmt_val(m), it.v.unit))
                .unwrap_or_else(|| "not measured".into())
        );
        let (Some(c), Some(s)) = (find(&it.flow.src_endpoint()), find(&it.flow.dst_endpoint()))
        else {
            continue;
        };
        seg_mark
            .entry((c.2, c.3))
            .or_default()
            .add(it.v.outcome, note.clone());
        if (s.2, s.3) != (c.2, c.3) {
            seg_mark
                .entry((s.2, s.3))
                .or_default()
                .add(it.v.outcome, note.clone());
        }
        if let Some(path) = fab.path(p, &c.1, &s.1) {
            for (isl, _) in path.isl_hops() {
                isl_mark[isl.0].add(it.v.outcome, note.clone());
            }
        }
    }
    fabric_svg(h, p, &node_mark, &seg_mark, &isl_mark);
    h.push_str("<div class=\"legend\"><span><span class=\"swatch\" style=\"background:#2da44e\"></span>every measurement over it passed</span><span><span class=\"swatch\" style=\"background:#bf8700\"></span>some did not pass</span><span><span class=\"swatch\" style=\"background:#cf222e\"></span>all failed, or a check on it failed</span><span><span class=\"swatch\" style=\"background:#8c959f\"></span>not measured</span><span>hover an element for its measurements</span></div>\n</section>\n");
}

fn mark_color(c: Option<&str>) -> &'static str {
    match c {
        Some("fab-fail") => "#cf222e",
        Some("fab-warn") => "#bf8700",
        Some("fab-ok") => "#2da44e",
        _ => "#8c959f",
    }
}

fn fabric_svg(
    h: &mut String,
    p: &Plan,
    node_mark: &[Mark],
    seg_mark: &HashMap<(usize, usize), Mark>,
    isl_mark: &[Mark],
) {
    let n = p.nodes.len().max(1);
    let switched = !p.switches.is_empty();
    let node_w = 112.0;
    let node_h = 40.0;
    let width: f64 = (n as f64 * (node_w + 36.0) + 80.0).clamp(560.0, 1180.0);
    // positions
    let mut pos: Vec<(f64, f64)> = Vec::new();
    let mut sw_pos: Vec<(f64, f64)> = Vec::new();
    let height;
    if switched {
        // nodes in a row, grouped by the first switch they land on; switches below them
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
        let per = n.min(((width - 40.0) / (node_w + 16.0)).floor().max(1.0) as usize);
        let rows = n.div_ceil(per);
        pos = vec![(0.0, 0.0); p.nodes.len()];
        for (k, ni) in order.iter().enumerate() {
            let (row, col) = (k / per, k % per);
            let in_row = if row + 1 == rows { n - row * per } else { per };
            let step = (width - 40.0) / in_row as f64;
            pos[*ni] = (20.0 + step * (col as f64 + 0.5), 40.0 + row as f64 * 70.0);
        }
        let sy = 40.0 + rows as f64 * 70.0 + 90.0;
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
        height = sy + 60.0;
    } else {
        // nodes on a circle (two nodes: side by side)
        let cx = width / 2.0;
        let rad = if n <= 2 {
            210.0
        } else {
            150.0 + 12.0 * n as f64
        };
        let cy = if n <= 2 { 90.0 } else { rad + 50.0 };
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
        height = if n <= 2 { 180.0 } else { cy + rad + 50.0 };
    }
    let _ = write!(
        h,
        "<svg class=\"fabric\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"the fabric\">"
    );
    // direct and ring links: one curve per segment (half), the halves of a pair fanned out; the
    // ports at each end and the link's name once per pair, as on a cabling diagram
    let mut pairs: Vec<((usize, usize), Vec<&crate::plan::Segment>)> = Vec::new();
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
    let (fx, fy) = {
        let n = pos.len().max(1) as f64;
        (
            pos.iter().map(|p| p.0).sum::<f64>() / n,
            pos.iter().map(|p| p.1).sum::<f64>() / n,
        )
    };
    for (_, segs) in &pairs {
        let c = segs.len();
        let mut max_off: f64 = 0.0;
        for (k, s) in segs.iter().enumerate() {
            let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
            let mk = seg_mark.get(&(s.id.0, 0));
            let mk2 = seg_mark.get(&(s.id.0, 1));
            let cls = worst_class(mk.and_then(Mark::class), mk2.and_then(Mark::class));
            let (x1, y1) = pos[a];
            let (x2, y2) = pos[b];
            let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
            let (dx, dy) = (x2 - x1, y2 - y1);
            let len = (dx * dx + dy * dy).sqrt().max(1.0);
            let off = (k as f64 - (c as f64 - 1.0) / 2.0) * 40.0;
            max_off = max_off.max(off.abs());
            let (nx, ny) = (-dy / len * off, dx / len * off);
            let (qx, qy) = (mx + nx, my + ny);
            // the curve's own middle (t = 1/2 of the quadratic)
            let (cx, cy) = ((x1 + 2.0 * qx + x2) / 4.0, (y1 + 2.0 * qy + y2) / 4.0);
            let end = |m: &crate::plan::Member| {
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
        // ports near each end, the link's name beside the pair, away from the picture's middle
        let s = segs[0];
        let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
        let (x1, y1) = pos[a];
        let (x2, y2) = pos[b];
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ux, uy) = (dx / len, dy / len);
        let reach = (node_w / 2.0 + 20.0).min(len / 3.0);
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
    // switched: node half -> switch
    for s in &p.segments {
        for (mi, m) in s.members.iter().enumerate() {
            let Some(sw) = m.switch else { continue };
            let mk = seg_mark.get(&(s.id.0, mi));
            let cls = mk.and_then(Mark::class);
            let (x1, y1) = pos[m.endpoint.node.0];
            let (x2, y2) = sw_pos[sw.0];
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
                y1 + node_h / 2.0,
                x2 + off * 2.0,
                y2 - 16.0,
                mark_color(cls),
                if cls == Some("fab-fail") { 4 } else { 2 },
            );
        }
    }
    for (ii, isl) in p.isls.iter().enumerate() {
        let (x1, y1) = sw_pos[isl.a.0];
        let (x2, y2) = sw_pos[isl.b.0];
        let cls = isl_mark[ii].class();
        let title = format!(
            "ISL {} {} &#8212; {}, {} Gb/s per direction\n{}",
            esc(&isl.name),
            esc(&p.switches[isl.a.0].name),
            esc(&p.switches[isl.b.0].name),
            fmt_val(isl.capacity_gbps),
            esc(&isl_mark[ii].title())
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
    for (si, s) in p.switches.iter().enumerate() {
        let (x, y) = sw_pos[si];
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
    for (ni, node) in p.nodes.iter().enumerate() {
        let (x, y) = pos[ni];
        let mk = &node_mark[ni];
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
    h.push_str("</svg>");
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
