//! The plan language: raw TOML -> validated model.
//!
//! `raw` mirrors the file with spans; `validate` checks everything and collects every problem;
//! `model` is what the rest of fabricplan works from. This module reads files and nothing else:
//! no network, no printing.

pub mod controls;
pub mod diag;
mod knock_on;
pub mod model;
mod parts;
pub mod raw;
pub mod section;
pub mod shape;
pub mod snippet;
pub mod validate;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use diag::{PlanDiagnostics, Problem};
pub use model::*;
pub use raw::RawPlan;
pub use section::{Catalog, NoKinds, SectionKind, SectionReader, TestSize};

/// Why a plan could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read plan `{path}`: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("plan `{}` is invalid: {} error(s)", .0.path, .0.errors())]
    Invalid(PlanDiagnostics),
}

/// A loaded plan and its warnings.
#[derive(Debug)]
pub struct Loaded {
    pub plan: Plan,
    pub warnings: PlanDiagnostics,
}

/// Read and validate a plan file, its `[tests]` sections read by `catalog`'s kinds.
pub fn load(path: &Path, catalog: &dyn Catalog) -> Result<Loaded, LoadError> {
    // a file or a stream (`<(...)`), never a directory or a socket, at most 256 MiB
    use crate::files::input::{Accept, InputError, STREAM_MAX, read_text};
    let text = read_text(path, STREAM_MAX, Accept::Stream).map_err(|e| {
        let source = match e {
            InputError::Io { source, .. } => source,
            InputError::NotFound(_) => std::io::Error::from(std::io::ErrorKind::NotFound),
            InputError::NotRegular { kind, .. } => {
                std::io::Error::other(format!("it is {kind}, not a regular file or a stream"))
            }
            InputError::TooLarge { max, .. } => std::io::Error::other(format!(
                "it is larger than the {} limit",
                crate::files::size_text(max)
            )),
        };
        LoadError::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    load_str(path, &text, &base, catalog)
}

/// Validate plan text; `base_dir` resolves relative paths (templates, known_hosts); `catalog`'s
/// kinds read the `[tests]` sections.
pub fn load_str(
    path: &Path,
    text: &str,
    base_dir: &Path,
    catalog: &dyn Catalog,
) -> Result<Loaded, LoadError> {
    let display = path.display().to_string();
    let invalid = |problems| {
        Err(LoadError::Invalid(PlanDiagnostics::new(
            &display, text, problems,
        )))
    };
    let mut doc = match toml::de::DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => return invalid(vec![toml_problem(&e)]),
    };
    // control characters in any key or value, and the shape: every unknown key, wrong type and
    // number out of range at once
    let controls = controls::check(&doc);
    let mut shape = shape::check(&doc, catalog);
    if !shape.only_unknown_keys() {
        let mut all = controls;
        all.append(&mut shape.problems);
        return invalid(all);
    }
    // unknown keys alone leave the rest readable: check it too, so one pass shows everything
    shape::strip_unknown(&mut doc, &shape.unknown_keys);
    let sections = take_sections(&mut doc, catalog);
    let raw = match RawPlan::deserialize(toml::de::Deserializer::from(doc)) {
        Ok(r) => r,
        Err(e) => {
            let mut problems = controls;
            problems.append(&mut shape.problems);
            problems.push(toml_problem(&e));
            return invalid(problems);
        }
    };
    let (plan, mut problems) = validate::validate(raw, path, text, base_dir, sections, catalog);
    if !shape.problems.is_empty() || !controls.is_empty() {
        let mut all = controls;
        all.append(&mut shape.problems);
        all.append(&mut problems);
        // one error per mistake: what only follows from another is left out
        return invalid(knock_on::suppress(all, text));
    }
    let problems = knock_on::suppress(problems, text);
    let diags = PlanDiagnostics::new(&display, text, problems);
    match plan {
        Some(plan) if diags.errors() == 0 => Ok(Loaded {
            plan,
            warnings: diags,
        }),
        _ => Err(LoadError::Invalid(diags)),
    }
}

/// Take the test kinds' sections out of `[tests]`, in plan order, for their kinds to read.
fn take_sections<'i>(
    doc: &mut toml::Spanned<toml::de::DeTable<'i>>,
    catalog: &dyn Catalog,
) -> Vec<(
    &'static dyn SectionKind,
    toml::Spanned<toml::de::DeValue<'i>>,
)> {
    let kinds = catalog.sections();
    let Some(tests) = doc.get_mut().get_mut("tests") else {
        return Vec::new();
    };
    let toml::de::DeValue::Table(t) = tests.get_mut() else {
        return Vec::new();
    };
    let mut keys: Vec<(usize, String)> = t
        .iter()
        .filter(|(k, _)| kinds.iter().any(|kind| kind.key() == k.get_ref().as_ref()))
        .map(|(k, _)| (k.span().start, k.get_ref().to_string()))
        .collect();
    keys.sort();
    keys.into_iter()
        .filter_map(|(_, k)| {
            let kind = *kinds.iter().find(|kind| kind.key() == k)?;
            t.remove(k.as_str()).map(|v| (kind, v))
        })
        .collect()
}

/// A TOML syntax error (or, should the shape check ever miss one, a deserialization error).
fn toml_problem(e: &toml::de::Error) -> Problem {
    let mut p = Problem::error("plan::toml", toml_message(e));
    if let Some(span) = e.span() {
        p = p.at(span, "here");
    }
    p.help(toml_help(e))
}

fn toml_message(e: &toml::de::Error) -> String {
    let msg = e.message().trim();
    let mut chars = msg.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => "invalid TOML".to_string(),
    }
}

fn toml_help(e: &toml::de::Error) -> String {
    let msg = e.message();
    if msg.contains("unknown field") {
        "unknown keys are rejected so a misspelling cannot silently change a verdict; see `fabricplan schema`".into()
    } else if msg.contains("missing field") {
        "add the required key; `fabricplan schema` lists every key".into()
    } else {
        "the plan is TOML 1.0 with kebab-case keys; `fabricplan schema` prints its JSON Schema"
            .into()
    }
}

/// The plan's JSON Schema (draft-07) with `catalog`'s sections, as committed in
/// `schemas/plan.schema.json`.
pub fn json_schema(catalog: &dyn Catalog) -> String {
    let mut s = serde_json::to_string_pretty(&shape::schema(catalog)).unwrap_or_default();
    s.push('\n');
    s
}
