//! Fuzzing kept in the repo: every parser is fed real fixtures mutated the ways captures break
//! (byte flips, dropped / duplicated / swapped lines, truncation, numbers made negative, huge,
//! NaN or infinite, random bytes) and must never panic, must say a status that agrees with its
//! fields, must accept no impossible value, and must finish quickly.
//!
//! `cargo test --test parse_fuzz` runs a bounded number of cases per parser (default 500);
//! `FABRICPLAN_FUZZ_CASES=10000 cargo test --release --test parse_fuzz` runs a large campaign.
//! The same checks are the body of the libFuzzer targets in `fuzz/` (see README, testing notes).

use fabricplan::parse::{self, Tool, check_invariants};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;
use std::time::{Duration, Instant};

/// The fixtures of each parser (directory under tests/fixtures/parse) and the tool reading them.
const SETS: &[(&str, Tool)] = &[
    ("ib_write_bw", Tool::IB_WRITE_BW),
    ("ib_read_bw", Tool::IB_READ_BW),
    ("ib_send_bw", Tool::IB_SEND_BW),
    ("ib_write_lat", Tool::IB_WRITE_LAT),
    ("ib_read_lat", Tool::IB_READ_LAT),
    ("ib_send_lat", Tool::IB_SEND_LAT),
    ("nccl-tests", Tool::NCCL_TESTS),
    ("nccl-json", Tool::NCCL_TESTS),
    ("mpirun", Tool::MPIRUN),
    ("iperf3", Tool::new(&fabricplan::kinds::iperf3::parse::TOOL)),
    ("ping", Tool::PING),
    ("ip-neigh", Tool::IP_NEIGH),
    ("lldpcli", Tool::LLDPCLI),
    ("ethtool", Tool::ETHTOOL),
];

/// Replacements for a number: what a corrupt or lying capture could show.
const NUMBERS: &[&str] = &[
    "-1",
    "-29.71",
    "-0.5",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "1e400",
    "1.8e19",
    "18446744073709551616",
    "99999999999999999999999",
    "0",
    "0.00",
    "-0.00",
    "1e-300",
    "101",
    "3.14.15",
];

/// Per-case time limit (debug build, shared 2-core machine: generous).
const CASE_LIMIT: Duration = Duration::from_secs(3);

fn cases() -> u32 {
    std::env::var("FABRICPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn fixtures(dir: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/parse")
        .join(dir);
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// One way a capture gets damaged.
#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    DropLine(usize),
    DupLine(usize),
    SwapLines(usize, usize),
    Truncate(usize),
    Number(usize, &'static str),
    Insert(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::FlipByte(a, b)),
        1 => any::<usize>().prop_map(Mutation::DropLine),
        1 => any::<usize>().prop_map(Mutation::DupLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        3 => (any::<usize>(), prop::sample::select(NUMBERS)).prop_map(|(a, n)| Mutation::Number(a, n)),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(a, b)| Mutation::Insert(a, b)),
    ]
}

fn split_lines(b: &[u8]) -> Vec<Vec<u8>> {
    b.split_inclusive(|c| *c == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Byte ranges of the numbers in `b` (digits with an optional sign, point and exponent).
fn number_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || matches!(b[j], b'.' | b'e' | b'+')) {
                j += 1;
            }
            out.push((start, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn apply(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    match m {
        Mutation::FlipByte(at, v) => {
            if !b.is_empty() {
                let i = at % b.len();
                b[i] = *v;
            }
            b
        }
        Mutation::DropLine(at) | Mutation::DupLine(at) => {
            let mut lines = split_lines(&b);
            if !lines.is_empty() {
                let i = at % lines.len();
                if matches!(m, Mutation::DropLine(_)) {
                    lines.remove(i);
                } else {
                    let l = lines[i].clone();
                    lines.insert(i, l);
                }
            }
            lines.concat()
        }
        Mutation::SwapLines(x, y) => {
            let mut lines = split_lines(&b);
            if !lines.is_empty() {
                let n = lines.len();
                lines.swap(x % n, y % n);
            }
            lines.concat()
        }
        Mutation::Truncate(at) => {
            let n = if b.is_empty() { 0 } else { at % b.len() };
            b.truncate(n);
            b
        }
        Mutation::Number(at, with) => {
            let spans = number_spans(&b);
            if spans.is_empty() {
                return b;
            }
            let (s, e) = spans[at % spans.len()];
            b.splice(s..e, with.bytes());
            b
        }
        Mutation::Insert(at, bytes) => {
            let i = if b.is_empty() { 0 } else { at % b.len() };
            b.splice(i..i, bytes.iter().copied());
            b
        }
    }
}

/// Parse `bytes` as the CLI does and check the result.
fn run_one(tool: Tool, bytes: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    let t0 = Instant::now();
    let p = parse::parse(tool, &text);
    let _ = p.to_json();
    let _ = p.summary();
    let took = t0.elapsed();
    prop_assert!(took < CASE_LIMIT, "{} took {took:?}", tool.name());
    if let Err(e) = check_invariants(&p) {
        return Err(TestCaseError::fail(format!(
            "{}: {e}\n--- input ---\n{text}",
            tool.name()
        )));
    }
    Ok(())
}

fn fuzz_set(dir: &str, tool: Tool) {
    let seeds = fixtures(dir);
    assert!(!seeds.is_empty(), "{dir}");
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let strat = (0..seeds.len(), prop::collection::vec(mutation(), 1..5));
    let result = runner.run(&strat, |(i, muts)| {
        let mut b = seeds[i].clone();
        for m in &muts {
            b = apply(b, m);
        }
        run_one(tool, &b)
    });
    if let Err(e) = result {
        panic!("{dir}: {e}");
    }
}

#[test]
fn fuzz_every_parser_on_mutated_fixtures() {
    for (dir, tool) in SETS {
        fuzz_set(dir, *tool);
    }
}

#[test]
fn fuzz_every_parser_on_random_bytes() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(
        &(
            prop::sample::select(fabricplan::kinds::tools()),
            prop::collection::vec(any::<u8>(), 0..2048),
        ),
        |(tool, bytes)| run_one(tool, &bytes),
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Every unmutated fixture passes the same checks (the checks themselves are sound).
#[test]
fn every_fixture_is_consistent() {
    for (dir, tool) in SETS {
        for b in fixtures(dir) {
            run_one(*tool, &b).unwrap_or_else(|e| panic!("{dir}: {e}"));
        }
    }
}
