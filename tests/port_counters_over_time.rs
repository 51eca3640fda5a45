//! Port counters over time, on every shipped plan and example: results.json keeps each half's
//! port counters over the run (and the round that saw a flap), `history` shows a cable whose
//! errors grow run after run, `compare` leads with the finding whose counter grew, and the
//! metrics file of `run --metrics` carries the counters under the family names and help texts of
//! `check --metrics`. Faults: the simulator's `phy-errors:` and `flap:`.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

use fabricplan::results::counters::{
    CARRIER_FAMILY, CARRIER_HELP, PORT_COUNTER_FAMILY, PORT_COUNTER_HELP,
};

/// A measured half on a node that is not the first, its cable's name, and whether its link is
/// direct (a flap is then seen at both ends: the finding is about the cable).
fn a_half(plan: &Path, healthy: &Value) -> (String, Option<String>, bool) {
    let plan = load_plan(plan);
    let unseen: Vec<String> = healthy["coverage"]["not_measured"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let m = plan
        .segments
        .iter()
        .flat_map(|s| &s.members)
        .filter(|m| m.endpoint.node.0 > 0)
        .collect::<Vec<_>>()
        .into_iter()
        .rfind(|m| !unseen.contains(&plan.endpoint_name(&m.endpoint)))
        .expect("a measured half");
    let direct = plan
        .member_of(&m.endpoint)
        .is_some_and(|(seg, me)| me.switch.is_none() && seg.members.len() == 2);
    (
        plan.endpoint_name(&m.endpoint),
        plan.cable_part(&m.endpoint).map(|c| c.name()),
        direct,
    )
}

fn compare_json(old: &Path, new: &Path) -> Value {
    let o = fabricplan(&[
        "compare",
        &old.to_string_lossy(),
        &new.to_string_lossy(),
        "--format",
        "json",
    ]);
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)))
}

fn rows_grown(v: &Value) -> Vec<(String, String)> {
    v["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["grew"] == true)
        .map(|r| {
            (
                r["half"].as_str().unwrap().to_string(),
                r["counter"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_cable_taking_more_errors_run_after_run_is_seen_on_every_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (i, plan) in shipped_plans().iter().enumerate() {
        let p = plan.to_string_lossy().into_owned();
        let runs = tmp.path().join(format!("runs{i}"));
        let (h, o) = sim_run(&runs, "1-healthy", &p, &[]);
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stderr(&o));
        let healthy = json(&h.join("results.json"));
        let (half, cable, _) = a_half(plan, &healthy);
        let part = cable.clone().unwrap_or(half.clone());
        // every half read at both ends; nothing grew on a healthy fabric
        let pc = healthy["port_counters"].as_array().unwrap();
        if pc.is_empty() || !pc.iter().any(|x| x["half"] == half.as_str()) {
            wrong.push(format!("{p}: no port_counters for {half}"));
            continue;
        }
        let (h2, _) = sim_run(&runs, "2-healthy", &p, &[]);
        let v = compare_json(&h, &h2);
        if v["counters_grew"] != 0 {
            wrong.push(format!("{p}: healthy runs grew {:?}", rows_grown(&v)));
        }
        // the same half takes errors, then many more
        let few = format!("phy-errors:{half}=20");
        let many = format!("phy-errors:{half}=200000");
        sim_run(&runs, "3-few", &p, &["--sim-fault", &few]);
        let metrics = tmp.path().join(format!("m{i}.prom"));
        let (worse, o) = sim_run(
            &runs,
            "4-many",
            &p,
            &[
                "--sim-fault",
                &many,
                "--metrics",
                &metrics.to_string_lossy(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stderr(&o));

        // history: the half's symbol errors rise, and nothing else does
        let o = fabricplan(&["history", &runs.to_string_lossy(), "--format", "json"]);
        let hist: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let series: Vec<&Value> = hist["counters"].as_array().unwrap().iter().collect();
        let sym = series
            .iter()
            .find(|s| s["half"] == half.as_str() && s["counter"] == "symbol-errors");
        match sym {
            Some(s) => {
                let vals: Vec<u64> = s["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect();
                if !(vals[0] == 0 && vals[1] == 0 && vals[2] > 0 && vals[3] > vals[2])
                    || s["rising"] != true
                    || s["cable"] != serde_json::json!(cable)
                {
                    wrong.push(format!("{p}: {half} symbol-errors {vals:?} {s}"));
                }
            }
            None => wrong.push(format!("{p}: no symbol-errors series for {half}")),
        }
        let others: Vec<String> = series
            .iter()
            .filter(|s| s["rising"] == true && s["half"] != half.as_str())
            .map(|s| format!("{} {}", s["half"], s["counter"]))
            .collect();
        if !others.is_empty() {
            wrong.push(format!("{p}: rising elsewhere: {others:?}"));
        }
        let text = stdout(&fabricplan(&["history", &runs.to_string_lossy()]));
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{half} symbol-errors")));
        if !line.is_some_and(|l| l.contains("RISING")) {
            wrong.push(format!("{p}: history text:\n{text}"));
        }
        if text.lines().any(|l| l.chars().count() > 100) {
            wrong.push(format!("{p}: history wider than 100 columns"));
        }

        // compare: the finding about the cable leads, with its counter
        let v = compare_json(&h, &worse);
        if !rows_grown(&v).contains(&(half.clone(), "symbol-errors".into())) {
            wrong.push(format!("{p}: compare rows {:?}", rows_grown(&v)));
        }
        let text = stdout(&fabricplan(&[
            "compare",
            &h.to_string_lossy(),
            &worse.to_string_lossy(),
        ]));
        let first = text.lines().next().unwrap_or_default();
        if !(first.starts_with(&format!(
            "{part} (link errors): {half} symbol-errors: 0 -> "
        ))) {
            wrong.push(format!("{p}: compare leads with:\n{text}"));
        }

        // the metrics file: the counters under check's families, and their growth
        let m = std::fs::read_to_string(&metrics).unwrap();
        for family in [
            format!("# HELP {PORT_COUNTER_FAMILY} {PORT_COUNTER_HELP}"),
            format!("# HELP {CARRIER_FAMILY} {CARRIER_HELP}"),
            "# TYPE fabricplan_half_port_counter_run_growth gauge".to_string(),
        ] {
            if !m.contains(&family) {
                wrong.push(format!("{p}: metrics lack `{family}`"));
            }
        }
        let sample = m.lines().find(|l| {
            l.starts_with(&format!("{PORT_COUNTER_FAMILY}{{"))
                && l.contains(&format!("half=\"{half}\""))
                && l.contains("counter=\"symbol-errors\"")
                && l.contains("source=\"run\"")
        });
        if !sample.is_some_and(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() > 0.0) {
            wrong.push(format!("{p}: no symbol-errors sample for {half}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_flap_is_tied_to_its_round_and_compare_leads_with_it_on_every_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (i, plan) in shipped_plans().iter().enumerate() {
        let p = plan.to_string_lossy().into_owned();
        let (h, _) = sim_run(tmp.path(), &format!("h{i}"), &p, &[]);
        let healthy = json(&h.join("results.json"));
        let (half, cable, direct) = a_half(plan, &healthy);
        let part = if direct {
            cable.clone().unwrap()
        } else {
            half.clone()
        };
        let fault = format!("flap:{half}");
        let (f, o) = sim_run(tmp.path(), &format!("f{i}"), &p, &["--sim-fault", &fault]);
        assert_eq!(o.status.code(), Some(1), "{p}: {}", stdout(&o));
        let r = json(&f.join("results.json"));
        // the round and job whose counters saw it, in results.json and the verdict
        let hc = r["port_counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["half"] == half.as_str())
            .cloned()
            .unwrap_or_default();
        let moved = hc["moved_in"].as_array().cloned().unwrap_or_default();
        if moved.is_empty() || moved[0]["counter"] != "carrier_changes" || moved[0]["delta"] != 2 {
            wrong.push(format!("{p}: moved_in {moved:?}"));
        }
        let said = r["preflight"].as_array().unwrap().iter().any(|v| {
            v["gate"] == format!("changed {half}")
                && v["detail"].as_str().unwrap().contains(&format!(
                    "first seen in round `{}`",
                    moved
                        .first()
                        .map(|m| m["round"].as_str().unwrap_or(""))
                        .unwrap_or("")
                ))
        });
        if !said {
            wrong.push(format!("{p}: the flap's verdict does not say its round"));
        }
        let v = compare_json(&h, &f);
        if !rows_grown(&v).contains(&(half.clone(), "carrier_changes".into())) {
            wrong.push(format!("{p}: compare rows {:?}", rows_grown(&v)));
        }
        let text = stdout(&fabricplan(&[
            "compare",
            &h.to_string_lossy(),
            &f.to_string_lossy(),
        ]));
        let first = text.lines().next().unwrap_or_default();
        if !first.starts_with(&format!("{part} (link flapped): "))
            || !first.contains("carrier_changes: 0 -> 2")
        {
            wrong.push(format!("{p}: compare leads with:\n{text}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Pause frames and CNPs rising while bandwidth falls: one finding about the switch on a
/// switched plan, about the sending host's PFC/ECN configuration without one, each with a fix
/// command; and no finding on the halves or their cables.
#[test]
fn congestion_with_low_bandwidth_points_at_the_switch_or_the_hosts_config() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (plan, fault, part, command)) in [
        (
            "plans/switched-6.toml",
            "congestion:sw-a",
            "switch sw-a",
            "ethtool -S",
        ),
        (
            "plans/two-spark.toml",
            "congestion:spark-b",
            "spark-b",
            "sudo mlnx_qos -i",
        ),
        (
            "plans/ring3.toml",
            "congestion:spark-2",
            "spark-2",
            "sudo mlnx_qos -i",
        ),
        (
            "examples/rails8.toml",
            "congestion:rail5-leaf",
            "switch rail5-leaf",
            "ethtool -S",
        ),
    ]
    .iter()
    .enumerate()
    {
        let (d, o) = sim_run(tmp.path(), &format!("c{i}"), plan, &["--sim-fault", fault]);
        assert_eq!(o.status.code(), Some(1), "{plan}: {}", stdout(&o));
        let r = json(&d.join("results.json"));
        let f = r["findings"].as_array().unwrap();
        assert_eq!(f.len(), 1, "{plan}: {f:#?}");
        assert_eq!(f[0]["name"], *part, "{plan}");
        assert_eq!(f[0]["outcome"], "FAIL");
        assert!(
            f[0]["fix_command"].as_str().unwrap().contains(command),
            "{plan}: {}",
            f[0]["fix_command"]
        );
        assert!(f[0]["fix"].as_str().unwrap().contains("PFC"), "{plan}");
        assert!(
            !f[0]["follows"].as_array().unwrap().is_empty(),
            "{plan}: the slow gates follow from it"
        );
        let v = r["preflight"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["gate"] == format!("congestion {part}"))
            .unwrap_or_else(|| panic!("{plan}: no congestion verdict"));
        assert!(
            v["detail"]
                .as_str()
                .unwrap()
                .contains("bandwidth gate(s) through them fell"),
            "{v}"
        );
    }
}

/// The same counters rising while every bandwidth gate passes are congestion control at work:
/// an OK verdict, no finding, the run green.
#[test]
fn congestion_with_good_bandwidth_is_no_finding() {
    let tmp = tempfile::tempdir().unwrap();
    for plan in ["plans/switched-6.toml", "plans/two-spark.toml"] {
        let (d, _) = sim_run(tmp.path(), plan.replace('/', "-").as_str(), plan, &[]);
        let text = std::fs::read_to_string(d.join("results.json")).unwrap();
        let mut r = fabricplan::compare::parse_results(&text).unwrap();
        let h = &mut r.port_counters[0];
        let (half, node) = (h.half.clone(), h.node.clone());
        *h.after.entry("rx-pause".into()).or_insert(0) += 5000;
        *h.after.entry("rp_cnp_handled".into()).or_insert(0) += 700;
        let p = load_plan(plan);
        fabricplan::diagnose::diagnose(&p, &mut r);
        assert!(r.findings.is_empty(), "{plan}: {:#?}", r.findings);
        assert_eq!(r.summary.exit_code, 0);
        let v = r
            .preflight
            .iter()
            .find(|v| v.gate.starts_with("congestion "))
            .unwrap_or_else(|| panic!("{plan}: no congestion verdict"));
        assert_eq!(v.outcome, fabricplan::gate::judge::Outcome::Ok);
        assert!(
            v.detail
                .contains(&format!("{half}: rp_cnp_handled +700, rx-pause +5000")),
            "{}",
            v.detail
        );
        let _ = node;
        // a second diagnosis changes nothing
        let again = r.clone();
        fabricplan::diagnose::diagnose(&p, &mut r);
        assert_eq!(r.preflight.len(), again.preflight.len());
    }
}
