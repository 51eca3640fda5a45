//! Names: the safe character sets, declarations unique in their scope, keywords from a fixed set.

use std::collections::HashMap;
use std::ops::Range;

use toml::Spanned;

use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};

/// Names referenced by other parts of the plan (nodes, switches, cables, rounds, jobs) may use
/// only these characters, so they can appear in commands, paths and selectors unquoted.
pub fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Device and netdev names: as the kernel allows, minus anything a shell would read.
pub fn is_safe_ifname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Device and netdev names, wherever the plan gives one (profiles, pins): they reach commands
/// and the fixes shown to operators.
pub(super) fn ifname_check(ctx: &mut Ctx, v: &Spanned<String>) {
    if !is_safe_ifname(v.get_ref()) {
        ctx.push(
            Problem::error(
                "plan::unsafe-name",
                format!("`{}` is not a device or interface name", v.get_ref()),
            )
            .at(span(v), "not a device name")
            .help("device and netdev names use letters, digits, `-`, `_`, `.` and `:`"),
        );
    }
}

pub(super) fn name_check(ctx: &mut Ctx, what: &str, name: &Spanned<String>) {
    if !is_safe_name(name.get_ref()) {
        ctx.push(
            Problem::error(
                "plan::unsafe-name",
                format!("{what} name `{}` uses characters outside the safe set", name.get_ref()),
            )
            .at(span(name), "not a safe name")
            .help("names use letters, digits, `-` and `_`, start with a letter or digit, at most 63 characters"),
        );
    }
}

/// Names declared in one scope: a second declaration is reported with both places.
pub(super) struct Declared {
    what: &'static str,
    /// ` in profile `gb10``, or empty.
    scope: String,
    at: HashMap<String, Range<usize>>,
}

impl Declared {
    pub(super) fn new(what: &'static str, scope: String) -> Declared {
        Declared {
            what,
            scope,
            at: HashMap::new(),
        }
    }

    /// Check a name's characters and that it is new in its scope; false when declared before.
    pub(super) fn declare(&mut self, ctx: &mut Ctx, name: &Spanned<String>) -> bool {
        name_check(ctx, self.what, name);
        if let Some(first) = self.at.get(name.get_ref()) {
            ctx.push(
                Problem::error(
                    "plan::duplicate-name",
                    format!(
                        "{} `{}` is declared twice{}",
                        self.what,
                        name.get_ref(),
                        self.scope
                    ),
                )
                .at(span(name), "declared again here")
                .also(first.clone(), "first declared here")
                .help(format!("{} names must be unique{}", self.what, self.scope)),
            );
            return false;
        }
        self.at.insert(name.get_ref().clone(), span(name));
        true
    }
}

/// A keyword from a fixed set, or an error with "did you mean".
pub(super) fn keyword<T: Copy>(
    ctx: &mut Ctx,
    code: &'static str,
    what: &str,
    value: &Spanned<String>,
    options: &[(&str, T)],
) -> Option<T> {
    if let Some((_, v)) = options.iter().find(|(k, _)| *k == value.get_ref()) {
        return Some(*v);
    }
    let names: Vec<&str> = options.iter().map(|(k, _)| *k).collect();
    let mut p = Problem::error(code, format!("unknown {what} `{}`", value.get_ref()))
        .at(span(value), format!("unknown {what}"));
    p = match did_you_mean(value.get_ref(), names.iter().copied()) {
        Some(s) => p.help(format!("did you mean `{s}`?")),
        None => p.help(format!(
            "one of {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    ctx.push(p);
    None
}
