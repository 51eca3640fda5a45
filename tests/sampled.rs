//! `schedule = "sampled"` and localisation on generated switched fabrics (the shape of
//! `scripts/gen-switched.sh`): simulated runs at 64 nodes (a throttled half named alone, an
//! RSTP-blocked ISL named as the ISL, a healthy run green) and 512 nodes (a throttled half
//! named alone, a healthy run green),
//! and at the library level at 512 nodes: every round a perfect matching, every port in both
//! roles, every ISL direction loaded, the coverage `plan` states recounted from the rounds,
//! the seed deciding the rounds, the full-rate round for the halves the rounds measured only
//! below the throttle band, and re-tests plus decision naming exactly the part a fault model
//! breaks. Behaviour only, never wall-clock time.

#[path = "../benches/support/plangen.rs"]
#[allow(dead_code)] // shared with the benchmarks: not every generator is used here
mod plangen;
mod support;

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use fabricplan::gate::trap::Trap;
use fabricplan::localise::{self, Element, Observed, Seen};
use fabricplan::plan::{Endpoint, Plan};
use fabricplan::results::SuspectKind;
use fabricplan::schedule::{Job, KindId, Round};
use fabricplan::topology::Fabric;
use serde_json::Value;
use support::{fabricplan as cli, json, load_plan_text, sim_run, stderr, stdout};

const RDMA_BW: KindId = KindId("rdma-bw");

/// A generated sampled plan of `n` nodes on `switches` switches, with `extra` lines (`rounds`,
/// `seed`) in its rdma-bw section.
fn sampled_text(n: usize, switches: usize, extra: &str) -> String {
    let text = plangen::switched_plan_with(n, switches, "sampled");
    let section = "schedule = \"sampled\"\n";
    assert!(text.contains(section), "the generator writes {section:?}");
    text.replacen(section, &format!("{section}{extra}"), 1)
}

/// `sampled_text` written into `dir`; its path as a string.
fn write_plan(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Every verdict of a results document with its job's id (preflight's as `preflight`).
fn verdicts(r: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for v in r["preflight"].as_array().unwrap() {
        out.push(("preflight".into(), r["plan"].to_string(), v.clone()));
    }
    for j in r["jobs"].as_array().unwrap() {
        for v in j["verdicts"].as_array().unwrap() {
            out.push((
                j["job"].as_str().unwrap().to_string(),
                j["kind"].as_str().unwrap().to_string(),
                v.clone(),
            ));
        }
    }
    out
}

/// The gates of the FAILs counted (following nothing), suspects' included.
fn counted_fails(r: &Value) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = verdicts(r)
        .into_iter()
        .filter(|(_, _, v)| v["outcome"] == "FAIL" && v["follows"].is_null())
        .map(|(_, _, v)| v["gate"].as_str().unwrap().to_string())
        .collect();
    for s in r["suspects"].as_array().unwrap() {
        assert_eq!(s["verdict"]["outcome"], "FAIL", "{s}");
        out.insert(s["verdict"]["gate"].as_str().unwrap().to_string());
    }
    out
}

/// The NCCL bus-bandwidth gate of the generated plans' one all_reduce over `n` ranks.
fn nccl_busbw(n: usize) -> String {
    format!("nccl all_reduce (all_reduce_perf, {n} ranks) busbw at 32 MiB-128 MiB")
}

/// A sampled run of `n` nodes on `switches` switches with one throttled half: that half is the
/// one suspect, every rdma-bw flow that failed or warned follows it, and the what-to-fix list
/// starts with it.
fn throttled_half_is_named_alone(n: usize, switches: usize, half: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let plan = write_plan(tmp.path(), "g.toml", &sampled_text(n, switches, ""));
    let fault = format!("throttle:{half}");
    let (dir, o) = sim_run(tmp.path(), "run", &plan, &["--sim-fault", &fault]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&dir.join("results.json"));
    let suspects = r["suspects"].as_array().unwrap();
    let names: Vec<&str> = suspects
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [half], "the suspects, and nothing else");
    let s = &suspects[0];
    let (node, rest) = half.split_once('.').unwrap();
    let (port, h) = rest.split_once('.').unwrap();
    assert_eq!(
        (&s["what"], &s["node"], &s["port"], &s["half"]),
        (
            &Value::from("end"),
            &Value::from(node),
            &Value::from(port),
            &Value::from(h)
        )
    );
    assert_eq!(s["kind"], "rdma-bw");
    assert_eq!(s["verdict"]["trap"], "firmware-throttle", "{s}");
    // a throttle slows the half both ways
    assert_eq!(s["ways"], serde_json::json!(["send", "receive"]), "{s}");
    let gate = format!("rdma-bw suspect {half}");
    assert_eq!(s["verdict"]["gate"], gate.as_str());
    // the proving flows all have the half at one end, and some are re-tests
    let labels: std::collections::HashMap<&str, &str> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["job"].as_str().unwrap(), j["label"].as_str().unwrap()))
        .collect();
    let flows = s["flows"].as_array().unwrap();
    assert!(!flows.is_empty());
    for f in flows {
        let label = labels[f.as_str().unwrap()];
        assert!(label.contains(half), "{f} ({label}) does not touch {half}");
    }
    assert!(!s["retests"].as_array().unwrap().is_empty(), "{s}");
    // every rdma-bw FAIL and WARN follows the suspect: one FAIL for the root cause
    let mut following = 0;
    for (job, kind, v) in verdicts(&r) {
        if kind == "rdma-bw" && v["outcome"] != "OK" {
            assert_eq!(v["follows"], half, "{job}: {v}");
            assert!(v["gate"].as_str().unwrap().contains(half), "{job}: {v}");
            following += 1;
        }
    }
    assert!(following >= flows.len(), "{following} verdicts follow");
    // results.jsonl says the same after the jobs' lines (written before the suspect was known):
    // one line naming the suspect and the jobs that follow from it
    let lines: Vec<Value> = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let told: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("suspect").is_some())
        .collect();
    assert_eq!(told.len(), 1, "one suspect line");
    assert_eq!(told[0]["suspect"]["name"], half);
    assert_eq!(told[0]["follows"]["gate"], gate.as_str());
    // what the lines say follows the suspect: the jobs the suspect's line names, and those
    // judged after it (the NCCL test) whose own line says so
    let mut said: BTreeSet<&str> = told[0]["follows"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_str().unwrap())
        .collect();
    said.extend(
        lines
            .iter()
            .filter(|l| {
                l["verdicts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| v["follows"] == gate.as_str())
            })
            .map(|l| l["job"].as_str().unwrap()),
    );
    let follow_in_json: BTreeSet<&str> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| {
            j["verdicts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v["follows"] == half)
        })
        .map(|j| j["job"].as_str().unwrap())
        .collect();
    assert_eq!(
        said, follow_in_json,
        "the jobs results.json marks as following"
    );
    assert_eq!(
        lines.iter().filter(|l| l.get("job").is_some()).count(),
        r["jobs"].as_array().unwrap().len(),
        "one line per job besides"
    );
    // NCCL's bus bandwidth over all ranks is held down by the half (one of its ranks): it
    // follows the suspect, which is the one counted FAIL
    assert_eq!(
        counted_fails(&r),
        BTreeSet::from([gate.clone()]),
        "counted FAILs"
    );
    let busbw = verdicts(&r)
        .into_iter()
        .find(|(_, _, v)| v["gate"] == nccl_busbw(n).as_str())
        .expect("NCCL's bus bandwidth verdict");
    assert_eq!(
        (&busbw.2["outcome"], &busbw.2["follows"]),
        (&Value::from("FAIL"), &Value::from(half)),
        "{}",
        busbw.2
    );
    assert_eq!(r["summary"]["fail"], 1);
    // the terminal's what-to-fix starts with the suspect
    let out = stdout(&o);
    // the terminal's what-to-fix names the half, and its fix runs on its node
    let node = half.split('.').next().unwrap();
    assert!(
        out.contains(&format!("what to fix (1):\n  1. FAIL {half} (")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "     fix:  ssh {node} sudo mlxfwmanager --online -u"
        )),
        "{out}"
    );
    assert!(
        out.trim_end()
            .ends_with(&format!("1 FAIL: {half} (simulated)")),
        "{out}"
    );
}

#[test]
fn sampled_64_throttled_half_on_the_first_switch_is_the_one_suspect() {
    throttled_half_is_named_alone(64, 2, "n00005.f0.a");
}

#[test]
fn sampled_64_throttled_half_on_the_second_switch_is_the_one_suspect() {
    throttled_half_is_named_alone(64, 2, "n00047.f0.a");
}

#[test]
fn sampled_512_throttled_half_is_the_one_suspect() {
    throttled_half_is_named_alone(512, 4, "n00300.f0.a");
}

#[test]
fn sampled_64_blocked_isl_is_named_as_the_isl() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = write_plan(tmp.path(), "g64.toml", &sampled_text(64, 2, ""));
    let (dir, o) = sim_run(
        tmp.path(),
        "run",
        &plan,
        &["--sim-fault", "rstp-block:sw-00-sw-01"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&dir.join("results.json"));
    let suspects = r["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 1, "{suspects:?}");
    let s = &suspects[0];
    assert_eq!(s["what"], "isl");
    assert_eq!(s["isl"], "sw-00-sw-01");
    assert!(s["node"].is_null() && s["half"].is_null(), "{s}");
    assert_eq!(
        s["ways"],
        serde_json::json!(["sw-00 -> sw-01", "sw-01 -> sw-00"])
    );
    assert_eq!(s["verdict"]["trap"], "isl-blocked-rstp", "{s}");
    let gate = s["verdict"]["gate"].as_str().unwrap().to_string();
    // every rdma-bw flow that failed crossed the ISL and follows it
    for (job, kind, v) in verdicts(&r) {
        if kind == "rdma-bw" && v["outcome"] != "OK" {
            assert_eq!(v["follows"], "ISL sw-00-sw-01", "{job}: {v}");
        }
    }
    // NCCL over every rank crosses the ISL: its bus bandwidth follows the ISL too
    assert_eq!(counted_fails(&r), BTreeSet::from([gate]), "counted FAILs");
    let out = stdout(&o);
    assert!(
        out.contains(
            "what to fix (1):\n  1. FAIL ISL sw-00-sw-01 (sw-00 <-> sw-01): ISL blocked by RSTP"
        ),
        "{out}"
    );
}

/// A healthy sampled run of `n` nodes: green, no suspect, no re-test round, K rounds each way,
/// then the full-rate rounds (log2(n)/2 + 1 at most) that measure the halves no sampled round
/// measured where a throttle would show: each of their flows expected above the band, and
/// every half seen, none said below it.
fn healthy_is_green(n: usize, switches: usize, extra: &str, pairings: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let plan = write_plan(tmp.path(), "g.toml", &sampled_text(n, switches, extra));
    let (dir, o) = sim_run(tmp.path(), "run", &plan, &[]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("ALL GREEN: {n} of {} halves", 2 * n))
            && last.ends_with(" measured (simulated)"),
        "{out}"
    );
    let r = json(&dir.join("results.json"));
    assert_eq!(r["suspects"], serde_json::json!([]));
    assert_eq!(r["summary"]["fail"], 0);
    assert_eq!(r["summary"]["warn"], 0);
    assert!(r["coverage"]["below_band"].is_null(), "{}", r["coverage"]);
    let rdma: Vec<&Value> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["kind"] == "rdma-bw")
        .collect();
    let mut names: Vec<&str> = rdma
        .iter()
        .map(|j| j["round_name"].as_str().unwrap())
        .collect();
    names.dedup();
    assert!(names.iter().all(|n| !n.contains("re-test")), "{names:?}");
    // each pairing run both ways, every member in every round (n even)
    let (sampled, full): (Vec<&str>, Vec<&str>) =
        names.iter().partition(|n| n.contains(" sampled "));
    assert_eq!(sampled.len(), 2 * pairings, "{names:?}");
    assert!(full.len() <= (n.ilog2() as usize + 2) / 2, "{names:?}");
    assert!(
        full.iter().all(|n| n.starts_with("rdma-bw full-rate ")),
        "{names:?}"
    );
    let full_jobs: Vec<&&Value> = rdma
        .iter()
        .filter(|j| j["round_name"].as_str().unwrap().contains("full-rate"))
        .collect();
    for j in &full_jobs {
        // 80% of it above the band's top (25 Gb/s): a throttled end would fail it
        assert!(j["expected_gbps"].as_f64().unwrap() > 31.25, "{j}");
    }
    assert_eq!(rdma.len(), 2 * pairings * n / 2 + full_jobs.len());
}

#[test]
fn sampled_64_healthy_run_is_green() {
    healthy_is_green(64, 2, "", 8);
}

/// 512 nodes in 4 switches end to end: 16 rounds of 256 flows, a full-rate round for the halves
/// they measured only across a crowded ISL, one 512-rank NCCL job.
#[test]
fn sampled_512_healthy_run_is_green() {
    healthy_is_green(512, 4, "", 8);
}

/// `fabricplan plan` of a 64-node sampled plan with `seed`.
fn plan_text(dir: &Path, seed: u64) -> String {
    let p = write_plan(
        dir,
        &format!("seed{seed}.toml"),
        &sampled_text(64, 2, &format!("seed = {seed}\n")),
    );
    let o = cli(&["plan", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // the plan's own name is the same in every copy; the seed is stated in the coverage line
    stdout(&o)
}

#[test]
fn plan_same_seed_same_rounds_other_seed_other_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let a = plan_text(tmp.path(), 7);
    let b = plan_text(tmp.path(), 7);
    let c = plan_text(tmp.path(), 8);
    assert!(a.contains("8 random pairings (seed 7)"), "{a}");
    assert_eq!(a, b, "the same seed, the same plan");
    let jobs = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.trim_start().starts_with("job rdma-bw-"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(jobs(&a).len(), 16 * 32);
    assert_ne!(jobs(&a), jobs(&c), "another seed, other rounds");
}

// ---- 512 nodes at the library level ----

fn load(n: usize, switches: usize, extra: &str) -> Plan {
    load_plan_text("gen.toml", &sampled_text(n, switches, extra))
}

/// The sampled rdma-bw rounds of `plan`.
fn sampled_rounds(plan: &Plan, fabric: &Fabric) -> Vec<Round> {
    fabricplan::kinds::schedule(plan)
        .rounds(plan, fabric)
        .filter(|r| r.kind == RDMA_BW)
        .collect()
}

fn name(plan: &Plan, e: &Endpoint) -> String {
    format!("{}.{}.{}", plan.node(e.node).name, e.port, e.half)
}

/// Each round's flows as (client, server) names, in order.
fn flows(plan: &Plan, rounds: &[Round]) -> Vec<Vec<(String, String)>> {
    rounds
        .iter()
        .map(|r| {
            r.jobs
                .iter()
                .map(|j| {
                    let p = j.pair.as_ref().unwrap();
                    (name(plan, &p.client), name(plan, &p.server))
                })
                .collect()
        })
        .collect()
}

#[test]
fn sampled_512_rounds_are_perfect_matchings_covering_every_role_and_isl_direction() {
    let plan = load(512, 4, "");
    let fabric = Fabric::build(&plan);
    let rounds = sampled_rounds(&plan, &fabric);
    assert_eq!(rounds.len(), 16, "8 pairings, each way");
    let mut clients = HashSet::new();
    let mut servers = HashSet::new();
    let mut pairs = HashSet::new();
    let mut directions = HashSet::new();
    for r in &rounds {
        assert!(r.name.starts_with("rdma-bw sampled "), "{}", r.name);
        assert_eq!(r.jobs.len(), 256, "{}", r.name);
        let mut seen = HashSet::new();
        for j in &r.jobs {
            let p = j.pair.as_ref().unwrap();
            assert!(seen.insert(p.client.node), "{}: a node twice", r.name);
            assert!(seen.insert(p.server.node), "{}: a node twice", r.name);
            clients.insert(p.client.clone());
            servers.insert(p.server.clone());
            let (a, b) = (
                p.client.node.0.min(p.server.node.0),
                p.client.node.0.max(p.server.node.0),
            );
            pairs.insert((a, b));
            directions.extend(p.path.isl_hops());
        }
        assert_eq!(seen.len(), 512, "{}: a perfect matching", r.name);
    }
    assert_eq!(clients.len(), 512, "every port a client");
    assert_eq!(servers.len(), 512, "every port a server");
    // 3 ISLs in a chain, each way
    assert_eq!(directions.len(), 6);
    // what `plan` states, recounted here from the rounds
    let cov = fabricplan::kinds::schedule(&plan).coverage(&plan, &fabric);
    assert_eq!(cov.len(), 1);
    let c = &cov[0];
    assert_eq!(
        (c.kind, c.pairings, c.seed, c.rounds),
        ("rdma-bw", 8, 1, 16)
    );
    assert_eq!(
        (
            c.ports,
            c.ports_as_client,
            c.ports_as_server,
            c.ports_both_roles
        ),
        (512, clients.len(), servers.len(), 512)
    );
    assert_eq!(
        (c.node_pairs, c.node_pairs_total),
        (pairs.len(), 512 * 511 / 2)
    );
    assert_eq!(
        (c.isl_directions, c.isl_directions_total),
        (directions.len(), 6)
    );
}

#[test]
fn sampled_512_same_seed_same_rounds_other_seed_other_rounds() {
    let run = |seed: u64| {
        let plan = load(512, 4, &format!("seed = {seed}\n"));
        let fabric = Fabric::build(&plan);
        let rounds = sampled_rounds(&plan, &fabric);
        flows(&plan, &rounds)
    };
    let a = run(3);
    assert_eq!(a, run(3), "the same seed, the same rounds");
    let b = run(4);
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_ne!(x, y, "round {}: another seed, another matching", i + 1);
    }
}

/// A broken part, as a fault model: a flow fails when it uses it.
enum Broken {
    Half(&'static str),
    IslWay(&'static str, &'static str),
}

fn breaks(plan: &Plan, broken: &Broken, e: &Element) -> bool {
    match (broken, e) {
        (Broken::Half(h), Element::End { endpoint, .. }) => name(plan, endpoint) == *h,
        (Broken::IslWay(isl, from), Element::Isl { isl: id, from: f }) => {
            plan.isls[id.0].name == *isl && plan.switches[f.0].name == *from
        }
        _ => false,
    }
}

/// What a flow shows under `broken`: a flow across an ISL is expected its share of the crowded
/// ISL (9 Gb/s, as on 512 nodes in 4 switches), one within a switch a half's 111; a broken half
/// carries 12.7 (a throttle: so it passes flows across an ISL), a broken ISL direction 0.5. A
/// flow fails below 80% of what it was expected.
fn observe(plan: &Plan, broken: &Broken, jobs: &[Job]) -> Vec<Observed> {
    jobs.iter()
        .map(|j| {
            let p = j.pair.as_ref().unwrap();
            let expected = if p.path.isl_hops().next().is_some() {
                9.0
            } else {
                111.0
            };
            let mut measured: f64 = expected;
            for e in localise::elements(plan, p) {
                if breaks(plan, broken, &e) {
                    let cap = if matches!(e, Element::Isl { .. }) {
                        0.5
                    } else {
                        12.7
                    };
                    measured = measured.min(cap);
                }
            }
            let bad = measured < 0.8 * expected;
            Observed {
                job: j.clone(),
                seen: if bad { Seen::Failed } else { Seen::Passed },
                trap: bad.then_some(Trap::FirmwareThrottle),
                measured: Some(measured),
                expected: Some(expected),
            }
        })
        .collect()
}

/// The suspects after the sampled rounds and their re-tests of a 512-node fabric with `broken`.
fn localise_512(broken: &Broken) -> (Vec<fabricplan::results::Suspect>, usize, usize) {
    let plan = load(512, 4, "");
    let fabric = Fabric::build(&plan);
    let rounds = sampled_rounds(&plan, &fabric);
    let jobs: Vec<Job> = rounds.iter().flat_map(|r| r.jobs.clone()).collect();
    let mut seen = observe(&plan, broken, &jobs);
    let failing = seen.iter().filter(|o| o.seen == Seen::Failed).count();
    // some flows through the broken part passed: it carried their share and no more
    let masked = seen
        .iter()
        .filter(|o| o.seen == Seen::Passed)
        .filter(|o| {
            let p = o.job.pair.as_ref().unwrap();
            localise::elements(&plan, p)
                .iter()
                .any(|e| breaks(&plan, broken, e))
        })
        .count();
    if matches!(broken, Broken::Half(_)) {
        assert!(
            masked > 0,
            "the fault model passes some flows of the broken half"
        );
    }
    let first = fabricplan::kinds::schedule(&plan).len();
    let metric = fabricplan::kinds::get(RDMA_BW).unwrap().metric();
    let retests = localise::retests(
        &plan,
        &fabric,
        RDMA_BW,
        metric,
        first,
        &seen,
        localise::MAX_RETEST_ROUNDS,
    );
    assert!(retests.len() <= localise::MAX_RETEST_ROUNDS);
    let retest_jobs: Vec<Job> = retests.iter().flat_map(|r| r.jobs.clone()).collect();
    let ids: HashSet<String> = retest_jobs.iter().map(|j| j.id.clone()).collect();
    seen.extend(observe(&plan, broken, &retest_jobs));
    let d = localise::decide(
        &plan,
        RDMA_BW,
        fabricplan::kinds::get(RDMA_BW).unwrap().metric(),
        &seen,
        &ids,
    );
    // every failing flow is explained by a suspect
    let explained: usize = d.explains.iter().map(Vec::len).sum();
    let all_failing = seen.iter().filter(|o| o.seen == Seen::Failed).count();
    assert_eq!(
        explained, all_failing,
        "every failing flow follows a suspect"
    );
    (d.suspects, failing, retests.len())
}

#[test]
fn sampled_512_broken_half_is_the_one_suspect() {
    for half in ["n00001.f0.a", "n00300.f0.a", "n00512.f0.a"] {
        let (suspects, failing, retests) = localise_512(&Broken::Half(half));
        assert!(failing > 0, "{half}: the sampled rounds touch every port");
        assert!(retests > 0, "{half}: re-tested");
        let names: Vec<(&str, SuspectKind)> =
            suspects.iter().map(|s| (s.name.as_str(), s.what)).collect();
        assert_eq!(names, [(half, SuspectKind::End)], "{half}");
        assert_eq!(suspects[0].ways, ["send", "receive"], "{half}");
        assert!(!suspects[0].retests.is_empty(), "{half}");
    }
}

#[test]
fn sampled_512_broken_isl_direction_is_the_one_suspect() {
    let (suspects, failing, _) = localise_512(&Broken::IslWay("sw-01-sw-02", "sw-02"));
    assert!(failing > 0);
    assert_eq!(suspects.len(), 1, "{suspects:?}");
    let s = &suspects[0];
    assert_eq!(s.what, SuspectKind::Isl);
    assert_eq!(s.isl.as_deref(), Some("sw-01-sw-02"));
    assert_eq!(s.ways, ["sw-02 -> sw-01"]);
}

#[test]
fn sampled_512_healthy_needs_no_retest_and_names_nothing() {
    let plan = load(512, 4, "");
    let fabric = Fabric::build(&plan);
    let rounds = sampled_rounds(&plan, &fabric);
    let jobs: Vec<Job> = rounds.iter().flat_map(|r| r.jobs.clone()).collect();
    let seen = observe(&plan, &Broken::Half("no such half"), &jobs);
    let metric = fabricplan::kinds::get(RDMA_BW).unwrap().metric();
    assert!(localise::retests(&plan, &fabric, RDMA_BW, metric, 17, &seen, 8).is_empty());
    let d = localise::decide(
        &plan,
        RDMA_BW,
        fabricplan::kinds::get(RDMA_BW).unwrap().metric(),
        &seen,
        &HashSet::new(),
    );
    assert!(d.suspects.is_empty());
}

/// At 512 nodes on four switches a sampled flow across an ISL is expected its share of it,
/// below the throttle band: a half whose every sampled flow crossed one was measured where a
/// throttle passes. Those halves, and only those, get one full-rate round: each the client of
/// one flow within its switch (no ISL), against a peer seen passing at full rate where there is
/// one, each flow expected above the band by the capacity model; after it none is unseen.
#[test]
fn sampled_512_halves_seen_only_below_the_band_get_one_full_rate_round() {
    let plan = load(512, 4, "");
    let fabric = Fabric::build(&plan);
    let metric = fabricplan::kinds::get(RDMA_BW).unwrap().metric();
    let passed = |rounds: &[Round]| -> Vec<Observed> {
        rounds
            .iter()
            .flat_map(|r| {
                let e = fabricplan::capacity::expected(&plan, r);
                r.jobs.iter().cloned().zip(e).map(|(job, e)| Observed {
                    job,
                    seen: Seen::Passed,
                    trap: None,
                    measured: e,
                    expected: e,
                })
            })
            .collect()
    };
    let mut seen = passed(&sampled_rounds(&plan, &fabric));
    let unseen: Vec<String> = localise::unseen(&plan, metric, &seen)
        .iter()
        .map(|e| name(&plan, e))
        .collect();
    // (3/4)^8 of 512: about 51 halves never paired within their switch
    assert!((20..=100).contains(&unseen.len()), "{}", unseen.len());
    let full = localise::full_rate(&plan, &fabric, RDMA_BW, metric, 17, &seen, 4);
    assert!(full.left.is_empty());
    assert_eq!(full.rounds.len(), 1);
    let r = &full.rounds[0];
    assert_eq!(r.name, "rdma-bw full-rate 1/1");
    let clients: Vec<String> = r
        .jobs
        .iter()
        .map(|j| name(&plan, &j.pair.as_ref().unwrap().client))
        .collect();
    assert_eq!(clients, unseen, "each unseen half the client of one flow");
    let expected = fabricplan::capacity::expected(&plan, r);
    let mut ends = HashSet::new();
    for (j, e) in r.jobs.iter().zip(expected) {
        let p = j.pair.as_ref().unwrap();
        assert!(p.path.isl_hops().next().is_none(), "{}", j.label(&plan));
        assert!(e.unwrap() > 100.0, "{}: {e:?}", j.label(&plan));
        assert!(ends.insert(p.client.clone()) && ends.insert(p.server.clone()));
        assert!(!unseen.contains(&name(&plan, &p.server)), "a seen peer");
    }
    seen.extend(passed(&full.rounds));
    assert!(localise::unseen(&plan, metric, &seen).is_empty());
}
