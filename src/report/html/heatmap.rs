//! The node x node bandwidth heatmap: one matrix per kind and half, row the client, column the
//! server, one cell per measured pair, coloured by the fraction of the expected value.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::ctx::{BwItem, Ctx, bw_items};
use super::format::fmt_val;
use crate::compare::{self, baseline as base};
use crate::gate::judge::Outcome;
use crate::text::width::columns;

/// Hue from red (at 30% of expected and below) to green (at 100%).
fn heat(frac: f64) -> String {
    let t = ((frac - 0.3) / 0.7).clamp(0.0, 1.0);
    let hue = 2.0 + t * 126.0;
    format!("hsl({hue:.0},62%,{}%)", 78.0 - 8.0 * (1.0 - t))
}

/// The section: the colour legend, one matrix per kind and half.
#[derive(Serialize)]
pub(super) struct Heatmap {
    /// What a colour means: a fraction of the expected value and its colour.
    legend: Vec<(&'static str, String)>,
    matrices: Vec<Matrix>,
}

/// The matrix of one kind and half: its rows (nodes, or groups of nodes), its geometry, its
/// cells row by row.
#[derive(Serialize)]
struct Matrix {
    kind: String,
    half: String,
    /// Nodes per row and column (1 unless grouped).
    per_row: usize,
    w: f64,
    hh: f64,
    label_w: f64,
    top: f64,
    cw: f64,
    chh: f64,
    /// Each column's middle and its server(s).
    cols: Vec<(f64, String)>,
    rows: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    /// The client(s), and the baseline of the row's label.
    name: String,
    y: f64,
    cells: Vec<Cell>,
}

/// A cell's top left corner; a measured pair's heat, or the fill of a blank cell (grey on the
/// diagonal).
#[derive(Serialize)]
struct Cell {
    x: f64,
    y: f64,
    blank: Option<&'static str>,
    heat: Option<Heat>,
}

/// A measured cell: its worst outcome, colour, value (the weakest), fraction of expected, the
/// number of measurements and its tooltip.
#[derive(Serialize)]
struct Heat {
    worst: Outcome,
    /// `kind|half|client|server`, for the page's facts.
    pair: String,
    fill: String,
    value: Option<f64>,
    frac: Option<f64>,
    count: usize,
    title: Vec<String>,
}

/// The section; `None` when nothing was measured between pairs.
pub(super) fn heatmaps(ctx: &Ctx<'_>) -> Option<Heatmap> {
    let items = bw_items(ctx);
    if items.is_empty() {
        return None;
    }
    // matrices: (kind, half) in order of appearance
    let mut mats: Vec<(String, String)> = Vec::new();
    for it in &items {
        let k = (it.job.kind.clone(), it.flow.half.clone());
        if !mats.contains(&k) {
            mats.push(k);
        }
    }
    let matrices = mats
        .iter()
        .map(|(kind, half)| {
            let mine: Vec<&BwItem<'_>> = items
                .iter()
                .filter(|it| &it.job.kind == kind && &it.flow.half == half)
                .collect();
            matrix(ctx, &mine, kind, half)
        })
        .collect();
    let legend = [
        ("\u{2264} 30%", 0.3),
        ("65%", 0.65),
        ("80%", 0.8),
        ("90%", 0.9),
        ("\u{2265} 100%", 1.0),
    ]
    .into_iter()
    .map(|(label, f)| (label, heat(f)))
    .collect();
    Some(Heatmap { legend, matrices })
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
        let label_w = names.iter().map(|s| columns(s)).max().unwrap_or(4) as f64 * 7.2 + 12.0;
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

/// The matrix of one kind and half.
fn matrix(ctx: &Ctx<'_>, mine: &[&BwItem<'_>], kind: &str, half: &str) -> Matrix {
    let g = Grid::of(ctx, mine);
    let n = g.names.len();
    let cols = g
        .names
        .iter()
        .enumerate()
        .map(|(ci, name)| (g.label_w + g.cw * ci as f64 + g.cw / 2.0, name.clone()))
        .collect();
    let rows = (0..n)
        .map(|ri| Row {
            name: g.names[ri].clone(),
            y: g.top + g.chh * ri as f64 + g.chh / 2.0 + 4.0,
            cells: (0..n).map(|ci| cell(ctx, &g, ri, ci)).collect(),
        })
        .collect();
    Matrix {
        kind: kind.to_string(),
        half: half.to_string(),
        per_row: g.per_row,
        w: g.label_w + g.cw * n as f64 + 8.0,
        hh: g.top + g.chh * n as f64 + 8.0,
        label_w: g.label_w,
        top: g.top,
        cw: g.cw,
        chh: g.chh,
        cols,
        rows,
    }
}

/// The cell of row `ri` and column `ci`: blank where nothing was measured, else the heat of
/// the pair (of the two groups, when grouped).
fn cell(ctx: &Ctx<'_>, g: &Grid<'_, '_>, ri: usize, ci: usize) -> Cell {
    let (x, y) = (g.label_w + g.cw * ci as f64, g.top + g.chh * ri as f64);
    let Some(list) = g.cells.get(&(ri, ci)) else {
        let fill = if ri == ci { "#eaeef2" } else { "#fff" };
        return Cell {
            x,
            y,
            blank: Some(fill),
            heat: None,
        };
    };
    let title = if g.per_row > 1 {
        vec![group_title(list, &g.names[ri], &g.names[ci])]
    } else {
        cell_title(ctx, list)
    };
    Cell {
        x,
        y,
        blank: None,
        heat: Some(heat_of(list, title)),
    }
}

/// A measured cell: the weakest measurement of the pair decides the colour and the value.
fn heat_of(list: &[&BwItem<'_>], title: Vec<String>) -> Heat {
    let worst = list
        .iter()
        .map(|it| it.v.outcome)
        .max()
        .unwrap_or(Outcome::Ok);
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
    Heat {
        worst,
        pair: format!(
            "{}|{}|{}|{}",
            it0.job.kind, it0.flow.half, it0.flow.src, it0.flow.dst
        ),
        fill,
        value,
        frac,
        count: list.len(),
        title,
    }
}

/// A grouped cell's tooltip: how many flows between the two groups, how many failed or
/// warned, and the weakest.
fn group_title(list: &[&BwItem<'_>], rows: &str, cols: &str) -> String {
    let count = |o: Outcome| list.iter().filter(|it| it.v.outcome == o).count();
    let frac = |it: &&BwItem<'_>| Some(it.v.measured? / it.v.expected.filter(|e| *e > 0.0)?);
    let mut title = format!(
        "{rows} \u{2192} {cols}: {} flow(s), {} FAIL, {} WARN",
        list.len(),
        count(Outcome::Fail),
        count(Outcome::Warn)
    );
    let weakest = list
        .iter()
        .filter_map(|it| Some((frac(it)?, it)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((f, it)) = weakest {
        title.push_str(&format!(
            "; weakest {} \u{2192} {} (round {}): {} {}, {:.0}% of expected",
            it.flow.src_endpoint(),
            it.flow.dst_endpoint(),
            it.job.round_name,
            it.v.measured.map(fmt_val).unwrap_or_default(),
            it.v.unit,
            f * 100.0
        ));
    }
    title
}

/// A cell's tooltip: one line per measurement of the pair (round, value, expected, gate,
/// baseline).
fn cell_title(ctx: &Ctx<'_>, list: &[&BwItem<'_>]) -> Vec<String> {
    list.iter()
        .map(|it| {
            let v = it.v;
            let mut line = format!(
                "{} \u{2192} {} (round {}): {}",
                it.flow.src_endpoint(),
                it.flow.dst_endpoint(),
                it.job.round_name,
                v.measured
                    .map(|m| format!("{} {}", fmt_val(m), v.unit))
                    .unwrap_or_else(|| "not measured".into()),
            );
            if let (Some(m), Some(e)) = (v.measured, v.expected) {
                line.push_str(&format!(
                    ", expected {} ({:.0}%)",
                    fmt_val(e),
                    m / e * 100.0
                ));
            }
            line.push_str(&format!("; gate {}: {}", v.threshold, v.outcome.as_str()));
            if let Some(o) = ctx.was.get(&v.gate) {
                line.push_str(&format!(
                    "; baseline {} ({})",
                    fmt_val(*o),
                    base::fmt_change(v.measured.and_then(|m| compare::change_pct(*o, m)))
                ));
            }
            line
        })
        .collect()
}
