//! Fuzzing the way back in: a run directory's results.json, mutated the ways a file breaks or is
//! made hostile (byte flips, truncation, a value of another type, a huge or negative number, a
//! date past the year 9999, deep nesting, control characters, markup), is read as `compare`,
//! `history` and `report` read it, and whatever reads must then go through every comparison and
//! every renderer (terminal comparison, Markdown, JSON, summary.md, junit.xml, metrics,
//! report.html) without a panic, quickly, with no raw control character in what a terminal
//! shows and junit.xml well within XML 1.0's characters.
//!
//! `cargo test --test results_fuzz` runs a bounded number of cases (default 200);
//! `FABRICPLAN_FUZZ_CASES=5000 cargo test --release --test results_fuzz` runs a campaign.

mod support;

use std::time::{Duration, Instant};

use fabricplan::compare::{self, Side, Thresholds};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("FABRICPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Per-case time limit (debug build, shared machine: generous).
const CASE_LIMIT: Duration = Duration::from_secs(10);

/// Replacements for a JSON value: what a broken or hostile file could hold.
const VALUES: &[&str] = &[
    "null",
    "true",
    "-1",
    "1e400",
    "-1e400",
    "18446744073709551616",
    "253402300800000",
    "0.5",
    "\"x\"",
    "\"\\u001b]0;owned\\u0007\\u001b[2J\\r\\u009b<img src=x>|`*[a](b)\\ufffe\\uffff\"",
    "\"\\ud800\"",
    "[]",
    "{}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value after the n-th `": "` with one of [`VALUES`].
    Value(usize, usize),
    /// Append a hostile tail inside the n-th string.
    Poison(usize),
    /// Flip one byte.
    Flip(usize, u8),
    /// Cut the file at a point.
    Cut(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0..VALUES.len()).prop_map(|(a, b)| Mutation::Value(a, b)),
        4 => any::<usize>().prop_map(Mutation::Poison),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
        1 => any::<usize>().prop_map(Mutation::Cut),
    ]
}

/// Where each value of the document starts (after `": "`).
fn value_starts(b: &[u8]) -> Vec<usize> {
    b.windows(3)
        .enumerate()
        .filter(|(_, w)| *w == b"\": ")
        .map(|(i, _)| i + 3)
        .collect()
}

/// The end of the JSON value starting at `i` (a scalar, a string or a bracketed value).
fn value_end(b: &[u8], i: usize) -> usize {
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    for (j, &c) in b.iter().enumerate().skip(i) {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => {
                    in_str = false;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return j,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            b',' | b'\n' if depth == 0 => return j,
            _ => {}
        }
    }
    b.len()
}

fn apply(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    match *m {
        Mutation::Value(n, v) => {
            let starts = value_starts(&b);
            if starts.is_empty() {
                return b;
            }
            let at = starts[n % starts.len()];
            let end = value_end(&b, at);
            b.splice(at..end, VALUES[v].bytes());
            b
        }
        Mutation::Poison(n) => {
            let starts: Vec<usize> = value_starts(&b)
                .into_iter()
                .filter(|i| b.get(*i) == Some(&b'"'))
                .collect();
            if starts.is_empty() {
                return b;
            }
            let at = starts[n % starts.len()] + 1;
            b.splice(
                at..at,
                b"\\u001b[2J\\u0007<b>|`x`|\\u202e\\ufffe".iter().copied(),
            );
            b
        }
        Mutation::Flip(n, x) => {
            if !b.is_empty() {
                let i = n % b.len();
                b[i] ^= x.max(1);
            }
            b
        }
        Mutation::Cut(n) => {
            let i = n % (b.len() + 1);
            b.truncate(i);
            b
        }
    }
}

/// Read `bytes` as the commands do; when it reads, compare it and render it every way.
fn run_one(bytes: &[u8], base: &fabricplan::results::RunResults) -> Result<(), TestCaseError> {
    let t0 = Instant::now();
    let read = compare::check_head(bytes).and_then(|()| compare::results_from(bytes));
    let Ok(r) = read else {
        let e = read.err().map(|e| e.to_string()).unwrap_or_default();
        prop_assert!(!e.is_empty());
        return Ok(());
    };
    let t = Thresholds::new(10.0);
    for (old, new) in [(base, &r), (&r, base), (&r, &r)] {
        let c = compare::compare(old, new, &t);
        let (o, n) = (
            Side {
                path: "old".into(),
                run: old,
            },
            Side {
                path: "new".into(),
                run: new,
            },
        );
        let text = compare::comparison_text(&c, &o, &n, &t);
        prop_assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "a raw control character: {text:?}"
        );
        let md = compare::comparison_markdown(&c, &o, &n, &t);
        prop_assert!(!md.contains('<'), "{md}");
        let _ = compare::comparison_json(&c, &o, &n, &t);
    }
    let runs = vec![
        ("a".to_string(), base.clone()),
        ("b".to_string(), r.clone()),
    ];
    let h = compare::history(&runs);
    let text = compare::history_text(&h, "runs");
    prop_assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
    let md = fabricplan::report::markdown::render(&r);
    prop_assert!(!md.contains('<') && !md.chars().any(|c| c.is_control() && c != '\n'));
    let xml = fabricplan::report::junit::render(&r);
    prop_assert!(
        xml.chars().all(|c| matches!(
            c as u32,
            0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..
        )),
        "junit.xml holds a character XML 1.0 forbids"
    );
    let _ = fabricplan::report::sink::metrics::render(&r);
    let _ = fabricplan::report::html::render(&fabricplan::report::html::Inputs {
        results: &r,
        plan: None,
        plan_note: None,
        baseline: Some(base),
    });
    let took = t0.elapsed();
    prop_assert!(took < CASE_LIMIT, "took {took:?}");
    Ok(())
}

#[test]
fn mutated_results_never_panic_and_render_inert() {
    let tmp = tempfile::tempdir().unwrap();
    let mut seeds = Vec::new();
    for plan in ["two-spark", "ring3"] {
        let plan = support::plan_path(plan).to_string_lossy().into_owned();
        let (dir, o) = support::sim_run(
            tmp.path(),
            "r",
            &plan,
            &["--sim-fault", "throttle:spark-a.f0.a"],
        );
        let (dir, _) = if o.status.code() == Some(2) {
            support::sim_run(tmp.path(), "r2", &plan, &[])
        } else {
            (dir, o)
        };
        seeds.push(std::fs::read(dir.join("results.json")).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let base = compare::parse_results(std::str::from_utf8(&seeds[0]).unwrap()).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let strat = (0..seeds.len(), prop::collection::vec(mutation(), 1..4));
    let result = runner.run(&strat, |(i, muts)| {
        let mut b = seeds[i].clone();
        for m in &muts {
            b = apply(b, m);
        }
        run_one(&b, &base)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
