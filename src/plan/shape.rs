//! The plan's shape, checked before anything is read from it: the TOML document walked against
//! the JSON Schema that `fabricplan schema` prints (generated from `RawPlan`), so every unknown
//! key, every value of the wrong type and every number out of its documented range is reported
//! at once, each at its span, in the plan's own words (keys, "a whole number from 1 to 64"),
//! never in Rust's (`u32`, `struct RawSsh`).
//!
//! The schema is the one place a number's range lives: `#[schemars(range(...))]` on the raw
//! field puts it in the committed schema, and this walk enforces it. String keywords (cable
//! kinds, schedules, collectives) and counts of list items are left to `validate`, whose
//! messages know what the words mean.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::diag::{Problem, did_you_mean};
use super::section::Catalog;

/// What the walk found.
#[derive(Debug, Default)]
pub struct ShapeReport {
    pub problems: Vec<Problem>,
    /// Spans of unknown keys: when they are the only problems, `strip_unknown` removes them and
    /// validation goes on with the rest of the plan.
    pub unknown_keys: HashSet<usize>,
}

impl ShapeReport {
    /// Only unknown keys: the rest of the plan can still be read and checked.
    pub fn only_unknown_keys(&self) -> bool {
        self.problems.len() == self.unknown_keys.len()
    }
}

/// The plan's JSON Schema as a value: `RawPlan`'s, with each test kind's section under `tests`.
pub fn schema(catalog: &dyn Catalog) -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let sections: Vec<(&str, bool, &str, Value)> = catalog
        .sections()
        .into_iter()
        .map(|k| {
            let s = serde_json::to_value(k.schema(&mut generator)).unwrap_or(Value::Null);
            (k.key(), k.repeated(), k.describe(), s)
        })
        .collect();
    let root = generator.into_root_schema_for::<super::RawPlan>();
    let mut root = serde_json::to_value(root).unwrap_or(Value::Null);
    if let Some(props) = root
        .pointer_mut("/definitions/RawTests/properties")
        .and_then(Value::as_object_mut)
    {
        for (key, repeated, describe, s) in sections {
            let entry = if repeated {
                serde_json::json!({ "description": describe, "type": "array", "items": s })
            } else {
                serde_json::json!({ "description": describe, "anyOf": [s, { "type": "null" }] })
            };
            props.insert(key.to_string(), entry);
        }
    }
    root
}

/// The schema of `catalog`, generated once per catalog.
fn cached(catalog: &dyn Catalog) -> &'static Value {
    type Cache = Mutex<Vec<(usize, &'static Value)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = catalog as *const dyn Catalog as *const () as usize;
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, v)) = c.iter().find(|(k, _)| *k == key) {
        return v;
    }
    let v: &'static Value = Box::leak(Box::new(schema(catalog)));
    c.push((key, v));
    v
}

/// Walk a parsed plan against the schema of the plan language and `catalog`'s sections.
pub fn check(doc: &Spanned<DeTable<'_>>, catalog: &dyn Catalog) -> ShapeReport {
    let root = cached(catalog);
    let mut w = Walker {
        root,
        report: ShapeReport::default(),
        path: Vec::new(),
        map_doc: None,
    };
    w.table(root, doc.get_ref(), doc.span());
    w.report
        .problems
        .sort_by_key(|p| p.primary.as_ref().map(|(s, _)| s.start));
    w.report
}

/// Remove the unknown keys `check` found, so the rest deserializes.
pub fn strip_unknown(doc: &mut Spanned<DeTable<'_>>, keys: &HashSet<usize>) {
    fn table(t: &mut DeTable<'_>, keys: &HashSet<usize>) {
        let unknown: Vec<String> = t
            .iter()
            .filter(|(k, _)| keys.contains(&k.span().start))
            .map(|(k, _)| k.get_ref().to_string())
            .collect();
        for k in unknown {
            t.remove(k.as_str());
        }
        for (_, v) in t.iter_mut() {
            value(v.get_mut(), keys);
        }
    }
    fn value(v: &mut DeValue<'_>, keys: &HashSet<usize>) {
        match v {
            DeValue::Table(t) => table(t, keys),
            DeValue::Array(a) => {
                for x in a.iter_mut() {
                    value(x.get_mut(), keys);
                }
            }
            _ => {}
        }
    }
    table(doc.get_mut(), keys);
}

/// The schema that takes any value.
static ANYTHING: Value = Value::Bool(true);

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    /// A key of a map (`subnets.b`, `env.PATH`): named with its map, described by it.
    Entry(String, Option<String>),
    Item,
}

impl Seg {
    fn key(&self) -> Option<&str> {
        match self {
            Seg::Key(k) | Seg::Entry(k, _) => Some(k),
            Seg::Item => None,
        }
    }
}

struct Walker<'s> {
    root: &'s Value,
    report: ShapeReport,
    path: Vec<Seg>,
    /// The description of the map being walked, for its entries.
    map_doc: Option<String>,
}

impl<'s> Walker<'s> {
    /// Follow `$ref`s and single-schema `allOf`s (what schemars emits for a defaulted struct).
    fn resolve(&self, mut s: &'s Value) -> &'s Value {
        for _ in 0..16 {
            if let Some(r) = s.get("$ref").and_then(Value::as_str) {
                let name = r.rsplit('/').next().unwrap_or("");
                match self.root.get("definitions").and_then(|d| d.get(name)) {
                    Some(d) => s = d,
                    None => return s,
                }
            } else if let Some([one]) = s.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
            {
                s = one;
            } else {
                break;
            }
        }
        s
    }

    /// The non-null branches of an `anyOf` (or `oneOf`), those of a branch that is one in turn
    /// (an optional untagged enum: `anyOf [{$ref: RawJobId}, null]`, `RawJobId` an `anyOf`)
    /// taken in its place; or the schema itself.
    fn branches(&self, s: &'s Value) -> Vec<&'s Value> {
        let s = self.resolve(s);
        match s
            .get("anyOf")
            .or_else(|| s.get("oneOf"))
            .and_then(Value::as_array)
        {
            Some(list) => list
                .iter()
                .map(|b| self.resolve(b))
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                .flat_map(|b| {
                    if b.get("anyOf").or_else(|| b.get("oneOf")).is_some() {
                        self.branches(b)
                    } else {
                        vec![b]
                    }
                })
                .collect(),
            None => vec![s],
        }
    }

    /// `[tests.rdma-bw]`, `[[node]]`, `` `ssh` of `[[node]]` ``, or the top level.
    fn place(&self) -> String {
        let keys = |segs: &[Seg]| {
            segs.iter()
                .filter_map(Seg::key)
                .collect::<Vec<_>>()
                .join(".")
        };
        match self.path.iter().rposition(|s| matches!(s, Seg::Item)) {
            None if self.path.is_empty() => "the plan's top level".into(),
            None => format!("`[{}]`", keys(&self.path)),
            Some(i) if i + 1 == self.path.len() => format!("`[[{}]]`", keys(&self.path)),
            Some(i) => format!(
                "`{}` of `[[{}]]`",
                keys(&self.path[i + 1..]),
                keys(&self.path[..i])
            ),
        }
    }

    /// The key a value was given under: the last key of the path, with its map's key for a
    /// map entry (`subnets.b`).
    fn key(&self) -> String {
        let Some(i) = self.path.iter().rposition(|s| s.key().is_some()) else {
            return "plan".into();
        };
        match (&self.path[i], i.checked_sub(1).map(|j| &self.path[j])) {
            (Seg::Entry(k, _), Some(Seg::Key(m))) => format!("{m}.{k}"),
            (s, _) => s.key().unwrap_or_default().to_string(),
        }
    }

    /// The doc comment that says what the current value is: its field's, or its map's; without
    /// the range it repeats (the help line states it already).
    fn doc(&self, s: &Value) -> Option<String> {
        let d = description(s).or_else(|| match self.path.last() {
            Some(Seg::Entry(_, d)) => d.clone(),
            _ => None,
        })?;
        Some(match int_bounds(s) {
            (Some(lo), Some(hi)) => d.replace(&format!(", {lo} to {hi}"), ""),
            _ => d,
        })
    }

    fn value(&mut self, schema: &'s Value, v: &Spanned<DeValue<'_>>) {
        let branches = self.branches(schema);
        let Some(s) = branches.iter().copied().find(|b| accepts(b, v.get_ref())) else {
            let expected = branches.first().copied().unwrap_or(schema);
            self.wrong_type(expected, v);
            return;
        };
        match v.get_ref() {
            DeValue::Integer(i) => self.integer(s, i, v.span()),
            DeValue::Float(f) => self.float(s, f.as_str(), v.span()),
            DeValue::Array(a) => {
                if let Some(items) = s.get("items") {
                    self.path.push(Seg::Item);
                    for x in a.iter() {
                        self.value(items, x);
                    }
                    self.path.pop();
                }
            }
            DeValue::Table(t) => {
                let outer = std::mem::replace(&mut self.map_doc, description(schema));
                self.table(s, t, v.span());
                self.map_doc = outer;
            }
            _ => {}
        }
    }

    fn table(&mut self, s: &'s Value, t: &DeTable<'_>, at: Range<usize>) {
        let s = self.resolve(s);
        let props = s.get("properties").and_then(Value::as_object);
        let extra = s.get("additionalProperties");
        for (k, v) in t.iter() {
            let key = k.get_ref().as_ref();
            // a key of `properties`, else `additionalProperties` (absent: anything goes, as in
            // JSON Schema; `false`: an unknown key)
            let sub = props.and_then(|p| p.get(key)).or(match extra {
                Some(Value::Bool(false)) => None,
                Some(x) => Some(x),
                None => Some(&ANYTHING),
            });
            match sub {
                Some(sub) => {
                    let known = props.is_some_and(|p| p.contains_key(key));
                    self.path.push(if known {
                        Seg::Key(key.to_string())
                    } else {
                        Seg::Entry(key.to_string(), self.map_doc.clone())
                    });
                    self.value(sub, v);
                    self.path.pop();
                }
                None => self.unknown_key(key, k.span(), props),
            }
        }
        let required = s.get("required").and_then(Value::as_array);
        for r in required.into_iter().flatten().filter_map(Value::as_str) {
            if !t.contains_key(r) {
                let sub = props.and_then(|p| p.get(r)).unwrap_or(&Value::Null);
                let what = expected(self.resolve(sub), self);
                let in_place = if self.path.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", self.place())
                };
                let desc = description(sub)
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                let example = sub
                    .get("examples")
                    .and_then(|e| e.get(0))
                    .map(|e| format!("add `{r} = {e}`{desc}"))
                    .unwrap_or_else(|| format!("add `{r}`, {what}{desc}"));
                self.report.problems.push(
                    Problem::error(
                        "plan::missing-key",
                        format!("missing field `{r}`{in_place}"),
                    )
                    .at(at.clone(), format!("`{r}` missing"))
                    .help(format!("{example}; `fabricplan schema` lists every key")),
                );
            }
        }
    }

    fn unknown_key(
        &mut self,
        key: &str,
        at: Range<usize>,
        props: Option<&'s serde_json::Map<String, Value>>,
    ) {
        let names: Vec<&str> = props
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let help = match did_you_mean(key, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if names.is_empty() => {
                "this table takes no keys; `fabricplan schema` lists every key".into()
            }
            None => format!(
                "keys of {}: {}; unknown keys are rejected so a misspelling cannot silently change a verdict",
                self.place(),
                list_of(&names, 12)
            ),
        };
        self.report.unknown_keys.insert(at.start);
        self.report.problems.push(
            Problem::error(
                "plan::unknown-key",
                format!("unknown key `{key}` in {}", self.place()),
            )
            .at(at, "unknown key")
            .help(help),
        );
    }

    fn wrong_type(&mut self, s: &'s Value, v: &Spanned<DeValue<'_>>) {
        let key = self.key();
        let want = expected(s, self);
        let got = kind(v.get_ref());
        let want_table = types(s).contains(&"object");
        let want_list = types(s).contains(&"array");
        let got_table_list =
            matches!(v.get_ref(), DeValue::Array(a) if a.iter().any(|x| x.get_ref().is_table()));
        let help = if want_table && got_table_list {
            format!(
                "`{key}` is one table: write `[{0}]`, not `[[{0}]]`",
                self.dotted()
            )
        } else if want_list
            && matches!(v.get_ref(), DeValue::Table(_))
            && s.get("items")
                .is_some_and(|i| types(self.resolve(i)).contains(&"object"))
        {
            format!(
                "`{key}` is a list of tables: write `[[{}]]` for each",
                self.dotted()
            )
        } else {
            let desc = self.doc(s).map(|d| format!(": {d}")).unwrap_or_default();
            format!("`{key}` is {want}{desc}")
        };
        self.report.problems.push(
            Problem::error(
                "plan::type",
                format!("`{key}` must be {}, not {got}", short(&want)),
            )
            .at(v.span(), got)
            .help(help),
        );
    }

    fn dotted(&self) -> String {
        self.path
            .iter()
            .filter_map(Seg::key)
            .collect::<Vec<_>>()
            .join(".")
    }

    fn out_of_range(&mut self, s: &'s Value, shown: &str, at: Range<usize>, finite: bool) {
        let key = self.key();
        let want = expected(s, self);
        let desc = self.doc(s).map(|d| format!(": {d}")).unwrap_or_default();
        let what = if finite {
            "out of range"
        } else {
            "not a finite number"
        };
        self.report.problems.push(
            Problem::error(
                "plan::range",
                format!("`{key} = {}` is {what}", clip(shown, 40)),
            )
            .at(at, "out of range")
            .help(format!("`{key}` is {want}{desc}")),
        );
    }

    fn integer(&mut self, s: &'s Value, i: &toml::de::DeInteger<'_>, at: Range<usize>) {
        let (lo, hi) = int_bounds(s);
        let ok = i128::from_str_radix(i.as_str(), i.radix())
            .is_ok_and(|n| lo.is_none_or(|lo| n >= lo) && hi.is_none_or(|hi| n <= hi));
        if !ok {
            self.out_of_range(s, &i.to_string(), at, true);
        }
    }

    fn float(&mut self, s: &'s Value, text: &str, at: Range<usize>) {
        let x: f64 = text.replace('_', "").parse().unwrap_or(f64::NAN);
        let b = FloatBounds::of(s);
        if !(x.is_finite() && b.holds(x)) {
            self.out_of_range(s, text, at, x.is_finite());
        }
    }
}

/// The schema's types, without `null` (TOML has none: an absent key is the null).
fn types(s: &Value) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ if s.get("properties").is_some() => vec!["object"],
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|t| *t != "null")
    .collect()
}

/// Does the schema take a value of this kind? (Numbers take whole numbers too.)
fn accepts(s: &Value, v: &DeValue<'_>) -> bool {
    let t = types(s);
    if t.is_empty() && s.get("enum").is_some() {
        return v.is_str();
    }
    if t.is_empty() {
        return true;
    }
    t.iter().any(|t| match *t {
        "string" => v.is_str(),
        "integer" => v.is_integer(),
        "number" => v.is_integer() || v.is_float(),
        "boolean" => v.is_bool(),
        "array" => v.is_array(),
        "object" => v.is_table(),
        _ => false,
    })
}

/// What a value is, in the plan's words.
fn kind(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "a whole number",
        DeValue::Float(_) => "a decimal number",
        DeValue::Boolean(_) => "`true` or `false`",
        DeValue::Datetime(_) => "a date or time",
        DeValue::Array(a) if a.iter().any(|x| x.get_ref().is_table()) => "a list of tables",
        DeValue::Array(_) => "a list",
        DeValue::Table(_) => "a table",
    }
}

/// Integer bounds: the format's (`uint32` ...) narrowed by `minimum` / `maximum`.
fn int_bounds(s: &Value) -> (Option<i128>, Option<i128>) {
    let (mut lo, mut hi) = match s.get("format").and_then(Value::as_str) {
        Some("uint8") => (Some(0), Some(u8::MAX as i128)),
        Some("uint16") => (Some(0), Some(u16::MAX as i128)),
        Some("uint32") => (Some(0), Some(u32::MAX as i128)),
        Some("uint64") | Some("uint") => (Some(0), Some(u64::MAX as i128)),
        Some("int8") => (Some(i8::MIN as i128), Some(i8::MAX as i128)),
        Some("int16") => (Some(i16::MIN as i128), Some(i16::MAX as i128)),
        Some("int32") => (Some(i32::MIN as i128), Some(i32::MAX as i128)),
        Some("int64") | Some("int") => (Some(i64::MIN as i128), Some(i64::MAX as i128)),
        _ => (None, None),
    };
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    // an integer bound read exactly (9223372036854775807 is not an f64), a fractional one
    // rounded inwards
    let int = |k: &str| {
        let v = s.get(k)?;
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
    };
    if let Some(m) = int("minimum").or_else(|| num("minimum").map(|m| m.ceil() as i128)) {
        lo = Some(lo.map_or(m, |l| l.max(m)));
    }
    if let Some(m) = num("exclusiveMinimum") {
        let m = m.floor() as i128 + 1;
        lo = Some(lo.map_or(m, |l| l.max(m)));
    }
    if let Some(m) = int("maximum").or_else(|| num("maximum").map(|m| m.floor() as i128)) {
        hi = Some(hi.map_or(m, |h| h.min(m)));
    }
    if let Some(m) = num("exclusiveMaximum") {
        let m = m.ceil() as i128 - 1;
        hi = Some(hi.map_or(m, |h| h.min(m)));
    }
    (lo, hi)
}

#[derive(Debug, Default)]
struct FloatBounds {
    min: Option<(f64, bool)>,
    max: Option<(f64, bool)>,
}

impl FloatBounds {
    /// (bound, inclusive)
    fn of(s: &Value) -> FloatBounds {
        let num = |k: &str| s.get(k).and_then(Value::as_f64);
        FloatBounds {
            min: num("exclusiveMinimum")
                .map(|m| (m, false))
                .or(num("minimum").map(|m| (m, true))),
            max: num("exclusiveMaximum")
                .map(|m| (m, false))
                .or(num("maximum").map(|m| (m, true))),
        }
    }

    fn holds(&self, x: f64) -> bool {
        self.min
            .is_none_or(|(m, inc)| if inc { x >= m } else { x > m })
            && self
                .max
                .is_none_or(|(m, inc)| if inc { x <= m } else { x < m })
    }
}

/// `1e+0` -> `1`; whole floats without a fraction.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// What the schema takes, in the plan's words: "a whole number from 1 to 64".
fn expected(s: &Value, w: &Walker<'_>) -> String {
    let s = w.resolve(s);
    if let Some(list) = s.get("enum").and_then(Value::as_array) {
        let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        return format!("one of {}", list_of(&names, 12));
    }
    let branches = w.branches(s);
    if branches.len() > 1 {
        let all: Vec<String> = branches.iter().map(|b| expected(b, w)).collect();
        return all.join(" or ");
    }
    let s = branches.first().copied().unwrap_or(s);
    let t = types(s);
    match t.first().copied() {
        Some("integer") => match int_bounds(s) {
            (Some(lo), Some(hi)) => format!("a whole number from {lo} to {hi}"),
            (Some(lo), None) => format!("a whole number of at least {lo}"),
            (None, Some(hi)) => format!("a whole number of at most {hi}"),
            (None, None) => "a whole number".into(),
        },
        Some("number") => {
            let b = FloatBounds::of(s);
            match (b.min, b.max) {
                (Some((lo, true)), Some((hi, true))) => {
                    format!("a number from {} to {}", num(lo), num(hi))
                }
                (Some((lo, inc)), Some((hi, hinc))) => format!(
                    "a number {} {} and {} {}",
                    if inc { "of at least" } else { "above" },
                    num(lo),
                    if hinc { "at most" } else { "below" },
                    num(hi)
                ),
                (Some((lo, inc)), None) => {
                    format!(
                        "a number {} {}",
                        if inc { "of at least" } else { "above" },
                        num(lo)
                    )
                }
                (None, Some((hi, inc))) => {
                    format!(
                        "a number {} {}",
                        if inc { "of at most" } else { "below" },
                        num(hi)
                    )
                }
                (None, None) => "a number".into(),
            }
        }
        Some("string") => "a string".into(),
        Some("boolean") => "`true` or `false`".into(),
        Some("array") => match s.get("items") {
            Some(items) => {
                let item = expected(items, w);
                match item.as_str() {
                    "a string" => "a list of strings".into(),
                    "a table" => "a list of tables".into(),
                    _ => format!("a list, each item {item}"),
                }
            }
            None => "a list".into(),
        },
        Some("object") => "a table".into(),
        _ => "a value".into(),
    }
}

/// "a whole number from 1 to 64" -> "a whole number" (the message; the help has the range).
fn short(expected: &str) -> &str {
    for cut in [
        " from ",
        " of at least ",
        " of at most ",
        " above ",
        " below ",
    ] {
        if let Some(i) = expected.find(cut) {
            return &expected[..i];
        }
    }
    expected
}

/// The first sentence of a field's doc comment, if short enough for a help line.
fn description(s: &Value) -> Option<String> {
    let d = s.get("description")?.as_str()?.replace('\n', " ");
    let first = match d.find(". ") {
        Some(i) => &d[..=i],
        None => d.as_str(),
    };
    let first = first.trim().trim_end_matches('.');
    (!first.is_empty() && first.len() <= 260).then(|| lowercase_first(first))
}

/// "Share of ..." -> "share of ...", keeping names as they are (`RoCE`, `NCCL`, `-D`).
fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    let word: String = s.chars().take_while(|c| c.is_alphanumeric()).collect();
    match c.next() {
        Some(f) if f.is_uppercase() && word.chars().skip(1).all(char::is_lowercase) => {
            f.to_lowercase().collect::<String>() + c.as_str()
        }
        _ => s.to_string(),
    }
}

/// `` `a`, `b`, `c` `` (at most `max`, then "and N more").
fn list_of(names: &[&str], max: usize) -> String {
    let mut out: Vec<String> = names.iter().take(max).map(|n| format!("`{n}`")).collect();
    if names.len() > max {
        out.push(format!("and {} more", names.len() - max));
    }
    out.join(", ")
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounds are read exactly: TOML's largest integer is no f64 and must not be shown as
    /// 9223372036854775808; a fractional bound is rounded inwards.
    #[test]
    fn integer_bounds_are_exact() {
        let s = serde_json::json!({"format": "uint64", "minimum": 0, "maximum": i64::MAX});
        assert_eq!(int_bounds(&s), (Some(0), Some(i128::from(i64::MAX))));
        let s = serde_json::json!({"minimum": 0.5, "maximum": 10.5});
        assert_eq!(int_bounds(&s), (Some(1), Some(10)));
    }
}
