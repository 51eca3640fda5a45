//! Hardening at the edges: outputs that respect the file system, run directories read with
//! limits, a verdict that admits lost evidence, text that cannot drive a terminal. Each test is
//! one class of hostile input, tried on every command and output path it concerns.

mod support;

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{copy_run, fabricplan, json, plan_path, sim_run, stderr, stdout, write_json};

fn two_spark() -> String {
    plan_path("two-spark").to_string_lossy().into_owned()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// fabricplan under a guard: a command that blocks (a FIFO opened for reading) ends after a
/// minute with exit 124 instead of hanging the suite; a command that does not block is not
/// slowed by it.
fn guarded(args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_fabricplan"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("CI")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fabricplan")
}

/// fabricplan with `umask` set and files limited to `fsize` bytes (a write past it fails with
/// EFBIG, SIGXFSZ ignored): a disk that fills up, deterministically.
fn limited(args: &[&str], umask: u32, fsize: Option<u64>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabricplan"));
    c.args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("CI")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    // SAFETY: only async-signal-safe calls between fork and exec
    unsafe {
        c.pre_exec(move || {
            libc::umask(umask as libc::mode_t);
            if let Some(n) = fsize {
                let lim = libc::rlimit {
                    rlim_cur: n as libc::rlim_t,
                    rlim_max: n as libc::rlim_t,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    c.output().expect("run fabricplan")
}

/// The kinds of thing that are not a regular file fabricplan may replace.
#[derive(Debug, Clone, Copy)]
enum Node {
    CharDevice,
    Fifo,
    Socket,
    Directory,
    SymlinkToFile,
    DanglingSymlink,
}

const NODES: [Node; 6] = [
    Node::CharDevice,
    Node::Fifo,
    Node::Socket,
    Node::Directory,
    Node::SymlinkToFile,
    Node::DanglingSymlink,
];

/// Make `kind` at `p`; `None` when this machine cannot (mknod needs root). The socket's
/// listener is returned to keep it bound.
fn make(kind: Node, p: &Path) -> Option<Option<std::os::unix::net::UnixListener>> {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    match kind {
        Node::CharDevice => {
            // the same device as /dev/null
            let dev = libc::makedev(1, 3);
            // SAFETY: a valid C string
            if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, dev) } != 0 {
                return None;
            }
        }
        Node::Fifo => {
            // SAFETY: a valid C string
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }
        Node::Socket => {
            return Some(Some(std::os::unix::net::UnixListener::bind(p).unwrap()));
        }
        Node::Directory => fs::create_dir(p).unwrap(),
        Node::SymlinkToFile => {
            let target = p.with_extension("target");
            fs::write(&target, "not fabricplan's\n").unwrap();
            std::os::unix::fs::symlink(&target, p).unwrap();
        }
        Node::DanglingSymlink => {
            std::os::unix::fs::symlink(p.with_extension("nowhere"), p).unwrap();
        }
    }
    Some(None)
}

/// Is `p` still the `kind` it was made as (not replaced by a regular file)?
fn intact(kind: Node, p: &Path) -> bool {
    let Ok(m) = fs::symlink_metadata(p) else {
        return false;
    };
    let t = m.file_type();
    match kind {
        Node::CharDevice => t.is_char_device(),
        Node::Fifo => t.is_fifo(),
        Node::Socket => t.is_socket(),
        Node::Directory => t.is_dir(),
        Node::SymlinkToFile => {
            t.is_symlink()
                && fs::read_to_string(p.with_extension("target")).unwrap() == "not fabricplan's\n"
        }
        Node::DanglingSymlink => t.is_symlink() && !p.with_extension("nowhere").exists(),
    }
}

#[test]
fn metrics_and_report_never_replace_what_is_not_a_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (run0, o) = sim_run(tmp.path(), "run0", &two_spark(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for kind in NODES {
        let target = tmp.path().join(format!("{kind:?}.prom"));
        let Some(_listener) = make(kind, &target) else {
            continue;
        };
        // run --metrics: refused before anything runs, the run directory never created
        let out = tmp.path().join(format!("R-{kind:?}"));
        let o = fabricplan(&[
            "run",
            &two_spark(),
            "--sim",
            "--out",
            &s(&out),
            "--metrics",
            &s(&target),
        ]);
        assert_eq!(o.status.code(), Some(2), "{kind:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&s(&target)),
            "{kind:?}: the path is named: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("incomplete"), "{}", stderr(&o));
        assert!(!out.exists(), "{kind:?}: checked before the run started");
        assert!(
            stdout(&o).is_empty(),
            "{kind:?}: no verdict: {}",
            stdout(&o)
        );
        assert!(intact(kind, &target), "{kind:?} was replaced");
        // report -o: the same
        let o = fabricplan(&["report", &s(&run0), "-o", &s(&target)]);
        assert_eq!(o.status.code(), Some(2), "{kind:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(&s(&target)), "{}", stderr(&o));
        assert!(intact(kind, &target), "{kind:?} was replaced by report -o");
    }
}

#[test]
fn a_run_directory_that_is_not_a_directory_or_holds_foreign_outputs_is_refused_first() {
    let tmp = tempfile::tempdir().unwrap();
    for kind in NODES {
        let out = tmp.path().join(format!("out-{kind:?}"));
        if matches!(kind, Node::Directory) {
            continue; // an empty directory is a fine run directory
        }
        let Some(_l) = make(kind, &out) else {
            continue;
        };
        let o = fabricplan(&["run", &two_spark(), "--sim", "--out", &s(&out)]);
        assert_eq!(o.status.code(), Some(2), "--out {kind:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&s(&out)), "{kind:?}: {err}");
        assert!(!err.contains("os error 17"), "{kind:?}: {err}");
        if matches!(kind, Node::DanglingSymlink) {
            assert!(
                err.contains("symbolic link") && err.contains("does not exist"),
                "{err}"
            );
        }
        assert!(intact(kind, &out), "--out {kind:?} was replaced");
    }
    // an existing directory whose output files are already there, as anything: refused before
    // the run, nothing written into it
    for name in ["junit.xml", "report.html", "summary.md", "results.json"] {
        for kind in [Node::Fifo, Node::Directory, Node::SymlinkToFile] {
            let dir = tmp.path().join(format!("pre-{name}-{kind:?}"));
            fs::create_dir(&dir).unwrap();
            make(kind, &dir.join(name)).unwrap();
            let o = fabricplan(&["run", &two_spark(), "--sim", "--out", &s(&dir)]);
            assert_eq!(o.status.code(), Some(2), "{name} {kind:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(name), "{}", stderr(&o));
            assert!(!dir.join("plan.toml").exists(), "{name} {kind:?}: started");
            assert!(intact(kind, &dir.join(name)));
        }
    }
}

/// Every file under `dir`, recursively, with its mode bits.
fn modes(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            out.push((p.clone(), m.permissions().mode() & 0o7777, m.is_dir()));
            if m.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

#[test]
fn every_output_takes_the_mode_the_umask_gives() {
    let tmp = tempfile::tempdir().unwrap();
    for (umask, file_mode, dir_mode) in [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)] {
        let out = tmp.path().join(format!("R{umask:o}"));
        let metrics = tmp.path().join(format!("m{umask:o}.prom"));
        let o = limited(
            &[
                "run",
                &two_spark(),
                "--sim",
                "--out",
                &s(&out),
                "--metrics",
                &s(&metrics),
            ],
            umask,
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let mut all = modes(&out);
        all.push((
            metrics.clone(),
            fs::metadata(&metrics).unwrap().mode(),
            false,
        ));
        let report = tmp.path().join(format!("report{umask:o}.html"));
        let o = limited(&["report", &s(&out), "-o", &s(&report)], umask, None);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        all.push((report.clone(), fs::metadata(&report).unwrap().mode(), false));
        for (p, mode, is_dir) in all {
            let want = if is_dir { dir_mode } else { file_mode };
            assert_eq!(
                mode & 0o777,
                want,
                "{} under umask {umask:o}: {:o}",
                p.display(),
                mode & 0o777
            );
        }
    }
}

use std::os::unix::fs::MetadataExt;

/// A copy of a finished run at `to` whose results.json is then replaced by `kind`.
fn run_with_results_as(from: &Path, to: &Path, kind: Node) {
    copy_run(from, to);
    fs::remove_file(to.join("results.json")).unwrap();
    make(kind, &to.join("results.json")).unwrap();
}

#[test]
fn a_run_directory_is_read_from_regular_files_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, o) = sim_run(tmp.path(), "good", &two_spark(), &[]);
    assert_eq!(o.status.code(), Some(0));
    let hist = tmp.path().join("hist");
    fs::create_dir(&hist).unwrap();
    let mut bad = Vec::new();
    for (i, kind) in [
        Node::Fifo,
        Node::Directory,
        Node::Socket,
        Node::DanglingSymlink,
    ]
    .into_iter()
    .enumerate()
    {
        let d = hist.join(format!("r{i}-{kind:?}"));
        run_with_results_as(&good, &d, kind);
        bad.push((kind, d));
    }
    // a symlink to a device: /dev/zero would be read forever
    let zero = hist.join("r9-zero");
    copy_run(&good, &zero);
    fs::remove_file(zero.join("results.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero.join("results.json")).unwrap();
    bad.push((Node::CharDevice, zero));
    for (kind, d) in &bad {
        for args in [
            vec!["compare", &s(&good), &s(d)],
            vec!["compare", &s(d), &s(&good)],
            vec!["report", &s(d), "-o", &s(&tmp.path().join("rep.html"))],
        ] {
            let o = guarded(&args);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{kind:?} {args:?}: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains(&s(&d.join("results.json"))) || stderr(&o).contains(&s(d)),
                "{kind:?}: {}",
                stderr(&o)
            );
        }
        let o = guarded(&[
            "run",
            &two_spark(),
            "--sim",
            "--out",
            &s(&tmp.path().join("b")),
            "--baseline",
            &s(d),
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "--baseline {kind:?}: {}",
            stderr(&o)
        );
    }
    // history: every entry it did not use is named, with why; with no run left, exit 2
    let o = guarded(&["history", &s(&hist)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    for (kind, d) in &bad {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            err.lines()
                .any(|l| l.contains("skipped") && l.contains(&name)),
            "{kind:?} not named as skipped:\n{err}"
        );
    }
    assert!(err.contains("not a regular file"), "{err}");
    // with one good run among them, the good one is read and the rest still named
    copy_run(&good, &hist.join("r5-good"));
    let o = guarded(&["history", &s(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).lines().filter(|l| l.contains("skipped")).count(),
        bad.len(),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_file_over_the_size_limit_is_refused_and_the_limit_can_be_raised() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, o) = sim_run(tmp.path(), "good", &two_spark(), &[]);
    assert_eq!(o.status.code(), Some(0));
    let size = fs::metadata(good.join("results.json")).unwrap().len();
    assert!(size > 64 * 1024, "{size}");
    for args in [
        vec!["compare", &s(&good), &s(&good)],
        vec!["report", &s(&good), "-o", &s(&tmp.path().join("r.html"))],
        vec!["history", &s(tmp.path())],
    ] {
        let mut small = args.clone();
        small.extend(["--max-input-size", "64KiB"]);
        let o = fabricplan(&small);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("64 KiB") && err.contains("--max-input-size"),
            "{err}"
        );
        let mut big = args.clone();
        big.extend(["--max-input-size", "1MiB"]);
        let o = fabricplan(&big);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    let o = fabricplan(&[
        "run",
        &two_spark(),
        "--sim",
        "--out",
        &s(&tmp.path().join("b")),
        "--baseline",
        &s(&good),
        "--max-input-size",
        "64KiB",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // the default is 1 GiB, and says so
    let o = fabricplan(&["compare", "--help"]);
    assert!(
        stdout(&o).contains("1GiB") || stdout(&o).contains("1 GiB"),
        "{}",
        stdout(&o)
    );
}

/// A copy of run `from` at `to` whose results.json went through `edit`.
fn edited_run(from: &Path, to: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    copy_run(from, to);
    let mut v = json(&to.join("results.json"));
    edit(&mut v);
    write_json(&to.join("results.json"), &v);
}

/// Every command that reads a run directory, on `d`: (command, its output).
fn readers(good: &Path, d: &Path, tmp: &Path) -> Vec<(String, Output)> {
    let hist = tmp.join(format!("h-{}", d.file_name().unwrap().to_string_lossy()));
    fs::create_dir_all(&hist).unwrap();
    copy_run(d, &hist.join("only"));
    vec![
        ("compare".into(), fabricplan(&["compare", &s(good), &s(d)])),
        (
            "report".into(),
            fabricplan(&["report", &s(d), "-o", &s(&tmp.join("x.html"))]),
        ),
        ("history".into(), fabricplan(&["history", &s(&hist)])),
    ]
}

#[test]
fn an_unknown_format_version_is_refused_naming_the_versions_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, _) = sim_run(tmp.path(), "good", &two_spark(), &[]);
    let v2 = tmp.path().join("v2");
    edited_run(&good, &v2, |v| v["format_version"] = 2.into());
    for (cmd, o) in readers(&good, &v2, tmp.path()) {
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("format_version 2") && err.contains("reads format_version 1"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_schema_error_names_the_file_the_field_and_the_position() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, _) = sim_run(tmp.path(), "good", &two_spark(), &[]);
    let wrong = tmp.path().join("wrong");
    edited_run(&good, &wrong, |v| {
        v["jobs"][1]["verdicts"][0]["measured"] = "fast".into();
    });
    for (cmd, o) in readers(&good, &wrong, tmp.path()) {
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("results.json"), "{cmd}: {err}");
        assert!(err.contains("jobs[1].verdicts[0].measured"), "{cmd}: {err}");
        assert!(
            err.contains("line ") && err.contains("column "),
            "{cmd}: {err}"
        );
        assert!(!err.contains("not JSON"), "{cmd}: {err}");
    }
    // not JSON at all, cut short, invalid UTF-8, nested past any sense: an error with a
    // position, never a crash
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("cut", {
            let t = fs::read(good.join("results.json")).unwrap();
            t[..t.len() / 2].to_vec()
        }),
        ("utf8", {
            let mut t = fs::read(good.join("results.json")).unwrap();
            let at = t.windows(9).position(|w| w == b"two-spark").unwrap();
            t[at] = 0xff;
            t
        }),
        ("deep", {
            let mut t = b"{\"format_version\":1,\"plan\":\"p\",\"jobs\":[{\"parsed\":".to_vec();
            t.extend(std::iter::repeat_n(b'[', 100_000));
            t
        }),
        ("line", {
            let mut t = b"{\"format_version\":1,\"plan\":\"".to_vec();
            t.extend(std::iter::repeat_n(b'x', 8 << 20));
            t
        }),
    ];
    for (name, bytes) in cases {
        let d = tmp.path().join(name);
        copy_run(&good, &d);
        fs::write(d.join("results.json"), bytes).unwrap();
        for (cmd, o) in readers(&good, &d, tmp.path()) {
            assert_eq!(o.status.code(), Some(2), "{name} {cmd}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.contains("line ") && err.contains("column "),
                "{name} {cmd}: {err}"
            );
        }
    }
}

#[test]
fn a_date_outside_the_representable_range_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, _) = sim_run(tmp.path(), "good", &two_spark(), &[]);
    // year 10000, and the largest value a u64 holds
    for (i, ms) in [253_402_300_800_000u64, u64::MAX].into_iter().enumerate() {
        for field in ["started_unix_ms", "finished_unix_ms"] {
            let d = tmp.path().join(format!("y{i}-{field}"));
            edited_run(&good, &d, |v| v[field] = ms.into());
            for (cmd, o) in readers(&good, &d, tmp.path()) {
                assert_eq!(o.status.code(), Some(2), "{field} {cmd}: {}", stderr(&o));
                let err = stderr(&o);
                assert!(
                    err.contains(field) && err.contains("year 9999"),
                    "{cmd}: {err}"
                );
            }
        }
    }
}

#[test]
fn a_run_that_lost_evidence_says_so_wherever_it_states_a_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    // files are limited to 20,000 bytes: results.jsonl, results.json and report.html cannot be
    // written whole
    for format in ["text", "json"] {
        let out = tmp.path().join(format!("full-{format}"));
        let o = limited(
            &[
                "run",
                &two_spark(),
                "--sim",
                "--out",
                &s(&out),
                "--format",
                format,
            ],
            0o022,
            Some(20_000),
        );
        assert_eq!(o.status.code(), Some(3), "{format}: {}", stderr(&o));
        let text = stdout(&o);
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["summary"]["evidence_complete"], false, "{text}");
            assert_eq!(v["summary"]["exit_code"], 3, "{text}");
            let verdict = v["summary"]["verdict"].as_str().unwrap();
            assert!(verdict.starts_with("EVIDENCE INCOMPLETE"), "{verdict}");
            let lost = v["summary"]["evidence_lost"].as_array().unwrap();
            assert!(
                lost.iter()
                    .any(|l| l.as_str().unwrap().contains("results.jsonl")),
                "{lost:?}"
            );
        } else {
            let last = text.lines().last().unwrap_or_default();
            assert!(last.starts_with("EVIDENCE INCOMPLETE"), "last line: {last}");
            assert!(
                last.contains("ALL GREEN"),
                "the measurement still shows: {last}"
            );
        }
        // results.jsonl: whole lines only, each one JSON
        let jsonl = fs::read_to_string(out.join("results.jsonl")).unwrap();
        assert!(
            jsonl.is_empty() || jsonl.ends_with('\n'),
            "a partial last line"
        );
        for l in jsonl.lines() {
            serde_json::from_str::<serde_json::Value>(l).expect("a whole line");
        }
        // what was written later states the loss too
        let summary = fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(summary.contains("EVIDENCE INCOMPLETE"), "{summary}");
    }
}

#[test]
fn control_characters_from_a_run_directory_reach_no_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, _) = sim_run(tmp.path(), "good", &two_spark(), &[]);
    let hostile = tmp.path().join("hostile");
    // every text of the results gets an escape sequence, a BEL and a CR
    edited_run(&good, &hostile, |v| {
        poison(
            v,
            "\u{1b}]0;owned\u{7}\r\u{1b}[2J\u{9b}<img src=x>|`\u{202e}",
        )
    });
    let hist = tmp.path().join("hist");
    copy_run(&good, &hist.join("a"));
    copy_run(&hostile, &hist.join("b"));
    let runs = [
        fabricplan(&["compare", &s(&good), &s(&hostile)]),
        fabricplan(&["compare", &s(&hostile), &s(&hostile)]),
        fabricplan(&[
            "compare",
            &s(&hostile),
            &s(&hostile),
            "--format",
            "markdown",
        ]),
        fabricplan(&["history", &s(&hist)]),
        fabricplan(&["report", &s(&hostile), "-o", &s(&tmp.path().join("h.html"))]),
    ];
    for o in &runs {
        for (what, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text
                    .chars()
                    .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
                "a raw control character on {what}:\n{text}"
            );
        }
    }
    // they are shown, not dropped; the hostile run compared with itself has rows
    assert_eq!(runs[1].status.code(), Some(0), "{}", stderr(&runs[1]));
    assert!(
        stdout(&runs[1]).contains("\\x1b]0;owned\\x07"),
        "{}",
        stdout(&runs[1])
    );
    // Markdown: no tag, no cell split
    let md = stdout(&runs[2]);
    assert!(!md.contains("<img"), "{md}");
    for l in md.lines().filter(|l| l.starts_with('|')) {
        let b = l.as_bytes();
        let pipes = (0..b.len())
            .filter(|i| {
                b[*i] == b'|' && b[..*i].iter().rev().take_while(|c| **c == b'\\').count() % 2 == 0
            })
            .count();
        assert_eq!(pipes, 7, "a split cell: {l}");
    }
}

/// Append `tail` to every string of a JSON document but the fields that must keep their
/// value for the run to read as one (its kinds of job, status, outcomes, addresses, traps, and
/// the tools' outputs, read by their typed reports).
fn poison(v: &mut serde_json::Value, tail: &str) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let keep = matches!(
                    k.as_str(),
                    "status"
                        | "outcome"
                        | "role"
                        | "kind"
                        | "metric"
                        | "what"
                        | "keep_evidence"
                        | "keep_evidence_chosen"
                        | "tool"
                        | "source"
                        | "address"
                        | "trap"
                        | "parsed"
                        | "part"
                        | "software"
                        | "reach"
                );
                if !keep {
                    poison(x, tail);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| poison(x, tail)),
        serde_json::Value::String(t) => t.push_str(tail),
        _ => {}
    }
}

#[test]
fn node_names_that_differ_only_by_case_are_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(plan_path("two-spark"))
        .unwrap()
        .replace("spark-b", "SPARK-A");
    let p = tmp.path().join("case.toml");
    fs::write(&p, text).unwrap();
    let o = fabricplan(&["validate", &s(&p)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("plan::name-case"), "{err}");
    assert!(err.contains("SPARK-A") && err.contains("spark-a"), "{err}");
}

/// Every string value of a plan (its span), keys of user-named tables included.
fn string_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    use toml::de::{DeTable, DeValue};
    fn value(v: &toml::Spanned<DeValue<'_>>, out: &mut Vec<std::ops::Range<usize>>) {
        match v.get_ref() {
            DeValue::String(_) => out.push(v.span()),
            DeValue::Array(a) => a.iter().for_each(|x| value(x, out)),
            DeValue::Table(t) => table(t, out),
            _ => {}
        }
    }
    fn table(t: &DeTable<'_>, out: &mut Vec<std::ops::Range<usize>>) {
        for (_, v) in t.iter() {
            value(v, out);
        }
    }
    let doc = DeTable::parse(text).unwrap();
    let mut out = Vec::new();
    table(doc.get_ref(), &mut out);
    out
}

/// A plan with a value in every place a string reaches a command line: SSH settings, a
/// node's environment and nccl-tests folder, the launcher, the setup stage, NCCL's
/// environment, templates.
const EVERY_VALUE: &str = r#"format-version = 1
name = "every-value"
description = "a plan with every kind of value"

[ssh]
user = "ops"
known-hosts = "known_hosts"

[launcher]
kind = "ssh"

[[node]]
name = "spark-a"
nccl-tests-dir = "/opt/nccl-tests/build"
env = { UCX_NET_DEVICES = "mlx5_0:1", NCCL_DEBUG = "INFO" }
ssh = { host = "198.18.0.1", user = "root", identity-file = "id_ed25519" }

[[node]]
name = "spark-b"
nccl-tests-dir = "/opt/nccl-tests/build"
ssh = { alias = "spark-b-mgmt" }

[[cable]]
kind = "direct"
name = "stack"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }

[gates.rdma-bw]
pass = "95 Gb/s"
trap = "slow"
fix = "reseat the cable"

[tests.rdma-bw]

[[tests.nccl]]
collective = "all_reduce"
nodes = ["spark-a", "spark-b"]
min-bytes = "8"
max-bytes = "128M"
env = { NCCL_IB_HCA = "mlx5_0,mlx5_1" }

[templates.rdma-bw-client]
inline = "{{ tool }} -d {{ device }} -x {{ gid_index }} -F --report_gbits -D {{ duration_s }} -s {{ size_bytes }} -q {{ qps }} -p {{ port }} {{ server_ip }}"

[setup]
packages = ["perftest"]
"#;

#[test]
fn validate_refuses_control_characters_in_every_value_at_its_span() {
    let mut plans: Vec<(String, String)> = vec![("every-value".into(), EVERY_VALUE.into())];
    for dir in ["plans", "examples"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for e in fs::read_dir(&root).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                plans.push((s(&p), fs::read_to_string(&p).unwrap()));
            }
        }
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut tried = 0;
    for (name, text) in &plans {
        fabricplan::kinds::load_str(Path::new(name), text, &base)
            .unwrap_or_else(|e| panic!("{name} loads as shipped: {e}"));
        for span in string_spans(text) {
            if !text[span.clone()].starts_with('"') {
                continue; // a literal string cannot spell an escape
            }
            for bad in ["\\u0000", "\\u001b[2J", "\\u0007", "\\r", "\\u009b"] {
                let at = span.start + 1;
                let hostile = format!("{}{bad}{}", &text[..at], &text[at..]);
                let Err(fabricplan::plan::LoadError::Invalid(d)) =
                    fabricplan::kinds::load_str(Path::new(name), &hostile, &base)
                else {
                    panic!("{name}: `{bad}` accepted in `{}`", &text[span.clone()]);
                };
                let hit = d.problems.iter().map(|p| &p.problem).any(|p| {
                    p.code == "plan::control-character"
                        && p.primary
                            .as_ref()
                            .is_some_and(|(r, _)| r.start <= at && at < r.end)
                        && p.help.is_some()
                });
                assert!(
                    hit,
                    "{name}: `{bad}` in `{}` not refused at its span: {:?}",
                    &text[span.clone()],
                    d.problems
                        .iter()
                        .map(|p| (p.problem.code, &p.problem.message))
                        .collect::<Vec<_>>()
                );
                tried += 1;
            }
        }
    }
    assert!(tried > 300, "{tried}");
}

#[test]
fn a_nul_in_an_env_value_never_reaches_a_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("nul.toml");
    fs::write(&p, EVERY_VALUE.replace("mlx5_0:1", "mlx5_0\\u0000:1")).unwrap();
    for args in [vec!["validate", &s(&p)], vec!["plan", &s(&p)]] {
        let o = fabricplan(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("plan::control-character"),
            "{}",
            stderr(&o)
        );
        assert!(
            stderr(&o)
                .contains("`node[0].env.UCX_NET_DEVICES` holds the control character U+0000 (NUL)"),
            "{}",
            stderr(&o)
        );
        assert!(!stdout(&o).contains("export"), "{}", stdout(&o));
    }
}
