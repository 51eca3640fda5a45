//! Text from outside fabricplan (plan strings, tool output, names a host reports, a run
//! directory read back) made inert for where it is shown. One function per destination, used by
//! every printing path and every writer:
//!
//! - a terminal: [`inert`] (or [`inert_lines`] for a whole block): control characters (C0, DEL,
//!   C1: the ANSI/OSC escape sequences that set a title or clear the screen start with one) and
//!   the bidirectional overrides that reorder a line on screen are shown escaped (`\x1b`,
//!   `\u{202e}`), never passed through;
//! - Markdown: [`md`], inert and every character Markdown or the HTML inside it reads escaped,
//!   so a `|` cannot split a cell nor `<img src=...>` become an image;
//! - XML 1.0: [`xml`], inert too but for line breaks and tabs (the characters XML 1.0 forbids,
//!   U+FFFE and U+FFFF among them, are shown escaped, so the document stays well-formed); the
//!   XML writer escapes markup.

use std::borrow::Cow;

pub mod hostlist;
pub mod size;
pub mod width;

/// Shown escaped on a terminal: control characters and the bidirectional formatting
/// characters (embeddings, overrides, isolates, marks).
fn hides(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Escaped in XML 1.0 text: what [`hides`] (but a line break or a tab, which XML holds), and
/// the noncharacters U+FFFE and U+FFFF, which XML forbids.
fn not_xml(c: char) -> bool {
    (hides(c) && c != '\n' && c != '\t') || matches!(c, '\u{fffe}' | '\u{ffff}')
}

/// `c` written so that it can be read: `\n`, `\t`, `\r`, `\x1b` (ASCII), `\u{9b}` (beyond).
fn escape_into(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

fn escaped(s: &str, bad: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `1234567` -> `1,234,567`: a count with its thousands separated.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `s` with every control and bidirectional formatting character escaped (`\n`, `\x1b`,
/// `\u{9b}`, `\u{202e}`): safe to print on a terminal.
pub fn inert(s: &str) -> Cow<'_, str> {
    escaped(s, hides)
}

/// Like [`inert`] but keeps line breaks: for a whole report printed line by line.
pub fn inert_lines(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c != '\n' && hides(c))
}

/// `s` as XML 1.0 character data may hold it: [`inert`] but for line breaks and tabs, and
/// U+FFFE and U+FFFF escaped too (the XML writer still escapes `<`, `&` and quotes).
pub fn xml(s: &str) -> Cow<'_, str> {
    escaped(s, not_xml)
}

/// `s` as Markdown text, in a table cell or anywhere else mid-line: [`inert`] (a line break
/// cannot end a table row), `<` and `&` as HTML entities (no tag survives: CommonMark passes
/// HTML through), and with a backslash every character that would start Markdown here: `|` (a
/// cell), `` ` `` (code), `*` and `~` (emphasis), `[` and `]` (a link or an image), `\`, and `_`
/// where it could start emphasis (not inside a word: `NCCL_IB_HCA` stays as it is). Never put
/// the result inside a code span (backslashes are literal there).
pub fn md(s: &str) -> String {
    let s = inert(s);
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|x| x.is_alphanumeric())
        };
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '_' if word(i.checked_sub(1)) && word(Some(i + 1)) => out.push('_'),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as a Markdown code span (a command to copy): [`inert`], fenced by one more backtick than
/// its longest run of them (CommonMark's rule, padded by a space where it starts or ends with
/// one). A code span shows `<` and `&` as they are, but HTML passes through where it is read as
/// text, so a text that holds either is written as [`md`] text instead, never as a span.
pub fn md_code(s: &str) -> String {
    let s = inert(s);
    if s.contains(['<', '&']) {
        return md(&s);
    }
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::{inert, inert_lines, md, md_code, xml};

    #[test]
    fn a_command_is_a_code_span_that_nothing_escapes_from() {
        assert_eq!(
            md_code("ssh spark-a sudo ip link set enp1s0f0np0 mtu 9000"),
            "`ssh spark-a sudo ip link set enp1s0f0np0 mtu 9000`"
        );
        assert_eq!(md_code("echo `id`"), "`` echo `id` ``");
        assert_eq!(md_code("a``b"), "```a``b```");
        assert_eq!(md_code("a\u{1b}[2J\nb"), "`a\\x1b[2J\\nb`");
        let hostile = md_code("x <script>alert(1)</script> & `y`");
        assert!(
            !hostile.contains('<') && !hostile.contains("& "),
            "{hostile}"
        );
    }

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(inert("spark-a"), "spark-a");
        assert_eq!(
            inert("x\u{1b}]0;owned\u{7}\u{1b}[2Jy"),
            "x\\x1b]0;owned\\x07\\x1b[2Jy"
        );
        assert_eq!(inert("a\nb\u{9b}c\0\u{7f}\r"), "a\\nb\\u{9b}c\\x00\\x7f\\r");
        assert_eq!(inert("ab\u{202e}cd\u{2066}"), "ab\\u{202e}cd\\u{2066}");
        assert_eq!(inert_lines("a\u{1b}[1m\nb\n"), "a\\x1b[1m\nb\n");
        // text beyond ASCII that is no control stays as it is
        assert_eq!(inert("Größe ✗ 带宽"), "Größe ✗ 带宽");
    }

    #[test]
    fn every_control_is_escaped_and_nothing_else() {
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let shown = inert(&c.to_string()).into_owned();
            assert!(!shown.chars().any(char::is_control), "{c:?} -> {shown:?}");
            if !c.is_control() && !shown.starts_with('\\') {
                assert_eq!(shown, c.to_string());
            }
        }
    }

    #[test]
    fn xml_drops_nothing_and_keeps_only_what_xml_allows() {
        let s = xml("a\u{fffe}b\u{ffff}c\u{1}d\u{1b}[2J\te");
        assert_eq!(s, "a\\u{fffe}b\\u{ffff}c\\x01d\\x1b[2J\te");
        // XML 1.0: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
        for c in (0u32..=0x10ffff).filter_map(char::from_u32) {
            for x in xml(&c.to_string()).chars() {
                let ok = matches!(
                    x as u32,
                    0x9 | 0xa | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..=0x10ffff
                );
                assert!(ok, "{c:?} left {x:?}");
            }
        }
    }

    #[test]
    fn markdown_keeps_no_markup() {
        let m = md("<img src=x onerror=alert(1)>|`code`|*b* [l](u) ~~s~~ _e_ \\ &amp;\n# h");
        assert!(!m.contains('<') && !m.contains('\n'), "{m}");
        // every character that starts markup escaped
        let b = m.as_bytes();
        for (i, ch) in b.iter().enumerate() {
            if matches!(ch, b'|' | b'`' | b'*' | b'[' | b']' | b'~' | b'_') {
                assert_eq!(b[i - 1], b'\\', "{m}");
            }
        }
        assert!(m.contains("&amp;amp;") && m.contains("\\\\ "), "{m}");
        // what reads as prose stays as it is
        assert_eq!(
            md("spark-a.f0.a -> spark-b.f0.a"),
            "spark-a.f0.a -> spark-b.f0.a"
        );
        assert_eq!(
            md("list NCCL_IB_HCA (both halves)"),
            "list NCCL_IB_HCA (both halves)"
        );
    }
}
