//! Line helpers shared by the parsers: capture artefacts every real log carries, line
//! iteration with the long-line guard, capped lists, and the impossible-value checks.

use super::Rejected;

/// Nothing but whitespace: the `empty` status.
pub fn is_blank(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_whitespace())
}

/// Push `item` unless `list` already holds `cap` entries; count it in `not_stored` then.
pub fn push_capped<T>(list: &mut Vec<T>, item: T, cap: usize, not_stored: &mut usize) {
    if list.len() < cap {
        list.push(item);
    } else {
        *not_stored = not_stored.saturating_add(1);
    }
}

/// Record a rejected line (capped like every other note list).
pub fn reject(list: &mut Vec<Rejected>, line: usize, reason: String, not_stored: &mut usize) {
    push_capped(
        list,
        Rejected { line, reason },
        super::MAX_STORED_NOTES,
        not_stored,
    );
}

/// Why a value printed as `tok` cannot be a time, rate or count: negative, NaN or infinite.
/// `None` when the token is a plain non-negative number (or not a number at all: that is a
/// parsing matter, not an impossible value).
pub fn impossible(tok: &str) -> Option<&'static str> {
    let t = tok.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['-', '+']);
    if body == "nan" {
        return Some("is not a number");
    }
    if body == "inf" || body == "infinity" {
        return Some("is infinite");
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_nan() => Some("is not a number"),
        Ok(v) if v.is_infinite() => Some("is infinite"),
        Ok(v) if v < 0.0 => Some("is negative"),
        _ => None,
    }
}

/// Strip what launchers, harnesses and pastes put in front of a tool's own line:
/// Open MPI `--tag-output` (`[1,0]<stdout>:`), `[155] ` rank tags, markdown quote marks.
pub fn clean_line(line: &str) -> &str {
    let mut s = line.trim_end_matches(['\r', '\n']);
    loop {
        let before = s;
        // Open MPI --tag-output: [jobid,rank]<stdout>: or <stderr>:
        if s.starts_with('[') {
            if let Some(end) = s.find("]<stdout>:").or_else(|| s.find("]<stderr>:")) {
                let tag = &s[1..end];
                if tag
                    .split(',')
                    .all(|p| p.trim().chars().all(|c| c.is_ascii_digit()))
                {
                    s = &s[end + "]<stdout>:".len()..];
                }
            }
        }
        // quote prefixes from pasted markdown
        if let Some(rest) = s.strip_prefix("> ") {
            s = rest;
        } else if s == ">" {
            s = "";
        }
        if s == before {
            return s;
        }
    }
}

/// Parse a float token, accepting only a plain decimal or exponent number (no `nan`, no `inf`).
pub fn num(tok: &str) -> Option<f64> {
    let ok = !tok.is_empty()
        && tok
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        && tok.chars().any(|c| c.is_ascii_digit());
    if !ok {
        return None;
    }
    tok.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_tag_output_and_quotes() {
        assert_eq!(clean_line("[1,0]<stdout>:#  Rank  0"), "#  Rank  0");
        assert_eq!(clean_line("> > 65536 5000"), "65536 5000");
        assert_eq!(clean_line("[a,b]<stdout>: x"), "[a,b]<stdout>: x");
    }

    #[test]
    fn numbers_are_strict() {
        assert_eq!(num("109.01"), Some(109.01));
        assert_eq!(num("1.2e+06"), Some(1.2e6));
        assert_eq!(num("nan"), None);
        assert_eq!(num("N/A"), None);
        assert_eq!(num("-"), None);
    }
}

/// Strip the harness decorations FORMATS.md section 7 lists that [`clean_line`] leaves alone:
/// `[155] ` rank tags, `HH:MM:SS LEVEL| ` log prefixes, markdown code-fence backticks at either
/// end. Returns the line untouched when none is present.
pub fn strip_harness_prefix(line: &str) -> &str {
    let mut s = clean_line(line);
    loop {
        let before = s;
        // `[155] ` (digits only inside the brackets)
        if let Some(rest) = s.strip_prefix('[') {
            if let Some(end) = rest.find("] ") {
                let tag = rest.get(..end).unwrap_or("");
                if !tag.is_empty() && tag.chars().all(|c| c.is_ascii_digit()) {
                    s = rest.get(end + 2..).unwrap_or("");
                }
            }
        }
        // `HH:MM:SS DEBUG| `: a clock, one word, a bar
        let b = s.as_bytes();
        let clock = b.len() > 8
            && b.iter().take(8).enumerate().all(|(i, c)| {
                if i == 2 || i == 5 {
                    *c == b':'
                } else {
                    c.is_ascii_digit()
                }
            });
        if clock {
            if let Some(bar) = s.find("| ") {
                let level = s.get(8..bar).unwrap_or("").trim();
                if level.chars().all(|c| c.is_ascii_alphabetic()) {
                    s = s.get(bar + 2..).unwrap_or("");
                }
            }
        }
        s = s.trim_matches('`');
        s = clean_line(s);
        if s == before {
            return s;
        }
    }
}

#[cfg(test)]
mod harness_prefix_tests {
    use super::*;

    #[test]
    fn strips_rank_clock_and_backticks() {
        assert_eq!(strip_harness_prefix("[155]  65536 5000"), " 65536 5000");
        assert_eq!(strip_harness_prefix("12:01:02 DEBUG| #bytes"), "#bytes");
        assert_eq!(strip_harness_prefix("```"), "");
        assert_eq!(strip_harness_prefix(" 2 1000 1.00```"), " 2 1000 1.00");
        assert_eq!(strip_harness_prefix("[x] keep"), "[x] keep");
        assert_eq!(strip_harness_prefix("> [3] > a"), "a");
    }
}
