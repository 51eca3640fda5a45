//! Reading one result row against the columns its header announced: strict token counts, strict
//! decimal counts, and the re-splitting of numbers glued together when a copy dropped the TABs.

/// What a column holds, as perftest prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cell {
    /// `%lu` / `%d`: digits only.
    Int,
    /// `%.Nf`: digits, a point, exactly N digits.
    Fixed(usize),
}

/// Is `tok` exactly a `%.Nf` rendering (no sign, at least one integer digit)?
pub(crate) fn is_fixed(tok: &str, decimals: usize) -> bool {
    match tok.split_once('.') {
        Some((int, frac)) => {
            !int.is_empty()
                && int.bytes().all(|c| c.is_ascii_digit())
                && frac.len() == decimals
                && frac.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

fn is_int(tok: &str) -> bool {
    !tok.is_empty() && tok.bytes().all(|c| c.is_ascii_digit())
}

/// Split `line` into exactly one token per cell, or `None`.
///
/// Why the re-splitting: perftest puts TABs between some numbers (FORMATS.md 1.4/1.5: latency
/// `<stdev><TAB><TAB><p99>`); copies that delete the TABs glue a full-width value to the next one
/// (`2465.901216.65` = `2465.90` + `1216.65`). A token with two points is cut right after the
/// N-th decimal the current column expects (2 normally, 6 in extended-accuracy rows), and the
/// remainder must then itself be a valid next cell.
///
/// Every cell has a fixed number of decimals, so a row cut short by truncation either lacks a
/// cell or ends in a cell with too few decimals: it is rejected, never read as a smaller number.
pub(crate) fn split_row<'a>(line: &'a str, cells: &[Cell]) -> Option<Vec<&'a str>> {
    let mut pending: Vec<&'a str> = Vec::new();
    let mut words = line.split_whitespace();
    let mut out = Vec::with_capacity(cells.len());
    for cell in cells {
        let tok = match pending.pop() {
            Some(t) => t,
            None => words.next()?,
        };
        match *cell {
            Cell::Int => {
                if !is_int(tok) {
                    return None;
                }
                out.push(tok);
            }
            Cell::Fixed(n) => {
                if is_fixed(tok, n) {
                    out.push(tok);
                } else {
                    let dot = tok.find('.')?;
                    let cut = dot.checked_add(1)?.checked_add(n)?;
                    let head = tok.get(..cut)?;
                    let rest = tok.get(cut..)?;
                    if rest.is_empty() || !rest.contains('.') || !is_fixed(head, n) {
                        return None;
                    }
                    out.push(head);
                    pending.push(rest);
                }
            }
        }
    }
    if !pending.is_empty() || words.next().is_some() {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Cell::*;

    const LAT: [Cell; 9] = [
        Int,
        Int,
        Fixed(2),
        Fixed(2),
        Fixed(2),
        Fixed(2),
        Fixed(2),
        Fixed(2),
        Fixed(2),
    ];

    #[test]
    fn glued_latency_values_are_split_after_two_decimals() {
        let row = " 2       1000          1.02           3465.10      1.10        27.57        2465.901216.65 1250.00";
        let got = split_row(row, &LAT).unwrap();
        assert_eq!(got[6], "2465.90");
        assert_eq!(got[7], "1216.65");
        assert_eq!(got[8], "1250.00");
    }

    #[test]
    fn six_decimal_glue() {
        let cells = [Int, Int, Fixed(6), Fixed(6), Fixed(6)];
        let got = split_row("2 5000 0.0423500.042185 2.636533", &cells).unwrap();
        assert_eq!(got, ["2", "5000", "0.042350", "0.042185", "2.636533"]);
    }

    #[test]
    fn truncated_rows_are_rejected() {
        let cells = [Int, Int, Fixed(2), Fixed(2), Fixed(6)];
        assert!(split_row("65536 5000 11664.85 11664.85 0.186637", &cells).is_some());
        assert!(split_row("65536 5000 11664.85 11664.85 0.18663", &cells).is_none());
        assert!(split_row("65536 5000 11664.85 11664.85", &cells).is_none());
        assert!(split_row("65536 5000 11664.85 11664.8", &cells).is_none());
        assert!(split_row("65536 5000 11664.85 11664.85 0.186637 9", &cells).is_none());
        assert!(split_row("65536 5000 11664.8511664.8 0.186637", &cells).is_none());
        assert!(split_row("65536 5000 11664.85 11664.85 0.", &cells).is_none());
    }

    #[test]
    fn strict_tokens() {
        assert!(is_fixed("0.00", 2));
        assert!(!is_fixed("-1.00", 2));
        assert!(!is_fixed(".50", 2));
        assert!(!is_fixed("1e3", 2));
        assert!(split_row("é 1", &[Int, Int]).is_none());
    }
}
