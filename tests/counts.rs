//! The counts agree: a faulted `--sim` run of every shipped plan and example is counted the same
//! way, with the same five words (OK, WARN, FAIL, follow, not run), by the terminal (its
//! `gates` line, and the preflight and per-test lines that add up to it), results.json
//! (`summary.gates`, and a count of its own verdicts and jobs), summary.md, junit.xml (its gate
//! cases by their status and words) and report.html (its header, and the badges of its table
//! of gates and of the jobs that measured nothing).

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use support::*;

const WORDS: [&str; 5] = ["OK", "WARN", "FAIL", "follow", "not run"];

type Counts = BTreeMap<&'static str, u64>;

fn zero() -> Counts {
    WORDS.iter().map(|w| (*w, 0)).collect()
}

/// `26 OK, 0 WARN, 1 FAIL, 7 follow, 0 not run` (any separator) read back.
fn read_words(text: &str) -> Counts {
    let mut c = zero();
    for w in WORDS {
        let at = text
            .find(&format!(" {w}"))
            .unwrap_or_else(|| panic!("no `{w}` in `{text}`"));
        let n = text[..at]
            .rsplit(|ch: char| !ch.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("no count before `{w}` in `{text}`"));
        c.insert(w, n);
    }
    c
}

/// What results.json holds, counted from its verdicts and jobs (not from its summary).
fn from_verdicts(r: &Value) -> Counts {
    let mut c = zero();
    let add = |c: &mut Counts, v: &Value| {
        let w = match (v["outcome"].as_str().unwrap(), v["follows"].is_string()) {
            ("OK", _) => "OK",
            (_, true) => "follow",
            ("WARN", false) => "WARN",
            _ => "FAIL",
        };
        *c.get_mut(w).unwrap() += 1;
    };
    for v in r["preflight"].as_array().unwrap() {
        add(&mut c, v);
    }
    for j in r["jobs"].as_array().unwrap() {
        let vs = j["verdicts"].as_array().unwrap();
        for v in vs {
            add(&mut c, v);
        }
        if vs.is_empty() {
            let w = if j["status"] == "failed" {
                "FAIL"
            } else {
                "not run"
            };
            *c.get_mut(w).unwrap() += 1;
        }
    }
    for s in r["suspects"].as_array().into_iter().flatten() {
        add(&mut c, &s["verdict"]);
    }
    c
}

/// The terminal's `gates` line, and its preflight and test lines (`rdma-bw  3/6 OK, 1 FAIL,
/// 2 follow   min ...`) added up: both must be the total.
fn from_terminal(out: &str) -> (Counts, Counts) {
    let line = out
        .lines()
        .find(|l| l.starts_with("gates "))
        .unwrap_or_else(|| panic!("no gates line:\n{out}"));
    let total = read_words(line);
    let mut sum = zero();
    let mut seen = 0;
    for l in out.lines() {
        let mut words = l.split_whitespace();
        let (Some(_), Some(frac), Some(ok_word)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        if ok_word.trim_end_matches(',') != "OK" {
            continue;
        }
        let Some((ok, all)) = frac.split_once('/') else {
            continue;
        };
        let (Ok(ok), Ok(all)) = (ok.parse::<u64>(), all.parse::<u64>()) else {
            continue;
        };
        seen += 1;
        let after = &l[l.find(frac).unwrap()..];
        let counts = after.split("   ").next().unwrap();
        let mut rest = 0;
        *sum.get_mut("OK").unwrap() += ok;
        for w in &WORDS[1..] {
            if let Some(at) = counts.find(&format!(" {w}"))
                && let Some(n) = counts[..at]
                    .rsplit(", ")
                    .next()
                    .and_then(|d| d.trim().parse::<u64>().ok())
            {
                *sum.get_mut(w).unwrap() += n;
                rest += n;
            }
        }
        assert_eq!(ok + rest, all, "the line's counts add up to its total: {l}");
    }
    assert!(seen >= 1, "no count line:\n{out}");
    (total, sum)
}

/// junit.xml's gate cases (not the findings suite) by status and words; a big run's passing
/// `N gate(s) OK` case counts N.
fn from_junit(xml: &str) -> Counts {
    let mut c = zero();
    let mut suite = String::new();
    let mut rest = xml;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        if rest.starts_with("<testsuite ") {
            suite = attr(rest, "name");
        }
        if rest.starts_with("<testcase ") && !suite.ends_with(" findings") {
            let name = attr(rest, "name");
            let head_end = rest.find('>').unwrap();
            let body = if rest[..head_end].ends_with('/') {
                ""
            } else {
                &rest[..rest.find("</testcase>").unwrap()]
            };
            let w = if body.contains("<failure") {
                "FAIL"
            } else if body.contains("<skipped") {
                let m = attr(&body[body.find("<skipped").unwrap()..], "message");
                if m.starts_with("follow: ") {
                    "follow"
                } else {
                    assert!(m.starts_with("not run: "), "{m}");
                    "not run"
                }
            } else if body.contains("<system-out>WARN") {
                "WARN"
            } else {
                "OK"
            };
            let n = name
                .strip_suffix(" gate(s) OK (listed in results.json)")
                .map(|n| n.parse().unwrap())
                .unwrap_or(1);
            *c.get_mut(w).unwrap() += n;
        }
        rest = &rest[1..];
    }
    c
}

fn attr(tag: &str, name: &str) -> String {
    let end = tag.find('>').unwrap_or(tag.len());
    let key = format!(" {name}=\"");
    let Some(at) = tag[..end].find(&key) else {
        return String::new();
    };
    let v = &tag[at + key.len()..];
    v[..v.find('"').unwrap()].to_string()
}

/// report.html: its header's counts, and the badges of its table of gates with the jobs that
/// measured nothing (a big run lists only what did not pass: its OK badges are not counted).
fn from_html(html: &str) -> (Counts, Counts) {
    let head = &html[html.find("<div class=\"counts\">").unwrap()..];
    let head = &head[..head.find("</div>").unwrap()];
    let plain: String = head
        .split('<')
        .map(|p| p.split_once('>').map(|(_, t)| t).unwrap_or(p))
        .collect::<Vec<_>>()
        .join("");
    let header = read_words(&plain.replace("&#183;", ","));
    let mut badges = zero();
    let gates = &html[html.find("<section id=\"gates\">").unwrap()..];
    let gates = &gates[..gates.find("</section>").unwrap()];
    let fix = &html[html.find("<section id=\"fix\">").unwrap()..];
    let fix = &fix[..fix.find("</section>").unwrap()];
    for (part, words) in [(gates, &WORDS[..4]), (fix, &["not run"][..])] {
        for w in words {
            *badges.get_mut(w).unwrap() += part.matches(&format!("\">{w}</span>")).count() as u64;
        }
    }
    // the failed jobs that measured nothing are FAILs of the fix section
    *badges.get_mut("FAIL").unwrap() += fix
        .matches("<li class=\"unmeasured\"><span class=\"badge fail\">FAIL</span>")
        .count() as u64;
    (header, badges)
}

fn check(dir: &Path, terminal: &str, what: &str) {
    let r = json(&dir.join("results.json"));
    let want = from_verdicts(&r);
    let summary: Counts = WORDS
        .iter()
        .zip(["ok", "warn", "fail", "follows", "not_run"])
        .map(|(w, k)| (*w, r["summary"]["gates"][k].as_u64().unwrap()))
        .collect();
    assert_eq!(summary, want, "{what}: results.json summary.gates");
    let (total, sum) = from_terminal(terminal);
    assert_eq!(total, want, "{what}: the terminal's gates line\n{terminal}");
    assert_eq!(
        sum, want,
        "{what}: the terminal's lines added up\n{terminal}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let line = md.lines().find(|l| l.starts_with("Gates: ")).unwrap();
    assert_eq!(read_words(line), want, "{what}: summary.md");
    let xml = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(from_junit(&xml), want, "{what}: junit.xml");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let (header, badges) = from_html(&html);
    assert_eq!(header, want, "{what}: report.html's header");
    let big = r["jobs"].as_array().unwrap().len() > 256;
    let mut listed = want.clone();
    if big {
        listed.insert("OK", 0);
    }
    assert_eq!(badges, listed, "{what}: report.html's badges");
}

/// Every shipped plan and example, each with faults that leave something of every kind: a
/// throttled node (FAILs and what follows from them), a host that does not answer (jobs not
/// run), a PCIe link below its maximum (a WARN), and a healthy run.
#[test]
fn counts_agree_on_every_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let mut plans: Vec<String> = Vec::new();
    for d in ["plans", "examples"] {
        let mut v: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| format!("{d}/{}", p.file_name().unwrap().to_string_lossy()))
            .collect();
        v.sort();
        plans.extend(v);
    }
    assert!(plans.len() >= 8, "{plans:?}");
    let mut kinds = zero();
    for (i, plan) in plans.iter().enumerate() {
        let p = load_plan(Path::new(env!("CARGO_MANIFEST_DIR")).join(plan));
        let first = p.nodes.first().unwrap().name.clone();
        let last = p.nodes.last().unwrap().name.clone();
        let throttle = format!("throttle:{first}");
        let dead = format!("dead-host:{last}");
        let pcie = format!("pcie-degraded:{first}");
        let runs = [
            vec![],
            vec![throttle.as_str()],
            vec![dead.as_str()],
            vec![pcie.as_str()],
        ];
        for (j, faults) in runs.iter().enumerate() {
            let mut args = Vec::new();
            for f in faults {
                args.extend(["--sim-fault", f]);
            }
            let (dir, o) = sim_run(tmp.path(), &format!("{i}-{j}"), plan, &args);
            let what = format!("{plan} {faults:?}");
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{what}: {}",
                stderr(&o)
            );
            check(&dir, &stdout(&o), &what);
            let r = json(&dir.join("results.json"));
            for (w, n) in from_verdicts(&r) {
                *kinds.get_mut(w).unwrap() += n;
            }
        }
    }
    // the class, not only the easy case: every word was counted somewhere
    for w in WORDS {
        assert!(kinds[w] > 0, "no run counted any {w}: {kinds:?}");
    }
}
