//! Names: the safe character sets, declarations unique in their scope, keywords from a fixed set.

use std::collections::HashMap;
use std::hash::Hash;
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

/// Firmware versions and switch port names: letters, digits and `-_.:/`, at most 64. They are
/// compared with what hosts and switches say, and reach the fixes shown to operators.
pub fn is_safe_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'))
}

pub(super) fn token_check(ctx: &mut Ctx, what: &str, v: &Spanned<String>) {
    if !is_safe_token(v.get_ref()) {
        ctx.push(
            Problem::error(
                "plan::unsafe-name",
                format!(
                    "{what} `{}` uses characters outside the safe set",
                    v.get_ref()
                ),
            )
            .at(span(v), format!("not a {what}"))
            .help("letters, digits, `-`, `_`, `.`, `:` and `/`, at most 64 characters"),
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

/// Places where the same thing (a name, a port half, an address) is given, in plan order: a
/// thing given more than once is one problem naming every place, not one per pair.
pub(super) struct Places<K> {
    at: HashMap<K, Vec<Range<usize>>>,
    /// Things given more than once, in the order of their second place.
    repeated: Vec<K>,
}

impl<K: Hash + Eq + Clone> Places<K> {
    pub(super) fn new() -> Self {
        Places {
            at: HashMap::new(),
            repeated: Vec::new(),
        }
    }

    /// Record a place; true the first time `k` is given.
    pub(super) fn add(&mut self, k: K, at: Range<usize>) -> bool {
        let places = self.at.entry(k.clone()).or_default();
        places.push(at);
        if places.len() == 2 {
            self.repeated.push(k);
        }
        places.len() == 1
    }

    /// Each thing given more than once, with every place it is given.
    pub(super) fn repeated(self) -> impl Iterator<Item = (K, Vec<Range<usize>>)> {
        let mut at = self.at;
        self.repeated.into_iter().map(move |k| {
            let places = at.remove(&k).unwrap_or_default();
            (k, places)
        })
    }
}

/// Labels shown per problem; a thing given more often is counted, not drawn.
pub const MAX_LABELS: usize = 5;

/// `` `a`, `b`, `c` `` (at most `max`, then "and N more"): a help line names a few, not all.
pub(super) fn list_of(names: &[&str], max: usize) -> String {
    let mut out: Vec<String> = names.iter().take(max).map(|n| format!("`{n}`")).collect();
    if names.len() > max {
        out.push(format!("and {} more", names.len() - max));
    }
    out.join(", ")
}

/// `a and b`, `a, b and c`, `a, b, c and 7 more` (at most `max` items).
pub(super) fn and_list(items: &[String], max: usize) -> String {
    let shown: Vec<&str> = items.iter().take(max).map(String::as_str).collect();
    match (shown.split_last(), items.len().saturating_sub(max)) {
        (None, _) => String::new(),
        (Some((last, [])), 0) => last.to_string(),
        (Some((last, rest)), 0) => format!("{} and {last}", rest.join(", ")),
        (Some(_), more) => format!("{} and {more} more", shown.join(", ")),
    }
}

/// "twice", "3 times".
pub(super) fn times(n: usize) -> String {
    match n {
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// Label the places of a repeated thing: the second place is the primary label (where the
/// reader fixes it), the first and the next ones secondary, at most `MAX_LABELS` in all.
pub(super) fn label_places(
    mut p: Problem,
    places: &[Range<usize>],
    first: &str,
    again: &str,
) -> Problem {
    if let Some(second) = places.get(1) {
        p = p.at(second.clone(), again);
    }
    if let Some(f) = places.first() {
        p = if places.len() == 1 {
            p.at(f.clone(), first)
        } else {
            p.also(f.clone(), first)
        };
    }
    for at in places.iter().skip(2).take(MAX_LABELS.saturating_sub(2)) {
        p = p.also(at.clone(), again);
    }
    if places.len() > MAX_LABELS {
        let help = p.help.take().unwrap_or_default();
        p = p.help(format!(
            "{help} ({} places; the first {MAX_LABELS} are shown)",
            places.len()
        ));
    }
    p
}

/// Names declared in one scope: a name declared again is one problem naming every place.
pub(super) struct Declared {
    what: &'static str,
    /// ` in profile `gb10``, or empty.
    scope: String,
    places: Places<String>,
}

impl Declared {
    /// What the names name (`NCCL test`).
    pub(super) fn what(&self) -> &'static str {
        self.what
    }

    pub(super) fn new(what: &'static str, scope: String) -> Declared {
        Declared {
            what,
            scope,
            places: Places::new(),
        }
    }

    /// Check a name's characters and that it is new in its scope; false when declared before
    /// (reported by `finish`).
    pub(super) fn declare(&mut self, ctx: &mut Ctx, name: &Spanned<String>) -> bool {
        name_check(ctx, self.what, name);
        self.places.add(name.get_ref().clone(), span(name))
    }

    /// Report every name declared more than once.
    pub(super) fn finish(self, ctx: &mut Ctx) {
        let (what, scope) = (self.what, self.scope);
        for (name, places) in self.places.repeated() {
            let p = Problem::error(
                "plan::duplicate-name",
                format!("{what} `{name}` is declared {}{scope}", times(places.len())),
            )
            .help(format!("{what} names must be unique{scope}"));
            ctx.push(label_places(
                p,
                &places,
                "first declared here",
                "declared again here",
            ));
        }
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

/// Names of `what` (nodes, switches) that differ only by case: a warning naming each, since
/// host names, ssh_config aliases and file systems may not tell them apart (`SPARK-A` and
/// `spark-a` reach the same host; their run files can overwrite each other on a case-blind
/// disk).
pub(super) fn case_twins<'a>(
    ctx: &mut Ctx,
    what: &str,
    names: impl Iterator<Item = &'a Spanned<String>>,
) {
    let mut by_lower: HashMap<String, Vec<&Spanned<String>>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for n in names {
        let lower = n.get_ref().to_lowercase();
        let group = by_lower.entry(lower.clone()).or_default();
        if group.is_empty() {
            order.push(lower);
        }
        if !group.iter().any(|g| g.get_ref() == n.get_ref()) {
            group.push(n);
        }
    }
    for lower in order {
        let group = &by_lower[&lower];
        if group.len() < 2 {
            continue;
        }
        let shown: Vec<&str> = group.iter().map(|n| n.get_ref().as_str()).collect();
        let mut p = Problem::warning(
            "plan::name-case",
            format!(
                "{what} names {} differ only by case",
                list_of(&shown, MAX_LABELS)
            ),
        )
        .at(span(group[0]), "this name");
        for n in group.iter().skip(1).take(MAX_LABELS) {
            p = p.also(span(n), "the same name in another case");
        }
        ctx.push(p.help(
            "host names and ssh_config aliases ignore case, and so do some file systems: give \
             each a name that differs in more than case",
        ));
    }
}
