//! The manual (`docs/src/`, an mdBook) and the README stay true: every `fabricplan` command shown
//! in them parses with today's command line, every shipped plan or example they name validates,
//! every relative link points at a file, and the book's table of contents lists every chapter
//! and only chapters that exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use fabricplan::cli::Cli;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every chapter, with their paths relative to the repository.
fn pages() -> Vec<(String, String)> {
    let mut pages = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root().join("README.md")).unwrap(),
    )];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for p in chapters {
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        pages.push((rel, std::fs::read_to_string(&p).unwrap()));
    }
    pages
}

/// The lines of a page that are code: inside a fence that is not TOML or JSON, or indented by
/// four spaces after a blank line (Markdown's indented block), with continuations joined.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut indented = false;
    let mut prev_blank = true;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(info.trim().to_string()),
            };
            prev_blank = false;
            continue;
        }
        let code = match &fence {
            Some(lang) => !matches!(lang.as_str(), "toml" | "json" | "ini" | "text"),
            None => {
                if line.starts_with("    ") && (prev_blank || indented) {
                    indented = true;
                } else if !line.trim().is_empty() {
                    indented = false;
                }
                indented && line.starts_with("    ")
            }
        };
        prev_blank = line.trim().is_empty();
        if !code {
            continue;
        }
        let body = line.trim();
        let (n, joined) = match pending.take() {
            Some((n, head)) => (n, format!("{head} {body}")),
            None => (i + 1, body.to_string()),
        };
        if let Some(head) = joined.strip_suffix('\\') {
            pending = Some((n, head.trim_end().to_string()));
        } else {
            out.push((n, joined));
        }
    }
    out
}

/// A shown command's arguments after the program name, or `None` when the line is not a
/// fabricplan command. What follows a pipe, a redirection or a comment is the shell's.
fn fabricplan_args(line: &str) -> Option<Vec<String>> {
    let line = line.strip_prefix("$ ").unwrap_or(line);
    let line = line.strip_prefix("sudo ").unwrap_or(line);
    let rest = line
        .strip_prefix("fabricplan ")
        .or_else(|| line.strip_prefix("cargo run --release -- "))
        .or_else(|| line.strip_prefix("cargo run -- "))?;
    let words = shlex::split(rest)?;
    // a synopsis (`check PLAN [--node NAME] [--format text|json]`) is grammar, not a command
    if words.iter().any(|w| w.starts_with('[')) {
        return None;
    }
    let mut args = Vec::new();
    for w in words {
        if w.starts_with('#')
            || w.starts_with('>')
            || w.starts_with('|')
            || w.starts_with("2>")
            || w == "&&"
            || w == ";"
        {
            break;
        }
        args.push(w);
    }
    Some(args)
}

/// Paths a person types for their own site, run or mistake, or the lab's twins: not expected
/// to exist here.
fn placeholder(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    path.contains("site")
        || matches!(file, "plan.toml" | "bad.toml")
        || file.starts_with("my-")
        || file.starts_with("lab-")
        || path.starts_with("runs/")
        || path.starts_with('/')
        || path.contains("PLAN")
        || path.chars().any(|c| c.is_ascii_uppercase())
}

#[test]
fn every_command_shown_parses_and_every_shipped_plan_named_validates() {
    let mut commands = 0;
    let mut plans = BTreeSet::new();
    let mut stale = Vec::new();
    for (page, text) in pages() {
        // files the page itself writes first (`scripts/gen-switched.sh 64 2 sampled > g64.toml`)
        let made: BTreeSet<String> = text
            .split("> ")
            .skip(1)
            .filter_map(|s| s.split(|c: char| c.is_whitespace() || c == '`').next())
            .filter(|f| f.ends_with(".toml"))
            .map(str::to_string)
            .collect();
        for (line, code) in code_lines(&text) {
            let Some(args) = fabricplan_args(&code) else {
                continue;
            };
            commands += 1;
            let argv = std::iter::once("fabricplan".to_string()).chain(args.iter().cloned());
            if let Err(e) = Cli::try_parse_from(argv) {
                let ok = matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                );
                if !ok {
                    let first = e.to_string().lines().next().unwrap_or("").to_string();
                    stale.push(format!("{page}:{line}: `{code}`: {first}"));
                }
            }
            for a in args.iter().filter(|a| a.ends_with(".toml")) {
                if root().join(a).is_file() {
                    plans.insert(a.clone());
                } else if !placeholder(a) && !made.contains(a) {
                    stale.push(format!(
                        "{page}:{line}: `{code}` names {a}, which is not here"
                    ));
                }
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale commands in the manual:\n{}",
        stale.join("\n")
    );
    assert!(
        commands >= 30,
        "only {commands} fabricplan commands found in the manual: is the reader broken?"
    );
    assert!(plans.contains("plans/two-spark.toml"));
    let out = Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .arg("validate")
        .args(&plans)
        .env("NO_COLOR", "1")
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "plans named in the manual do not validate:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `[text](target)` links of a page that point at a file of this repository.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        let target = target.split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.contains(' ') {
            out.push(target.to_string());
        }
    }
    out
}

#[test]
fn every_relative_link_points_at_a_file() {
    let mut broken = Vec::new();
    for (page, text) in pages() {
        let dir = Path::new(&page)
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        for link in relative_links(&text) {
            if !root().join(&dir).join(&link).exists() {
                broken.push(format!("{page}: {link}"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_table_of_contents_lists_every_chapter_and_only_chapters_that_exist() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = relative_links(&summary).into_iter().collect();
    let present: BTreeSet<String> = pages()
        .into_iter()
        .filter_map(|(p, _)| p.strip_prefix("docs/src/").map(str::to_string))
        .filter(|p| p != "SUMMARY.md")
        .collect();
    let missing: Vec<_> = present.difference(&listed).collect();
    let absent: Vec<_> = listed.difference(&present).collect();
    assert!(
        missing.is_empty(),
        "chapters not in SUMMARY.md: {missing:?}"
    );
    assert!(
        absent.is_empty(),
        "SUMMARY.md lists missing chapters: {absent:?}"
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 160,
        "README.md has {lines} lines: the manual belongs in docs/"
    );
    for must in [
        "cargo run --release -- run plans/two-spark.toml --sim",
        "cargo test --locked",
    ] {
        assert!(readme.contains(must), "README lost `{must}`");
    }
}

#[test]
fn the_reader_finds_commands_in_fences_and_indented_blocks_only() {
    let text = "Prose fabricplan run x.toml is not code.\n\n    fabricplan validate a.toml   # c\n\n```toml\nfabricplan = 1\n```\n\n```\n$ fabricplan run \\\n    b.toml --sim\n```\n";
    let found: Vec<Vec<String>> = code_lines(text)
        .into_iter()
        .filter_map(|(_, l)| fabricplan_args(&l))
        .collect();
    assert_eq!(
        found,
        vec![
            vec!["validate".to_string(), "a.toml".to_string()],
            vec!["run".to_string(), "b.toml".to_string(), "--sim".to_string()],
        ]
    );
}
