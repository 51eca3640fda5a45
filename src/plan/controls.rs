//! Control characters in a plan: refused in every value and key, at its span, before anything
//! else reads them. A plan's strings reach command lines (an environment value, a folder, a
//! template's output), file names and terminals: a NUL would cut a value short in the shell
//! (`export FOO=` with the value silently dropped), an ESC or CR would repaint the operator's
//! screen. Free text (a `description`, a gate's `trap` and `fix`, an inline template) may hold
//! line breaks and tabs; nothing holds any other control character.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::diag::Problem;

/// Keys whose values are free text: line breaks and tabs allowed there.
const FREE_TEXT: [&str; 4] = ["description", "trap", "fix", "inline"];

/// Every control character of `doc`'s keys and string values: one problem per string.
pub fn check(doc: &Spanned<DeTable<'_>>) -> Vec<Problem> {
    let mut out = Vec::new();
    table(doc.get_ref(), "", &mut out);
    out
}

fn table(t: &DeTable<'_>, path: &str, out: &mut Vec<Problem>) {
    for (k, v) in t.iter() {
        let key: &str = k.get_ref();
        let here = if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        };
        if let Some(c) = first_control(key, false) {
            out.push(problem(&here, c, k.span(), "key"));
        }
        value(v, &here, FREE_TEXT.contains(&key), out);
    }
}

fn value(v: &Spanned<DeValue<'_>>, path: &str, free: bool, out: &mut Vec<Problem>) {
    match v.get_ref() {
        DeValue::String(s) => {
            if let Some(c) = first_control(s, free) {
                out.push(problem(path, c, v.span(), "value"));
            }
        }
        DeValue::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                value(x, &format!("{path}[{i}]"), free, out);
            }
        }
        DeValue::Table(t) => table(t, path, out),
        _ => {}
    }
}

/// The first control character of `s` that is not allowed: in free text a tab, a line break
/// and a CR before one are.
fn first_control(s: &str, free: bool) -> Option<char> {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let allowed =
            free && (c == '\t' || c == '\n' || (c == '\r' && chars.peek() == Some(&'\n')));
        if c.is_control() && !allowed {
            return Some(c);
        }
    }
    None
}

fn problem(path: &str, c: char, span: Range<usize>, what: &str) -> Problem {
    let name = match c {
        '\0' => " (NUL)".to_string(),
        '\u{1b}' => " (ESC)".to_string(),
        '\u{7}' => " (BEL)".to_string(),
        '\r' => " (CR)".to_string(),
        '\n' => " (line break)".to_string(),
        '\t' => " (tab)".to_string(),
        _ => String::new(),
    };
    Problem::error(
        "plan::control-character",
        format!(
            "the {what} of `{path}` holds the control character U+{:04X}{name}",
            c as u32
        ),
    )
    .at(span, "a control character in here")
    .help(
        "plan values reach command lines, file names and terminals, where a control character \
         cuts a value short (NUL) or rewrites the screen (ESC, CR): remove it; line breaks and \
         tabs are for a description, a gate's trap and fix, and an inline template",
    )
}

#[cfg(test)]
mod tests {
    use super::first_control;

    #[test]
    fn which_characters() {
        assert_eq!(first_control("mlx5_0:1", false), None);
        assert_eq!(first_control("a\0b", false), Some('\0'));
        assert_eq!(first_control("a\u{1b}[2J", true), Some('\u{1b}'));
        assert_eq!(first_control("a\u{9b}", true), Some('\u{9b}'));
        assert_eq!(first_control("a\u{7f}", true), Some('\u{7f}'));
        assert_eq!(first_control("line\nline\ttab\r\n", true), None);
        assert_eq!(first_control("line\nline", false), Some('\n'));
        assert_eq!(first_control("over\rwrite", true), Some('\r'));
        // text beyond ASCII is no control
        assert_eq!(first_control("Größe ✗", false), None);
    }
}
