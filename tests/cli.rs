//! The binary end to end: exit codes, what goes to stdout and stderr.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fabricplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fabricplan")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn load_plan(path: &Path) -> fabricplan::plan::Plan {
    fabricplan::kinds::load(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .plan
}

fn toml_files(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

#[test]
fn validate_shipped_plans_and_examples_exits_0() {
    let mut files = toml_files("plans");
    files.extend(toml_files("examples"));
    let args: Vec<&str> = std::iter::once("validate")
        .chain(files.iter().map(String::as_str))
        .collect();
    let o = fabricplan(&args);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let out = stdout(&o);
    for f in &files {
        assert!(
            out.contains(&format!("{f}: ok (")),
            "{f} not reported ok:\n{out}"
        );
    }
    assert!(
        stderr(&o).is_empty(),
        "clean plans print nothing on stderr:\n{}",
        stderr(&o)
    );
}

#[test]
fn validate_invalid_fixture_exits_2_with_the_diagnostic() {
    let o = fabricplan(&["validate", "tests/fixtures/invalid/half-cabled-twice.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("plan::cabled-twice"), "{err}");
    assert!(err.contains("`spark-a.f0.a` is cabled twice"), "{err}");
    assert!(
        err.contains("tests/fixtures/invalid/half-cabled-twice.toml:24:9"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "NO_COLOR: no escape sequences:\n{err}"
    );
    insta::assert_snapshot!(err);
}

#[test]
fn validate_keeps_going_after_an_invalid_plan() {
    let o = fabricplan(&[
        "validate",
        "tests/fixtures/invalid/duplicate-node.toml",
        "plans/two-spark.toml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("plans/two-spark.toml: ok ("),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("node `spark-a` is declared twice"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn validate_warning_plan_exits_0_and_prints_the_warning() {
    let o = fabricplan(&["validate", "tests/fixtures/warnings/ring-f0-to-f0.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // one warning per ring, naming both cables that join a port to the same port
    assert!(stdout(&o).contains("1 warning(s)"), "{}", stdout(&o));
    assert!(stderr(&o).contains("plan::ring-crossing"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("GB10 rings cross f0 to f1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn validate_missing_file_exits_2() {
    let o = fabricplan(&["validate", "plans/no-such-plan.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("cannot read plan `plans/no-such-plan.toml`"),
        "{err}"
    );
}

#[test]
fn validate_non_toml_files_exit_2_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // a PNG: not even text
    let png = dir.path().join("diagram.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x01\0\xff\xfe").unwrap();
    let o = fabricplan(&["validate", png.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("cannot read plan"), "{err}");
    assert!(err.contains("UTF-8"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // prose: text, but not TOML
    let txt = dir.path().join("notes.toml");
    std::fs::write(
        &txt,
        "spark-a and spark-b are cabled f0 to f0, see the wiki\n",
    )
    .unwrap();
    let o = fabricplan(&["validate", txt.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("plan::toml"), "{err}");
    assert!(err.contains("is invalid: 1 error(s)"), "{err}");
    assert!(err.contains("TOML 1.0"), "help line missing:\n{err}");

    // empty file: valid TOML, missing every required key
    let empty = dir.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let o = fabricplan(&["validate", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing field `format-version`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn schema_prints_json() {
    let o = fabricplan(&["schema"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("schema is JSON");
    assert!(v["properties"]["format-version"].is_object(), "{v}");
    assert!(v["properties"]["cable"].is_object(), "{v}");
    let committed = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/plan.schema.json"),
    )
    .unwrap();
    assert_eq!(
        stdout(&o),
        committed,
        "run `cargo run -- schema > schemas/plan.schema.json`"
    );
}

#[test]
fn plan_ring3_shows_six_links_crossing_f0_to_f1() {
    let o = fabricplan(&["plan", "plans/ring3.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("3 nodes, 0 switches, 6 links"), "{out}");
    for (a, b) in [
        ("spark-1", "spark-2"),
        ("spark-2", "spark-3"),
        ("spark-3", "spark-1"),
    ] {
        for h in ["a", "b"] {
            let needle = format!("{a}.f0.{h}");
            let line = out
                .lines()
                .find(|l| l.contains(&needle) && l.contains("<->"))
                .unwrap_or_else(|| panic!("no link line for {needle}:\n{out}"));
            assert!(
                line.contains(&format!("{b}.f1.{h}")),
                "{needle} should face {b}.f1.{h}: {line}"
            );
        }
    }
    let links = out.lines().filter(|l| l.contains("<->")).count();
    assert_eq!(links, 6, "{out}");
}

#[test]
fn plan_switched6_shows_r2b_sharing_one_isl_direction() {
    let o = fabricplan(&["plan", "plans/switched-6.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let r2b = out
        .split("\nround ")
        .find(|s| s.contains("  R2b"))
        .expect("round R2b");
    assert!(r2b.contains("2 flow(s) share one direction"), "{r2b}");
    let r3 = out
        .split("\nround ")
        .find(|s| s.contains("  R3"))
        .expect("round R3");
    assert!(r3.contains("ISL sw-a -> sw-b: 1 flow(s)"), "{r3}");
    assert!(r3.contains("ISL sw-b -> sw-a: 1 flow(s)"), "{r3}");
}

#[test]
fn plan_json_parses() {
    let o = fabricplan(&["plan", "plans/switched-6.toml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).expect("plan --format json is JSON");
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["plan"], "switched-6");
    let rounds = v["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len() as u64, v["round_count"].as_u64().unwrap());
    assert!(rounds.len() >= 5);
    let r2b = rounds.iter().find(|r| r["name"] == "R2b").expect("R2b");
    assert_eq!(r2b["jobs"].as_array().unwrap().len(), 2);
    for j in r2b["jobs"].as_array().unwrap() {
        assert_eq!(j["isl"][0], "sw-b -> sw-a", "{j}");
        assert!(
            j["commands"]["steps"]
                .as_array()
                .is_some_and(|s| s.len() == 2),
            "{j}"
        );
    }
}

#[test]
fn graph_mentions_every_node_and_switch() {
    for (plan, names) in [
        (
            "plans/switched-6.toml",
            &[
                "gb10-01", "gb10-02", "gb10-03", "gb10-04", "gb10-05", "gb10-06", "sw-a", "sw-b",
            ][..],
        ),
        ("plans/ring3.toml", &["spark-1", "spark-2", "spark-3"][..]),
    ] {
        let dot = fabricplan(&["graph", plan, "--format", "dot"]);
        assert_eq!(dot.status.code(), Some(0), "{}", stderr(&dot));
        let dot = stdout(&dot);
        assert!(dot.starts_with("graph "), "{dot}");
        let mermaid = fabricplan(&["graph", plan, "--format", "mermaid"]);
        assert_eq!(mermaid.status.code(), Some(0), "{}", stderr(&mermaid));
        let mermaid = stdout(&mermaid);
        assert!(mermaid.starts_with("graph LR"), "{mermaid}");
        for n in names {
            assert!(dot.contains(&format!("\"{n}\"")), "dot lacks {n}:\n{dot}");
            assert!(
                mermaid.contains(&format!("\"{n}\"")),
                "mermaid lacks {n}:\n{mermaid}"
            );
        }
    }
}

#[test]
fn parse_unknown_tool_exits_2() {
    let o = fabricplan(&["parse", "ib_write_bandwidth", "/dev/null"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("invalid value 'ib_write_bandwidth'"), "{err}");
    assert!(
        err.contains("a similar value exists: 'ib_write_bw'"),
        "{err}"
    );
}

/// `-` reads stdin, like an absent file: a NCCL log cut before its results table is
/// `incomplete` and still says what its INFO lines prove.
#[test]
fn parse_reads_stdin_for_a_dash() {
    let log =
        std::fs::read_to_string("tests/fixtures/parse/nccl-tests/allreduce-2node-ib-2025.txt")
            .unwrap();
    let cut: String = log
        .lines()
        .take_while(|l| !l.contains("size         count"))
        .map(|l| format!("{l}\n"))
        .collect();
    for args in [
        &["parse", "nccl-tests", "-"][..],
        &["parse", "nccl-tests"][..],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fabricplan"))
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(cut.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let out = stdout(&o);
        assert!(out.contains("incomplete"), "{args:?}: {out}");
        assert!(out.contains("2 ranks") && out.contains("NET/IB"), "{out}");
    }
}

#[test]
fn plan_and_graph_refuse_an_invalid_plan() {
    for args in [
        &["plan", "tests/fixtures/invalid/unknown-node-in-cable.toml"][..],
        &["graph", "tests/fixtures/invalid/unknown-node-in-cable.toml"][..],
    ] {
        let o = fabricplan(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stdout(&o).is_empty(),
            "{args:?}: printed a plan:\n{}",
            stdout(&o)
        );
        assert!(stderr(&o).contains("plan::unknown-node"), "{}", stderr(&o));
    }
}

/// Regression: plan text with raw ANSI/OSC escapes (a site trap's name and fix) reached the
/// terminal as is, where it can repaint the screen or hide the verdict. A control character is
/// now refused by validate (its diagnostic shown inert); a bidirectional override, which is no
/// control character, still reaches the run's text and is shown escaped there.
#[test]
fn plan_escapes_reach_the_terminal_inert() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("esc.toml");
    let text = |trap: &str, fix: &str| {
        format!(
            r#"format-version = 1
name = "esc"
[[node]]
name = "spark-a"
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
halves = ["a"]
subnets = {{ a = "198.51.100.0/30" }}
[tests.rdma-bw]
duration-s = 1
[gates.rdma-bw]
trap = "{trap}"
fix = "{fix}"
"#
        )
    };
    std::fs::write(
        &plan,
        text(
            "site trap\\u001b]0;pwned\\u0007",
            "call the lab\\u001b[8m hidden",
        ),
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = |out: &std::path::Path| {
        fabricplan(&[
            "run",
            plan.to_str().unwrap(),
            "--sim",
            "--sim-fault",
            "throttle:spark-a.f0.a",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let o = run(&out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("plan::control-character"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains('\u{1b}') && !stdout(&o).contains('\u{1b}'));
    assert!(!out.exists(), "refused before the run");
    std::fs::write(
        &plan,
        text("site trap\u{202e}", "call the lab\u{202e} hidden"),
    )
    .unwrap();
    let o = run(&out);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.contains("call the lab\\u{202e} hidden"), "{shown}");
    assert!(!shown.contains('\u{202e}'), "{shown:?}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!md.contains('\u{202e}'), "{md:?}");
}

/// `--launcher slurm` over a plan that overrides a template only the SSH launcher writes (the
/// kinds say which: NCCL's mpirun lines) is refused with the template's name, exit 2.
#[test]
fn launcher_slurm_refuses_an_override_of_an_ssh_only_template() {
    let fixture = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/invalid/launcher-mpirun-template-under-slurm.toml"),
    )
    .unwrap();
    let over_ssh = fixture.replace("[launcher]\nkind = \"slurm\"\n", "");
    let dir = tempfile::tempdir().unwrap();
    for name in ["nccl", "mpi-hostname"] {
        let plan = dir.path().join(format!("{name}.toml"));
        let text = over_ssh.replace(
            "[templates.nccl]\ninline = \"mpirun -np 2 {{ binary }}\"",
            &format!("[templates.{name}]\ninline = \"mpirun -np 2 {{{{ hosts }}}}\""),
        );
        std::fs::write(&plan, text).unwrap();
        let plan = plan.to_str().unwrap();
        let o = fabricplan(&["run", "--dry-run", "--launcher", "slurm", plan]);
        assert_eq!(o.status.code(), Some(2), "stderr:\n{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!(
                "the plan overrides template `{name}`, an mpirun line"
            )),
            "{}",
            stderr(&o)
        );
        let o = fabricplan(&["run", "--dry-run", "--launcher", "ssh", plan]);
        assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    }
}

/// `fabricplan parse` reads every kind's own tool, not only the shared ones.
#[test]
fn parse_reads_each_kinds_own_tool() {
    let mut read = Vec::new();
    for k in fabricplan::kinds::ALL {
        let tool = k.tool().name();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parse");
        let Some(capture) = std::fs::read_dir(dir.join(tool))
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path())
        else {
            continue; // a tool whose fixtures are kept under another name
        };
        let o = fabricplan(&["parse", tool, capture.to_str().unwrap(), "--format", "json"]);
        assert_ne!(o.status.code(), Some(2), "{tool}: {}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["tool"], tool);
        read.push(tool);
    }
    for own in ["ibv_rc_pingpong", "iperf3"] {
        assert!(read.contains(&own), "{own} not read: {read:?}");
    }
}

/// `graph --format text` draws every shipped plan and example for a terminal: each node, each
/// cable with its links, each switch and its ports, each ISL; fits 100 columns.
#[test]
fn graph_as_text_draws_every_plan() {
    let mut plans = toml_files("plans");
    plans.extend(toml_files("examples"));
    for plan in &plans {
        let o = fabricplan(&["graph", plan, "--format", "text"]);
        assert_eq!(o.status.code(), Some(0), "{plan}: {}", stderr(&o));
        let text = stdout(&o);
        let p = load_plan(&Path::new(env!("CARGO_MANIFEST_DIR")).join(plan));
        assert!(text.starts_with(&format!("fabric `{}`", p.name)), "{text}");
        for n in &p.nodes {
            assert!(
                text.contains(&format!("[{}]", n.name)),
                "{plan}: {}\n{text}",
                n.name
            );
        }
        for s in &p.switches {
            assert!(
                text.contains(&format!("({})", s.name)),
                "{plan}: {}\n{text}",
                s.name
            );
        }
        for c in &p.cables {
            assert!(
                text.contains(&format!("cable `{}`", c.name)),
                "{plan}\n{text}"
            );
        }
        for i in &p.isls {
            assert!(text.contains(&format!("`{}`", i.name)), "{plan}\n{text}");
        }
        // every cabled node port, as a link end or a switch's branch
        for s in &p.segments {
            for m in &s.members {
                let port = format!("[{}.{}]", p.node(m.endpoint.node).name, m.endpoint.port);
                assert!(text.contains(&port), "{plan}: {port}\n{text}");
            }
        }
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 100, "{plan}: {widest} columns\n{text}");
    }
}

/// `plan --setup` shows what `run --setup` runs on each host first, exactly (as `run
/// --dry-run --setup` does), under either launcher; without a `[setup]` it is refused, as
/// `run --setup` is.
#[test]
fn plan_setup_shows_each_hosts_setup_command() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("plans/two-spark.toml").unwrap()
        + "\n[setup]\npackages = [\"perftest\", \"rdma-core\", \"openmpi-bin\"]\nbuild-nccl-tests = true\n";
    let plan = tmp.path().join("setup.toml");
    std::fs::write(&plan, text).unwrap();
    let plan = plan.to_string_lossy().into_owned();
    for extra in [&[][..], &["--launcher", "slurm"][..]] {
        for cmd in [
            &["plan", &plan, "--setup"][..],
            &["run", &plan, "--dry-run", "--setup"][..],
        ] {
            let mut args = cmd.to_vec();
            args.extend_from_slice(extra);
            let o = fabricplan(&args);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
            let out = stdout(&o);
            assert!(out.starts_with("setup (`run --setup`"), "{out}");
            for node in ["spark-a", "spark-b"] {
                let p = load_plan(Path::new(&plan));
                let script =
                    fabricplan::exec::setup::script(&p, p.node_by_name(node).unwrap().id).unwrap();
                assert!(
                    out.contains(&format!("  on {node}:\n    {script}\n")),
                    "{node}:\n{out}"
                );
            }
            assert!(out.contains("apt-get install -y -qq perftest rdma-core openmpi-bin"));
        }
    }
    let o = fabricplan(&["plan", &plan, "--setup", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["setup"].as_array().unwrap().len(), 2, "{v}");
    let o = fabricplan(&["plan", "plans/two-spark.toml", "--setup"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("declares no [setup] stage"),
        "{}",
        stderr(&o)
    );
}

/// An `--only` or `--skip` value that selects no job is refused, with what the plan's jobs
/// answer to (and the nearest name), not run as everything or nothing.
#[test]
fn a_selector_that_selects_nothing_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r").to_string_lossy().into_owned();
    for (flag, value, near) in [
        ("--only", "spark-c", Some("spark-a")),
        ("--skip", "bogus", None),
    ] {
        let o = fabricplan(&[
            "run",
            "plans/two-spark.toml",
            "--sim",
            "--out",
            &out,
            flag,
            value,
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "`{flag} {value}` selects no job of plan `two-spark`"
            )),
            "{err}"
        );
        for listed in [
            "a test kind (rdma-bw",
            "a node (spark-a, spark-b)",
            "an NCCL test (all_reduce)",
        ] {
            assert!(err.contains(listed), "{err}");
        }
        if let Some(n) = near {
            assert!(err.contains(&format!("(did you mean `{n}`?)")), "{err}");
        }
        assert!(!Path::new(&out).exists(), "nothing was run");
    }
    // a value that selects something runs
    let o = fabricplan(&[
        "run",
        "plans/two-spark.toml",
        "--sim",
        "--out",
        &out,
        "--only",
        "nccl",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
