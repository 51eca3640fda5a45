//! How the page writes what it is given: the one escaper (every value a template prints, and
//! every line of a tooltip, goes through [`esc`]), the filters that write numbers as the gates
//! print them, and dates.

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, HtmlEscape, Output, State, escape_formatter};

use crate::compare::baseline as base;
use crate::text::inert;

/// HTML text: control characters shown escaped (as on a terminal), markup characters as
/// entities (minijinja's HTML escaping). The formatter of every template.
pub fn esc(s: &str) -> String {
    HtmlEscape(&inert(s)).to_string()
}

/// The templates' formatter: every string through [`esc`] (a value the page marks safe, its own
/// style sheet and script, as it is); numbers and the rest as minijinja writes them.
fn formatter(out: &mut Output, state: &mut State, value: &Value) -> Result<(), Error> {
    match value.as_str() {
        Some(s) if !value.is_safe() && *state.auto_escape() == AutoEscape::Html => {
            out.write_str(&esc(s)).map_err(Error::from)
        }
        _ => escape_formatter(out, state, value),
    }
}

/// A value as the gates print it: `92.10`, `1234.5`.
pub(super) fn fmt_val(v: f64) -> String {
    base::fmt_val(v)
}

/// `2026-12-01 11:26:52 UTC`; a date past the year 9999 (which results.json readers refuse)
/// is shown as its milliseconds, never a panic.
pub(super) fn utc(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms));
    match t.filter(|_| ms <= crate::compare::MAX_UNIX_MS) {
        Some(t) => humantime::format_rfc3339_seconds(t)
            .to_string()
            .replace('T', " ")
            .replace('Z', " UTC"),
        None => format!("{ms} ms after 1970 (past the year 9999)"),
    }
}

/// The formatter and the filters of the page's templates:
///
/// - `val`: a value as the gates print it (`92.10`);
/// - `f0`, `f1`: a number with no or one decimal (`34`, `12.5`: coordinates, percentages);
/// - `change`: a change in percent (`+0.2%`), `-` for none;
/// - `size`: a byte size (`16 KiB`);
/// - `lines`: a tooltip's lines, each escaped, joined by line breaks;
/// - `cmd`: a command, each word escaped in a span that never breaks (a line breaks between
///   words, never inside a flag such as `--online`); the text copies as it is;
/// - `prose`: words with commands in backticks (a fix), each command shown as `cmd` shows one.
pub(super) fn register(env: &mut Environment<'static>) {
    env.set_formatter(formatter);
    env.add_filter("val", fmt_val);
    env.add_filter("f0", |v: f64| format!("{v:.0}"));
    env.add_filter("f1", |v: f64| format!("{v:.1}"));
    env.add_filter("change", |v: Option<f64>| base::fmt_change(v));
    env.add_filter("size", |v: u64| crate::text::size::format(v));
    env.add_filter("lines", |v: Vec<String>| {
        let lines: Vec<String> = v.iter().map(|l| esc(l)).collect();
        Value::from_safe_string(lines.join("\n"))
    });
    env.add_filter("cmd", |v: String| Value::from_safe_string(cmd(&v)));
    env.add_filter("prose", |v: String| Value::from_safe_string(prose(&v)));
}

/// Words with commands in backticks: see the `prose` filter. An unpaired backtick stays text.
fn prose(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        let paired = i % 2 == 1 && i + 1 < parts.len();
        if paired {
            out.push_str(&format!("<code class=\"cmd\">{}</code>", cmd(p)));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out.push_str(&esc(p));
        }
    }
    out
}

/// A command as the page shows it: see the `cmd` filter.
fn cmd(text: &str) -> String {
    text.split(' ')
        .map(|w| {
            if w.is_empty() {
                String::new()
            } else {
                format!("<span class=\"t\">{}</span>", esc(w))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_breaks_only_between_words() {
        assert_eq!(
            cmd("ssh a&b --online  -u"),
            "<span class=\"t\">ssh</span> <span class=\"t\">a&amp;b</span> \
             <span class=\"t\">--online</span>  <span class=\"t\">-u</span>"
        );
    }

    #[test]
    fn commands_in_words_are_code() {
        assert_eq!(
            prose("run `ip -d` <now> or `x"),
            "run <code class=\"cmd\"><span class=\"t\">ip</span> <span class=\"t\">-d</span></code> \
             &lt;now&gt; or `x"
        );
    }

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            esc("<script>\"a\" & 'b'\u{1b}[2J"),
            "&lt;script&gt;&quot;a&quot; &amp; &#x27;b&#x27;\\x1b[2J"
        );
    }

    #[test]
    fn every_printed_string_goes_through_the_one_escaper() {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        register(&mut env);
        let out = env
            .render_str(
                "{{ s }}|{{ safe }}|{{ n }}|{{ t|lines }}|{{ x|val }}|{{ c|change }}",
                minijinja::context! {
                    s => "<b>\u{1b}[2J",
                    safe => Value::from_safe_string("<i>".into()),
                    n => 3,
                    t => vec!["a<", "b\u{7}"],
                    x => 1234.56,
                    c => None::<f64>,
                },
            )
            .unwrap();
        assert_eq!(out, "&lt;b&gt;\\x1b[2J|<i>|3|a&lt;\nb\\x07|1234.6|-");
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_124_412_899), "2026-12-01 11:26:52 UTC");
        assert_eq!(utc(253_402_300_799_999), "9999-12-31 23:59:59 UTC");
        assert!(utc(253_402_300_800_000).contains("past the year 9999"));
        assert!(utc(u64::MAX).contains("past the year 9999"));
    }
}
