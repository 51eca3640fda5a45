//! Line helpers shared by the parsers: capture artefacts every real log carries.

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
