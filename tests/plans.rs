//! The shipped plans and the examples: they load clean, expand and render; the committed JSON
//! Schema matches the code; and the structure of each topology is what its comments say.

mod support;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use fabricplan::plan::{LoadError, Loaded, Plan};
use fabricplan::render::job::{JobCommands, Resolution, Role};
use fabricplan::schedule::{KindId, Round, isl_load};
use fabricplan::topology::Fabric;

fn plan_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["plans", "examples"] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(
        out.len() >= 8,
        "expected the shipped plans and examples, found {out:?}"
    );
    out
}

fn load(path: &Path) -> Loaded {
    match fabricplan::kinds::load(path) {
        Ok(l) => l,
        Err(LoadError::Invalid(d)) => panic!("{}", d.render(false, 100)),
        Err(e) => panic!("{e}"),
    }
}

fn load_text(name: &str, text: &str) -> Plan {
    support::load_plan_text(name, text)
}

/// Every job of every round, rendered.
fn render_all(plan: &Plan) -> Vec<(Round, Vec<JobCommands>)> {
    let fabric = Fabric::build(plan);
    let schedule = fabricplan::kinds::schedule(plan);
    let renderer = fabricplan::kinds::renderer(plan);
    let res = Resolution::from_plan(plan);
    let mut out = Vec::new();
    for round in schedule.rounds(plan, &fabric) {
        let cmds = round
            .jobs
            .iter()
            .map(|j| {
                fabricplan::kinds::commands(
                    plan,
                    &renderer,
                    &fabricplan::launchers::ssh::render::SshStyle,
                    &res,
                    j,
                )
                .unwrap_or_else(|e| panic!("{}: job {}: {e}", plan.name, j.id))
            })
            .collect();
        out.push((round, cmds));
    }
    assert_eq!(out.len(), schedule.len());
    out
}

#[test]
fn every_plan_points_at_the_schema() {
    let schema = std::fs::canonicalize("schemas/plan.schema.json").unwrap();
    for p in plan_files() {
        let text = std::fs::read_to_string(&p).unwrap();
        let first = text.lines().next().unwrap_or("");
        let rel = first.strip_prefix("#:schema ").unwrap_or_else(|| {
            panic!("{}: first line is not `#:schema ...`: {first}", p.display())
        });
        assert!(
            !Path::new(rel).is_absolute(),
            "{}: schema path must be relative",
            p.display()
        );
        let target = std::fs::canonicalize(p.parent().unwrap().join(rel))
            .unwrap_or_else(|e| panic!("{}: `{rel}`: {e}", p.display()));
        assert_eq!(target, schema, "{}", p.display());
    }
}

#[test]
fn every_plan_loads_clean_expands_and_renders() {
    for p in plan_files() {
        let l = load(&p);
        assert_eq!(
            l.warnings.problems.len(),
            0,
            "{}:\n{}",
            p.display(),
            l.warnings.render(false, 100)
        );
        let rounds = render_all(&l.plan);
        assert!(!rounds.is_empty(), "{}: no rounds", p.display());
        for (round, cmds) in &rounds {
            assert!(
                !round.jobs.is_empty(),
                "{}: round `{}` has no job",
                p.display(),
                round.name
            );
            for c in cmds {
                assert!(
                    !c.steps.is_empty(),
                    "{}: job {} has no step",
                    p.display(),
                    c.job
                );
            }
        }
    }
}

#[test]
fn committed_schema_matches_the_code() {
    let committed = std::fs::read_to_string("schemas/plan.schema.json").unwrap();
    let generated = fabricplan::kinds::json_schema();
    assert!(
        committed == generated,
        "schemas/plan.schema.json is out of date: run `cargo run -- schema > schemas/plan.schema.json`"
    );
}

#[test]
fn ring3_crosses_f0_to_f1() {
    let plan = load(Path::new("plans/ring3.toml")).plan;
    assert_eq!(plan.segments.len(), 6, "3 cables x 2 halves");
    let order = ["spark-1", "spark-2", "spark-3"];
    let mut seen = BTreeSet::new();
    for s in &plan.segments {
        assert_eq!(s.members.len(), 2, "{}", s.name);
        let (a, b) = (&s.members[0].endpoint, &s.members[1].endpoint);
        assert_eq!(a.port, "f0", "{}", s.name);
        assert_eq!(b.port, "f1", "{}", s.name);
        let i = order
            .iter()
            .position(|n| *n == plan.node(a.node).name)
            .unwrap();
        assert_eq!(
            plan.node(b.node).name,
            order[(i + 1) % 3],
            "{}: node[i].f0 faces node[i+1].f1",
            s.name
        );
        assert_eq!(a.half, b.half);
        assert!(
            seen.insert((i, a.half.clone())),
            "{}: link given twice",
            s.name
        );
        assert!(s.members.iter().all(|m| s.subnet.contains(&m.address)));
    }
    assert_eq!(seen.len(), 6);
    // every link its own subnet
    let subnets: HashSet<_> = plan.segments.iter().map(|s| s.subnet).collect();
    assert_eq!(subnets.len(), 6);
}

#[test]
fn switched6_r2b_shares_one_isl_direction_r3_uses_both() {
    let plan = load(Path::new("plans/switched-6.toml")).plan;
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    let rounds: Vec<Round> = schedule.rounds(&plan, &fabric).collect();
    let by_name = |n: &str| {
        rounds
            .iter()
            .find(|r| r.name == n)
            .unwrap_or_else(|| panic!("no round {n}"))
    };

    let r1 = isl_load(by_name("R1"));
    assert!(r1.is_empty(), "R1 is intra-switch: {r1:?}");

    let r2a = isl_load(by_name("R2a"));
    assert_eq!(r2a.len(), 1);
    assert_eq!(r2a[0].1, 1);

    let r2b = by_name("R2b");
    assert_eq!(r2b.jobs.len(), 2);
    let load = isl_load(r2b);
    assert_eq!(load.len(), 1, "both flows on one ISL direction: {load:?}");
    assert_eq!(load[0].1, 2);
    for j in &r2b.jobs {
        let hops: Vec<_> = j.pair.as_ref().unwrap().path.isl_hops().collect();
        assert_eq!(
            hops,
            vec![load[0].0],
            "job {} crosses the ISL once, the shared way",
            j.id
        );
    }

    let r3 = isl_load(by_name("R3"));
    assert_eq!(r3.len(), 2, "one flow each way: {r3:?}");
    assert!(r3.iter().all(|(_, n)| *n == 1));
    assert_eq!(r3[0].0.0, r3[1].0.0, "the same ISL");
    assert_ne!(r3[0].0.1, r3[1].0.1, "opposite directions");
}

#[test]
fn two_spark_nccl_lists_every_ranks_devices_and_pins_mpi_to_the_fabric() {
    let plan = load(Path::new("plans/two-spark.toml")).plan;
    let rendered = render_all(&plan);
    let nccl: Vec<&JobCommands> = rendered
        .iter()
        .filter(|(r, _)| r.kind == KindId("nccl"))
        .flat_map(|(_, c)| c)
        .collect();
    assert_eq!(nccl.len(), 1);
    let job = nccl[0];
    let hca = &job.nccl_env["NCCL_IB_HCA"];
    let ifs = &job.nccl_env["NCCL_SOCKET_IFNAME"];
    for e in [
        "spark-a.f0.a",
        "spark-a.f0.b",
        "spark-b.f0.a",
        "spark-b.f0.b",
    ] {
        assert!(
            hca.split(',').any(|d| d == format!("<{e}:device>")),
            "{e} missing from NCCL_IB_HCA={hca}"
        );
        assert!(
            ifs.split(',').any(|d| d == format!("<{e}:netdev>")),
            "{e} missing from NCCL_SOCKET_IFNAME={ifs}"
        );
    }
    assert_eq!(job.nccl_env["NCCL_NET_PLUGIN"], "none");
    assert_eq!(job.nccl_env["NCCL_DEBUG"], "INFO");
    let step = &job.steps[0];
    assert_eq!(step.role, Role::Launcher);
    assert!(step.command.starts_with("mpirun "), "{}", step.command);
    assert!(
        step.command
            .contains("--mca oob_tcp_if_include 198.51.100.0/30,203.0.113.0/30"),
        "{}",
        step.command
    );
    assert!(
        step.command
            .contains("--mca btl_tcp_if_include 198.51.100.0/30,203.0.113.0/30"),
        "{}",
        step.command
    );
    assert!(
        step.command.contains(&format!("-x NCCL_IB_HCA={hca}")),
        "{}",
        step.command
    );
    assert!(
        step.command
            .contains("/opt/nccl-tests/build/all_reduce_perf"),
        "{}",
        step.command
    );
}

fn switched_plan(n: usize) -> String {
    let mut s =
        String::from("format-version = 1\nname = \"generated\"\n\n[[switch]]\nname = \"leaf\"\n");
    for i in 0..n {
        s += &format!("\n[[node]]\nname = \"node-{i:03}\"\n");
    }
    let attach: Vec<String> = (0..n)
        .map(|i| format!("\"node-{i:03}.f0\" = \"leaf\""))
        .collect();
    s += &format!(
        "\n[[cable]]\nkind = \"switched\"\nhalves = [\"a\"]\nattach = {{ {} }}\nsubnets = {{ a = \"198.18.0.0/22\" }}\n",
        attach.join(", ")
    );
    s += "\n[tests.rdma-bw]\nschedule = \"all-pairs\"\n";
    s
}

#[test]
fn all_pairs_takes_n_minus_1_rounds_even_n_odd_and_never_doubles_a_half() {
    for n in [2usize, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33] {
        let plan = load_text("generated.toml", &switched_plan(n));
        let fabric = Fabric::build(&plan);
        let schedule = fabricplan::kinds::schedule(&plan);
        // round robin, then the same rounds the other way (both directions by default)
        let want = if n % 2 == 0 { n - 1 } else { n };
        assert_eq!(schedule.len(), 2 * want, "n = {n}");
        let mut pairs = HashSet::new();
        for round in schedule.rounds(&plan, &fabric) {
            assert_eq!(round.kind, KindId("rdma-bw"));
            assert_eq!(
                round.jobs.len(),
                n / 2,
                "n = {n}, round {}: every node but one busy",
                round.name
            );
            let mut busy = HashSet::new();
            let mut ports = HashSet::new();
            for j in &round.jobs {
                for e in &j.resources {
                    assert!(
                        busy.insert(e.clone()),
                        "n = {n}, round {}: {e:?} in two jobs",
                        round.name
                    );
                }
                assert!(
                    ports.insert(j.port),
                    "n = {n}: TCP port {} twice in a round",
                    j.port
                );
                let p = j.pair.as_ref().unwrap();
                let key = (p.client.node, p.server.node);
                assert!(pairs.insert(key), "n = {n}: {key:?} measured twice");
            }
        }
        assert_eq!(
            pairs.len(),
            n * (n - 1),
            "n = {n}: every pair once each way"
        );
    }
}

const PWNED: &str = "/tmp/fabricplan-pwned";

const HOSTILE: &str = r#"
format-version = 1
name = "hostile"

[[node]]
name = "spark-a"
nccl-tests-dir = "$(touch /tmp/fabricplan-pwned)"
env = { HOSTILE = "`touch /tmp/fabricplan-pwned`; echo $HOME", LD_LIBRARY_PATH = "/opt/x'y" }
pin."f0.a" = { device = "rocep1s0f0", netdev = "enp1s0f0np0", gid-index = 3 }
pin."f0.b" = { device = "roceP2p1s0f0", netdev = "enP2p1s0f0np0", gid-index = 3 }

[[node]]
name = "spark-b"
nccl-tests-dir = "$(touch /tmp/fabricplan-pwned)"
env = { HOSTILE = "`touch /tmp/fabricplan-pwned`; echo $HOME", LD_LIBRARY_PATH = "/opt/x'y" }
pin."f0.a" = { device = "rocep1s0f0", netdev = "enp1s0f0np0", gid-index = 3 }
pin."f0.b" = { device = "roceP2p1s0f0", netdev = "enP2p1s0f0np0", gid-index = 3 }

[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }

[tests.rdma-bw]

[[tests.nccl]]
collective = "all_reduce"
env = { NCCL_HOSTILE = "$(touch /tmp/fabricplan-pwned)" }
"#;

fn sh(script: &str, syntax_only: bool) -> std::process::Output {
    let mut c = Command::new("/bin/sh");
    if syntax_only {
        c.arg("-n");
    }
    c.arg("-c").arg(script).output().expect("run /bin/sh")
}

/// Hostile plan values render quoted and inert: the scripts parse, and running their
/// environment, directory and command words through a real shell prints the values literally
/// and creates nothing.
#[test]
fn hostile_values_render_inert() {
    let _ = std::fs::remove_file(PWNED);
    let plan = load_text("hostile.toml", HOSTILE);
    let rendered = render_all(&plan);
    let renderer = fabricplan::kinds::renderer(&plan);
    let res = Resolution::from_plan(&plan);
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    let mut checked = 0;
    for round in schedule.rounds(&plan, &fabric) {
        for job in &round.jobs {
            let cmds = fabricplan::kinds::commands(
                &plan,
                &renderer,
                &fabricplan::launchers::ssh::render::SshStyle,
                &res,
                job,
            )
            .unwrap();
            assert!(
                cmds.unresolved.is_empty(),
                "pinned plan: {:?}",
                cmds.unresolved
            );
            for step in &cmds.steps {
                if step.role == Role::Server {
                    // detached: syntax only (it would start a real server)
                    let out = sh(&step.script, true);
                    assert!(
                        out.status.success(),
                        "{}: {}",
                        step.script,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    continue;
                }
                let out = sh(&step.script, true);
                assert!(
                    out.status.success(),
                    "{}: {}",
                    step.script,
                    String::from_utf8_lossy(&out.stderr)
                );
                // run it for real, with the tool swapped for printf: exports and every word
                // of the command are evaluated by the shell
                // clients exec the tool; a launcher runs in a session of its own, reaped after
                let exec = [
                    format!("exec timeout -k 5 {} ", step.timeout_s),
                    format!("setsid timeout -k 5 {} ", step.timeout_s),
                ]
                .into_iter()
                .find(|e| step.script.contains(e))
                .unwrap_or_else(|| panic!("no remote timeout: {}", step.script));
                let harmless = step.script.replacen(
                    &exec,
                    "printf '%s\\n' \"$HOSTILE\" \"$LD_LIBRARY_PATH\" ",
                    1,
                );
                let out = sh(&harmless, false);
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    out.status.success(),
                    "{harmless}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let lines: Vec<&str> = stdout.lines().collect();
                assert_eq!(
                    lines[0], "`touch /tmp/fabricplan-pwned`; echo $HOME",
                    "{harmless}"
                );
                assert_eq!(lines[1], "/opt/x'y");
                if step.role == Role::Launcher {
                    assert!(
                        lines.contains(&"$(touch /tmp/fabricplan-pwned)/all_reduce_perf"),
                        "binary path not literal: {stdout}"
                    );
                    assert!(
                        lines.contains(&"NCCL_HOSTILE=$(touch /tmp/fabricplan-pwned)"),
                        "NCCL env not literal: {stdout}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 3, "ran {checked} scripts");
    assert!(!rendered.is_empty());
    assert!(
        !Path::new(PWNED).exists(),
        "a hostile value was executed: {PWNED} exists"
    );
}

/// Issue "hardening": every number a plan can hold has a documented range in the schema (a
/// minimum and a maximum, in its doc comment too), which the shape check enforces.
#[test]
fn every_number_in_the_schema_has_a_documented_range() {
    let schema: serde_json::Value =
        serde_json::from_str(&fabricplan::kinds::json_schema()).unwrap();
    fn walk(path: &str, v: &serde_json::Value, found: &mut Vec<String>) {
        let types: Vec<&str> = match v.get("type") {
            Some(serde_json::Value::String(t)) => vec![t.as_str()],
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|t| t.as_str()).collect(),
            _ => Vec::new(),
        };
        if types.iter().any(|t| *t == "integer" || *t == "number") {
            found.push(path.to_string());
            let has = |k: &str| v.get(k).is_some_and(|x| x.is_number());
            assert!(
                has("minimum") || has("exclusiveMinimum"),
                "{path}: no minimum in {v}"
            );
            assert!(has("maximum"), "{path}: no maximum in {v}");
            let doc = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
            let max = match v["maximum"].as_u64() {
                Some(m) => m.to_string(),
                None => format!("{}", v["maximum"].as_f64().unwrap()),
            };
            assert!(
                doc.contains(&max),
                "{path}: the doc comment does not say the range: {doc:?}"
            );
        }
        if let Some(o) = v.as_object() {
            for (k, x) in o {
                walk(&format!("{path}/{k}"), x, found);
            }
        }
    }
    let mut found = Vec::new();
    walk("", &schema, &mut found);
    assert!(found.len() >= 25, "{found:?}");
}
