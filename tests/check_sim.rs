//! `fabricplan check`'s judgement on every plan shape: each node of every shipped plan and
//! example, read through the simulated fabric as the executor reads a real node (the probe,
//! the far-end pings, the neighbour table), is OK when healthy, first and against its last
//! state; a fault on one of its halves is exactly one finding about that half or its cable.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use fabricplan::check::state::State;
use fabricplan::check::{self, Reading, far};
use fabricplan::exec::Transport;
use fabricplan::gate::judge::Outcome;
use fabricplan::plan::{NodeId, Plan};
use fabricplan::sim::SimTransport;

const T: Duration = Duration::from_secs(10);

async fn read(t: &SimTransport, plan: &Plan, node: NodeId, now_ms: u64) -> Reading {
    let n = plan.node(node);
    let probe = t
        .exec(n, fabricplan::discover::PROBE_SCRIPT, T)
        .await
        .expect("probe")
        .stdout;
    let p = fabricplan::discover::probe::parse(&probe);
    let halves = check::resolve(plan, node, &p);
    let sent = far::plan_pings(plan, &fabricplan::kinds::renderer(plan), &halves);
    let mut pings = Vec::new();
    for s in sent {
        let o = t
            .exec(n, &s.command, T)
            .await
            .map(|o| format!("{}{}", o.stdout, o.stderr))
            .map_err(|e| e.to_string());
        pings.push((s, Some(o)));
    }
    let neigh = t.exec(n, "ip -j -4 neigh show", T).await.expect("neigh");
    Reading {
        probe_text: probe,
        pings,
        neighbours: Some(fabricplan::parse::neigh::parse(&neigh.stdout)),
        unix_ms: now_ms,
        deadline_s: 50.0,
        ..Reading::default()
    }
}

fn plans() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["plans", "examples"] {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
        for e in std::fs::read_dir(root).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Two checks of `node` through `t`, the first dated a second before now (the simulated
/// fabric counts `phy-errors` on its own clock since the first probe, at least one error):
/// what each found.
async fn twice(t: &SimTransport, plan: &Plan, node: NodeId) -> (check::Checked, check::Checked) {
    let now = fabricplan::results::now_ms();
    let first = check::judge(plan, node, &read(t, plan, node, now - 1000).await, None);
    let state: Option<State> = first.next.clone();
    let second = check::judge(
        plan,
        node,
        &read(t, plan, node, fabricplan::results::now_ms()).await,
        state.as_ref(),
    );
    (first, second)
}

#[tokio::test]
async fn every_node_of_every_plan_checks_ok_when_healthy() {
    let mut wrong = Vec::new();
    for p in plans() {
        let plan = support::load_plan(&p);
        let t = SimTransport::new(&plan, &[]).unwrap();
        for n in &plan.nodes {
            let (first, second) = twice(&t, &plan, n.id).await;
            for (which, c) in [("first", &first), ("second", &second)] {
                if c.outcome != Outcome::Ok || c.exit_code() != 0 || !c.not_checked.is_empty() {
                    wrong.push(format!(
                        "{} {} ({which}): {} {:?}",
                        p.display(),
                        n.name,
                        c.verdict,
                        c.findings.iter().map(|f| &f.seen).collect::<Vec<_>>()
                    ));
                }
            }
            if second.since_unix_ms != Some(first.unix_ms) {
                wrong.push(format!("{} {}: not against the first", p.display(), n.name));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn a_fault_on_a_half_is_one_finding_about_it() {
    let mut wrong = Vec::new();
    for p in plans() {
        let plan = support::load_plan(&p);
        // the last planned half of the plan's last node
        let Some(m) = plan.segments.iter().flat_map(|s| &s.members).last() else {
            continue;
        };
        let half = plan.endpoint_name(&m.endpoint);
        let cable = plan.cable_part(&m.endpoint).map(|c| c.name());
        let cable_or_half = cable.clone().unwrap_or(half.clone());
        for (fault, parts, outcome) in [
            (
                format!("flap:{half}"),
                vec![cable_or_half.clone()],
                Outcome::Fail,
            ),
            (
                format!("phy-errors:{half}=1000"),
                vec![cable_or_half.clone()],
                Outcome::Warn,
            ),
            (format!("mtu1500:{half}"), vec![half.clone()], Outcome::Fail),
            (
                format!("pcie-degraded:{half}"),
                vec![half.clone()],
                Outcome::Fail,
            ),
        ] {
            let t = SimTransport::new(&plan, std::slice::from_ref(&fault)).unwrap();
            let (_, c) = twice(&t, &plan, m.endpoint.node).await;
            let names: Vec<String> = c.findings.iter().map(|f| f.name.clone()).collect();
            if names != parts || c.outcome != outcome {
                wrong.push(format!(
                    "{} {fault}: {} {names:?} (wanted {parts:?} {})",
                    p.display(),
                    c.verdict,
                    outcome.as_str()
                ));
            }
            let line = check::output::text(&c);
            if !line.lines().last().is_some_and(|l| {
                l.starts_with(&format!("check {}: ", plan.node(m.endpoint.node).name))
            }) {
                wrong.push(format!("{fault}: no verdict line: {line}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
