//! Invalid plans: one mistake per file in `tests/fixtures/invalid/`, each reported as an error
//! on its span with a help line; the rendered diagnostic is snapshotted. Warning-only plans live
//! in `tests/fixtures/warnings/`: they load, and their warnings are snapshotted too.

use std::path::{Path, PathBuf};

use fabricplan::plan::{self, LoadError, PlanDiagnostics};

/// `tests/fixtures/...` relative to the package root, so rendered paths are stable.
fn relative(path: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

/// Every problem has a label (a span into the file) and a help line.
fn assert_pointed_and_helped(d: &PlanDiagnostics, file: &Path) {
    for p in &d.problems {
        let pr = &p.problem;
        assert!(
            pr.primary.is_some(),
            "{}: `{}` ({}) has no label",
            file.display(),
            pr.message,
            pr.code
        );
        assert!(
            pr.help.is_some(),
            "{}: `{}` ({}) has no help line",
            file.display(),
            pr.message,
            pr.code
        );
        let (span, _) = pr.primary.as_ref().unwrap();
        let len = p.src.inner().len();
        assert!(
            span.end <= len && span.start <= span.end,
            "{}: span {span:?} outside the file ({len} bytes)",
            file.display()
        );
    }
}

#[test]
fn every_invalid_plan_is_reported_on_its_span() {
    insta::glob!("fixtures/invalid/*.toml", |path| {
        let rel = relative(path);
        let d = match plan::load(&rel) {
            Err(LoadError::Invalid(d)) => d,
            Err(e) => panic!("{}: expected an invalid plan, got {e}", rel.display()),
            Ok(_) => panic!("{}: loaded without error", rel.display()),
        };
        assert!(d.errors() >= 1, "{}: no error", rel.display());
        assert_eq!(d.path, rel.display().to_string());
        assert_pointed_and_helped(&d, &rel);
        insta::assert_snapshot!(d.render(false, 100));
    });
}

#[test]
fn warning_plans_load_and_show_their_warning() {
    insta::glob!("fixtures/warnings/*.toml", |path| {
        let rel = relative(path);
        let loaded = match plan::load(&rel) {
            Ok(l) => l,
            Err(LoadError::Invalid(d)) => panic!("{}: {}", rel.display(), d.render(false, 100)),
            Err(e) => panic!("{}: {e}", rel.display()),
        };
        let w = &loaded.warnings;
        assert_eq!(w.errors(), 0);
        assert!(w.warnings() >= 1, "{}: no warning", rel.display());
        assert_pointed_and_helped(w, &rel);
        insta::assert_snapshot!(w.render(false, 100));
    });
}

/// The invalid fixtures are each about one mistake: none reports more than a couple of problems
/// (a cascade of follow-on errors would bury the real one).
#[test]
fn one_mistake_one_report() {
    let dir = Path::new("tests/fixtures/invalid");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        n += 1;
        if let Err(LoadError::Invalid(d)) = plan::load(&path) {
            assert!(
                d.problems.len() <= 2,
                "{}: one mistake gave {} problems:\n{}",
                path.display(),
                d.problems.len(),
                d.render(false, 100)
            );
        }
    }
    assert!(n >= 24, "only {n} invalid fixtures");
}

const MANY_MISTAKES: &str = r#"
format-version = 1
name = "lab"

[[node]]
name = "spark-a"
profile = "gb-10"

[[node]]
name = "spark-b"

[[node]]
name = "spark-b"

[[cable]]
kind = "direct"
ends = ["spark-a.fo", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }

[[cable]]
kind = "direct"
name = "second"
ends = ["spark-a.f1", "spark-c.f1"]
subnets = { a = "198.51.100.4/30", b = "203.0.113.4/30" }

[gates.rdma-bw]
pass = "90 Gbs"

[gates.rdma-lat]
pass = "3 us"
warn = "2 us"

[[tests.nccl]]
collective = "allreduce"

[sim]
faults = ["throttled:spark-a.f0.a"]
"#;

/// A plan with several distinct mistakes gets all of them in one pass, not the first one only.
#[test]
fn every_mistake_is_reported_at_once() {
    let path = Path::new("many-mistakes.toml");
    let d = match plan::load_str(path, MANY_MISTAKES, Path::new(".")) {
        Err(LoadError::Invalid(d)) => d,
        other => panic!("expected invalid, got {:?}", other.map(|_| ())),
    };
    let codes: Vec<&str> = d.problems.iter().map(|p| p.problem.code).collect();
    for want in [
        "plan::unknown-profile",
        "plan::duplicate-name",
        "plan::unknown-port",
        "plan::unknown-node",
        "plan::threshold",
        "plan::warn-wrong-side",
        "plan::collective",
        "plan::sim-fault",
    ] {
        assert!(codes.contains(&want), "missing {want} in {codes:?}");
    }
    assert!(d.errors() >= 8, "{codes:?}");
    assert_pointed_and_helped(&d, path);
    insta::assert_snapshot!(d.render(false, 100));
}

/// Words of Rust, not of the plan: none may reach a person reading a diagnostic.
const INTERNAL_WORDS: [&str; 9] = [
    "u8",
    "u16",
    "u32",
    "u64",
    "f64",
    "struct",
    "Raw",
    "invalid type",
    "expected one of",
];

fn invalid(name: &str, text: &str) -> PlanDiagnostics {
    match plan::load_str(Path::new(name), text, Path::new(".")) {
        Err(LoadError::Invalid(d)) => d,
        other => panic!("{name}: expected invalid, got {:?}", other.map(|_| ())),
    }
}

const SHAPE_MISTAKES: &str = r#"format-version = 1
name = "lab"
descripton = "typo"

[[node]]
name = "spark-a"
ssh = { hots = "192.0.2.10", port = "22" }
pin."f0.a" = { gid-index = "3" }

[[node]]
name = "spark-b"
profile = 7

[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = 3 }

[[tests.rdma-bw]]
qps = 4

[tests.rdma-lat]
iterations = -5
enabled = "yes"

[capacity]
efficiency = nan
"#;

/// Issue "truth": a plan whose TOML does not fit the schema gets every unknown key and every
/// wrong type at once, each on its span with a help line, in the plan's words.
#[test]
fn every_shape_problem_is_reported_at_once_in_plain_words() {
    let d = invalid("shape.toml", SHAPE_MISTAKES);
    let codes: Vec<&str> = d.problems.iter().map(|p| p.problem.code).collect();
    assert_eq!(
        codes,
        [
            "plan::unknown-key",
            "plan::unknown-key",
            "plan::type",
            "plan::type",
            "plan::type",
            "plan::type",
            "plan::type",
            "plan::range",
            "plan::type",
            "plan::range",
        ],
        "{}",
        d.render(false, 100)
    );
    assert_pointed_and_helped(&d, Path::new("shape.toml"));
    let out = d.render(false, 100);
    for w in INTERNAL_WORDS {
        assert!(!out.contains(w), "`{w}` in:\n{out}");
    }
    assert!(out.contains("did you mean `host`?"), "{out}");
    assert!(out.contains("did you mean `description`?"), "{out}");
    insta::assert_snapshot!(out);
}

/// Unknown keys alone leave the plan readable: its semantic problems come in the same pass.
#[test]
fn unknown_keys_do_not_hide_the_other_problems() {
    let text = "format-version = 1\nname = \"lab\"\n[[node]]\nname = \"spark-a\"\nprofil = \"gb10\"\n[[node]]\nname = \"spark-a\"\n";
    let d = invalid("both.toml", text);
    let codes: Vec<&str> = d.problems.iter().map(|p| p.problem.code).collect();
    assert_eq!(
        codes,
        ["plan::unknown-key", "plan::duplicate-name"],
        "{}",
        d.render(false, 100)
    );
}
