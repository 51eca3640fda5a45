//! Text from outside fabricplan (plan strings, tool output, names a host reports) made inert for
//! a terminal or a Markdown file: control characters, the ANSI/OSC escape sequences among them,
//! are shown escaped (`\u{1b}`), never passed through to repaint a screen or hide a line.
//! JUnit XML escapes on its own.

use std::borrow::Cow;

pub mod size;
pub mod width;

/// `s` with every control character escaped (`\n`, `\t`, `\u{1b}`, C1 controls...).
pub fn inert(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Like [`inert`] but keeps line breaks: for a whole report rendered line by line.
pub fn inert_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for line in s.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.push_str(&inert(body));
        out.push_str(nl);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::inert;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(inert("spark-a"), "spark-a");
        assert_eq!(
            inert("x\u{1b}]0;owned\u{7}\u{1b}[2Jy"),
            "x\\u{1b}]0;owned\\u{7}\\u{1b}[2Jy"
        );
        assert_eq!(inert("a\nb\u{9b}c"), "a\\nb\\u{9b}c");
        assert_eq!(super::inert_lines("a\u{1b}[1m\nb\n"), "a\\u{1b}[1m\nb\n");
    }
}
