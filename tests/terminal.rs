//! What the terminal prints, on every shipped plan and example, healthy and faulted, at 60 and
//! 100 columns: lines break at spaces only (never inside `Gb/s`, `8-25` or a flag), every line
//! fits but a command (printed whole on its own line so it copies) and the verdict (the last
//! line, whole), discovery is one line per
//! node, and the last lines name report.html and the next command.

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

fn run_at(cols: usize, plan: &str, out: &Path, extra: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(["run", plan, "--sim", "--out"])
        .arg(out)
        .args(extra)
        .env("NO_COLOR", "1")
        .env("COLUMNS", cols.to_string())
        .env_remove("CI")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fabricplan");
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    stdout(&o)
}

fn plans() -> Vec<String> {
    let mut plans = Vec::new();
    for d in ["plans", "examples"] {
        let mut v: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| format!("{d}/{}", p.file_name().unwrap().to_string_lossy()))
            .collect();
        v.sort();
        plans.extend(v);
    }
    plans
}

#[test]
fn lines_break_at_spaces_and_end_with_the_report_and_what_next() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, plan) in plans().iter().enumerate() {
        let p = load_plan(Path::new(env!("CARGO_MANIFEST_DIR")).join(plan));
        let first = p.nodes.first().unwrap().name.clone();
        let last = p.nodes.last().unwrap().name.clone();
        let throttle = format!("throttle:{first}");
        let dead = format!("dead-host:{last}");
        let faults: [Vec<&str>; 3] = [
            vec![],
            vec!["--sim-fault", &throttle],
            vec!["--sim-fault", &dead],
        ];
        for (j, extra) in faults.iter().enumerate() {
            for cols in [60, 100] {
                let dir = tmp.path().join(format!("{i}-{j}-{cols}"));
                let out = run_at(cols, plan, &dir, extra);
                let what = format!("{plan} {extra:?} at {cols} columns");
                check(&out, cols, p.nodes.len(), &dir, &what);
            }
        }
    }
}

fn check(out: &str, cols: usize, nodes: usize, dir: &Path, what: &str) {
    let lines: Vec<&str> = out.lines().collect();
    // the verdict is the last line, whole (scripts read it), however wide
    let (_, body) = lines.split_last().unwrap();
    for l in body {
        let t = l.trim_start();
        let command = t.starts_with("ssh ")
            || t.starts_with("fabricplan ")
            || t.starts_with("fix:  ")
            || t.starts_with("report:   ")
            || t.starts_with("evidence: ")
            || t.contains(". FAIL ") && t.contains(": ssh ");
        assert!(
            command || l.chars().count() <= cols,
            "{what}: a line wider than the terminal:\n{l}\n\n{out}"
        );
        // textwrap broke a word after a slash or a hyphen (`Gb/` `s`, `8-` `25`)
        let end = l.trim_end();
        assert!(
            !end.ends_with('/') && (!end.ends_with('-') || end.ends_with(" -")),
            "{what}: a line broken inside a word:\n{l}\n\n{out}"
        );
    }
    // discovery: one line per node (up to 16 nodes), each starting with its node
    let at = lines
        .iter()
        .position(|l| l.starts_with("discovery "))
        .unwrap_or_else(|| panic!("{what}: no discovery\n{out}"));
    let end = lines
        .iter()
        .position(|l| l.starts_with("preflight ") || l.starts_with("gates "))
        .unwrap();
    assert_eq!(
        end - at,
        nodes.clamp(1, 16),
        "{what}: discovery lines\n{out}"
    );
    // the last lines: the report's path, what to do next with its command, the verdict
    let n = lines.len();
    let report = format!("report:   {}", dir.join("report.html").display());
    let tail = lines[n.saturating_sub(5)..].join("\n");
    assert!(tail.contains(&report), "{what}: no report line\n{tail}");
    assert!(
        tail.contains("next:     ") && tail.contains("fabricplan run "),
        "{what}: no next command\n{tail}"
    );
    assert!(dir.join("report.html").is_file());
}
