//! Columns as a terminal shows them: a string's width is its display width (an East Asian wide
//! character takes two columns, a combining mark none), not its number of `char`s, so aligned
//! tables stay aligned whatever the names in them.

use unicode_width::UnicodeWidthStr;

/// The columns `s` takes on a terminal.
pub fn columns(s: &str) -> usize {
    s.width()
}

/// `s` padded with spaces to `w` columns, left-aligned (as it is when already wider).
pub fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(columns(s))))
}

/// `s` padded with spaces to `w` columns, right-aligned (as it is when already wider).
pub fn rpad(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(columns(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_and_combining_characters_pad_by_the_columns_they_take() {
        assert_eq!(columns("spark-a"), 7);
        assert_eq!(columns("節点-a"), 6);
        assert_eq!(columns("e\u{301}"), 1);
        assert_eq!(pad("節点", 6), "節点  ");
        assert_eq!(rpad("節点", 6), "  節点");
        assert_eq!(pad("e\u{301}", 3), "e\u{301}  ");
        assert_eq!(pad("toolong", 3), "toolong");
        // a table of such cells lines up: every padded cell is as wide as the column
        for s in ["a", "節", "é", "ｆｕｌｌ"] {
            assert_eq!(columns(&pad(s, 10)), 10, "{s}");
        }
    }
}
