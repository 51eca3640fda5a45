//! Invalid plans: one mistake per file in `tests/fixtures/invalid/`, each reported as an error
//! on its span with a help line; the rendered diagnostic is snapshotted. Warning-only plans live
//! in `tests/fixtures/warnings/`: they load, and their warnings are snapshotted too.

use std::path::{Path, PathBuf};

use fabricplan::plan::{LoadError, PlanDiagnostics};

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
        let d = match fabricplan::kinds::load(&rel) {
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
        let loaded = match fabricplan::kinds::load(&rel) {
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

/// Fixtures that hold two mistakes on purpose (two bad values, two misplaced keys, two unsafe
/// names): each reports one error per mistake.
const TWO_MISTAKES: [&str; 3] = [
    "regression-not-a-percentage.toml",
    "sampled-keys-on-another-schedule.toml",
    "unsafe-firmware-and-switch-port.toml",
];

/// The mistakes a new user makes, each in a plan of its own: each gives exactly one problem,
/// the mistake itself, and nothing that only follows from it (no `no-path` after a cable that
/// was not built, no `missing subnets` after `subnet`, no error per end and half of a cable
/// given twice); and the ring written as direct cables one warning.
#[test]
fn the_mistakes_a_person_makes_give_one_problem_each() {
    for (file, code) in [
        ("invalid/key-typo-subnet.toml", "plan::unknown-key"),
        ("invalid/cable-unknown-node.toml", "plan::unknown-node"),
        ("invalid/cable-unknown-port.toml", "plan::unknown-port"),
        ("invalid/cable-declared-twice.toml", "plan::cabled-twice"),
        ("invalid/cable-kind-misspelled.toml", "plan::cable-kind"),
        ("invalid/attach-unknown-switch.toml", "plan::unknown-switch"),
        ("invalid/profile-misspelled.toml", "plan::unknown-profile"),
        ("invalid/nccl-unknown-node.toml", "plan::unknown-node"),
        (
            "invalid/cable-field-of-other-kind.toml",
            "plan::cable-field",
        ),
        ("warnings/ring-as-direct.toml", "plan::ring-as-direct"),
        ("warnings/ring-f0-to-f0.toml", "plan::ring-crossing"),
    ] {
        let path = Path::new("tests/fixtures").join(file);
        let d = match fabricplan::kinds::load(&path) {
            Err(LoadError::Invalid(d)) => d,
            Ok(l) => l.warnings,
            Err(e) => panic!("{file}: {e}"),
        };
        let codes: Vec<&str> = d.problems.iter().map(|p| p.problem.code).collect();
        assert_eq!(codes, [code], "{file}:\n{}", d.render(false, 100));
    }
    // the cable given twice names both declarations, each of its ports once
    let d = match fabricplan::kinds::load(Path::new(
        "tests/fixtures/invalid/cable-declared-twice.toml",
    )) {
        Err(LoadError::Invalid(d)) => d,
        _ => panic!("loaded"),
    };
    let p = &d.problems[0].problem;
    assert_eq!(
        p.message,
        "`spark-a.f0` and `spark-b.f0` are cabled twice: by cables `stack` and `again`"
    );
    assert_eq!(
        p.secondary.len() + 1,
        4,
        "each end of each cable labelled once"
    );
}

/// The invalid fixtures are each about one mistake: each reports one error (the few that hold
/// two mistakes on purpose, one per mistake); a cascade of follow-on errors would bury the real
/// one.
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
        if let Err(LoadError::Invalid(d)) = fabricplan::kinds::load(&path) {
            let name = path.file_name().unwrap().to_string_lossy();
            let want = if TWO_MISTAKES.contains(&&*name) { 2 } else { 1 };
            assert_eq!(
                d.errors(),
                want,
                "{}: {want} mistake(s) gave {} errors:\n{}",
                path.display(),
                d.errors(),
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
    let d = match fabricplan::kinds::load_str(path, MANY_MISTAKES, Path::new(".")) {
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
    match fabricplan::kinds::load_str(Path::new(name), text, Path::new(".")) {
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

const TWO_NODES: &str = "format-version = 1\nname = \"big\"\n\n[[node]]\nname = \"spark-a\"\n[[node]]\nname = \"spark-b\"\n";

const ONE_CABLE: &str = "\n[[cable]]\nkind = \"direct\"\nends = [\"spark-a.f0\", \"spark-b.f0\"]\nsubnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n";

/// Load generated text, expecting problems; (problems, rendered bytes, seconds).
fn load_big(text: &str) -> (PlanDiagnostics, usize, f64) {
    let t = std::time::Instant::now();
    let d = match fabricplan::kinds::load_str(Path::new("big.toml"), text, Path::new(".")) {
        Err(LoadError::Invalid(d)) => d,
        Err(e) => panic!("{e}"),
        Ok(l) => l.warnings,
    };
    let rendered = d.render(false, 100).len();
    (d, rendered, t.elapsed().as_secs_f64())
}

/// Issue "hardening": a table repeated 2000 times is a handful of problems, each naming its
/// places once, and what is rendered stays small. (It was O(n^2): a 28 KB plan of repeated
/// cables gave 41,591 errors, 167 MB of output, 11.6 s and 1.37 GB.)
#[test]
fn repeated_tables_are_one_problem_each_and_the_output_stays_bounded() {
    let n = 2000;
    let nodes = format!(
        "format-version = 1\nname = \"big\"\n{}",
        "\n[[node]]\nname = \"spark-a\"\n".repeat(n)
    );
    let cables = format!("{TWO_NODES}{}", ONE_CABLE.repeat(n));
    let flows = format!(
        "{TWO_NODES}{ONE_CABLE}\n[tests.rdma-bw]\n{}",
        "[[tests.rdma-bw.round]]\nname = \"r\"\nflows = [\"spark-a -> spark-b\", \"spark-a -> spark-b\"]\n"
            .repeat(n)
    );
    for (what, text, most) in [
        ("nodes", nodes, 1),
        ("cables", cables, 12),
        ("rounds", flows, 3 * n),
    ] {
        let (d, rendered, secs) = load_big(&text);
        assert!(
            d.problems.len() <= most,
            "{what}: {} problems:\n{}",
            d.problems.len(),
            &d.render(false, 100)[..4000.min(rendered)]
        );
        assert!(rendered < 120_000, "{what}: {rendered} bytes rendered");
        assert!(secs < 20.0, "{what}: {secs:.1} s");
        for p in &d.problems {
            assert!(
                p.problem.secondary.len() < 5,
                "{what}: {} labels on `{}`",
                p.problem.secondary.len() + 1,
                p.problem.message
            );
        }
    }
}

/// Many distinct problems (an unknown node in each of 5000 cables): every one is counted, the
/// first 50 are shown, the rest summed up by code.
#[test]
fn past_fifty_problems_the_rest_are_counted_by_code() {
    let text = format!(
        "{TWO_NODES}{}",
        "\n[[cable]]\nkind = \"direct\"\nends = [\"spark-a.f1\", \"ghost.f0\"]\nsubnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n"
            .repeat(5000)
    );
    let (d, rendered, _) = load_big(&text);
    assert_eq!(d.errors(), 5000);
    let out = d.render(false, 100);
    assert_eq!(out.matches("plan::unknown-node\n").count(), 50, "{out}");
    assert!(
        out.contains(
            "... and 4950 more error(s) not shown, of these kinds: plan::unknown-node (4950)"
        ),
        "{}",
        &out[out.len().saturating_sub(500)..]
    );
    assert!(rendered < 120_000, "{rendered} bytes");
}

/// Issue "hardening": checks that looked at every pair (NCCL ranks, flows against every
/// segment, a depth-first search per cable) stay near-linear on big plans.
#[test]
fn big_plans_validate_in_near_linear_time() {
    // a chain of 6000 direct cables wired port to port: the ring check is a bridge search
    let n = 6000;
    let mut chain = String::from("format-version = 1\nname = \"chain\"\n");
    for i in 0..n {
        chain += &format!("\n[[node]]\nname = \"n{i}\"\n");
    }
    for i in 0..n - 1 {
        let port = if i % 2 == 0 { "f0" } else { "f1" };
        let third = i % 250;
        chain += &format!(
            "\n[[cable]]\nkind = \"direct\"\nends = [\"n{i}.{port}\", \"n{}.{port}\"]\nhalves = [\"a\"]\nsubnets = {{ a = \"10.{}.{}.0/30\" }}\n",
            i + 1,
            i / 250,
            third
        );
    }
    // a switchless ring of 3000 with one NCCL test across every node: the ring is too large
    // (one problem); with no ring cabled no pair has a path, but that follows from it (checked,
    // and left out: one error per mistake)
    let mut ring = String::from("format-version = 1\nname = \"ring\"\n");
    let names: Vec<String> = (0..3000).map(|i| format!("\"r{i}\"")).collect();
    for i in 0..3000 {
        ring += &format!("\n[[node]]\nname = \"r{i}\"\n");
    }
    ring += &format!(
        "\n[[cable]]\nkind = \"ring\"\nnodes = [{}]\nsubnet-pool = \"10.0.0.0/8\"\npool-prefix = 30\n\n[[tests.nccl]]\ncollective = \"all_reduce\"\n",
        names.join(", ")
    );
    // 4000 declared flows on a 8000-node switched fabric
    let mut flows =
        String::from("format-version = 1\nname = \"flows\"\n\n[[switch]]\nname = \"sw\"\n");
    for i in 0..8000 {
        flows += &format!("\n[[node]]\nname = \"s{i}\"\n");
    }
    let attach: Vec<String> = (0..8000).map(|i| format!("\"s{i}.f0\" = \"sw\"")).collect();
    flows += &format!(
        "\n[[cable]]\nkind = \"switched\"\nhalves = [\"a\"]\nsubnets = {{ a = \"10.0.0.0/16\" }}\nattach = {{ {} }}\n\n[tests.rdma-bw]\n[[tests.rdma-bw.round]]\nname = \"all\"\nflows = [{}]\n",
        attach.join(", "),
        (0..4000)
            .map(|i| format!("\"s{} -> s{}\"", 2 * i, 2 * i + 1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (what, text, problems) in [("chain", chain, 0), ("ring", ring, 1), ("flows", flows, 0)] {
        let t = std::time::Instant::now();
        let (d, rendered, _) = load_big(&text);
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(
            d.errors(),
            problems,
            "{what}:\n{}",
            &d.render(false, 100)[..rendered.min(3000)]
        );
        assert!(secs < 15.0, "{what}: {secs:.1} s");
    }
}

/// Issue "per-link": the default schedule on a switched fabric of 5000 nodes is 12.5 million
/// rounds; validation says so (count, time, the bounded schedule) instead of a silent "ok".
#[test]
fn per_link_on_a_big_switched_fabric_warns_with_the_bounded_schedule() {
    let n = 5000;
    let mut text =
        String::from("format-version = 1\nname = \"big\"\n\n[[switch]]\nname = \"leaf\"\n");
    for i in 0..n {
        text += &format!("\n[[node]]\nname = \"n{i}\"\n");
    }
    text += "\n[[cable]]\nkind = \"switched\"\nhalves = [\"a\"]\nsubnets = { a = \"10.0.0.0/16\" }\n[cable.attach]\n";
    for i in 0..n {
        text += &format!("\"n{i}.f0\" = \"leaf\"\n");
    }
    // far past what a run may take: refused (`plan::too-large`), the warning still saying why
    let per_link = format!("{text}\n[tests.rdma-bw]\n");
    let d = invalid("big.toml", &per_link);
    let said: Vec<(&str, &str)> = d
        .problems
        .iter()
        .map(|p| (p.problem.code, p.problem.message.as_str()))
        .collect();
    assert_eq!(
        said[0],
        (
            "plan::schedule-size",
            "`rdma-bw` runs per link: 12,497,500 rounds, about 2.8 years at 7 s each"
        )
    );
    assert_eq!(said[1].0, "plan::too-large");
    // all-pairs on 5000 nodes is past the bound too: only sampled is offered
    let help = d.problems[0].problem.help.as_deref().unwrap();
    assert!(!help.contains("all-pairs"), "{help}");
    assert!(
        help.contains("`schedule = \"sampled\"` (8 random pairings of all 5000"),
        "{help}"
    );
    let all_pairs = format!("{text}\n[tests.rdma-bw]\nschedule = \"all-pairs\"\n");
    let codes: Vec<&str> = invalid("big.toml", &all_pairs)
        .problems
        .iter()
        .map(|p| p.problem.code)
        .collect();
    assert_eq!(codes, ["plan::too-large"]);
    // the bounded schedule: no warning
    let sampled = format!("{text}\n[tests.rdma-bw]\nschedule = \"sampled\"\n");
    let l = fabricplan::kinds::load_str(Path::new("big.toml"), &sampled, Path::new(".")).unwrap();
    assert_eq!(l.warnings.problems.len(), 0);
    // a fabric all-pairs fits: it is offered
    let mut small =
        String::from("format-version = 1\nname = \"s\"\n\n[[switch]]\nname = \"leaf\"\n");
    for i in 0..40 {
        small += &format!("\n[[node]]\nname = \"n{i}\"\n");
    }
    small += "\n[[cable]]\nkind = \"switched\"\nhalves = [\"a\"]\nsubnets = { a = \"10.0.0.0/24\" }\n[cable.attach]\n";
    for i in 0..40 {
        small += &format!("\"n{i}.f0\" = \"leaf\"\n");
    }
    small += "\n[tests.rdma-bw]\n";
    let l = fabricplan::kinds::load_str(Path::new("s.toml"), &small, Path::new(".")).unwrap();
    let help = l.warnings.problems[0].problem.help.as_deref().unwrap();
    assert!(
        help.contains("`schedule = \"all-pairs\"` (every pair once, 39 rounds"),
        "{help}"
    );
}

/// Issue "hardening": miette panicked ("Formatting argument out of range") on a label past
/// column 65,535. A long line is shown as a window around the problem, with the file's line
/// and column in the header, and the rendered text stays small.
#[test]
fn a_problem_past_column_65535_renders_without_panic() {
    let long = "x".repeat(70_000);
    // an error after column 65535 on one long line (an inline table)
    let text = format!(
        "format-version = 1\nname = \"x\"\nnode = [{{ name = \"a\", env = {{ X = \"{long}\" }}, profile = \"nope\" }}]\n"
    );
    let d = invalid("long.toml", &text);
    let out = d.render(false, 100);
    assert!(out.contains("plan::unknown-profile"), "{out}");
    let col = text.lines().nth(2).unwrap().find("\"nope\"").unwrap() + 1;
    assert!(out.contains(&format!("[long.toml:3:{col}]")), "{out}");
    assert!(out.contains("\"nope\""), "{out}");
    assert!(out.len() < 4000, "{} bytes:\n{out}", out.len());
    // a 70,000-character value with the error on it, and a name that long in a message
    let text =
        format!("format-version = 1\nname = \"x\"\n[[node]]\nname = \"a\"\nprofile = \"{long}\"\n");
    let out = invalid("long2.toml", &text).render(false, 100);
    assert!(out.contains("plan::unknown-profile"), "{out}");
    assert!(out.len() < 4000, "{} bytes", out.len());
    // a shape problem past the column too
    let text = format!("format-version = 1\nname = \"x\"\ndescription = \"{long}\", qps = 1 }}\n");
    let out = invalid("long3.toml", &text).render(false, 100);
    assert!(out.contains("plan::toml"), "{out}");
}

/// Issue "hardening": raw control bytes in a plan (a TOML error, shown with its line) and
/// escaped ones in its values (shown in messages) never reach the terminal as control
/// characters: the snippet shows `?` per byte, messages show `\x1b`.
#[test]
fn control_characters_in_a_plan_never_reach_the_terminal() {
    let raw = "format-version = 1\nname = \"x\" # \u{1b}]0;owned\u{7}\u{1b}[2J \u{9b}31m \u{202e}\n[[node]]\nname = \"a\"\n";
    // a carriage return alone inside a line (found by tests/plan_fuzz.rs): miette printed it
    let lone_cr = "format-version = 1\r\nname = \"x\"\r\n[[node]]\nname = \"spark\r-a\"\n";
    let esc =
        "format-version = 1\nname = \"x\"\n[[node]]\nname = \"a\\u001b[2J\\u0007\\u009b\\u202e\"\n";
    for (what, text) in [("raw", raw), ("escaped", esc), ("lone CR", lone_cr)] {
        let d = invalid("ctl.toml", text);
        let out = d.render(false, 100);
        let bad: Vec<char> = out
            .chars()
            .filter(|c| {
                (c.is_control() && *c != '\n')
                    || matches!(*c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            })
            .collect();
        assert!(bad.is_empty(), "{what}: {bad:?} in\n{out}");
        // spans still point at the same bytes
        for p in &d.problems {
            assert_eq!(p.src.inner().len(), text.len(), "{what}");
        }
    }
    let out = invalid("ctl.toml", raw).render(false, 100);
    assert!(out.contains("# ?]0;owned??[2J ??31m ???"), "{out}");
    let out = invalid("ctl.toml", esc).render(false, 100);
    assert!(out.contains("`a\\x1b[2J\\x07\\u{9b}\\u{202e}`"), "{out}");
}
