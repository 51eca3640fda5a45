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
    let secs = ms / 1000;
    let days = (secs / 86400) as i64;
    let (h, m, s) = ((secs % 86400) / 3600, (secs % 3600) / 60, secs % 60);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
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
