//! Test sections written twice the same: each runs the same test again, for the same answer.
//! A repeated kind's tables (`[[tests.nccl]]`) are compared as their values read (key order,
//! whitespace and comments aside); every group of identical ones is one warning naming them.

use std::collections::HashMap;
use std::ops::Range;

use toml::de::DeValue;

use super::Ctx;
use super::names::label_places;
use crate::plan::diag::Problem;

/// How deep a value is compared; a test section's values nest two or three levels (a round's
/// flows), so a deeper one is left uncompared rather than walked.
const MAX_DEPTH: usize = 16;

/// The tables of the sections read so far, by kind and canonical text, in plan order.
#[derive(Default)]
pub(super) struct Repeats {
    seen: HashMap<(&'static str, String), usize>,
    groups: Vec<(&'static str, Vec<Range<usize>>)>,
}

impl Repeats {
    /// Note a table of kind `key` at `at` by its [`text`] (none: left uncompared).
    pub(super) fn note(&mut self, key: &'static str, text: Option<String>, at: Range<usize>) {
        let Some(text) = text else { return };
        match self.seen.get(&(key, text.clone())) {
            Some(&g) => self.groups[g].1.push(at),
            None => {
                self.seen.insert((key, text), self.groups.len());
                self.groups.push((key, vec![at]));
            }
        }
    }

    /// One warning per group of identical tables, at every one of them.
    pub(super) fn finish(self, ctx: &mut Ctx) {
        for (key, places) in self.groups.into_iter().filter(|(_, p)| p.len() > 1) {
            let n = crate::text::thousands(places.len() as u64);
            let p = Problem::warning(
                "plan::duplicate-test",
                format!("{n} `[[tests.{key}]]` tables are the same test: it would run {n} times for one answer"),
            )
            .help("delete the repeats, or make each one measure something else (its `nodes`, sizes or `collective`); a `name` tells deliberate repeats apart");
            ctx.push(label_places(p, &places, "first", "the same again"));
        }
    }
}

/// A table's canonical text (its keys sorted, whitespace and comments gone): equal for two
/// tables that read the same; `None` when it nests deeper than [`MAX_DEPTH`].
pub(super) fn text(v: &DeValue<'_>) -> Option<String> {
    let mut out = String::new();
    canonical(v, 0, &mut out).then_some(out)
}

/// Append `v`'s canonical text to `out` (a table's keys sorted); false past [`MAX_DEPTH`].
fn canonical(v: &DeValue<'_>, depth: usize, out: &mut String) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match v {
        DeValue::String(s) => out.push_str(&format!("{s:?}")),
        DeValue::Integer(i) => out.push_str(&format!("i{}:{}", i.radix(), i.as_str())),
        DeValue::Float(f) => out.push_str(&format!("f{}", f.as_str())),
        DeValue::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        DeValue::Datetime(d) => out.push_str(&format!("d{d}")),
        DeValue::Array(a) => {
            out.push('[');
            for item in a.iter() {
                if !canonical(item.get_ref(), depth + 1, out) {
                    return false;
                }
                out.push(',');
            }
            out.push(']');
        }
        DeValue::Table(t) => {
            let mut entries: Vec<_> = t.iter().collect();
            entries.sort_by(|a, b| a.0.get_ref().cmp(b.0.get_ref()));
            out.push('{');
            for (k, v) in entries {
                out.push_str(&format!("{:?}=", k.get_ref()));
                if !canonical(v.get_ref(), depth + 1, out) {
                    return false;
                }
                out.push(',');
            }
            out.push('}');
        }
    }
    true
}
