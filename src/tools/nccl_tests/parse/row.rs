//! The result table: the column schema read from the column header (or inferred from a row's
//! token count when a paste lost the `#` lines), and the reading of one row against it.

use super::{Half, PerIter, Row};
use crate::parse::text::{impossible, num};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Pre {
    Size,
    Count,
    Type,
    Redop,
    Root,
    OpOrRoot,
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Col {
    Time,
    Algbw,
    Busbw,
    Wrong,
    Err,
    IMin,
    IMax,
    IP99,
    ICv,
    Skip,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Schema {
    pub(super) pre: Vec<Pre>,
    pub(super) halves: Vec<Vec<Col>>,
    pub(super) timestamp: bool,
}

impl Schema {
    pub(super) fn width(&self) -> usize {
        self.pre.len() + self.halves.iter().map(Vec::len).sum::<usize>()
    }

    /// Read the column header line (`#       size  count  type  redop  root  time ...`).
    pub(super) fn from_header(h: &str) -> Option<(Schema, bool)> {
        let toks: Vec<&str> = h.split_whitespace().collect();
        let first = *toks.first()?;
        if !(first == "size" || first == "bytes") || !toks.contains(&"type") {
            return None;
        }
        let mut pre = Vec::new();
        let mut halves: Vec<Vec<Col>> = Vec::new();
        let mut timestamp = false;
        let mut cputime = false;
        for t in toks {
            let lower = t.to_ascii_lowercase();
            match lower.as_str() {
                "time" | "cputime" => {
                    cputime |= lower == "cputime";
                    halves.push(vec![Col::Time]);
                    continue;
                }
                "timestamp" => {
                    timestamp = true;
                    break;
                }
                _ => {}
            }
            if let Some(h) = halves.last_mut() {
                h.push(match lower.as_str() {
                    "algbw" => Col::Algbw,
                    "busbw" => Col::Busbw,
                    "#wrong" | "wrong" => Col::Wrong,
                    "error" | "res" | "#error" => Col::Err,
                    "i_min" => Col::IMin,
                    "i_max" => Col::IMax,
                    "i_p99" => Col::IP99,
                    "i_cv%" => Col::ICv,
                    _ => Col::Skip,
                });
            } else {
                pre.push(match lower.as_str() {
                    "size" | "bytes" => Pre::Size,
                    "count" | "n" => Pre::Count,
                    "type" => Pre::Type,
                    "redop" | "op" => Pre::Redop,
                    "root" => Pre::Root,
                    _ => Pre::Skip,
                });
            }
        }
        if halves.is_empty() {
            return None;
        }
        Some((
            Schema {
                pre,
                halves,
                timestamp,
            },
            cputime,
        ))
    }

    /// No header seen (markdown pastes drop `#` lines): guess from the token count.
    pub(super) fn infer(n: usize) -> Option<Schema> {
        let four = |last| vec![Col::Time, Col::Algbw, Col::Busbw, last];
        match n {
            13 => Some(Schema {
                pre: vec![Pre::Size, Pre::Count, Pre::Type, Pre::Redop, Pre::Root],
                halves: vec![four(Col::Wrong), four(Col::Wrong)],
                timestamp: false,
            }),
            12 => Some(Schema {
                pre: vec![Pre::Size, Pre::Count, Pre::Type, Pre::OpOrRoot],
                halves: vec![four(Col::Err), four(Col::Err)],
                timestamp: false,
            }),
            11 => Some(Schema {
                pre: vec![Pre::Size, Pre::Count, Pre::Type],
                halves: vec![four(Col::Err), four(Col::Err)],
                timestamp: false,
            }),
            _ => None,
        }
    }
}

pub(super) fn uint(tok: &str) -> Option<u64> {
    if tok.is_empty() || !tok.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    tok.parse().ok()
}

pub(super) fn int(tok: &str) -> Option<i64> {
    let digits = tok.strip_prefix('-').unwrap_or(tok);
    uint(digits)?;
    tok.parse().ok()
}

fn is_word(tok: &str) -> bool {
    tok.chars().any(|c| c.is_ascii_alphabetic())
        && tok.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `N/A` -> Ok(None); a number -> Ok(Some); anything else -> Err.
fn opt_num(tok: &str) -> Result<Option<f64>, ()> {
    if tok == "N/A" {
        return Ok(None);
    }
    num(tok).map(Some).ok_or(())
}

/// Why a row line was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Fault {
    /// Not a complete row of the schema (glued numbers, cut line, other text).
    Unreadable,
    /// A complete row carrying a value no run can produce; names the value.
    Impossible(String),
}

/// Which column a value is: (half, column name).
type What<'a> = (&'a str, &'a str);

/// Read a number column; an impossible value (negative, NaN, infinite) is noted in `bad` (the
/// first one wins) and read as 0 so the rest of the row is still checked for completeness.
fn value(tok: &str, what: What, unit: &str, bad: &mut Option<String>) -> Option<f64> {
    // a plain unsigned number is the common case: no need to ask why it could be impossible
    if let Some(v) = num(tok).filter(|v| *v >= 0.0) {
        return Some(v);
    }
    if let Some(why) = impossible(tok) {
        if bad.is_none() {
            *bad = Some(format!("{} {} `{tok}`{unit} {why}", what.0, what.1));
        }
        return Some(0.0);
    }
    None
}

/// A bandwidth column (GB/s): [`value`], and above what any collective moves is impossible
/// too (see [`crate::parse::ceiling`]).
fn bandwidth(tok: &str, what: What, bad: &mut Option<String>) -> Option<f64> {
    let v = value(tok, what, " GB/s", bad)?;
    if let Some(why) = crate::parse::ceiling::collective_gbs(v)
        && bad.is_none()
    {
        *bad = Some(format!("{} {} `{tok}` GB/s {why}", what.0, what.1));
    }
    Some(v)
}

/// `N/A` or a value as [`value`] reads it.
fn opt_value(tok: &str, what: What, unit: &str, bad: &mut Option<String>) -> Option<Option<f64>> {
    if tok == "N/A" {
        return Some(None);
    }
    value(tok, what, unit, bad).map(Some)
}

/// An unsigned integer column (size, count): a negative one is impossible, not unreadable.
fn count(tok: &str, what: &str, bad: &mut Option<String>) -> Option<u64> {
    if let Some(v) = uint(tok) {
        return Some(v);
    }
    if tok.starts_with('-') && uint(&tok[1..]).is_some() {
        if bad.is_none() {
            *bad = Some(format!("{what} `{tok}` is negative"));
        }
        return Some(0);
    }
    None
}

fn parse_half(toks: &[&str], cols: &[Col], name: &str, bad: &mut Option<String>) -> Option<Half> {
    let mut half = Half {
        time_us: f64::NAN,
        algbw_gbs: f64::NAN,
        busbw_gbs: f64::NAN,
        wrong: None,
        max_error: None,
        per_iter: None,
    };
    let mut per = PerIter {
        min_us: None,
        max_us: None,
        p99_us: None,
        cv_pct: None,
    };
    let mut has_per = false;
    for (tok, col) in toks.iter().zip(cols) {
        match col {
            Col::Time => half.time_us = value(tok, (name, "time"), " us", bad)?,
            Col::Algbw => half.algbw_gbs = bandwidth(tok, (name, "algbw"), bad)?,
            Col::Busbw => half.busbw_gbs = bandwidth(tok, (name, "busbw"), bad)?,
            Col::Wrong => {
                if let Some(v) = opt_value(tok, (name, "#wrong"), "", bad)? {
                    half.wrong = Some(v.round() as u64);
                }
            }
            Col::Err => half.max_error = opt_num(tok).ok()?,
            Col::IMin => {
                (per.min_us, has_per) = (opt_value(tok, (name, "i_min"), " us", bad)?, true)
            }
            Col::IMax => {
                (per.max_us, has_per) = (opt_value(tok, (name, "i_max"), " us", bad)?, true)
            }
            Col::IP99 => {
                (per.p99_us, has_per) = (opt_value(tok, (name, "i_p99"), " us", bad)?, true)
            }
            Col::ICv => (per.cv_pct, has_per) = (opt_value(tok, (name, "i_cv%"), "", bad)?, true),
            Col::Skip => {}
        }
    }
    if !(half.time_us.is_finite() && half.algbw_gbs.is_finite() && half.busbw_gbs.is_finite()) {
        return None;
    }
    if has_per {
        half.per_iter = Some(per);
    }
    Some(half)
}

/// Read `line` as a row of `schema`: every column present and well-formed, and no impossible
/// value (see [`Fault`]).
pub(super) fn parse_row(line: &str, schema: &Schema) -> Result<Row, Fault> {
    let mut bad = None;
    let row = read_row(line, schema, &mut bad).ok_or(Fault::Unreadable)?;
    match bad {
        Some(why) => Err(Fault::Impossible(why)),
        None => Ok(row),
    }
}

fn read_row(line: &str, schema: &Schema, bad: &mut Option<String>) -> Option<Row> {
    let width = schema.width();
    // at most a few more tokens than the schema: a long line of words is not split for nothing
    let extra = if schema.timestamp { 64 } else { 1 };
    let toks: Vec<&str> = line.split_whitespace().take(width + extra).collect();
    let n = toks.len();
    if n < width || (!schema.timestamp && n != width) || n == width + extra && extra > 1 {
        return None;
    }
    let mut row = Row {
        size_bytes: 0,
        count: 0,
        dtype: String::new(),
        redop: None,
        root: None,
        out_of_place: None,
        in_place: None,
        timestamp: None,
    };
    let (pre_toks, rest) = toks.split_at(schema.pre.len().min(toks.len()));
    let mut have_size = false;
    for (tok, col) in pre_toks.iter().zip(&schema.pre) {
        match col {
            Pre::Size => {
                row.size_bytes = count(tok, "size", bad)?;
                have_size = true;
            }
            Pre::Count => row.count = count(tok, "count", bad)?,
            Pre::Type => {
                if !is_word(tok) {
                    return None;
                }
                row.dtype = (*tok).to_string();
            }
            Pre::Redop => {
                if !is_word(tok) {
                    return None;
                }
                row.redop = Some((*tok).to_string());
            }
            Pre::Root => row.root = Some(int(tok)?),
            Pre::OpOrRoot => {
                if let Some(r) = int(tok) {
                    row.root = Some(r);
                } else if is_word(tok) {
                    row.redop = Some((*tok).to_string());
                } else {
                    return None;
                }
            }
            Pre::Skip => {}
        }
    }
    if !have_size || row.dtype.is_empty() {
        return None;
    }
    let mut at = 0usize;
    for (i, cols) in schema.halves.iter().enumerate() {
        let toks = rest.get(at..at + cols.len())?;
        at += cols.len();
        let name = if i == 0 { "out-of-place" } else { "in-place" };
        let half = parse_half(toks, cols, name, bad)?;
        if i == 0 {
            row.out_of_place = Some(half);
        } else if i == 1 {
            row.in_place = Some(half);
        }
    }
    if schema.timestamp {
        let ts = rest.get(at..).unwrap_or(&[]).join(" ");
        if ts.is_empty() {
            return None;
        }
        row.timestamp = Some(ts);
    }
    Some(row)
}
