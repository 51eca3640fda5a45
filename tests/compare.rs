//! Over time: `compare` (exit codes, regressions named, the plan's `[regression]` table),
//! `run --baseline` (baseline verdicts, summary.md, baseline.json), `history` (a slow decline
//! marked) and results.json read back. JSON is decoded, not string-compared.

mod support;

use serde_json::{Value, json};
use support::*;

use fabricplan::compare::{self, Thresholds};
use fabricplan::gate::judge::Outcome;

const TWO: &str = "plans/two-spark.toml";
const THROTTLED_GATE: &str = "rdma-bw spark-b.f0.a -> spark-a.f0.a";

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().expect("rows")
}

fn row<'a>(v: &'a Value, subject: &str) -> &'a Value {
    rows(v)
        .iter()
        .find(|r| r["subject"] == subject)
        .unwrap_or_else(|| panic!("no row `{subject}` in {v:#}"))
}

#[test]
fn throttled_half_is_a_regression_and_healthy_runs_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, o) = sim_run(tmp.path(), "healthy", TWO, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (again, o) = sim_run(tmp.path(), "again", TWO, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (throttled, o) = sim_run(
        tmp.path(),
        "throttled",
        TWO,
        &["--sim-fault", "throttle:spark-a.f0.a"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    let (h, t, a) = (
        healthy.to_string_lossy().into_owned(),
        throttled.to_string_lossy().into_owned(),
        again.to_string_lossy().into_owned(),
    );
    let o = fabricplan(&["compare", &h, &t, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["format_version"], 1);
    let r = row(&v, THROTTLED_GATE);
    assert_eq!(r["regression"], true);
    assert_eq!(r["kind"], "rdma-bw");
    assert_eq!(r["round"], "rdma-bw stack.a");
    assert!(r["change_pct"].as_f64().unwrap() < -80.0, "{r}");
    assert!(r["old"].as_f64().unwrap() > 100.0 && r["new"].as_f64().unwrap() < 20.0);
    // the healthy half is not one
    assert_eq!(
        row(&v, "rdma-bw spark-b.f0.b -> spark-a.f0.b")["regression"],
        false
    );
    // NCCL rows are matched by test, collective and size
    let big = rows(&v)
        .iter()
        .find(|r| r["quantity"] == "busbw" && r["size_bytes"] == 134217728)
        .expect("a 128 MiB busbw row");
    assert_eq!(big["subject"], "nccl all_reduce (all_reduce_perf)");
    assert_eq!(big["regression"], true);
    assert!(v["regressions"].as_u64().unwrap() >= 3);

    // the text leads with the cause: its first line names the throttled half and what it
    // explains; every regression, NCCL's per size too, follows from it; it fits 100 columns
    let o = fabricplan(&["compare", &h, &t]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let first = text.lines().next().unwrap();
    let n = v["regressions"].as_u64().unwrap();
    assert!(
        first.starts_with("spark-a.f0.a (firmware throttle): ")
            && first.ends_with(&format!("explains {n} of {n} regression(s)")),
        "{text}"
    );
    assert!(!text.contains("not explained"), "{text}");
    assert!(text.contains("regression: worse than the old run by more than 10%"));
    // every measurement behind --all, the regressions marked
    let o = fabricplan(&["compare", &h, &t, "--all"]);
    let all = stdout(&o);
    assert!(
        all.contains(THROTTLED_GATE) && all.contains("REGRESSION"),
        "{all}"
    );
    assert!(all.contains("busbw at 128 MiB"), "{all}");
    for out in [&text, &all] {
        let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 100, "wider than 100 columns ({widest}):\n{out}");
    }
    // the other way round: what the old run found is no longer found, and the regressions
    // (the halves that shared the throttled one's port now get less) are listed unexplained
    let o = fabricplan(&["compare", &t, &h]);
    let back = stdout(&o);
    assert!(
        back.starts_with("no longer found (the old run's): spark-a.f0.a"),
        "{back}"
    );
    let o = fabricplan(&["compare", &h, &a, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["regressions"], 0);
    assert!(rows(&v).len() > 10);
    assert!(v["only_old"].as_array().unwrap().is_empty());

    // Markdown: a table with the regression in bold
    let o = fabricplan(&[
        "compare",
        &h,
        &format!("{t}/results.json"),
        "--format",
        "markdown",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let md = stdout(&o);
    assert!(
        md.contains("| round | measurement | old | new | change |"),
        "{md}"
    );
    assert!(md.contains("**REGRESSION"), "{md}");
}

#[test]
fn bad_inputs_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", TWO, &[]);
    let h = healthy.to_string_lossy().into_owned();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let not_run = tmp.path().join("x.json");
    std::fs::write(&not_run, r#"{"hello": 1}"#).unwrap();
    let garbage = tmp.path().join("g.json");
    std::fs::write(&garbage, "not json").unwrap();
    for bad in [&empty, &not_run, &garbage, &tmp.path().join("missing")] {
        let b = bad.to_string_lossy().into_owned();
        let o = fabricplan(&["compare", &h, &b]);
        assert_eq!(o.status.code(), Some(2), "{b}: {}", stderr(&o));
        assert!(stderr(&o).contains("error:"), "{}", stderr(&o));
        let o = fabricplan(&["compare", &b, &h]);
        assert_eq!(o.status.code(), Some(2));
    }
    // a [regression] key misspelled is an error, not a default
    let new = tmp.path().join("new");
    copy_run(&healthy, &new);
    let plan = std::fs::read_to_string(new.join("plan.toml")).unwrap();
    std::fs::write(
        new.join("plan.toml"),
        format!("{plan}\n[regression]\nrdma-bandwidth = \"5%\"\n"),
    )
    .unwrap();
    let o = fabricplan(&["compare", &h, &new.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("rdma-bandwidth"), "{}", stderr(&o));
}

#[test]
fn regression_table_of_the_new_runs_plan_and_max_drop() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", TWO, &[]);
    let h = healthy.to_string_lossy().into_owned();
    // 7% less on one half, 15% more latency on the other: within the 10% default for the
    // bandwidth, beyond it for the latency
    let new = tmp.path().join("new");
    copy_run(&healthy, &new);
    let mut r = json(&new.join("results.json"));
    scale_gate(&mut r, THROTTLED_GATE, 0.93);
    scale_gate(&mut r, "rdma-lat spark-b.f0.b -> spark-a.f0.b", 1.15);
    write_json(&new.join("results.json"), &r);
    let n = new.to_string_lossy().into_owned();
    let o = fabricplan(&["compare", &h, &n, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(row(&v, THROTTLED_GATE)["regression"], false);
    let lat = row(&v, "rdma-lat spark-b.f0.b -> spark-a.f0.b");
    assert_eq!(lat["regression"], true, "a latency regresses by rising");
    assert_eq!(lat["higher_is_better"], false);

    // the plan allows 20% on latency and 5% on bandwidth: now the bandwidth is the regression
    let plan = std::fs::read_to_string(new.join("plan.toml")).unwrap();
    std::fs::write(
        new.join("plan.toml"),
        format!("{plan}\n[regression]\nrdma-bw = \"5%\"\nrdma-lat = \"20%\"\n"),
    )
    .unwrap();
    let o = fabricplan(&["compare", &h, &n, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(row(&v, THROTTLED_GATE)["regression"], true);
    assert_eq!(row(&v, THROTTLED_GATE)["max_drop_pct"], 5.0);
    assert_eq!(
        row(&v, "rdma-lat spark-b.f0.b -> spark-a.f0.b")["regression"],
        false
    );
    assert_eq!(v["thresholds"]["per_metric"]["rdma-lat"], 20.0);

    // --max-drop applies to what the table does not name
    std::fs::write(new.join("plan.toml"), &plan).unwrap();
    let o = fabricplan(&["compare", &h, &n, "--max-drop", "20%", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = fabricplan(&["compare", &h, &n, "--max-drop", "5"]);
    assert_eq!(o.status.code(), Some(1));
}

/// The plan being run carries its own `[regression]` table: it validates, and
/// `run --baseline` judges with it.
#[test]
fn run_judges_against_the_baseline_with_the_plans_own_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", TWO, &[]);
    let h = healthy.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(TWO).unwrap();
    let lenient = tmp.path().join("lenient.toml");
    std::fs::write(
        &lenient,
        format!("{text}\n[regression]\nrdma-bw = \"95%\"\n"),
    )
    .unwrap();
    let l = lenient.to_string_lossy().into_owned();
    let o = fabricplan(&["validate", &l]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let gate_vs = format!("{THROTTLED_GATE} vs baseline");
    let baseline_outcome = |run: &std::path::Path| -> String {
        json(&run.join("results.json"))["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|j| j["verdicts"].as_array().unwrap())
            .find(|v| v["gate"] == gate_vs.as_str())
            .map(|v| v["outcome"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no `{gate_vs}` verdict"))
    };
    let throttled = ["--sim-fault", "throttle:spark-a.f0.a", "--baseline", &h];
    // a throttled half drops ~84%: a regression at the 10% default...
    let (strict, _) = sim_run(tmp.path(), "strict", TWO, &throttled);
    assert_eq!(baseline_outcome(&strict), "WARN");
    // ...and none where the plan allows 95% on rdma-bw (its own gate still fails it)
    let (loose, o) = sim_run(tmp.path(), "loose", &l, &throttled);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(baseline_outcome(&loose), "OK");
}

#[test]
fn different_plans_compare_on_what_they_share() {
    let tmp = tempfile::tempdir().unwrap();
    let (two, _) = sim_run(tmp.path(), "two", TWO, &[]);
    let other = tmp.path().join("other");
    copy_run(&two, &other);
    // another plan that measured only half a's bandwidth, and something more
    let mut r = json(&other.join("results.json"));
    r["plan"] = json!("two-spark-lab");
    let jobs: Vec<Value> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["job"] == "rdma-bw-r001-j01" || j["kind"] == "rdma-lat")
        .cloned()
        .collect();
    let mut extra = jobs[0].clone();
    extra["round_name"] = json!("extra round");
    r["jobs"] = Value::Array([jobs, vec![extra]].concat());
    write_json(&other.join("results.json"), &r);
    let o = fabricplan(&[
        "compare",
        &two.to_string_lossy(),
        &other.to_string_lossy(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(rows(&v).len(), 3, "{v:#}");
    assert!(v["notes"][0].as_str().unwrap().contains("different plans"));
    assert!(!v["only_old"].as_array().unwrap().is_empty());
    assert_eq!(v["only_new"][0]["round"], "extra round");
    let o = fabricplan(&["compare", &two.to_string_lossy(), &other.to_string_lossy()]);
    assert!(
        stdout(&o).contains("note: only in the old run"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn run_with_a_baseline_warns_on_a_drop_and_shows_the_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", TWO, &[]);
    let h = healthy.to_string_lossy().into_owned();
    let (t, o) = sim_run(
        tmp.path(),
        "throttled",
        TWO,
        &[
            "--sim-fault",
            "throttle:spark-a.f0.a",
            "--baseline",
            &h,
            "--all",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    // one broken part: the regressions follow from the throttled half, the sum's too
    assert!(
        out.contains("what to fix (1):\n  1. FAIL spark-a.f0.a"),
        "{out}"
    );
    // the terminal's table (--all): the baseline verdict under the gate, a WARN with the old
    // value, counted as `follow`: it follows from the throttled half
    let lines: Vec<&str> = out.lines().collect();
    let at = (0..lines.len())
        .position(|i| {
            let two = format!("{} {}", lines[i], lines.get(i + 1).unwrap_or(&""));
            lines[i].starts_with("follow")
                && lines[i].contains(THROTTLED_GATE)
                && two.contains("baseline")
        })
        .unwrap_or_else(|| panic!("no baseline line:\n{out}"));
    let block: Vec<&str> = out.lines().skip(at).take(4).collect();
    assert!(
        block.iter().any(|l| l.contains("baseline"))
            && block
                .iter()
                .any(|l| l.contains("regression against baseline: was 111.52 Gb/s")),
        "{block:#?}"
    );
    let r = json(&t.join("results.json"));
    let v = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["verdicts"].as_array().unwrap())
        .find(|v| v["gate"] == format!("{THROTTLED_GATE} vs baseline"))
        .expect("a baseline verdict");
    assert_eq!(v["outcome"], "WARN");
    assert_eq!(v["trap_name"], "regression against baseline");
    assert_eq!(v["expected"], 111.52);
    assert!(v["detail"].as_str().unwrap().starts_with("was 111.52 Gb/s"));
    assert_eq!(v["metric"], Value::Null, "not a measurement");
    // evidence: the baseline's results, summary.md's section, the report
    assert_eq!(
        json(&t.join("baseline.json"))["run_id"],
        json(&healthy.join("results.json"))["run_id"]
    );
    let md = std::fs::read_to_string(t.join("summary.md")).unwrap();
    assert!(md.contains("## Against the baseline"), "{md}");
    assert!(
        md.contains(&format!(
            "| {THROTTLED_GATE} | WARN | 111.52 Gb/s | 12.66 Gb/s | -88.6% |"
        )),
        "{md}"
    );
    assert!(t.join("report.html").is_file());

    // healthy against healthy: every baseline verdict OK, still green
    let (g, o) = sim_run(tmp.path(), "green", TWO, &["--baseline", &h]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let r = json(&g.join("results.json"));
    assert_eq!(r["summary"]["verdict"], "ALL GREEN");
    let n = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["verdicts"].as_array().unwrap())
        .filter(|v| v["gate"].as_str().unwrap().ends_with(" vs baseline"))
        .count();
    assert!(n >= 9, "{n}");

    // a baseline that is not a run stops the run before it starts
    let (x, o) = sim_run(tmp.path(), "never", TWO, &["--baseline", "Cargo.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!x.exists());
}

/// DOMAIN: a link at 100 Gb/s that was 111 is a WARN against its baseline even though it clears
/// the absolute gate (80% of 111.9).
#[test]
fn baseline_verdicts_api() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", TWO, &[]);
    let text = std::fs::read_to_string(healthy.join("results.json")).unwrap();
    let old = compare::parse_results(&text).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    scale_gate(&mut v, THROTTLED_GATE, 100.0 / 111.52);
    let new = compare::parse_results(&v.to_string()).unwrap();
    let out = compare::baseline_verdicts(&new, &old, &Thresholds::default());
    let (job, w) = out
        .iter()
        .find(|(_, v)| v.gate == format!("{THROTTLED_GATE} vs baseline"))
        .unwrap();
    assert_eq!(job, "rdma-bw-r001-j01");
    assert_eq!(w.outcome, Outcome::Warn);
    assert_eq!(w.measured, Some(100.0));
    assert_eq!(w.expected, Some(111.52));
    assert!(
        w.detail
            .contains("was 111.52 Gb/s, now 100.00 Gb/s (-10.3%)"),
        "{}",
        w.detail
    );
    // the absolute gate itself still passes
    let own = &new
        .jobs
        .iter()
        .find(|j| j.job == "rdma-bw-r001-j01")
        .unwrap()
        .verdicts[0];
    assert_eq!(own.outcome, Outcome::Ok);
    // every other gate held
    assert!(
        out.iter()
            .filter(|(_, v)| v.gate != w.gate)
            .all(|(_, v)| v.outcome == Outcome::Ok),
        "{out:#?}"
    );
    // applied: the run is PASS with a warning, and compare's entries ignore them
    let mut judged = new.clone();
    compare::baseline::apply(&mut judged, out.clone());
    assert_eq!(judged.summary.warn, 1);
    assert!(judged.summary.verdict.starts_with("PASS with 1 warning"));
    assert_eq!(
        compare::entries(&judged).len(),
        compare::entries(&new).len()
    );
}

#[test]
fn results_json_reads_back_unchanged_and_tolerates_new_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let (sw, o) = sim_run(tmp.path(), "sw", "plans/switched-6.toml", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(sw.join("results.json")).unwrap();
    let r = compare::parse_results(&text).unwrap();
    let back = serde_json::to_value(&r).unwrap();
    let orig: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, orig, "results.json round-trips");
    // fields a later version adds are ignored; optional ones may be missing
    let mut v = orig.clone();
    v["escalations"] = json!([{"element": "isl-1"}]);
    v["jobs"][0]["attempts"] =
        json!([{"attempt": 1, "measured": 1.0, "outcome": "OK", "detail": "", "new": true}]);
    v["jobs"][0]["direction"] = json!("forward");
    v["jobs"][0].as_object_mut().unwrap().remove("tool_seconds");
    v["jobs"][0].as_object_mut().unwrap().remove("counters");
    v.as_object_mut().unwrap().remove("rounds");
    let r2 = compare::parse_results(&v.to_string()).unwrap();
    assert_eq!(r2.jobs.len(), r.jobs.len());
    assert!(r2.rounds.is_empty() && r2.jobs[0].counters.is_empty());
    assert!(compare::parse_results(r#"{"plan": "x"}"#).is_err());
}

#[test]
fn history_marks_a_slow_decline() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "seed", TWO, &[]);
    let runs = tmp.path().join("runs").join("two-spark");
    let base = json(&healthy.join("results.json"));
    // half a loses a little every run; half b wanders within noise; one run skipped latency
    // half a loses 3% a run (12% in all: beyond the 10% compare calls a regression); half b
    // drifts up to 4% worse, inside it
    for (i, (a, b)) in [
        (1.0, 1.0),
        (0.97, 0.99),
        (0.94, 0.97),
        (0.91, 0.985),
        (0.88, 0.96),
    ]
    .iter()
    .enumerate()
    {
        let d = runs.join(format!("2026110{i}T000000Z"));
        std::fs::create_dir_all(&d).unwrap();
        let mut r = base.clone();
        r["started_unix_ms"] = json!(1_790_000_000_000u64 + i as u64 * 86_400_000);
        r["run_id"] = json!(format!("two-spark-{i}"));
        scale_gate(&mut r, THROTTLED_GATE, *a);
        scale_gate(&mut r, "rdma-bw spark-b.f0.b -> spark-a.f0.b", *b);
        write_json(&d.join("results.json"), &r);
    }
    // a folder that is not a run is passed over
    std::fs::create_dir_all(runs.join("notes")).unwrap();
    let dir = runs.to_string_lossy().into_owned();
    let o = fabricplan(&["history", &dir, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 5);
    assert_eq!(v["runs"][0]["run_id"], "two-spark-0");
    let series = |s: &str| {
        v["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["subject"] == s)
            .cloned()
            .unwrap()
    };
    let a = series(THROTTLED_GATE);
    let vals: Vec<f64> = a["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(vals.len(), 5);
    assert!(vals.windows(2).all(|w| w[1] < w[0]), "{vals:?}");
    assert_eq!(a["trend"]["declining"], true);
    assert!(a["trend"]["first_to_last_pct"].as_f64().unwrap() < -5.0);
    assert!(a["trend"]["slope_pct_per_run"].as_f64().unwrap() < 0.0);
    assert_eq!(
        series("rdma-bw spark-b.f0.b -> spark-a.f0.b")["trend"]["declining"],
        false
    );
    assert_eq!(v["declining"], 1);

    let o = fabricplan(&["history", &dir]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    // the rule is said, the decline listed first, and it all fits 100 columns
    assert!(
        text.contains("the rule compare calls a regression") && text.contains("10%"),
        "{text}"
    );
    assert!(text.contains("1 declining of"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("  {THROTTLED_GATE}")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("111.52 -> 98.14"), "{line}");
    assert!(text.contains("DECLINING"), "{text}");
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 100, "wider than 100 columns ({widest}):\n{text}");
    // compare of the first and last runs calls the same one a regression, and only it
    let (first, last) = (runs.join("20261100T000000Z"), runs.join("20261104T000000Z"));
    let o = fabricplan(&[
        "compare",
        &first.to_string_lossy(),
        &last.to_string_lossy(),
        "--format",
        "json",
    ]);
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(c["regressions"], 1, "{c}");
    assert_eq!(row(&c, THROTTLED_GATE)["regression"], true);
    // a looser rule declines nothing
    let o = fabricplan(&["history", &dir, "--max-drop", "15%", "--format", "json"]);
    let loose: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(loose["declining"], 0);

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = fabricplan(&["history", &empty.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn report_command_writes_the_report_again_against_a_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", TWO, &[]);
    let (t, _) = sim_run(
        tmp.path(),
        "throttled",
        TWO,
        &["--sim-fault", "throttle:spark-a.f0.a"],
    );
    std::fs::remove_file(t.join("report.html")).unwrap();
    let o = fabricplan(&[
        "report",
        &t.to_string_lossy(),
        "--baseline",
        &healthy.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(t.join("report.html")).unwrap();
    assert!(html.contains("Against the baseline"));
    assert!(html.contains("regression against baseline"));
    let out = tmp.path().join("elsewhere.html");
    let o = fabricplan(&["report", &t.to_string_lossy(), "-o", &out.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        !std::fs::read_to_string(&out)
            .unwrap()
            .contains("Against the baseline")
    );
    let o = fabricplan(&["report", &tmp.path().to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
}

/// On every plan shape, a comparison of a faulted run against a healthy one leads with the
/// finding that explains its regressions, and fits 100 columns with and without `--all`.
#[test]
fn compare_leads_with_causes_on_every_shape() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (plan, fault, part)) in [
        (
            "plans/switched-6.toml",
            "rstp-block:sw-a-sw-b",
            "ISL sw-a-sw-b",
        ),
        ("plans/ring3.toml", "throttle:spark-2.f1.a", "spark-2.f1.a"),
        (
            "examples/rails8.toml",
            "throttle:hgx-03.rail5.a",
            "hgx-03.rail5.a",
        ),
        (
            "examples/all-pairs.toml",
            "mtu1500:spark-b.f0.a",
            "spark-b.f0.a",
        ),
    ]
    .iter()
    .enumerate()
    {
        let (h, o) = sim_run(tmp.path(), &format!("h{i}"), plan, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let (f, o) = sim_run(tmp.path(), &format!("f{i}"), plan, &["--sim-fault", fault]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let (h, f) = (h.to_string_lossy(), f.to_string_lossy());
        for extra in [None, Some("--all")] {
            let mut args = vec!["compare", &*h, &*f];
            args.extend(extra);
            let out = stdout(&fabricplan(&args));
            let first = out.lines().next().unwrap();
            assert!(first.starts_with(&format!("{part} (")), "{plan}:\n{out}");
            let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
            assert!(widest <= 100, "{plan}: {widest} columns:\n{out}");
        }
    }
}
