//! What users expect of a CLI: shell completions, man pages, `--color auto|always|never`.

mod support;

use std::process::Command;

use support::*;

#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef fabricplan"),
        ("fish", "complete -c fabricplan"),
    ] {
        let o = fabricplan(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let s = stdout(&o);
        assert!(s.contains(marker), "{shell}:\n{s}");
        for cmd in ["compare", "history", "report", "run"] {
            assert!(s.contains(cmd), "{shell} completes `{cmd}`");
        }
    }
    assert_eq!(fabricplan(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn man_pages() {
    let o = fabricplan(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(s.starts_with(".ie") || s.contains(".TH fabricplan"), "{s}");
    assert!(s.contains("compare") && s.contains("history"));
    let o = fabricplan(&["man", "compare"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(s.contains(".TH fabricplan-compare"), "{s}");
    assert!(s.contains("max\\-drop"), "{s}");
    let o = fabricplan(&["man", "nonsense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no command `nonsense`"));
}

/// `--color always` colours a pipe even with NO_COLOR set (the flag is the user's explicit word);
/// `never` and `auto` off a terminal do not.
#[test]
fn color_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, color: Option<&str>, no_color: bool| {
        let out = tmp.path().join(name);
        let mut c = Command::new(env!("CARGO_BIN_EXE_fabricplan"));
        c.args(["run", "plans/two-spark.toml", "--sim", "--out"])
            .arg(&out)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("NO_COLOR");
        if let Some(w) = color {
            c.args(["--color", w]);
        }
        if no_color {
            c.env("NO_COLOR", "1");
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(run("always", Some("always"), true).contains("\u{1b}[32m4/4 OK\u{1b}[0m"));
    assert!(!run("never", Some("never"), false).contains('\u{1b}'));
    assert!(
        !run("auto", None, false).contains('\u{1b}'),
        "auto: not a terminal"
    );
    // global: accepted before the command too
    let o = fabricplan(&["--color", "never", "validate", "plans/two-spark.toml"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        fabricplan(&["--color", "sometimes", "schema"])
            .status
            .code(),
        Some(2)
    );
}

/// A pipe whose reader is already gone: every write to it fails with a broken pipe, as
/// `2>&1 | head -1` does once `head` has its line.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors it opens; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    unsafe {
        drop(std::os::fd::OwnedFd::from_raw_fd(fds[0]));
        std::process::Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}

/// A reader that goes away never changes a run's verdict: `run -v` with its stdout or its
/// stderr (the phase lines) closed keeps its exit code, 0 green and 1 with a FAIL, and writes
/// its run directory whole.
#[test]
fn a_closed_stdout_or_stderr_keeps_the_runs_exit_code() {
    let plan = plan_path("two-spark");
    for (fault, code) in [(None, 0), (Some("throttle:spark-a.f0.a"), 1)] {
        for closed in ["stdout", "stderr"] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = Command::new(env!("CARGO_BIN_EXE_fabricplan"));
            c.arg("run")
                .arg(&plan)
                .args(["--sim", "-v", "--out"])
                .arg(dir.path().join("run"))
                .env("NO_COLOR", "1");
            if let Some(f) = fault {
                c.args(["--sim-fault", f]);
            }
            if closed == "stdout" {
                c.stdout(closed_pipe()).stderr(std::process::Stdio::null());
            } else {
                c.stdout(std::process::Stdio::null()).stderr(closed_pipe());
            }
            let o = c.output().expect("runs");
            assert_eq!(o.status.code(), Some(code), "{closed} closed, {fault:?}");
            let r = json(&dir.path().join("run/results.json"));
            assert_eq!(r["summary"]["exit_code"], code);
        }
    }
}

/// What a command says on stderr (an error, a plan's warnings) never panics when stderr has
/// gone away: the command keeps its own exit code.
#[test]
fn a_closed_stderr_keeps_every_commands_exit_code() {
    let warned = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/warnings/ring-f0-to-f0.toml");
    let warned = warned.to_str().unwrap();
    let cases: [(&[&str], i32); 5] = [
        (&["man", "nosuch"], 2),
        (&["validate", "/nonexistent/plan.toml"], 2),
        (&["validate", warned], 0),
        (&["parse", "ib_write_bw", "/dev/null"], 1),
        (&["detect"], 2),
    ];
    for (args, code) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_fabricplan"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(closed_pipe())
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(code), "{args:?}");
    }
}
