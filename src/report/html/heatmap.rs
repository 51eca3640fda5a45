//! The node x node bandwidth heatmap: one matrix per kind and half, row the client, column the
//! server, one cell per measured pair, coloured by the fraction of the expected value.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::ctx::{BwItem, Ctx, bw_items};
use super::format::{class, esc, fmt_val};
use crate::compare::{self, baseline as base};
use crate::gate::judge::Outcome;

/// Hue from red (at 30% of expected and below) to green (at 100%).
fn heat(frac: f64) -> String {
    let t = ((frac - 0.3) / 0.7).clamp(0.0, 1.0);
    let hue = 2.0 + t * 126.0;
    format!("hsl({hue:.0},62%,{}%)", 78.0 - 8.0 * (1.0 - t))
}

pub(super) fn heatmaps(h: &mut String, ctx: &Ctx<'_>) {
    let items = bw_items(ctx);
    if items.is_empty() {
        return;
    }
    legend(h);
    // matrices: (kind, half) in order of appearance
    let mut mats: Vec<(String, String)> = Vec::new();
    for it in &items {
        let k = (it.job.kind.clone(), it.flow.half.clone());
        if !mats.contains(&k) {
            mats.push(k);
        }
    }
    for (kind, half) in &mats {
        let mine: Vec<&BwItem<'_>> = items
            .iter()
            .filter(|it| &it.job.kind == kind && &it.flow.half == half)
            .collect();
        matrix(h, ctx, &mine, kind, half);
    }
    h.push_str("</div></section>\n");
}

/// The section's heading and colour legend; the grid of matrices opens.
fn legend(h: &mut String) {
    h.push_str("<section id=\"heatmap\"><h2>Bandwidth, node x node</h2>\n<div class=\"legend\"><span>row: client (sends) &#8594; column: server (receives); colour: measured / expected</span>");
    for (label, f) in [
        ("&#8804; 30%", 0.3),
        ("65%", 0.65),
        ("80%", 0.8),
        ("90%", 0.9),
        ("&#8805; 100%", 1.0),
    ] {
        let _ = write!(
            h,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{label}</span>",
            heat(f)
        );
    }
    h.push_str("<span><span class=\"swatch\" style=\"background:#fff;border:2px solid var(--fail)\"></span>FAIL</span><span><span class=\"swatch\" style=\"background:#fff;border:2px solid var(--warn)\"></span>WARN</span></div>\n<div class=\"grid\">\n");
}

/// Up to this many nodes a matrix has a row and a column per node; above, consecutive nodes
/// (in plan order) share one, so that it has at most this many: a cell is then the weakest
/// flow between two groups of nodes.
const MAX_ROWS: usize = 64;

/// One matrix's rows (nodes, or groups of nodes, in plan order), its measured cells (row,
/// column), and its geometry: cell width and height, the width of the row labels, the top of
/// the first row.
struct Grid<'i, 'a> {
    names: Vec<String>,
    /// Nodes per row (1 unless grouped).
    per_row: usize,
    cells: BTreeMap<(usize, usize), Vec<&'i BwItem<'a>>>,
    cw: f64,
    chh: f64,
    label_w: f64,
    top: f64,
}

impl<'i, 'a> Grid<'i, 'a> {
    fn of(ctx: &Ctx<'_>, mine: &[&'i BwItem<'a>]) -> Grid<'i, 'a> {
        let mut nodes: Vec<&str> = mine
            .iter()
            .flat_map(|it| [it.flow.src.as_str(), it.flow.dst.as_str()])
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes.sort_by_cached_key(|n| (ctx.node_order(n), n.to_string()));
        let at: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let per_row = nodes.len().div_ceil(MAX_ROWS).max(1);
        let names: Vec<String> = nodes
            .chunks(per_row)
            .map(|c| match c {
                [one] => one.to_string(),
                [first, .., last] => format!("{first}\u{2013}{last}"),
                [] => String::new(),
            })
            .collect();
        let mut cells: BTreeMap<(usize, usize), Vec<&BwItem<'_>>> = BTreeMap::new();
        for it in mine {
            let (Some(a), Some(b)) = (at.get(it.flow.src.as_str()), at.get(it.flow.dst.as_str()))
            else {
                continue;
            };
            cells
                .entry((a / per_row, b / per_row))
                .or_default()
                .push(it);
        }
        let n = names.len();
        let cw = (760.0 / n as f64).clamp(16.0, 76.0);
        let chh = (cw * 0.62).max(16.0);
        let label_w =
            names.iter().map(|s| s.chars().count()).max().unwrap_or(4) as f64 * 7.2 + 12.0;
        let top = 22.0 + if cw < 40.0 { 60.0 } else { 18.0 };
        Grid {
            names,
            per_row,
            cells,
            cw,
            chh,
            label_w,
            top,
        }
    }
}

/// The matrix of one kind and half: caption, axis names, column labels, then row by row.
fn matrix(h: &mut String, ctx: &Ctx<'_>, mine: &[&BwItem<'_>], kind: &str, half: &str) {
    let g = Grid::of(ctx, mine);
    let n = g.names.len();
    let (label_w, top) = (g.label_w, g.top);
    let w = label_w + g.cw * n as f64 + 8.0;
    let hh = top + g.chh * n as f64 + 8.0;
    let what = if half == "both" {
        "both halves, summed".to_string()
    } else {
        format!("half {}", esc(half))
    };
    let grouped = if g.per_row > 1 {
        format!(
            " &#183; {} nodes per row and column, each cell the weakest flow between two groups",
            g.per_row
        )
    } else {
        String::new()
    };
    let _ = write!(
        h,
        "<figure><figcaption>{} &#183; {what}{grouped}</figcaption><svg class=\"heatmap\" width=\"{w:.0}\" height=\"{hh:.0}\" viewBox=\"0 0 {w:.0} {hh:.0}\" role=\"img\" aria-label=\"{} {what} bandwidth matrix\">",
        esc(kind),
        esc(kind),
    );
    let _ = write!(
        h,
        "<text x=\"{label_w:.0}\" y=\"12\" font-size=\"10.5\" fill=\"#59636e\">server &#8594;</text><text x=\"2\" y=\"{:.0}\" font-size=\"10.5\" fill=\"#59636e\">client &#8595;</text>",
        top - 4.0
    );
    column_labels(h, &g);
    for ri in 0..n {
        matrix_row(h, ctx, &g, ri);
    }
    h.push_str("</svg></figure>\n");
}

/// The servers over the columns, slanted when the columns are narrow.
fn column_labels(h: &mut String, g: &Grid<'_, '_>) {
    let (cw, top) = (g.cw, g.top);
    for (ci, name) in g.names.iter().enumerate() {
        let x = g.label_w + cw * ci as f64 + cw / 2.0;
        if cw < 40.0 {
            let _ = write!(
                h,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10.5\" transform=\"rotate(-55 {x:.1} {:.1})\">{}</text>",
                top - 4.0,
                top - 4.0,
                esc(name)
            );
        } else {
            let _ = write!(
                h,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                top - 5.0,
                esc(name)
            );
        }
    }
}

/// Row `ri`: the client's name, then a cell per server (blank where nothing was measured,
/// grey on the diagonal).
fn matrix_row(h: &mut String, ctx: &Ctx<'_>, g: &Grid<'_, '_>, ri: usize) {
    let (cw, chh, top) = (g.cw, g.chh, g.top);
    let y = top + chh * ri as f64 + chh / 2.0 + 4.0;
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
        g.label_w - 6.0,
        esc(&g.names[ri])
    );
    for ci in 0..g.names.len() {
        let x = g.label_w + cw * ci as f64;
        let y0 = top + chh * ri as f64;
        match g.cells.get(&(ri, ci)) {
            None => {
                let fill = if ri == ci { "#eaeef2" } else { "#fff" };
                let _ = write!(
                    h,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#d1d9e0\"/>",
                    x + 1.0,
                    y0 + 1.0,
                    cw - 2.0,
                    chh - 2.0
                );
            }
            Some(list) if g.per_row > 1 => {
                let title = group_title(list, &g.names[ri], &g.names[ci]);
                heat_cell(h, list, title, x, y0, cw, chh)
            }
            Some(list) => heat_cell(h, list, cell_title(ctx, list), x, y0, cw, chh),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn heat_cell(
    h: &mut String,
    list: &[&BwItem<'_>],
    title: String,
    x: f64,
    y0: f64,
    cw: f64,
    chh: f64,
) {
    let worst = list
        .iter()
        .map(|it| it.v.outcome)
        .max()
        .unwrap_or(Outcome::Ok);
    // the weakest measurement of the pair decides the colour
    let frac = list
        .iter()
        .filter_map(|it| Some(it.v.measured? / it.v.expected.filter(|e| *e > 0.0)?))
        .fold(None, |a: Option<f64>, f| Some(a.map_or(f, |a| a.min(f))));
    let fill = match (frac, worst) {
        (Some(f), _) => heat(f),
        (None, Outcome::Fail) => heat(0.0),
        (None, Outcome::Warn) => heat(0.65),
        (None, Outcome::Ok) => heat(1.0),
    };
    let value = list
        .iter()
        .filter_map(|it| it.v.measured)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.min(v))));
    let it0 = list[0];
    let pair = format!(
        "{}|{}|{}|{}",
        it0.job.kind, it0.flow.half, it0.flow.src, it0.flow.dst
    );
    let stroke = match worst {
        Outcome::Fail => "stroke=\"#cf222e\" stroke-width=\"3\"",
        Outcome::Warn => "stroke=\"#9a6700\" stroke-width=\"3\"",
        Outcome::Ok => "stroke=\"#fff\" stroke-width=\"1\"",
    };
    let _ = write!(
        h,
        "<g class=\"hm-cell {}\" data-pair=\"{}\"><title>{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\" fill=\"{fill}\" {stroke}/>",
        class(worst),
        esc(&pair),
        title.trim_end(),
        x + 1.5,
        y0 + 1.5,
        cw - 3.0,
        chh - 3.0
    );
    if cw >= 40.0 {
        let cx = x + cw / 2.0;
        let txt = value.map(fmt_val).unwrap_or_else(|| "&#8212;".into());
        let _ = write!(
            h,
            "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"12\" font-weight=\"600\" text-anchor=\"middle\">{txt}</text>",
            y0 + chh / 2.0
                + (if frac.is_some() && chh >= 40.0 {
                    -1.0
                } else {
                    4.0
                })
        );
        if let (Some(f), true) = (frac, chh >= 40.0) {
            let _ = write!(
                h,
                "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#3d444d\">{:.0}%{}</text>",
                y0 + chh / 2.0 + 12.0,
                f * 100.0,
                if list.len() > 1 {
                    format!(" &#215;{}", list.len())
                } else {
                    String::new()
                }
            );
        }
    }
    h.push_str("</g>");
}

/// A grouped cell's tooltip: how many flows between the two groups, how many failed or
/// warned, and the weakest.
fn group_title(list: &[&BwItem<'_>], rows: &str, cols: &str) -> String {
    let count = |o: Outcome| list.iter().filter(|it| it.v.outcome == o).count();
    let frac = |it: &&BwItem<'_>| Some(it.v.measured? / it.v.expected.filter(|e| *e > 0.0)?);
    let mut title = format!(
        "{} &#8594; {}: {} flow(s), {} FAIL, {} WARN",
        esc(rows),
        esc(cols),
        list.len(),
        count(Outcome::Fail),
        count(Outcome::Warn)
    );
    let weakest = list
        .iter()
        .filter_map(|it| Some((frac(it)?, it)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((f, it)) = weakest {
        let _ = write!(
            title,
            "; weakest {} &#8594; {} (round {}): {} {}, {:.0}% of expected",
            esc(&it.flow.src_endpoint()),
            esc(&it.flow.dst_endpoint()),
            esc(&it.job.round_name),
            it.v.measured.map(fmt_val).unwrap_or_default(),
            esc(&it.v.unit),
            f * 100.0
        );
    }
    title
}

/// A cell's tooltip: one line per measurement of the pair (round, value, expected, gate,
/// baseline).
fn cell_title(ctx: &Ctx<'_>, list: &[&BwItem<'_>]) -> String {
    let mut title = String::new();
    for it in list {
        let v = it.v;
        let _ = write!(
            title,
            "{} &#8594; {} (round {}): {}",
            esc(&it.flow.src_endpoint()),
            esc(&it.flow.dst_endpoint()),
            esc(&it.job.round_name),
            v.measured
                .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                .unwrap_or_else(|| "not measured".into()),
        );
        if let (Some(m), Some(e)) = (v.measured, v.expected) {
            let _ = write!(title, ", expected {} ({:.0}%)", fmt_val(e), m / e * 100.0);
        }
        let _ = write!(
            title,
            "; gate {}: {}",
            esc(&v.threshold),
            v.outcome.as_str()
        );
        if let Some(o) = ctx.was.get(&v.gate) {
            let _ = write!(
                title,
                "; baseline {} ({})",
                fmt_val(*o),
                base::fmt_change(v.measured.and_then(|m| compare::change_pct(*o, m)))
            );
        }
        title.push('\n');
    }
    title
}
