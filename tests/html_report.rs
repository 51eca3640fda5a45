//! report.html: self-contained and escaped (read as text), and laid out in a real browser:
//! headless Chromium loads it from a file, the page's own script writes layout facts into
//! `<body data-facts>` (the verdict's box, the heatmap's cells, errors and policy violations),
//! and `--dump-dom` hands them back. The browser is required unless it is absent and
//! `FABRICPLAN_SKIP_BROWSER=1` (CI installs Debian's chromium).

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::*;

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Some(p) = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        }) {
            return Some(p);
        }
    }
    if std::env::var("FABRICPLAN_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("note: no chromium; browser checks skipped (FABRICPLAN_SKIP_BROWSER=1)");
        return None;
    }
    panic!(
        "no chromium in PATH: install Debian's chromium (as .ci/run does), or set FABRICPLAN_SKIP_BROWSER=1"
    );
}

/// Load `file` in headless Chromium at `w` x `h`; the facts its script wrote, and what the
/// browser said on stderr.
fn facts(browser: &Path, file: &Path, w: u32, h: u32) -> (Value, String) {
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.path().display()),
            &format!("--window-size={w},{h}"),
            "--virtual-time-budget=3000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let start = dom
        .find("data-facts=\"")
        .unwrap_or_else(|| panic!("the page wrote no facts (status {:?}):\n{err}", o.status))
        + "data-facts=\"".len();
    let end = start + dom[start..].find('"').unwrap();
    let raw = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    (serde_json::from_str(&raw).unwrap(), err)
}

/// Every pair a heatmap must show, once: `kind|half|client|server` of each bandwidth verdict (and
/// of a bandwidth pair that failed before it could measure).
fn expected_pairs(results: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for j in results["jobs"].as_array().unwrap() {
        let hosts: Vec<String> = j["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_string())
            .collect();
        for v in j["verdicts"].as_array().unwrap() {
            let gate = v["gate"].as_str().unwrap();
            // bandwidth gates, and bandwidth pairs that failed before measuring
            let unmeasured = v["metric"].is_null()
                && v["measured"].is_null()
                && v["outcome"] == "FAIL"
                && j["kind"].as_str().unwrap().starts_with("rdma-bw")
                && !gate.ends_with(" vs baseline");
            if !matches!(v["metric"].as_str(), Some("rdma-bw" | "rdma-bw-both")) && !unmeasured {
                continue;
            }
            // a half measured alone against its own NIC (loopback) is its node's diagonal cell
            let (src, dst) = match gate.strip_suffix(" loopback") {
                Some(alone) => {
                    let end = alone.split_whitespace().last().unwrap();
                    (end, end)
                }
                None => {
                    let (l, r) = gate.split_once(" -> ").unwrap();
                    (
                        l.split_whitespace().last().unwrap(),
                        r.split_whitespace().next().unwrap(),
                    )
                }
            };
            let node = |e: &str| {
                hosts
                    .iter()
                    .find(|h| e.starts_with(&format!("{h}.")))
                    .unwrap()
                    .clone()
            };
            let (sn, dn) = (node(src), node(dst));
            let half = src[sn.len() + 1..]
                .split_once('.')
                .map(|(_, h)| h.to_string())
                .unwrap_or_else(|| "both".into());
            out.insert(format!("{}|{half}|{sn}|{dn}", j["kind"].as_str().unwrap()));
        }
    }
    out
}

fn check_in_browser(browser: &Path, dir: &Path, nodes: usize) {
    let results = json(&dir.join("results.json"));
    let file = dir.join("report.html");
    // (a run whose hosts all failed measures no pair: an empty set, and no heatmap cell)
    let want = expected_pairs(&results);
    for (w, h) in [(1400, 1000), (1280, 720)] {
        let (f, err) = facts(browser, &file, w, h);
        let errors = f["errors"].as_array().unwrap();
        assert!(errors.is_empty(), "page errors at {w}x{h}: {errors:?}");
        assert!(
            !err.contains("Uncaught") && !err.contains("Refused to"),
            "the browser complained:\n{err}"
        );
        // the verdict is seen first: inside the viewport without scrolling
        let v = &f["verdict"];
        let vh = f["viewport"]["height"].as_f64().unwrap();
        assert!(
            v["top"].as_f64().unwrap() >= 0.0 && v["bottom"].as_f64().unwrap() <= vh,
            "verdict outside the first screen at {w}x{h}: {f}"
        );
        let mut verdict = results["summary"]["verdict"].as_str().unwrap().to_string();
        if results["simulated"] == true {
            verdict.push_str(" (simulated)");
        }
        assert_eq!(f["verdict_text"], verdict.as_str());
        // and the first thing to fix starts on the first screen too
        if results["summary"]["fail"].as_u64().unwrap() > 0 {
            assert!(f["fix"]["top"].as_f64().unwrap() < vh, "{f}");
        }
        // one cell per measured pair, no more
        let cells: Vec<String> = f["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        let got: BTreeSet<String> = cells.iter().cloned().collect();
        assert_eq!(cells.len(), got.len(), "a pair drawn twice: {cells:?}");
        assert_eq!(got, want);
        // no sideways scrolling
        assert!(
            f["scroll_width"].as_f64().unwrap() <= f["viewport"]["width"].as_f64().unwrap(),
            "wider than the window at {w}x{h}: {f}"
        );
        assert_eq!(f["fabric_nodes"], nodes);
        let nccl = results["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["kind"] == "nccl")
            .count();
        assert_eq!(f["nccl_charts"], nccl);
    }
}

#[test]
fn throttled_run_in_a_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let (healthy, _) = sim_run(tmp.path(), "healthy", "plans/two-spark.toml", &[]);
    let (t, o) = sim_run(
        tmp.path(),
        "throttled",
        "plans/two-spark.toml",
        &[
            "--sim-fault",
            "throttle:spark-a.f0.a",
            "--baseline",
            &healthy.to_string_lossy(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let html = std::fs::read_to_string(t.join("report.html")).unwrap();
    self_contained(&html);
    assert!(html.contains("firmware throttle"));
    // what to fix: one broken part, the throttled half; the regressions against the baseline
    // follow from it
    assert_eq!(html.matches("<div class=\"fix-group").count(), 1, "{html}");
    assert!(html.contains("<div class=\"fix-group fail\">"));
    // the command's words are spans that never break (a line breaks between words only)
    assert!(html.contains(
        "<code class=\"cmd\"><span class=\"t\">ssh</span> <span class=\"t\">spark-a</span> \
         <span class=\"t\">sudo</span> <span class=\"t\">mlxfwmanager</span> \
         <span class=\"t\">--online</span> <span class=\"t\">-u</span></code>"
    ));
    let Some(b) = chromium() else { return };
    check_in_browser(&b, &t, 2);
    let (f, _) = facts(&b, &t.join("report.html"), 1400, 1000);
    assert_eq!(f["fix_groups"].as_u64().unwrap(), 1, "{f}");
    assert!(
        f["fabric_marked"].as_u64().unwrap() >= 1,
        "the throttled link is marked: {f}"
    );
}

#[test]
fn switched_and_ring_runs_in_a_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let (sw, o) = sim_run(
        tmp.path(),
        "sw",
        "plans/switched-6.toml",
        &["--sim-fault", "rstp-block:sw-a-sw-b"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let html = std::fs::read_to_string(sw.join("report.html")).unwrap();
    self_contained(&html);
    // the ISL every cross-switch flow crossed is named on its bars, and marked failed
    assert!(
        html.contains("via sw-a-sw-b sw-b &#8594; sw-a"),
        "ISL per flow"
    );
    assert!(html.contains("fab-isl fab-fail"));
    // a tooltip's lines are lines (the ISL's: itself, its count, each flow that failed over
    // it), never a literal `\n`
    let titles: Vec<&str> = html
        .split("<title>")
        .skip(1)
        .filter_map(|t| t.split("</title>").next())
        .collect();
    assert!(titles.iter().all(|t| !t.contains("\\n")), "{titles:#?}");
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("ISL sw-a-sw-b") && t.lines().count() >= 3),
        "{titles:#?}"
    );
    let (ring, o) = sim_run(tmp.path(), "ring", "plans/ring3.toml", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    self_contained(&std::fs::read_to_string(ring.join("report.html")).unwrap());
    let Some(b) = chromium() else { return };
    check_in_browser(&b, &sw, 6);
    check_in_browser(&b, &ring, 3);
}

#[test]
fn unreachable_host_in_a_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, o) = sim_run(
        tmp.path(),
        "dead",
        "plans/two-spark.toml",
        &["--sim-fault", "dead-host:spark-b"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    self_contained(&html);
    assert!(html.contains("host unreachable"));
    assert!(html.contains("not measured: spark-b is unreachable"));
    let Some(b) = chromium() else { return };
    check_in_browser(&b, &d, 2);
}

/// Nothing fetched from anywhere: no URL, no external stylesheet, font or script.
fn self_contained(html: &str) {
    for bad in [
        "http://", "https://", "<link", "@import", "url(", "src=", "<iframe", "<object",
    ] {
        assert!(!html.contains(bad), "report.html has `{bad}`");
    }
    assert!(html.contains("Content-Security-Policy"));
    assert_eq!(html.matches("<script>").count(), 1, "one inline script");
}

#[test]
fn text_from_plans_and_hosts_is_escaped() {
    use fabricplan::gate::judge::{Outcome, Verdict};
    use fabricplan::gate::trap::Trap;
    let tmp = tempfile::tempdir().unwrap();
    let (d, _) = sim_run(tmp.path(), "x", "plans/two-spark.toml", &[]);
    let text = std::fs::read_to_string(d.join("results.json")).unwrap();
    let mut r = fabricplan::compare::parse_results(&text).unwrap();
    r.run_id = "<script>alert(1)</script>".into();
    r.plan = "p\"><img src=x onerror=alert(2)>".into();
    let mut v = Verdict::check(
        "site <b>gate</b>\u{1b}[2J",
        Outcome::Fail,
        "</title><script>alert(3)</script>",
        Some(Trap::Site),
    );
    v.trap_name = Some("<svg onload=alert(4)>".into());
    v.fix = Some("a & b".into());
    r.preflight.push(v);
    r.jobs[0].reason = Some("<iframe>".into());
    r.summarize();
    let html = fabricplan::report::html::render(&fabricplan::report::html::Inputs {
        results: &r,
        plan: None,
        plan_note: None,
        baseline: None,
    })
    .expect("the page renders");
    for bad in [
        "<script>alert",
        "<img",
        "<b>gate",
        "<svg onload",
        "<iframe",
        "\u{1b}",
    ] {
        assert!(!html.contains(bad), "unescaped `{bad}`");
    }
    assert!(html.contains("&lt;svg onload=alert(4)&gt;"));
    assert!(html.contains("a &amp; b"));
    assert!(html.contains("\\x1b[2J"));
    assert!(html.contains("No picture"), "no plan: said, not drawn");
}

/// `file` as headless Chromium draws its first screen at `w` x `h`, as a PNG at `png`.
fn screenshot(browser: &Path, file: &Path, w: u32, h: u32, png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", profile.path().display()),
            &format!("--window-size={w},{h}"),
            "--virtual-time-budget=3000",
            &format!("--screenshot={}", png.display()),
        ])
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("run chromium");
    let bytes = std::fs::read(png).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 2000,
        "{png:?}"
    );
}

/// The page reads at any width: from a phone's 360 px to a wide screen nothing is wider than
/// the window (a wide figure or table scrolls in its own box), the verdict and the first thing
/// to fix (its part, what was seen, its fix) are whole on the first screen, no word of a
/// command is broken across lines, and no style breaks a word anywhere. The first screens of a
/// healthy and a faulted report at 360 and 1400 px are saved (into docs/src/img with
/// `FABRICPLAN_UPDATE_SCREENSHOTS=1`).
#[test]
fn reads_at_any_width() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = [
        ("healthy", "plans/switched-6.toml", vec![]),
        (
            "faulted",
            "plans/switched-6.toml",
            vec!["--sim-fault", "rstp-block:sw-a-sw-b"],
        ),
        (
            "throttled",
            "plans/two-spark.toml",
            vec!["--sim-fault", "throttle:spark-a.f0.a"],
        ),
        (
            "ring",
            "plans/ring3.toml",
            vec!["--sim-fault", "dead-host:spark-3"],
        ),
        (
            "rails",
            "examples/rails8.toml",
            vec!["--sim-fault", "mtu1500:hgx-02.rail3"],
        ),
    ];
    let mut dirs = Vec::new();
    for (name, plan, extra) in &runs {
        let (d, o) = sim_run(tmp.path(), name, plan, extra);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        let html = std::fs::read_to_string(d.join("report.html")).unwrap();
        for bad in [
            "overflow-wrap:anywhere",
            "word-break:break-all",
            "nowrap}#verdict",
        ] {
            assert!(!html.contains(bad), "{name}: the style has `{bad}`");
        }
        dirs.push((name, d));
    }
    let Some(b) = chromium() else { return };
    for (name, d) in &dirs {
        let file = d.join("report.html");
        let results = json(&d.join("results.json"));
        for (w, h) in [(360, 740), (420, 860), (768, 1024), (1400, 1000)] {
            let (f, _) = facts(&b, &file, w, h);
            let at = format!("{name} at {w}x{h}");
            assert!(f["errors"].as_array().unwrap().is_empty(), "{at}: {f}");
            let vw = f["viewport"]["width"].as_f64().unwrap();
            let vh = f["viewport"]["height"].as_f64().unwrap();
            assert!(
                f["scroll_width"].as_f64().unwrap() <= vw,
                "{at}: wider than the window: {}",
                f["wider"]
            );
            assert_eq!(f["wider"], serde_json::json!([]), "{at}");
            let v = &f["verdict"];
            assert!(
                v["top"].as_f64().unwrap() >= 0.0
                    && v["bottom"].as_f64().unwrap() <= vh
                    && v["right"].as_f64().unwrap() <= vw,
                "{at}: the verdict is not whole on the first screen: {v}"
            );
            let fix = &f["first_fix"];
            assert!(
                fix["bottom"].as_f64().unwrap() <= vh && fix["right"].as_f64().unwrap() <= vw,
                "{at}: the first thing to fix is not whole on the first screen: {fix}"
            );
            assert_eq!(f["cmd_words_broken"], 0, "{at}: a command broken in a word");
            if results["summary"]["fail"].as_u64().unwrap() > 0 {
                assert!(f["fix_groups"].as_u64().unwrap() >= 1, "{at}");
            }
        }
    }
    // the first screens, as a person sees them
    let shots = tmp.path().join("shots");
    std::fs::create_dir_all(&shots).unwrap();
    let update = std::env::var("FABRICPLAN_UPDATE_SCREENSHOTS").as_deref() == Ok("1");
    for (name, d) in dirs.iter().take(2) {
        for (w, h) in [(360, 740), (1400, 1000)] {
            let png = shots.join(format!("report-{name}-{w}.png"));
            screenshot(&b, &d.join("report.html"), w, h, &png);
            if update {
                let to = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/img");
                std::fs::create_dir_all(&to).unwrap();
                std::fs::copy(&png, to.join(png.file_name().unwrap())).unwrap();
            }
        }
    }
}
