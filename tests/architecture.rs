//! The shape of the house, checked: one way through it, in layers; files and functions small
//! enough to read; printing only where printing belongs.
//!
//! The layers run from the bottom (plain text and exit codes, the parsers) to the top (the
//! CLI). A module may use what lies below it, never what lies above: a parser knows nothing of
//! plans, the executor nothing of reports. A new module is added to `LAYERS` where it belongs.
//!
//! A launcher is not a layer but a unit: one folder under `src/launchers/` holding all of it,
//! a file or folder per layer it reaches into, named by that layer (`render.rs`, `parse.rs`,
//! `exec/`). Each of those sits in its layer and is checked as if it were there; the unit's
//! `mod.rs` (its declaration) and `launchers/mod.rs` (the registry) sit at `exec`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom first. Every top-level module of `src/` appears exactly once.
const LAYERS: &[&str] = &[
    "text", "exit", "files", "parse", "gate", "plan", "topology", "schedule", "capacity", "render",
    "discover", "results", "localise", "diagnose", "kinds", "compare", "init", "check", "exec",
    "sim", "report", "cli",
];

/// The longest a source file may grow before it is split.
const MAX_FILE_LINES: usize = 900;
/// The longest a function may grow before it is split into named steps.
const MAX_FN_LINES: usize = 100;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("readable source dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The folders of units (launchers, tools), and the layer their declarations and registries
/// sit at.
const UNITS: &[&str] = &["launchers", "tools"];
const UNIT_DECLARATION_LAYER: &str = "exec";

/// The top-level module a file belongs to: `src/exec/runner/mod.rs` -> `exec`; in a
/// launcher's unit, the layer its part is named by: `src/launchers/slurm/parse.rs` -> `parse`,
/// `src/launchers/slurm/exec/step.rs` -> `exec`, `src/launchers/slurm/mod.rs` -> `exec`.
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(src()).expect("under src");
    let parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    match parts.as_slice() {
        [units, _, part, ..] if UNITS.contains(&units.as_str()) && part != "mod" => part.clone(),
        [units, ..] if UNITS.contains(&units.as_str()) => UNIT_DECLARATION_LAYER.to_string(),
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

/// The layer a path under `crate::` names: its first segment, or in a launcher's unit the
/// part it names (`launchers::slurm::parse::NodeState` -> `parse`; `launchers::slurm::UNIT`
/// and `launchers::build` -> the declarations' layer).
fn layer_of_path(path: &str) -> String {
    let segs: Vec<&str> = path.split("::").map(str::trim).collect();
    match segs.as_slice() {
        [units, _, part, ..]
            if UNITS.contains(units) && part.chars().next().is_some_and(|c| c.is_lowercase()) =>
        {
            part.to_string()
        }
        [units, ..] if UNITS.contains(units) => UNIT_DECLARATION_LAYER.to_string(),
        [first, ..] => first.to_string(),
        [] => String::new(),
    }
}

/// Source text without `//` comments (doc comments included), so that prose naming another
/// module is not taken for a use of it. String literals containing `//` are cut too, which
/// can only hide a dependency inside a literal, never invent one.
fn code_only(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The layers a piece of code names through `crate::`, including grouped imports (`use
/// crate::{plan::Plan, gate::Outcome}`), a launcher unit's parts by the layer they are named
/// for.
fn crate_uses(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = matching_brace(group);
            for part in split_top_level(&group[..end]) {
                let path = path_prefix(part.trim());
                if !path.is_empty() {
                    out.push(layer_of_path(&path));
                }
            }
        } else {
            let path = path_prefix(rest);
            if !path.is_empty() {
                out.push(layer_of_path(&path));
            }
        }
    }
    out
}

/// The path at the start of `text`: identifiers joined by `::` (`a::b::C` of `a::b::C;`), up
/// to a group or anything else.
fn path_prefix(text: &str) -> String {
    let mut path = String::new();
    let mut rest = text;
    loop {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            break;
        }
        path.push_str(&name);
        rest = &rest[name.len()..];
        match rest.strip_prefix("::") {
            Some(r) if !r.starts_with('{') => {
                path.push_str("::");
                rest = r;
            }
            _ => break,
        }
    }
    path.trim_end_matches("::").to_string()
}

/// Index of the `}` closing a group whose `{` was just consumed.
fn matching_brace(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

/// Split a `use` group on the commas at its own level.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

#[test]
fn every_module_has_a_layer() {
    let mut modules: Vec<String> = fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .map(|p| module_of(&p))
        .filter(|m| m != "lib" && m != "main" && !UNITS.contains(&m.as_str()))
        .collect();
    modules.sort();
    // a module may be a file with a folder of its children (`text.rs` and `text/`)
    modules.dedup();
    let mut layered: Vec<String> = LAYERS.iter().map(|s| s.to_string()).collect();
    layered.sort();
    assert_eq!(
        modules, layered,
        "src/ and LAYERS disagree: give every module its layer"
    );
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut upward = Vec::new();
    for file in rust_files(&src()) {
        let module = module_of(&file);
        let Some(&mine) = rank.get(module.as_str()) else {
            continue; // lib.rs and main.rs sit above everything
        };
        let code = code_only(&fs::read_to_string(&file).unwrap());
        for used in crate_uses(&code) {
            if let Some(&theirs) = rank.get(used.as_str())
                && theirs > mine
            {
                upward.push(format!(
                    "{} ({module}) uses crate::{used}, a layer above it",
                    file.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "arrows that run back up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_checker_sees_grouped_and_plain_uses() {
    let code = "use crate::{plan::{Plan, NodeId}, gate::Outcome};\nlet x = crate::report::y();";
    assert_eq!(crate_uses(code), ["plan", "gate", "report"]);
    assert_eq!(code_only("a // crate::cli"), "a ");
    let units = "use crate::launchers::slurm::parse::{self as said, NodeState};\nuse crate::{launchers::ssh::render::SshStyle, launchers::UNITS};\nlet u = crate::launchers::slurm::UNIT;";
    assert_eq!(crate_uses(units), ["parse", "render", "exec", "exec"]);
}

#[test]
fn a_launcher_units_parts_sit_in_the_layers_they_are_named_for() {
    let at = |p: &str| module_of(&src().join(p));
    assert_eq!(at("launchers/slurm/parse.rs"), "parse");
    assert_eq!(at("launchers/slurm/exec/step.rs"), "exec");
    assert_eq!(at("launchers/slurm/mod.rs"), "exec");
    assert_eq!(at("launchers/mod.rs"), "exec");
    assert_eq!(at("exec/runner/mod.rs"), "exec");
    assert_eq!(at("tools/perftest/sim.rs"), "sim");
    assert_eq!(at("tools/nccl_tests/parse/scan.rs"), "parse");
    // every part of every unit is named for a layer
    let mut stray = Vec::new();
    for f in UNITS.iter().flat_map(|u| rust_files(&src().join(u))) {
        let m = module_of(&f);
        if !LAYERS.contains(&m.as_str()) {
            stray.push(format!("{} ({m})", f.display()));
        }
    }
    assert!(
        stray.is_empty(),
        "name a unit's part for its layer:\n{}",
        stray.join("\n")
    );
}

/// Inside a launcher's unit, a part reaches another part of its unit by `crate::` (checked
/// by layer), never by `super::` out of its own folder (which would hide an arrow up).
#[test]
fn a_units_parts_reach_each_other_by_their_layer() {
    let mut found = Vec::new();
    for (units, f) in UNITS
        .iter()
        .flat_map(|u| rust_files(&src().join(u)).into_iter().map(move |f| (*u, f)))
    {
        let rel = f.strip_prefix(src().join(units)).unwrap();
        let depth = rel.components().count(); // unit/part.rs = 2, unit/exec/x.rs = 3
        // test modules blanked: inside one, `super::` is the file itself
        let code = code_only(&shipped(&fs::read_to_string(&f).unwrap()));
        let is_mod = f.file_stem().is_some_and(|s| s == "mod");
        // how many `super::` stay inside the file's own part
        let allowed = match (depth, is_mod) {
            (0 | 1, _) => continue, // the registry
            (2, true) => 1,         // a unit's declaration may name the registry
            (2, false) => 0,
            (_, true) => depth - 3,
            (_, false) => depth - 2,
        };
        let leaves = format!("{}super::", "super::".repeat(allowed));
        for (i, line) in code.lines().enumerate() {
            if line.contains(&leaves) {
                found.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "`super::` out of a unit's part (name the other part by its `crate::` path):\n{}",
        found.join("\n")
    );
}

#[test]
fn files_stay_readable() {
    let long: Vec<String> = rust_files(&src())
        .into_iter()
        .filter_map(|f| {
            let n = fs::read_to_string(&f).unwrap().lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{} has {n} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these into a folder of files (at most {MAX_FILE_LINES} lines each):\n{}",
        long.join("\n")
    );
}

/// Functions longer than `limit` lines in `text`: a `fn` item at some indentation runs to the
/// first line that is exactly that indentation followed by `}` (rustfmt's layout).
fn long_functions(text: &str, limit: usize) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut words = line.trim_start();
        if let Some(rest) = words.strip_prefix("pub(in ") {
            words = rest.split_once(") ").map_or(rest, |x| x.1);
        }
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "async ",
            "const ",
            "unsafe ",
        ] {
            words = words.strip_prefix(prefix).unwrap_or(words);
        }
        let Some(after) = words.strip_prefix("fn ") else {
            continue;
        };
        if line.trim_end().ends_with(';') {
            continue; // a declaration in a trait
        }
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            let n = end + 2;
            if n > limit {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((i + 1, name, n));
            }
        }
    }
    out
}

#[test]
fn functions_stay_readable() {
    let mut long = Vec::new();
    for f in rust_files(&src()) {
        for (line, name, n) in long_functions(&fs::read_to_string(&f).unwrap(), MAX_FN_LINES) {
            long.push(format!("{}:{line} fn {name}: {n} lines", f.display()));
        }
    }
    assert!(
        long.is_empty(),
        "split these into named steps (at most {MAX_FN_LINES} lines each):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_checker_counts_what_rustfmt_writes() {
    let body = "    x();\n".repeat(5);
    let text = format!("pub fn short() {{\n}}\n\nfn long() {{\n{body}}}\n");
    assert_eq!(long_functions(&text, 6), [(4, "long".to_string(), 7)]);
    assert!(long_functions(&text, 7).is_empty());
    assert!(long_functions("trait T {\n    fn f(&self);\n}\n", 0).is_empty());
    let scoped = "pub(in crate::x) fn f() {\n    x();\n}\n";
    assert_eq!(long_functions(scoped, 2), [(1, "f".to_string(), 3)]);
}

/// Only the CLI and the reporters print; everything else returns what it has to say. The
/// library denies printing through clippy (`print_stdout`, `print_stderr`), and only these
/// files may lift that.
#[test]
fn only_the_cli_and_the_reporters_print() {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    assert!(
        lib.contains("clippy::print_stdout") && lib.contains("clippy::print_stderr"),
        "lib.rs no longer warns on printing"
    );
    let mut lifted = Vec::new();
    for f in rust_files(&src()) {
        let text = code_only(&fs::read_to_string(&f).unwrap());
        if text.contains("allow(clippy::print_stdout")
            || text.contains("allow(clippy::print_stderr")
        {
            let module = module_of(&f);
            if module != "cli" && module != "report" {
                lifted.push(f.display().to_string());
            }
        }
    }
    assert!(
        lifted.is_empty(),
        "printing allowed outside the CLI and the reporters:\n{}",
        lifted.join("\n")
    );
}

/// Source text as it ships: every item under `#[cfg(test)]` blanked (a module or function to
/// the `}` at its own indent, rustfmt's layout; a one-line item to its `;`). Lines are kept, so
/// line numbers still point into the file.
fn shipped(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push(lines[i]);
            i += 1;
            continue;
        }
        let indent = &lines[i][..lines[i].len() - lines[i].trim_start().len()];
        let close = format!("{indent}}}");
        let item = &lines[i + 1..];
        let end = match item.first() {
            Some(l) if l.trim_end().ends_with('{') => item.iter().position(|l| *l == close),
            _ => item.iter().position(|l| l.trim_end().ends_with(';')),
        };
        let cut = end.map_or(lines.len() - i, |e| e + 2);
        out.extend(std::iter::repeat_n("", cut));
        i += cut;
    }
    out.join("\n")
}

/// The files that are test modules declared out of line (`#[cfg(test)]` then `mod tests;`).
fn out_of_line_test_modules() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for f in rust_files(&src()) {
        let text = fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for w in lines.windows(2) {
            let Some(name) = w[1].trim().strip_prefix("mod ") else {
                continue;
            };
            let Some(name) = name.strip_suffix(';') else {
                continue;
            };
            if w[0].trim() != "#[cfg(test)]" {
                continue;
            }
            // `a/mod.rs` declares `a/x.rs`, `a/b.rs` declares `a/b/x.rs`
            let stem = f.file_stem().unwrap().to_string_lossy();
            let dir = match stem.as_ref() {
                "mod" | "lib" | "main" => f.parent().unwrap().to_path_buf(),
                other => f.parent().unwrap().join(other),
            };
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name).join("mod.rs"));
        }
    }
    out
}

/// The string literals of Rust source (comments skipped; char literals and lifetimes told
/// apart; raw strings read to their own closing), each as written between its quotes, with
/// its line.
fn string_literals(code: &str) -> Vec<(usize, String)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident = |x: Option<&char>| x.is_some_and(|x| x.is_alphanumeric() || *x == '_');
    while i < c.len() {
        let at = |j: usize| c.get(j).copied();
        match c[i] {
            '\n' => line += 1,
            '/' if at(i + 1) == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if at(i + 1) == Some('*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && at(i + 1) == Some('*') {
                        depth += 1;
                        i += 1;
                    } else if c[i] == '*' && at(i + 1) == Some('/') {
                        depth -= 1;
                        i += 1;
                    } else if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
                continue;
            }
            '\'' if at(i + 1) == Some('\\') => {
                // an escaped char literal: to its closing quote
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
            }
            '\'' if at(i + 2) == Some('\'') => i += 2,
            'r' if !ident(i.checked_sub(1).and_then(|p| c.get(p)))
                && matches!(at(i + 1), Some('"' | '#')) =>
            {
                let hashes = c[i + 1..].iter().take_while(|x| **x == '#').count();
                if c.get(i + 1 + hashes) == Some(&'"') {
                    let start = i + 2 + hashes;
                    let end = (start..c.len())
                        .find(|&k| {
                            c[k] == '"'
                                && c[k + 1..]
                                    .iter()
                                    .take(hashes)
                                    .filter(|x| **x == '#')
                                    .count()
                                    == hashes
                        })
                        .unwrap_or(c.len());
                    let s: String = c[start..end].iter().collect();
                    out.push((line, s.clone()));
                    line += s.matches('\n').count();
                    i = end + hashes;
                }
            }
            '"' => {
                let start = i + 1;
                i = start;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let s: String = c[start..i.min(c.len())].iter().collect();
                out.push((line, s.clone()));
                line += s.matches('\n').count();
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The literals of `text` that are exactly one of `names`, in shipped code: (line, name).
fn names_in_literals(text: &str, names: &[&str]) -> Vec<(usize, String)> {
    string_literals(&shipped(text))
        .into_iter()
        .filter(|(_, s)| names.contains(&s.as_str()))
        .collect()
}

/// A test kind is a folder under `src/kinds/` that owns everything about it: everything else
/// asks a kind through its descriptor, so no shipped code outside `src/kinds/` holds a kind's
/// name as a literal (its tool, its templates, its section and metric are named in its folder).
#[test]
fn no_kind_is_named_outside_its_folder() {
    let names: Vec<&str> = fabricplan::kinds::ALL
        .iter()
        .map(|k| k.id().name())
        .collect();
    assert!(names.len() > 5, "the registered kinds: {names:?}");
    let kinds = src().join("kinds");
    let tests = out_of_line_test_modules();
    let mut named = Vec::new();
    for f in rust_files(&src()) {
        if f.starts_with(&kinds) || tests.contains(&f) {
            continue;
        }
        for (line, name) in names_in_literals(&fs::read_to_string(&f).unwrap(), &names) {
            named.push(format!("{}:{line}: \"{name}\"", f.display()));
        }
    }
    assert!(
        named.is_empty(),
        "kind names outside src/kinds/ (ask the kind through its descriptor instead):\n{}",
        named.join("\n")
    );
}

#[test]
fn the_kind_name_checker_sees_literals_not_comments_or_tests() {
    let text = r##"//! "nccl" in a doc comment
fn f<'a>(x: &'a str) -> &'static str {
    let q = '"';
    let e = '\'';
    /* "nccl" in /* a nested */ block */
    g(r#"a "quoted" raw"#, "nc\"cl", "iperf3-server");
    "nccl" // "iperf3" in a comment
}

#[cfg(test)]
use x::nccl_helper;

#[cfg(test)]
mod tests {
    fn t() {
        h("nccl");
    }
}

fn after() {
    m(r"iperf3");
}
"##;
    let names = ["nccl", "iperf3"];
    assert_eq!(
        names_in_literals(text, &names),
        [(7, "nccl".to_string()), (21, "iperf3".to_string())]
    );
    let lits: Vec<String> = string_literals(text).into_iter().map(|x| x.1).collect();
    assert!(lits.contains(&"a \"quoted\" raw".to_string()), "{lits:?}");
    assert!(lits.contains(&"nc\\\"cl".to_string()), "{lits:?}");
}

/// Where `code` decides by comparing a launcher's, a style's or a transport's name with a
/// literal (`style.name() == "slurm"`): (line, the comparison).
fn name_comparisons(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let squeezed: String = line.split_whitespace().collect();
        for pat in ["name()==\"", "name()!=\""] {
            if squeezed.contains(pat) {
                out.push((i + 1, line.trim().to_string()));
            }
        }
        for name in ["ssh", "slurm"] {
            for pat in [
                format!("==\"{name}\""),
                format!("\"{name}\"=="),
                format!("!=\"{name}\""),
                format!("\"{name}\"!="),
            ] {
                if squeezed.contains(&pat) && !out.iter().any(|(l, _)| *l == i + 1) {
                    out.push((i + 1, line.trim().to_string()));
                }
            }
        }
    }
    out
}

/// What differs between launchers is a capability each declares (`LaunchStyle::words`,
/// `Launcher::reach_part`, ...), never a comparison with its name.
#[test]
fn no_launcher_is_decided_by_its_name() {
    let tests = out_of_line_test_modules();
    let mut found = Vec::new();
    for f in rust_files(&src()) {
        if tests.contains(&f) {
            continue;
        }
        let code = code_only(&shipped(&fs::read_to_string(&f).unwrap()));
        for (line, what) in name_comparisons(&code) {
            found.push(format!("{}:{line}: {what}", f.display()));
        }
    }
    assert!(
        found.is_empty(),
        "behaviour decided by a launcher's name (declare a capability instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_name_comparison_checker_sees_comparisons_not_uses() {
    let code = "let a = style.name() == \"slurm\";\nlet b = if kind == \"ssh\" { 1 } else { 2 };\nlet c = style.name();\nlet d = v.name() == other;\nif r.transport != \"slurm\" {}\n";
    let lines: Vec<usize> = name_comparisons(code).into_iter().map(|x| x.0).collect();
    assert_eq!(lines, [1, 2, 5]);
}

/// Where `code` splits a gate's name back into its flow's ends (`split_once(" -> ")` and
/// kin): (line, the code).
fn flow_splits(code: &str) -> Vec<(usize, String)> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("split") && l.contains("\" -> \""))
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect()
}

/// A verdict carries its flow's ends as fields (`Verdict::flow`): nothing reads them back
/// out of a gate's name, but the reader of results written before verdicts carried them
/// (`results/flow.rs`) and the plan's own round syntax (`schedule/`).
#[test]
fn no_gate_name_is_split_back_into_its_ends() {
    let allowed = [src().join("results/flow.rs"), src().join("schedule")];
    let tests = out_of_line_test_modules();
    let mut found = Vec::new();
    for f in rust_files(&src()) {
        if tests.contains(&f) || allowed.iter().any(|a| f.starts_with(a)) {
            continue;
        }
        let code = code_only(&shipped(&fs::read_to_string(&f).unwrap()));
        for (line, what) in flow_splits(&code) {
            found.push(format!("{}:{line}: {what}", f.display()));
        }
    }
    assert!(
        found.is_empty(),
        "a gate's name split back into its ends (read `Verdict::flow` instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_flow_split_checker_sees_splits_not_joins() {
    let code = "let (a, b) = gate.split_once(\" -> \")?;\nlet g = format!(\"{a} -> {b}\");\nlet e = label.split(\" -> \").next();\n";
    let lines: Vec<usize> = flow_splits(code).into_iter().map(|x| x.0).collect();
    assert_eq!(lines, [1, 3]);
}
