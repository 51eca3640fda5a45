//! Text helpers of the report: HTML escaping, values as the gates print them, outcome classes,
//! dates.

use crate::compare::baseline as base;
use crate::gate::judge::Outcome;
use crate::text::inert;

/// HTML text: control characters shown escaped, markup characters as entities.
pub fn esc(s: &str) -> String {
    let s = inert(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(super) fn fmt_val(v: f64) -> String {
    base::fmt_val(v)
}

pub(super) fn class(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Warn => "warn",
        Outcome::Fail => "fail",
    }
}

/// `2026-12-01 11:26:52 UTC`
pub(super) fn utc(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            esc("<script>\"a\" & 'b'\u{1b}[2J"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;\\u{1b}[2J"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_124_412_899), "2026-12-01 11:26:52 UTC");
    }
}
