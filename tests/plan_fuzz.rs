//! The plan loader under fuzzing, kept in the repo: every shipped plan, example and fixture,
//! mutated (values swapped for huge numbers, long strings, control characters and unicode;
//! keys misspelled; tables repeated or removed; lines swapped; text cut), goes through
//! `plan::load_str` and, when it loads, `Fabric::build`, `Schedule::expand` (the first rounds),
//! `topology::to_dot` and the dry run (`plan_view::write_text`); invalid ones through the
//! diagnostic renderer. Nothing may panic, and time and output stay bounded.
//!
//! `cargo test --test plan_fuzz` runs 1500 cases (about 20 s in a debug build);
//! `FABRICPLAN_FUZZ_CASES=3000 cargo test --release --test plan_fuzz` runs more.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fabricplan::plan::{LoadError, PlanDiagnostics};
use fabricplan::report::plan_view;
use fabricplan::topology::{self, Fabric};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;

/// Every plan the repository ships or tests: (path, text).
fn corpus() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["plans", "examples", "tests/fixtures"] {
        walk(Path::new(dir), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect()
}

/// Values a mutation puts in place of a value.
fn odd_value(k: usize) -> String {
    let long = "x".repeat(70_000);
    let values = [
        "4294967295".to_string(),
        "18446744073709551615".into(),
        "9223372036854775807".into(),
        "-9223372036854775808".into(),
        "-1".into(),
        "0".into(),
        "100000000".into(),
        "1e308".into(),
        "-0.0".into(),
        "nan".into(),
        "inf".into(),
        "0.000000001".into(),
        "\"\"".into(),
        format!("\"{long}\""),
        "\"\\u001b]0;owned\\u0007\\u001b[2J\\u009b\"".into(),
        "\"spark-a\\u202e.f0\"".into(),
        "\"日本語-ñ-🙂\"".into(),
        "\"../../etc/passwd\"".into(),
        "\"$(touch /tmp/fabricplan-fuzz)\"".into(),
        "\"a.b.c.d.e\"".into(),
        "\"spark-a -> spark-a\"".into(),
        "\"0.0.0.0/0\"".into(),
        "\"255.255.255.255/32\"".into(),
        "\"1G\"".into(),
        "\"0\"".into(),
        "\"999999999999G\"".into(),
        "\"1e400 Gb/s\"".into(),
        "\"900%\"".into(),
        "true".into(),
        "[]".into(),
        "[\"a\", \"a\", \"a\"]".into(),
        "{}".into(),
        "{ a = 1 }".into(),
        "1979-05-27T07:32:00Z".into(),
    ];
    // values that may well be valid: the plan goes on to the later stages
    let plausible = [
        "1".to_string(),
        "2".into(),
        "64".into(),
        "3600".into(),
        "0.5".into(),
        "\"all-pairs\"".into(),
        "\"per-link\"".into(),
        "\"a\"".into(),
        "[\"a\"]".into(),
        "false".into(),
    ];
    if k % 2 == 0 {
        values[k / 2 % values.len()].clone()
    } else {
        plausible[k / 2 % plausible.len()].clone()
    }
}

/// A value of the same kind as `v`, near it.
fn tweak(v: &str, k: usize) -> String {
    if let Ok(n) = v.parse::<i64>() {
        let options = [
            0,
            1,
            2,
            n.saturating_mul(2),
            n.saturating_add(1),
            64,
            3600,
            256,
        ];
        return options[k % options.len()].to_string();
    }
    if let Ok(x) = v.parse::<f64>() {
        let options = [0.5, x * 2.0, x / 2.0, 1.0, 100.0];
        return format!("{:?}", options[k % options.len()]);
    }
    match v {
        "true" => return "false".into(),
        "false" => return "true".into(),
        _ => {}
    }
    if let Some(inner) = v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        let options = [
            format!("{inner}-x"),
            inner.to_uppercase(),
            String::new(),
            inner.chars().rev().collect(),
            format!("{inner}{inner}"),
        ];
        return format!("\"{}\"", options[k % options.len()]);
    }
    if let Some(inner) = v.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let first = inner.split(", ").next().unwrap_or("");
        let options = [
            format!("[{inner}, {first}]"),
            "[]".to_string(),
            format!("[{first}]"),
        ];
        return options[k % options.len()].clone();
    }
    v.to_string()
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value of the n-th `key = value` line.
    Value(usize, usize),
    /// Change the value of the n-th `key = value` line, keeping its kind (a number stays a
    /// number): plausible plans that go on to the later stages.
    Tweak(usize, usize),
    /// Misspell the key of the n-th `key = value` line.
    Key(usize, usize),
    /// Repeat the n-th table (header to the next header) k times.
    RepeatTable(usize, usize),
    /// Repeat the n-th table k times, its `name` made unique in each copy (a bigger plan).
    GrowTable(usize, usize),
    /// Remove the n-th table.
    RemoveTable(usize),
    /// Insert a control character or a long run at a byte position.
    Insert(usize, usize),
    /// Swap two lines.
    SwapLines(usize, usize),
    /// Cut the text at a byte position.
    Cut(usize),
    /// Append a line of 70,000 characters holding a key.
    LongLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Value(a, b)),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Tweak(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Key(a, b)),
        1 => (any::<usize>(), 1usize..60).prop_map(|(a, k)| Mutation::RepeatTable(a, k)),
        3 => (any::<usize>(), 1usize..200).prop_map(|(a, k)| Mutation::GrowTable(a, k)),
        1 => any::<usize>().prop_map(Mutation::RemoveTable),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Insert(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => any::<usize>().prop_map(Mutation::Cut),
        1 => any::<usize>().prop_map(Mutation::LongLine),
    ]
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Start lines of every table header (`[x]`, `[[x]]`), and the end of the text.
fn tables(lines: &[&str]) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with('['))
        .map(|(i, _)| i)
        .collect()
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let kv: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with(['#', '[']) && l.contains(" = "))
        .map(|(i, _)| i)
        .collect();
    let join = |v: Vec<String>| v.join("\n") + "\n";
    let owned = || lines.iter().map(|l| l.to_string()).collect::<Vec<String>>();
    match *m {
        Mutation::Value(n, k) if !kv.is_empty() => {
            let mut out = owned();
            let i = kv[n % kv.len()];
            let key = lines[i].split(" = ").next().unwrap_or("");
            out[i] = format!("{key} = {}", odd_value(k));
            join(out)
        }
        Mutation::Tweak(n, k) if !kv.is_empty() => {
            let mut out = owned();
            let i = kv[n % kv.len()];
            let (key, value) = lines[i].split_once(" = ").unwrap_or((lines[i], ""));
            out[i] = format!("{key} = {}", tweak(value.trim(), k));
            join(out)
        }
        Mutation::Key(n, k) if !kv.is_empty() => {
            let mut out = owned();
            let i = kv[n % kv.len()];
            let (key, rest) = lines[i].split_once(" = ").unwrap_or((lines[i], ""));
            let mut key: Vec<char> = key.chars().collect();
            if !key.is_empty() {
                let at = k % key.len();
                match k % 3 {
                    0 => {
                        key.remove(at);
                    }
                    1 => key.insert(at, 'x'),
                    _ => {
                        let len = key.len();
                        key.swap(at, (at + 1) % len)
                    }
                }
            }
            out[i] = format!("{} = {rest}", key.into_iter().collect::<String>());
            join(out)
        }
        Mutation::RepeatTable(n, times) => {
            let starts = tables(&lines);
            if starts.is_empty() {
                return text.to_string();
            }
            let s = starts[n % starts.len()];
            let e = starts
                .iter()
                .copied()
                .find(|x| *x > s)
                .unwrap_or(lines.len());
            let block: Vec<String> = lines[s..e].iter().map(|l| l.to_string()).collect();
            let mut out: Vec<String> = lines[..e].iter().map(|l| l.to_string()).collect();
            for _ in 0..times {
                out.extend(block.iter().cloned());
            }
            out.extend(lines[e..].iter().map(|l| l.to_string()));
            join(out)
        }
        Mutation::GrowTable(n, times) => {
            let starts = tables(&lines);
            if starts.is_empty() {
                return text.to_string();
            }
            let s = starts[n % starts.len()];
            let e = starts
                .iter()
                .copied()
                .find(|x| *x > s)
                .unwrap_or(lines.len());
            let mut out: Vec<String> = lines[..e].iter().map(|l| l.to_string()).collect();
            for k in 0..times {
                for l in &lines[s..e] {
                    out.push(match l.strip_prefix("name = \"") {
                        Some(rest) => format!("name = \"g{k}-{rest}"),
                        None => l.to_string(),
                    });
                }
            }
            out.extend(lines[e..].iter().map(|l| l.to_string()));
            join(out)
        }
        Mutation::RemoveTable(n) => {
            let starts = tables(&lines);
            if starts.is_empty() {
                return text.to_string();
            }
            let s = starts[n % starts.len()];
            let e = starts
                .iter()
                .copied()
                .find(|x| *x > s)
                .unwrap_or(lines.len());
            let mut out: Vec<String> = lines[..s].iter().map(|l| l.to_string()).collect();
            out.extend(lines[e..].iter().map(|l| l.to_string()));
            join(out)
        }
        Mutation::Insert(at, k) => {
            let i = floor_boundary(text, at % (text.len() + 1));
            let what = [
                "\u{1b}[2J".to_string(),
                "\u{7}".into(),
                "\u{9b}".into(),
                "\u{0}".into(),
                "\r".into(),
                "\u{202e}".into(),
                "y".repeat(70_000),
                "\n[[node]]\n".into(),
                "\"".into(),
            ];
            format!("{}{}{}", &text[..i], what[k % what.len()], &text[i..])
        }
        Mutation::SwapLines(a, b) if !lines.is_empty() => {
            let mut out = owned();
            let (a, b) = (a % out.len(), b % out.len());
            out.swap(a, b);
            join(out)
        }
        Mutation::Cut(at) => text[..floor_boundary(text, at % (text.len() + 1))].to_string(),
        Mutation::LongLine(k) => {
            let keys = ["description", "name", "nope", "qps"];
            format!(
                "{text}\n{} = \"{}\"\n",
                keys[k % keys.len()],
                "z".repeat(70_000)
            )
        }
        _ => text.to_string(),
    }
}

/// A sink that takes at most `left` bytes, then fails: the dry run of a huge plan stops early.
struct Capped {
    left: usize,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.left {
            self.left = 0;
            return Err(std::io::Error::other("capped"));
        }
        self.left -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Words of Rust rather than of the plan.
const INTERNAL: [&str; 9] = [
    "invalid type",
    "expected struct",
    "expected u8",
    "expected u16",
    "expected u32",
    "expected u64",
    "expected i64",
    "expected f64",
    "Raw",
];

fn check_diagnostics(d: &PlanDiagnostics, text: &str, what: &str) {
    for p in &d.problems {
        let pr = &p.problem;
        let (span, _) = pr
            .primary
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: `{}` ({}) has no label", pr.message, pr.code));
        assert!(
            span.start <= span.end && span.end <= text.len(),
            "{what}: `{}` at {span:?} outside {} bytes",
            pr.message,
            text.len()
        );
        assert!(pr.help.is_some(), "{what}: `{}` has no help", pr.message);
        for w in INTERNAL {
            assert!(
                !pr.message.contains(w) && !pr.help.as_deref().unwrap_or("").contains(w),
                "{what}: `{w}` in `{}` / {:?}",
                pr.message,
                pr.help
            );
        }
    }
    let out = d.render(false, 100);
    assert!(out.len() < 1 << 20, "{what}: {} bytes rendered", out.len());
    if let Some(i) = out.find(|c: char| c.is_control() && c != '\n') {
        let from = floor_boundary(&out, i.saturating_sub(200));
        let to = floor_boundary(&out, i + 100);
        panic!(
            "{what}: control character {:?} rendered: {:?}",
            out[i..].chars().next(),
            &out[from..to]
        );
    }
}

/// One mutated plan through every stage; returns whether it loaded.
fn exercise(path: &Path, text: &str) -> bool {
    let base = path.parent().unwrap_or(Path::new("."));
    let what = path.display().to_string();
    let t = Instant::now();
    let loaded = match fabricplan::kinds::load_str(path, text, base) {
        Ok(l) => l,
        Err(LoadError::Invalid(d)) => {
            check_diagnostics(&d, text, &what);
            assert!(t.elapsed() < Duration::from_secs(20), "{what}: slow");
            return false;
        }
        Err(e) => panic!("{what}: {e}"),
    };
    check_diagnostics(&loaded.warnings, text, &what);
    let plan = &loaded.plan;
    let fabric = Fabric::build(plan);
    let schedule = fabricplan::kinds::schedule(plan);
    for i in 0..schedule.len().min(3) {
        let _ = schedule.round(plan, &fabric, i);
    }
    let dot = topology::to_dot(plan);
    assert!(!dot.is_empty());
    let mut sink = Capped { left: 1 << 20 };
    let _ = plan_view::write_text(
        &mut sink,
        plan,
        &fabric,
        &schedule,
        &fabricplan::launchers::ssh::render::SshStyle,
    );
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "{what}: {:?} to load and dry-run",
        t.elapsed()
    );
    true
}

fn cases() -> u32 {
    std::env::var("FABRICPLAN_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1500)
}

/// Every unmutated plan goes through too (the fuzz starts from what loads).
#[test]
fn every_shipped_plan_and_fixture_goes_through_every_stage() {
    let corpus = corpus();
    assert!(corpus.len() >= 60, "{} plans", corpus.len());
    let loaded = corpus.iter().filter(|(p, t)| exercise(p, t)).count();
    assert!(loaded >= 10, "{loaded} loaded");
}

#[test]
fn mutated_plans_never_panic_and_stay_bounded() {
    let corpus = corpus();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        // found cases become named tests here, not files beside the sources
        failure_persistence: None,
        ..Config::default()
    });
    // plans that load are picked three times as often: they reach every stage
    let base = Path::new(".");
    let loadable: Vec<usize> = (0..corpus.len())
        .filter(|&i| {
            fabricplan::kinds::load_str(
                &corpus[i].0,
                &corpus[i].1,
                corpus[i].0.parent().unwrap_or(base),
            )
            .is_ok()
        })
        .collect();
    let pick = prop_oneof![
        1 => 0..corpus.len(),
        3 => proptest::sample::select(loadable),
    ];
    let strategy = (pick, proptest::collection::vec(mutation(), 1..3));
    let started = Instant::now();
    let (loaded, total) = (Cell::new(0usize), Cell::new(0usize));
    runner
        .run(&strategy, |(i, muts)| {
            let (path, text) = &corpus[i];
            let mut text = text.clone();
            for m in &muts {
                text = apply(&text, m);
            }
            total.set(total.get() + 1);
            if exercise(path, &text) {
                loaded.set(loaded.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    eprintln!(
        "plan fuzz: {} mutated plans ({} loaded) in {:.1} s",
        total.get(),
        loaded.get(),
        started.elapsed().as_secs_f64()
    );
}
