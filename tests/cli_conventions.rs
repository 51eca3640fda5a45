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
    assert!(run("always", Some("always"), true).contains("\u{1b}[32mOK\u{1b}[0m"));
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
