//! Diagnosis by part, over the whole class: every fault the simulated fabric fakes, on every
//! shipped plan shape where it applies (a direct pair, a three-node ring, two switches joined by
//! an ISL, a sampled 64-node fabric), each on more than one target. Each run is red (exit 1), or
//! amber for a warning-class fault (exit 0), with exactly one finding that names the injected part
//! (two cables exchanged between boxes are two cables to move); its fix names that part's host
//! (or the switches, for an ISL), and every other gate that is not OK follows from it. And with no fault, every
//! plan and example is green.

mod support;

use std::path::Path;
use std::process::Command;

use fabricplan::gate::judge::Outcome;
use fabricplan::gate::trap::Trap;
use fabricplan::plan::Plan;
use fabricplan::results::RunResults;

async fn run_plan(plan: &Plan, faults: &[&str]) -> RunResults {
    support::sim_results(plan, faults).await
}

/// One fault and what the diagnosis must say about it: the findings' part names (one, but two
/// for two cables whose ends were exchanged between boxes: two cables to move), the words their
/// fixes must hold (the host they run on), and whether it is a warning (a PCIe link trained
/// narrow, firmware that differs) rather than a failure.
struct Case {
    fault: &'static str,
    parts: Vec<&'static str>,
    host: &'static [&'static str],
    warn: bool,
}

fn case(fault: &'static str, part: &'static str, host: &'static [&'static str]) -> Case {
    Case {
        fault,
        parts: vec![part],
        host,
        warn: false,
    }
}

fn warn(fault: &'static str, part: &'static str, host: &'static [&'static str]) -> Case {
    Case {
        fault,
        parts: vec![part],
        host,
        warn: true,
    }
}

/// Run each case on `plan` and check its findings; every case's failures are gathered and
/// reported at once.
async fn matrix(plan: &Plan, cases: &[Case]) {
    let mut wrong = Vec::new();
    for c in cases {
        let r = run_plan(plan, &[c.fault]).await;
        if let Err(e) = check(&r, c) {
            wrong.push(format!("{} on {}: {e}", c.fault, plan.name));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

fn check(r: &RunResults, c: &Case) -> Result<(), String> {
    let say = |what: &str| {
        let found: Vec<String> = r
            .findings
            .iter()
            .map(|f| format!("{} {} ({})", f.outcome.as_str(), f.name, f.trap_name))
            .collect();
        Err(format!(
            "{what}; verdict `{}`, findings {found:?}",
            r.summary.verdict
        ))
    };
    let (exit, outcome, word) = if c.warn {
        (0, Outcome::Warn, "warning(s)")
    } else {
        (1, Outcome::Fail, "FAIL")
    };
    if r.summary.exit_code != exit {
        return say(&format!("exit {}", r.summary.exit_code));
    }
    let names: Vec<&str> = r.findings.iter().map(|f| f.name.as_str()).collect();
    if names != c.parts || r.findings.iter().any(|f| f.outcome != outcome) {
        return say(&format!("the findings are not {:?} ({word})", c.parts));
    }
    for f in &r.findings {
        // the command, or the words with where they apply (`on sw-a and sw-b: ...`)
        let fix = format!(
            "{} on {}: {}",
            f.fix_command.as_deref().unwrap_or_default(),
            f.host.as_deref().unwrap_or_default(),
            f.fix
        );
        if let Some(h) = c.host.iter().find(|h| !fix.contains(*h)) {
            return say(&format!("the fix of {} does not name `{h}`: {fix}", f.name));
        }
        if let (Some(cmd), Some(h)) = (&f.fix_command, &f.host)
            && !cmd.contains(h.as_str())
        {
            return say(&format!("its command does not run on {h}: {cmd}"));
        }
    }
    if !r.summary.verdict.contains(&c.parts.join(", ")) {
        return say("the verdict line does not name them");
    }
    // `--drain` takes out only the node of the broken part, never a node the run cleared
    for (node, _) in fabricplan::results::service::blamed(r) {
        let names = |p: &str| {
            p == node
                || p.starts_with(&format!("{node}."))
                || p.starts_with(&format!("{node}'s "))
                || p.ends_with(&format!(" on {node}"))
        };
        if !c.parts.iter().any(|p| names(p)) {
            return say(&format!("--drain would take out {node}"));
        }
        if fabricplan::results::service::cleared(r, &node) {
            return say(&format!(
                "--drain would take out {node}, which passed every job"
            ));
        }
    }
    // every other gate that is not OK is a finding's evidence or follows from one
    for v in r.verdicts().filter(|v| v.outcome != Outcome::Ok) {
        let ours = r
            .findings
            .iter()
            .any(|f| f.evidence.contains(&v.gate) || f.follows.contains(&v.gate));
        if !ours {
            return say(&format!(
                "`{}` is {} outside every finding",
                v.gate,
                v.outcome.as_str()
            ));
        }
    }
    Ok(())
}

fn shipped(name: &str) -> Plan {
    support::load_plan(support::plan_path(name))
}

#[tokio::test]
async fn every_fault_on_a_direct_pair_is_one_finding() {
    matrix(
        &shipped("two-spark"),
        &[
            case("throttle:spark-a.f0.a", "spark-a.f0.a", &["ssh spark-a "]),
            case("throttle:spark-b.f0.b", "spark-b.f0.b", &["ssh spark-b "]),
            case(
                "mtu1500:spark-a.f0.a",
                "spark-a.f0.a",
                &["ssh spark-a ", "mtu 9000"],
            ),
            case(
                "mtu1500:spark-b.f0",
                "spark-b.f0",
                &["ssh spark-b ", "mtu 9000"],
            ),
            case(
                "crossed:spark-a.f0",
                "cable spark-a.f0 -- spark-b.f0",
                &["spark-"],
            ),
            case(
                "crossed:spark-b.f0",
                "cable spark-a.f0 -- spark-b.f0",
                &["spark-"],
            ),
            case("dead-host:spark-a", "sshd on spark-a", &["spark-a"]),
            case("dead-host:spark-b", "sshd on spark-b", &["spark-b"]),
            case("server-dies:spark-a", "test tools on spark-a", &["spark-a"]),
            case("server-dies:spark-b", "test tools on spark-b", &["spark-b"]),
            case("nccl-socket:spark-a", "NCCL on spark-a", &["spark-a"]),
            case("nccl-socket:spark-b", "NCCL on spark-b", &["spark-b"]),
            warn("pcie-degraded:spark-a.f0.a", "spark-a.f0.a", &["spark-a"]),
            warn("pcie-degraded:spark-b.f0.b", "spark-b.f0.b", &["spark-b"]),
            warn("firmware:spark-b=28.39.1002", "spark-b", &["spark-b"]),
            warn("firmware:spark-a=28.40.1000", "spark-a", &["spark-a"]),
        ],
    )
    .await;
}

#[tokio::test]
async fn every_fault_on_a_ring_is_one_finding() {
    matrix(
        &shipped("ring3"),
        &[
            case("throttle:spark-2.f1.a", "spark-2.f1.a", &["ssh spark-2 "]),
            case("throttle:spark-3.f0.b", "spark-3.f0.b", &["ssh spark-3 "]),
            // every half of one node's NIC: one firmware, one finding
            case("throttle:spark-1", "spark-1's NIC", &["ssh spark-1 "]),
            case(
                "mtu1500:spark-3.f0.b",
                "spark-3.f0.b",
                &["ssh spark-3 ", "mtu 9000"],
            ),
            case(
                "mtu1500:spark-1.f1",
                "spark-1.f1",
                &["ssh spark-1 ", "mtu 9000"],
            ),
            case(
                "crossed:spark-1.f0",
                "spark-1.f0 and spark-1.f1",
                &["spark-1"],
            ),
            case(
                "crossed:spark-3.f1",
                "spark-3.f0 and spark-3.f1",
                &["spark-3"],
            ),
            case("dead-host:spark-2", "sshd on spark-2", &["spark-2"]),
            case("dead-host:spark-3", "sshd on spark-3", &["spark-3"]),
            case("server-dies:spark-1", "test tools on spark-1", &["spark-1"]),
            case("server-dies:spark-3", "test tools on spark-3", &["spark-3"]),
            case("nccl-socket:spark-1", "NCCL on spark-1", &["spark-1"]),
            case("nccl-socket:spark-2", "NCCL on spark-2", &["spark-2"]),
            warn("pcie-degraded:spark-2.f1.a", "spark-2.f1.a", &["spark-2"]),
            warn("pcie-degraded:spark-3.f0.b", "spark-3.f0.b", &["spark-3"]),
            warn("firmware:spark-3=28.40.1000", "spark-3", &["spark-3"]),
            warn("firmware:spark-1=28.40.1000", "spark-1", &["spark-1"]),
            // the cables in one box's two ports exchanged: one swap at that box
            case(
                "swapped:spark-1.f0=spark-1.f1",
                "spark-1.f0 and spark-1.f1",
                &["spark-1"],
            ),
            case(
                "swapped:spark-2.f1=spark-2.f0",
                "spark-2.f0 and spark-2.f1",
                &["spark-2"],
            ),
            // two cables' ends exchanged between boxes: two cables to move
            Case {
                fault: "swapped:spark-1.f0=spark-2.f0",
                parts: vec![
                    "cable spark-1.f0 -- spark-2.f1",
                    "cable spark-2.f0 -- spark-3.f1",
                ],
                host: &["spark-"],
                warn: false,
            },
        ],
    )
    .await;
}

#[tokio::test]
async fn every_fault_on_two_switches_is_one_finding() {
    matrix(
        &shipped("switched-6"),
        &[
            case("throttle:gb10-02.f0.a", "gb10-02.f0.a", &["ssh gb10-02 "]),
            case("throttle:gb10-04.f0.a", "gb10-04.f0.a", &["ssh gb10-04 "]),
            case(
                "mtu1500:gb10-01.f0",
                "gb10-01.f0",
                &["ssh gb10-01 ", "mtu 9000"],
            ),
            case(
                "mtu1500:gb10-06.f0.a",
                "gb10-06.f0.a",
                &["ssh gb10-06 ", "mtu 9000"],
            ),
            case(
                "crossed:gb10-03.f0",
                "cable gb10-03.f0 -- sw-a",
                &["gb10-03"],
            ),
            case(
                "crossed:gb10-05.f0",
                "cable gb10-05.f0 -- sw-b",
                &["gb10-05"],
            ),
            case("dead-host:gb10-05", "sshd on gb10-05", &["gb10-05"]),
            case("dead-host:gb10-01", "sshd on gb10-01", &["gb10-01"]),
            case("server-dies:gb10-02", "test tools on gb10-02", &["gb10-02"]),
            case("server-dies:gb10-05", "test tools on gb10-05", &["gb10-05"]),
            case("nccl-socket:gb10-06", "NCCL on gb10-06", &["gb10-06"]),
            case("nccl-socket:gb10-03", "NCCL on gb10-03", &["gb10-03"]),
            case("rstp-block:sw-a-sw-b", "ISL sw-a-sw-b", &["sw-a", "sw-b"]),
            case("rstp-block:sw-b-sw-a", "ISL sw-a-sw-b", &["sw-a", "sw-b"]),
            warn("pcie-degraded:gb10-03.f0.b", "gb10-03.f0.b", &["gb10-03"]),
            warn("pcie-degraded:gb10-06.f0.a", "gb10-06.f0.a", &["gb10-06"]),
            warn("firmware:gb10-01=28.40.1000", "gb10-01", &["gb10-01"]),
            warn("firmware:gb10-05=28.40.1000", "gb10-05", &["gb10-05"]),
        ],
    )
    .await;
}

/// `scripts/gen-switched.sh 64 2 sampled`: 64 nodes on two switches, sampled pairings.
fn sampled_64() -> Plan {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-switched.sh");
    let o = Command::new("bash")
        .arg(script)
        .args(["64", "2", "sampled"])
        .output()
        .unwrap();
    assert!(o.status.success());
    support::load_plan_text("sampled-64.toml", &String::from_utf8(o.stdout).unwrap())
}

#[tokio::test]
async fn every_fault_on_a_sampled_64_node_fabric_is_one_finding() {
    matrix(
        &sampled_64(),
        &[
            case("throttle:n00007.f0.a", "n00007.f0.a", &["ssh n00007 "]),
            case("throttle:n00050.f0.a", "n00050.f0.a", &["ssh n00050 "]),
            case(
                "mtu1500:n00012.f0.a",
                "n00012.f0.a",
                &["ssh n00012 ", "mtu 9000"],
            ),
            case(
                "mtu1500:n00040.f0",
                "n00040.f0",
                &["ssh n00040 ", "mtu 9000"],
            ),
            case("dead-host:n00003", "sshd on n00003", &["n00003"]),
            case("dead-host:n00061", "sshd on n00061", &["n00061"]),
            case("server-dies:n00020", "test tools on n00020", &["n00020"]),
            case("server-dies:n00033", "test tools on n00033", &["n00033"]),
            case("nccl-socket:n00001", "NCCL on n00001", &["n00001"]),
            case("nccl-socket:n00064", "NCCL on n00064", &["n00064"]),
            case(
                "rstp-block:sw-00-sw-01",
                "ISL sw-00-sw-01",
                &["sw-00", "sw-01"],
            ),
            case(
                "rstp-block:sw-01-sw-00",
                "ISL sw-00-sw-01",
                &["sw-00", "sw-01"],
            ),
        ],
    )
    .await;
}

/// With no fault, every shipped plan and example is green on the simulated fabric: no finding.
#[tokio::test]
async fn every_plan_and_example_is_green_without_a_fault() {
    let mut red = Vec::new();
    for dir in ["plans", "examples"] {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        for p in files {
            let plan = support::load_plan(&p);
            let r = run_plan(&plan, &[]).await;
            if r.summary.exit_code != 0 || !r.findings.is_empty() || r.summary.warn > 0 {
                let found: Vec<String> = r
                    .findings
                    .iter()
                    .map(|f| format!("{} {}: {}", f.outcome.as_str(), f.label, f.seen))
                    .collect();
                red.push(format!("{}: {} {found:#?}", p.display(), r.summary.verdict));
            }
            // and the model agrees with the healthy fabric: every measured flow within 20% of
            // what it expects (a capacity model that caps a healthy half is no model)
            for v in r.jobs.iter().flat_map(|j| &j.verdicts) {
                if let (Some(m), Some(e)) = (v.measured, v.expected)
                    && v.unit == "Gb/s"
                    && !(0.8..=1.2).contains(&(m / e))
                {
                    red.push(format!(
                        "{}: {} measured {m:.1} of {e:.1} expected",
                        p.display(),
                        v.gate
                    ));
                }
            }
        }
    }
    assert!(red.is_empty(), "{}", red.join("\n"));
}

/// Every fault kind that applies, on every shipped plan and example, on a node that is not the
/// first (the first rank is never evidence by itself): one finding per fault, naming the part
/// struck; and a healthy run's coverage is said.
#[tokio::test]
async fn every_fault_kind_on_every_plan_and_example_is_one_finding() {
    let mut wrong = Vec::new();
    for dir in ["plans", "examples"] {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        for p in files {
            let plan = support::load_plan(&p);
            let healthy = run_plan(&plan, &[]).await;
            let Some(cov) = healthy.coverage.as_ref().filter(|c| !c.line().is_empty()) else {
                wrong.push(format!("{}: no coverage said", p.display()));
                continue;
            };
            // a half no test measures: a throttle there is invisible, and the run says so
            if let Some(unseen) = cov
                .not_measured
                .iter()
                .find(|n| n.matches('.').count() == 2)
            {
                let r = run_plan(&plan, &[format!("throttle:{unseen}").as_str()]).await;
                let said = r
                    .coverage
                    .as_ref()
                    .is_some_and(|c| c.not_measured.contains(unseen));
                if r.summary.exit_code != 0 || !said {
                    wrong.push(format!(
                        "{} throttle on {unseen}, which no test measures: exit {}, not said",
                        p.display(),
                        r.summary.exit_code
                    ));
                }
            }
            let Some(m) = plan
                .segments
                .iter()
                .flat_map(|s| &s.members)
                .filter(|m| m.endpoint.node.0 > 0)
                .collect::<Vec<_>>()
                .into_iter()
                .rfind(|m| !cov.not_measured.contains(&plan.endpoint_name(&m.endpoint)))
            else {
                continue;
            };
            let node = plan.node(m.endpoint.node).name.clone();
            let half = plan.endpoint_name(&m.endpoint);
            let nccl = !fabricplan::kinds::nccl_tests(&plan).is_empty();
            let mut cases: Vec<(String, String, bool)> = vec![
                (format!("throttle:{half}"), half.clone(), false),
                (format!("mtu1500:{half}"), half.clone(), false),
                (
                    format!("dead-host:{node}"),
                    format!("sshd on {node}"),
                    false,
                ),
                (format!("pcie-degraded:{half}"), half.clone(), true),
                (format!("firmware:{node}=28.39.1002"), node.clone(), true),
            ];
            // a link that flapped: its cable where both ends saw it (a direct link), else the
            // half (on a switch the far end is not read); errors on a port: its cable
            let cable = plan.cable_part(&m.endpoint).map(|c| c.name());
            let direct = plan
                .member_of(&m.endpoint)
                .is_some_and(|(seg, me)| me.switch.is_none() && seg.members.len() == 2);
            let flapped = cable.clone().filter(|_| direct).unwrap_or(half.clone());
            cases.push((format!("flap:{half}"), flapped, false));
            cases.push((
                format!("phy-errors:{half}"),
                cable.clone().unwrap_or(half.clone()),
                true,
            ));
            cases.push((
                format!("phy-errors:{half}=0.5"),
                cable.clone().unwrap_or(half.clone()),
                true,
            ));
            // a flap (FAIL) and errors (WARN) on one direct cable's two ends: one finding about
            // the cable, a FAIL, named for what failed (the flap), the errors following it
            if direct && let Some(cable) = &cable {
                let far = plan
                    .member_of(&m.endpoint)
                    .and_then(|(seg, me)| seg.members.iter().find(|o| o != &me))
                    .map(|o| plan.endpoint_name(&o.endpoint));
                if let Some(far) = far {
                    let faults = [format!("flap:{half}"), format!("phy-errors:{far}")];
                    let faults: Vec<&str> = faults.iter().map(String::as_str).collect();
                    let r = run_plan(&plan, &faults).await;
                    let got: Vec<(String, Outcome, Option<Trap>)> = r
                        .findings
                        .iter()
                        .map(|f| (f.name.clone(), f.outcome, f.trap))
                        .collect();
                    if got != [(cable.clone(), Outcome::Fail, Some(Trap::LinkFlapped))] {
                        wrong.push(format!("{} {faults:?}: findings {got:?}", p.display()));
                    }
                }
            }
            if nccl {
                cases.push((
                    format!("nccl-socket:{node}"),
                    format!("NCCL on {node}"),
                    false,
                ));
            }
            for (fault, name, warn) in cases {
                let r = run_plan(&plan, &[fault.as_str()]).await;
                let names: Vec<String> = r.findings.iter().map(|f| f.name.clone()).collect();
                let (exit, outcome) = if warn {
                    (0, Outcome::Warn)
                } else {
                    (1, Outcome::Fail)
                };
                if r.summary.exit_code != exit
                    || names != [name.clone()]
                    || r.findings.iter().any(|f| f.outcome != outcome)
                {
                    wrong.push(format!(
                        "{} {fault}: exit {}, findings {names:?} (wanted {name})",
                        p.display(),
                        r.summary.exit_code
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
