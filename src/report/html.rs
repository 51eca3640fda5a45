//! `report.html`: a run at a glance, one self-contained file (inline CSS and SVG, one inline
//! script that only measures the page; no fetch, font or script from anywhere else, which its
//! Content-Security-Policy enforces) that opens from a file share or a CI artifact.
//!
//! In order: the verdict; what to fix (FAIL and WARN verdicts grouped by trap, worst first, with
//! the fix); the run against its baseline, when it has one; the node x node bandwidth heatmap
//! (one matrix per kind and half, row the client, column the server, one cell per measured
//! pair, coloured by the fraction of the expected value); per round the measured against the
//! expected value with the ISLs each flow crossed; NCCL bus bandwidth against message size; the
//! fabric as a picture with its failing elements marked; every gate. Every string from the plan
//! or a host is escaped. Pure: results (and the plan, the baseline) in, a string out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use crate::compare::{self, Flow, baseline as base};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::Metric;
use crate::plan::{Endpoint, Plan};
use crate::results::{JobResult, JobStatus, RunResults};
use crate::text::inert;
use crate::topology::Fabric;

/// What a report is made from.
pub struct Inputs<'a> {
    pub results: &'a RunResults,
    /// The plan copied into the run directory, validated; `None` draws no fabric.
    pub plan: Option<&'a Plan>,
    /// Why there is no plan, said in the report.
    pub plan_note: Option<String>,
    /// The baseline run, for its NCCL curves (its per-gate values come from the results' own
    /// baseline verdicts).
    pub baseline: Option<&'a RunResults>,
}

/// HTML text: control characters shown escaped, markup characters as entities.
pub fn esc(s: &str) -> String {
    let s = inert(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn fmt_val(v: f64) -> String {
    base::fmt_val(v)
}

fn class(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Warn => "warn",
        Outcome::Fail => "fail",
    }
}

/// `2026-12-01 11:26:52 UTC`
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86400) as i64;
    let (h, m, s) = ((secs % 86400) / 3600, (secs % 3600) / 60, secs % 60);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
}

/// The script: errors and policy violations kept from the first moment, layout facts written
/// into `<body data-facts>` once the page is laid out (tests read them from the DOM).
const SCRIPT: &str = r#"(function(){var errors=[];var ce=console.error;console.error=function(){errors.push(Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments);};window.addEventListener('error',function(e){errors.push('error: '+(e.message||(e.target&&e.target.outerHTML)||'?'));},true);document.addEventListener('securitypolicyviolation',function(e){errors.push('csp: '+e.violatedDirective+' '+e.blockedURI);});function box(id){var el=document.getElementById(id);if(!el){return null;}var r=el.getBoundingClientRect();return {top:r.top,bottom:r.bottom,left:r.left,right:r.right,width:r.width,height:r.height};}window.addEventListener('load',function(){var cells=[];document.querySelectorAll('.hm-cell').forEach(function(c){cells.push(c.getAttribute('data-pair'));});var f={verdict:box('verdict'),verdict_text:(document.getElementById('verdict')||{}).textContent,fix:box('fix'),viewport:{width:window.innerWidth,height:window.innerHeight},scroll_width:document.documentElement.scrollWidth,cells:cells,fix_groups:document.querySelectorAll('.fix-group').length,rounds:document.querySelectorAll('.round').length,nccl_charts:document.querySelectorAll('.nccl-chart').length,fabric_nodes:document.querySelectorAll('.fab-node').length,fabric_marked:document.querySelectorAll('.fab-fail,.fab-warn').length,errors:errors};document.body.setAttribute('data-facts',JSON.stringify(f));});})();"#;

const STYLE: &str = r#"
:root{--ok:#1a7f37;--warn:#9a6700;--fail:#cf222e;--ink:#1f2328;--mute:#59636e;--line:#d1d9e0;--bg:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:#fff}
main{max-width:1240px;margin:0 auto;padding:16px 24px 48px}
header.top{display:flex;flex-wrap:wrap;align-items:center;gap:12px 24px;padding:14px 18px;border:1px solid var(--line);border-radius:8px;background:var(--bg)}
.id{flex:1 1 420px;min-width:0}
.id h1{font-size:18px;margin:0 0 2px}
.id .meta{color:var(--mute);font-size:12.5px;overflow-wrap:anywhere}
#verdict{font-size:26px;font-weight:700;padding:6px 18px;border-radius:6px;color:#fff;white-space:nowrap}
#verdict.ok{background:var(--ok)}#verdict.warn{background:var(--warn)}#verdict.fail{background:var(--fail)}
.counts{font-size:13px;color:var(--mute)}
.counts b.ok{color:var(--ok)}.counts b.warn{color:var(--warn)}.counts b.fail{color:var(--fail)}
.sim{margin-top:10px;padding:6px 12px;border:1px dashed var(--warn);border-radius:6px;color:var(--warn);font-weight:600;font-size:13px}
h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 6px}
.note{color:var(--mute);font-size:12.5px}
.todo{color:var(--warn);font-size:12.5px}
.badge{display:inline-block;white-space:nowrap;min-width:44px;text-align:center;font-size:11px;font-weight:700;padding:1px 6px;border-radius:10px;color:#fff}
.badge.ok{background:var(--ok)}.badge.warn{background:var(--warn)}.badge.fail{background:var(--fail)}
.fix-group{border:1px solid var(--line);border-left:5px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0}
.fix-group.fail{border-left-color:var(--fail)}.fix-group.warn{border-left-color:var(--warn)}
.fix-group .trap{font-weight:700;font-size:14.5px}
.fix-group .fixtext{margin:4px 0 6px;padding:4px 8px;background:var(--bg);border-radius:4px}
.fix-group ul{margin:4px 0 0;padding-left:20px}
.fix-group li{margin:2px 0;overflow-wrap:anywhere}
.good{padding:10px 14px;border:1px solid var(--line);border-left:5px solid var(--ok);border-radius:6px}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{background:var(--bg);font-weight:600}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.grid{display:flex;flex-wrap:wrap;gap:18px 28px;align-items:flex-start}
figure{margin:0}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
.round{margin:10px 0 14px}
.nccl-chart{display:flex;flex-wrap:wrap;gap:8px 20px;align-items:flex-start;width:100%}
.nccl-chart figcaption{flex:1 1 100%}
.nccl-chart svg{flex:0 0 auto}
.nccl-chart table{flex:1 1 380px;width:auto}
.round h3{margin:0 0 4px}
.legend{display:flex;gap:14px;flex-wrap:wrap;align-items:center;font-size:12px;color:var(--mute);margin:4px 0 8px}
.swatch{display:inline-block;width:14px;height:10px;border-radius:2px;vertical-align:middle;margin-right:4px}
details summary{cursor:pointer;color:var(--mute)}
footer{margin-top:32px;color:var(--mute);font-size:12px}
"#;

/// The report.
pub fn render(i: &Inputs<'_>) -> String {
    let r = i.results;
    let script_hash = {
        use sha2::Digest;
        data_encoding::BASE64.encode(&sha2::Sha256::digest(SCRIPT.as_bytes()))
    };
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{script_hash}'\">\n\
         <meta name=\"generator\" content=\"fabricplan {}\">\n\
         <title>fabricplan: {} &#8212; {}</title>\n<style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head>\n<body>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&r.plan),
        esc(&verdict_line(r)),
    );
    header(&mut h, r);
    fix_list(&mut h, r);
    let ctx = Ctx::new(i);
    baseline_table(&mut h, r);
    heatmaps(&mut h, &ctx);
    rounds(&mut h, &ctx);
    nccl(&mut h, &ctx);
    fabric(&mut h, &ctx);
    all_gates(&mut h, r);
    let _ = writeln!(
        h,
        "<footer>fabricplan {} &#183; from results.json (format version {}) &#183; run directory evidence: results.json, junit.xml, summary.md, jobs/</footer>\n</main>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION"),
        r.format_version
    );
    h
}

fn verdict_line(r: &RunResults) -> String {
    let v = if r.summary.verdict.is_empty() {
        "NO VERDICT".to_string()
    } else {
        r.summary.verdict.clone()
    };
    let v = if r.interrupted {
        format!("INTERRUPTED: {v}")
    } else {
        v
    };
    if r.simulated {
        format!("{v} (simulated)")
    } else {
        v
    }
}

fn run_class(r: &RunResults) -> &'static str {
    if r.summary.fail > 0 || r.summary.exit_code != 0 {
        "fail"
    } else if r.summary.warn > 0 {
        "warn"
    } else {
        "ok"
    }
}

fn header(h: &mut String, r: &RunResults) {
    let dur = r.finished_unix_ms.saturating_sub(r.started_unix_ms) as f64 / 1000.0;
    let s = &r.summary;
    let _ = write!(
        h,
        "<header class=\"top\"><div class=\"id\"><h1>fabricplan &#183; {}</h1>\
         <div class=\"meta\">run {} &#183; {} &#183; over {} &#183; {:.1} s</div></div>\
         <div id=\"verdict\" class=\"{}\">{}</div>\
         <div class=\"counts\"><b class=\"ok\">{} OK</b> &#183; <b class=\"warn\">{} WARN</b> &#183; <b class=\"fail\">{} FAIL</b><br>{} job(s), {} not measured</div>",
        esc(&r.plan),
        esc(&r.run_id),
        utc(r.started_unix_ms),
        esc(&r.transport),
        dur,
        run_class(r),
        esc(&verdict_line(r)),
        s.ok,
        s.warn,
        s.fail,
        s.jobs,
        s.jobs_not_measured,
    );
    h.push_str("</header>\n");
    if r.simulated {
        h.push_str("<div class=\"sim\">SIMULATED FABRIC: a model of the plan, not a measurement of hardware</div>\n");
    }
}

/// FAIL and WARN verdicts grouped by trap, worst first; skipped jobs with their reason.
fn fix_list(h: &mut String, r: &RunResults) {
    h.push_str("<section id=\"fix\"><h2>What to fix</h2>\n");
    struct Group<'a> {
        trap: String,
        worst: Outcome,
        items: Vec<&'a Verdict>,
    }
    let mut groups: Vec<Group<'_>> = Vec::new();
    for v in r.verdicts().filter(|v| v.outcome != Outcome::Ok) {
        let trap = v
            .trap_name
            .clone()
            .unwrap_or_else(|| "no trap named".to_string());
        match groups.iter_mut().find(|g| g.trap == trap) {
            Some(g) => {
                g.worst = g.worst.max(v.outcome);
                g.items.push(v);
            }
            None => groups.push(Group {
                trap,
                worst: v.outcome,
                items: vec![v],
            }),
        }
    }
    groups.sort_by(|a, b| {
        b.worst
            .cmp(&a.worst)
            .then(b.items.len().cmp(&a.items.len()))
    });
    let skipped: Vec<&JobResult> = r
        .jobs
        .iter()
        .filter(|j| j.status != JobStatus::Measured && j.verdicts.is_empty())
        .collect();
    if groups.is_empty() && skipped.is_empty() {
        h.push_str("<div class=\"good\">Nothing to fix: every gate passed.</div>\n");
    }
    for g in &groups {
        let fixes: BTreeSet<&str> = if g.trap == base::TRAP_NAME {
            // each baseline fix repeats its own numbers: one fix for the group, numbers per item
            BTreeSet::from([BASELINE_FIX])
        } else {
            g.items.iter().filter_map(|v| v.fix.as_deref()).collect()
        };
        let _ = write!(
            h,
            "<div class=\"fix-group {}\"><div><span class=\"badge {}\">{}</span> <span class=\"trap\">{}</span> <span class=\"note\">{} gate(s)</span></div>",
            class(g.worst),
            class(g.worst),
            g.worst.as_str(),
            esc(&g.trap),
            g.items.len()
        );
        let one_fix = fixes.len() == 1;
        if let (true, Some(f)) = (one_fix, fixes.iter().next()) {
            let _ = write!(h, "<div class=\"fixtext\"><b>Fix:</b> {}</div>", esc(f));
        }
        h.push_str("<ul>");
        for v in &g.items {
            let measured = v
                .measured
                .map(|m| format!(" &#8212; {} {}", fmt_val(m), esc(&v.unit)))
                .unwrap_or_default();
            let threshold = if v.threshold.is_empty() {
                String::new()
            } else {
                format!(" <span class=\"note\">(gate {})</span>", esc(&v.threshold))
            };
            let detail = if v.detail.is_empty() {
                String::new()
            } else {
                format!("<br><span class=\"note\">{}</span>", esc(&v.detail))
            };
            let fix = match (&v.fix, one_fix) {
                (Some(f), false) => format!("<br><b>Fix:</b> {}", esc(f)),
                _ => String::new(),
            };
            let _ = write!(
                h,
                "<li><span class=\"badge {}\">{}</span> <b>{}</b>{measured}{threshold}{detail}{fix}</li>",
                class(v.outcome),
                v.outcome.as_str(),
                esc(&v.gate)
            );
        }
        h.push_str("</ul></div>\n");
    }
    if !skipped.is_empty() {
        let _ = write!(
            h,
            "<div class=\"fix-group fail\"><div><span class=\"badge fail\">SKIP</span> <span class=\"trap\">not measured</span> <span class=\"note\">{} job(s)</span></div><ul>",
            skipped.len()
        );
        for j in skipped {
            let _ = write!(
                h,
                "<li><b>{} {}</b><br><span class=\"note\">{}</span></li>",
                esc(&j.kind),
                esc(&j.label),
                esc(j.reason.as_deref().unwrap_or("no reason recorded"))
            );
        }
        h.push_str("</ul></div>\n");
    }
    h.push_str("</section>\n");
}

/// The fix of the baseline group in the report (each verdict's own fix repeats its numbers).
const BASELINE_FIX: &str = "find what changed since the baseline run (firmware, driver, NCCL version and settings, cabling, switch configuration, other traffic); `fabricplan compare BASELINE RUN` lists every change";

fn baseline_table(h: &mut String, r: &RunResults) {
    let rows = base::of(r);
    if rows.is_empty() {
        return;
    }
    h.push_str("<section id=\"baseline\"><h2>Against the baseline</h2>\n<table><tr><th>measurement</th><th></th><th class=\"num\">baseline</th><th class=\"num\">now</th><th class=\"num\">change</th><th>allowed</th></tr>\n");
    for (_, v) in rows {
        let gate = v.gate.strip_suffix(base::SUFFIX).unwrap_or(&v.gate);
        let change = match (v.expected, v.measured) {
            (Some(o), Some(n)) => base::fmt_change(compare::change_pct(o, n)),
            _ => "-".into(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(gate),
            class(v.outcome),
            v.outcome.as_str(),
            v.expected
                .map(|x| format!("{} {}", fmt_val(x), esc(&v.unit)))
                .unwrap_or_default(),
            v.measured
                .map(|x| format!("{} {}", fmt_val(x), esc(&v.unit)))
                .unwrap_or_default(),
            change,
            esc(&v.threshold)
        );
    }
    h.push_str("</table></section>\n");
}

/// Shared lookups: node order, baseline values by gate, the plan's endpoints and paths.
struct Ctx<'a> {
    r: &'a RunResults,
    plan: Option<&'a Plan>,
    plan_note: Option<String>,
    fabric: Option<Fabric>,
    baseline: Option<&'a RunResults>,
    nodes: Vec<String>,
    /// Original gate -> the baseline's value.
    was: HashMap<String, f64>,
}

impl<'a> Ctx<'a> {
    fn new(i: &Inputs<'a>) -> Ctx<'a> {
        let r = i.results;
        let mut nodes: Vec<String> = match i.plan {
            Some(p) => p.nodes.iter().map(|n| n.name.clone()).collect(),
            None => Vec::new(),
        };
        for n in compare::node_names(r) {
            if !nodes.contains(&n) {
                nodes.push(n);
            }
        }
        let was = base::of(r)
            .into_iter()
            .filter_map(|(_, v)| {
                let g = v.gate.strip_suffix(base::SUFFIX)?;
                Some((g.to_string(), v.expected?))
            })
            .collect();
        Ctx {
            r,
            plan: i.plan,
            plan_note: i.plan_note.clone(),
            fabric: i.plan.map(Fabric::build),
            baseline: i.baseline,
            nodes,
            was,
        }
    }

    fn endpoint(&self, name: &str) -> Option<Endpoint> {
        let p = self.plan?;
        p.segments
            .iter()
            .flat_map(|s| s.members.iter())
            .map(|m| &m.endpoint)
            .find(|e| p.endpoint_name(e) == name)
            .cloned()
    }

    /// The ISLs a flow crosses, in words (`isl-1 sw-a -> sw-b`); `None` without a plan.
    fn isls(&self, f: &Flow) -> Option<Vec<String>> {
        let (p, fab) = (self.plan?, self.fabric.as_ref()?);
        let halves: Vec<String> = if f.half == "both" {
            ["a", "b"]
                .iter()
                .map(|x| x.to_string())
                .filter(|x| {
                    self.endpoint(&format!("{}.{}.{x}", f.src, f.src_port))
                        .is_some()
                })
                .collect()
        } else {
            vec![f.half.clone()]
        };
        let mut out = Vec::new();
        for half in halves {
            let c = self.endpoint(&format!("{}.{}.{half}", f.src, f.src_port))?;
            let s = self.endpoint(&format!("{}.{}.{half}", f.dst, f.dst_port))?;
            let path = fab.path(p, &c, &s)?;
            for (isl, from) in path.isl_hops() {
                let i = &p.isls[isl.0];
                let to = if i.a == from { i.b } else { i.a };
                let w = format!(
                    "{} {} &#8594; {}",
                    esc(&i.name),
                    esc(&p.switches[from.0].name),
                    esc(&p.switches[to.0].name)
                );
                if !out.contains(&w) {
                    out.push(w);
                }
            }
        }
        Some(out)
    }

    /// The pass bound of `metric` for a value expected at `expected`.
    fn pass_bound(&self, metric: Metric, expected: Option<f64>) -> Option<f64> {
        self.plan?.gate(metric).pass?.resolve(expected)
    }

    fn node_order(&self, n: &str) -> usize {
        self.nodes.iter().position(|x| x == n).unwrap_or(usize::MAX)
    }
}

/// One measured bandwidth verdict with its flow.
struct BwItem<'a> {
    job: &'a JobResult,
    v: &'a Verdict,
    flow: Flow,
}

fn bw_items<'a>(ctx: &Ctx<'a>) -> Vec<BwItem<'a>> {
    let mut out = Vec::new();
    for j in &ctx.r.jobs {
        for v in &j.verdicts {
            // a bandwidth gate, or a bandwidth job's pair that could not be measured at all
            let unmeasured = v.metric.is_none()
                && v.measured.is_none()
                && v.outcome == Outcome::Fail
                && (j.kind == "rdma-bw" || j.kind == "rdma-bw-both")
                && !base::is_baseline_verdict(v);
            if !matches!(v.metric, Some(Metric::RdmaBw | Metric::RdmaBwBoth)) && !unmeasured {
                continue;
            }
            if let Some(flow) = compare::flow_of(&v.gate, &ctx.nodes) {
                out.push(BwItem { job: j, v, flow });
            }
        }
    }
    out
}

/// Hue from red (at 30% of expected and below) to green (at 100%).
fn heat(frac: f64) -> String {
    let t = ((frac - 0.3) / 0.7).clamp(0.0, 1.0);
    let hue = 2.0 + t * 126.0;
    format!("hsl({hue:.0},62%,{}%)", 78.0 - 8.0 * (1.0 - t))
}

fn heatmaps(h: &mut String, ctx: &Ctx<'_>) {
    let items = bw_items(ctx);
    if items.is_empty() {
        return;
    }
    h.push_str("<section id=\"heatmap\"><h2>Bandwidth, node x node</h2>\n<div class=\"legend\"><span>row: client (sends) &#8594; column: server (receives); colour: measured / expected</span>");
    for (label, f) in [
        ("&#8804; 30%", 0.3),
        ("65%", 0.65),
        ("80%", 0.8),
        ("90%", 0.9),
        ("&#8805; 100%", 1.0),
    ] {
        let _ = write!(
            h,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{label}</span>",
            heat(f)
        );
    }
    h.push_str("<span><span class=\"swatch\" style=\"background:#fff;border:2px solid var(--fail)\"></span>FAIL</span><span><span class=\"swatch\" style=\"background:#fff;border:2px solid var(--warn)\"></span>WARN</span></div>\n<div class=\"grid\">\n");
    // matrices: (kind, half) in order of appearance
    let mut mats: Vec<(String, String)> = Vec::new();
    for it in &items {
        let k = (it.job.kind.clone(), it.flow.half.clone());
        if !mats.contains(&k) {
            mats.push(k);
        }
    }
    for (kind, half) in &mats {
        let mine: Vec<&BwItem<'_>> = items
            .iter()
            .filter(|it| &it.job.kind == kind && &it.flow.half == half)
            .collect();
        let mut names: Vec<&str> = mine
            .iter()
            .flat_map(|it| [it.flow.src.as_str(), it.flow.dst.as_str()])
            .collect();
        names.sort_by_key(|n| (ctx.node_order(n), n.to_string()));
        names.dedup();
        let mut cells: BTreeMap<(usize, usize), Vec<&BwItem<'_>>> = BTreeMap::new();
        for it in &mine {
            let (Some(a), Some(b)) = (
                names.iter().position(|n| *n == it.flow.src),
                names.iter().position(|n| *n == it.flow.dst),
            ) else {
                continue;
            };
            cells.entry((a, b)).or_default().push(it);
        }
        let n = names.len();
        let cw = (760.0 / n as f64).clamp(16.0, 76.0);
        let chh = (cw * 0.62).max(16.0);
        let label_w =
            names.iter().map(|s| s.chars().count()).max().unwrap_or(4) as f64 * 7.2 + 12.0;
        let top = 22.0 + if cw < 40.0 { 60.0 } else { 18.0 };
        let w = label_w + cw * n as f64 + 8.0;
        let hh = top + chh * n as f64 + 8.0;
        let what = if half == "both" {
            "both halves, summed".to_string()
        } else {
            format!("half {}", esc(half))
        };
        let _ = write!(
            h,
            "<figure><figcaption>{} &#183; {what}</figcaption><svg class=\"heatmap\" width=\"{w:.0}\" height=\"{hh:.0}\" viewBox=\"0 0 {w:.0} {hh:.0}\" role=\"img\" aria-label=\"{} {what} bandwidth matrix\">",
            esc(kind),
            esc(kind),
        );
        let _ = write!(
            h,
            "<text x=\"{label_w:.0}\" y=\"12\" font-size=\"10.5\" fill=\"#59636e\">server &#8594;</text><text x=\"2\" y=\"{:.0}\" font-size=\"10.5\" fill=\"#59636e\">client &#8595;</text>",
            top - 4.0
        );
        for (ci, name) in names.iter().enumerate() {
            let x = label_w + cw * ci as f64 + cw / 2.0;
            if cw < 40.0 {
                let _ = write!(
                    h,
                    "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10.5\" transform=\"rotate(-55 {x:.1} {:.1})\">{}</text>",
                    top - 4.0,
                    top - 4.0,
                    esc(name)
                );
            } else {
                let _ = write!(
                    h,
                    "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                    top - 5.0,
                    esc(name)
                );
            }
        }
        for (ri, name) in names.iter().enumerate() {
            let y = top + chh * ri as f64 + chh / 2.0 + 4.0;
            let _ = write!(
                h,
                "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
                label_w - 6.0,
                esc(name)
            );
            for ci in 0..n {
                let x = label_w + cw * ci as f64;
                let y0 = top + chh * ri as f64;
                match cells.get(&(ri, ci)) {
                    None => {
                        let fill = if ri == ci { "#eaeef2" } else { "#fff" };
                        let _ = write!(
                            h,
                            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#d1d9e0\"/>",
                            x + 1.0,
                            y0 + 1.0,
                            cw - 2.0,
                            chh - 2.0
                        );
                    }
                    Some(list) => heat_cell(h, ctx, list, x, y0, cw, chh),
                }
            }
        }
        h.push_str("</svg></figure>\n");
    }
    h.push_str("</div></section>\n");
}

#[allow(clippy::too_many_arguments)]
fn heat_cell(
    h: &mut String,
    ctx: &Ctx<'_>,
    list: &[&BwItem<'_>],
    x: f64,
    y0: f64,
    cw: f64,
    chh: f64,
) {
    let worst = list
        .iter()
        .map(|it| it.v.outcome)
        .max()
        .unwrap_or(Outcome::Ok);
    // the weakest measurement of the pair decides the colour
    let frac = list
        .iter()
        .filter_map(|it| Some(it.v.measured? / it.v.expected.filter(|e| *e > 0.0)?))
        .fold(None, |a: Option<f64>, f| Some(a.map_or(f, |a| a.min(f))));
    let fill = match (frac, worst) {
        (Some(f), _) => heat(f),
        (None, Outcome::Fail) => heat(0.0),
        (None, Outcome::Warn) => heat(0.65),
        (None, Outcome::Ok) => heat(1.0),
    };
    let value = list
        .iter()
        .filter_map(|it| it.v.measured)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.min(v))));
    let it0 = list[0];
    let pair = format!(
        "{}|{}|{}|{}",
        it0.job.kind, it0.flow.half, it0.flow.src, it0.flow.dst
    );
    let mut title = String::new();
    for it in list {
        let v = it.v;
        let _ = write!(
            title,
            "{} &#8594; {} (round {}): {}",
            esc(&it.flow.src_endpoint()),
            esc(&it.flow.dst_endpoint()),
            esc(&it.job.round_name),
            v.measured
                .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                .unwrap_or_else(|| "not measured".into()),
        );
        if let (Some(m), Some(e)) = (v.measured, v.expected) {
            let _ = write!(title, ", expected {} ({:.0}%)", fmt_val(e), m / e * 100.0);
        }
        let _ = write!(
            title,
            "; gate {}: {}",
            esc(&v.threshold),
            v.outcome.as_str()
        );
        if let Some(o) = ctx.was.get(&v.gate) {
            let _ = write!(
                title,
                "; baseline {} ({})",
                fmt_val(*o),
                base::fmt_change(v.measured.and_then(|m| compare::change_pct(*o, m)))
            );
        }
        title.push('\n');
    }
    let stroke = match worst {
        Outcome::Fail => "stroke=\"#cf222e\" stroke-width=\"3\"",
        Outcome::Warn => "stroke=\"#9a6700\" stroke-width=\"3\"",
        Outcome::Ok => "stroke=\"#fff\" stroke-width=\"1\"",
    };
    let _ = write!(
        h,
        "<g class=\"hm-cell {}\" data-pair=\"{}\"><title>{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\" fill=\"{fill}\" {stroke}/>",
        class(worst),
        esc(&pair),
        title.trim_end(),
        x + 1.5,
        y0 + 1.5,
        cw - 3.0,
        chh - 3.0
    );
    if cw >= 40.0 {
        let cx = x + cw / 2.0;
        let txt = value.map(fmt_val).unwrap_or_else(|| "&#8212;".into());
        let _ = write!(
            h,
            "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"12\" font-weight=\"600\" text-anchor=\"middle\">{txt}</text>",
            y0 + chh / 2.0
                + (if frac.is_some() && chh >= 40.0 {
                    -1.0
                } else {
                    4.0
                })
        );
        if let (Some(f), true) = (frac, chh >= 40.0) {
            let _ = write!(
                h,
                "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#3d444d\">{:.0}%{}</text>",
                y0 + chh / 2.0 + 12.0,
                f * 100.0,
                if list.len() > 1 {
                    format!(" &#215;{}", list.len())
                } else {
                    String::new()
                }
            );
        }
    }
    h.push_str("</g>");
}

fn rounds(h: &mut String, ctx: &Ctx<'_>) {
    // rounds in order, with their bandwidth and latency verdicts
    let mut order: Vec<(usize, String)> = Vec::new();
    for j in &ctx.r.jobs {
        let k = (j.round, j.round_name.clone());
        if !order.contains(&k) {
            order.push(k);
        }
    }
    let gated = |v: &Verdict| {
        matches!(
            v.metric,
            Some(Metric::RdmaBw | Metric::RdmaBwBoth | Metric::RdmaLat | Metric::Iperf3)
        )
    };
    let any = ctx.r.jobs.iter().any(|j| !compare::is_nccl(j));
    if !any {
        return;
    }
    // one scale per unit across the report, so rounds compare at a glance
    let mut scale: HashMap<String, f64> = HashMap::new();
    for j in &ctx.r.jobs {
        for v in j.verdicts.iter().filter(|v| gated(v)) {
            let pass = v.metric.and_then(|m| ctx.pass_bound(m, v.expected));
            let m = [v.measured, v.expected, ctx.was.get(&v.gate).copied(), pass]
                .into_iter()
                .flatten()
                .fold(0.0, f64::max);
            let e = scale.entry(v.unit.clone()).or_insert(0.0);
            *e = e.max(m);
        }
    }
    h.push_str("<section id=\"rounds\"><h2>Rounds: measured against expected</h2>\n<div class=\"legend\"><span><span class=\"swatch\" style=\"background:var(--ok)\"></span>measured (OK / <span style=\"color:var(--warn)\">WARN</span> / <span style=\"color:var(--fail)\">FAIL</span>)</span><span>&#9646; expected (capacity model)</span><span>&#8942; pass gate</span><span>&#9670; baseline</span></div>\n");
    if ctx.plan.is_none() {
        let _ = writeln!(
            h,
            "<p class=\"note\">ISLs crossed are not shown: {}</p>",
            esc(ctx
                .plan_note
                .as_deref()
                .unwrap_or("the run directory has no plan.toml"))
        );
    }
    for (idx, name) in &order {
        let jobs: Vec<&JobResult> = ctx
            .r
            .jobs
            .iter()
            .filter(|j| j.round == *idx && &j.round_name == name)
            .collect();
        let rows: Vec<(&JobResult, &Verdict)> = jobs
            .iter()
            .flat_map(|j| j.verdicts.iter().filter(|v| gated(v)).map(move |v| (*j, v)))
            .collect();
        let unmeasured: Vec<&&JobResult> = jobs
            .iter()
            .filter(|j| !compare::is_nccl(j) && !j.verdicts.iter().any(gated))
            .collect();
        if rows.is_empty() && unmeasured.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<div class=\"round\"><h3>Round {} &#183; {}</h3>",
            idx + 1,
            esc(name)
        );
        if let Some(rec) = ctx.r.rounds.iter().find(|x| x.index == *idx)
            && let Some(sk) = rec.launch_skew_ms
        {
            let _ = write!(
                h,
                "<div class=\"note\">{} job(s) together; client launch skew {sk:.1} ms</div>",
                rec.jobs.len()
            );
        }
        round_bars(h, ctx, &rows, &scale);
        for j in unmeasured {
            let why = j
                .verdicts
                .iter()
                .find(|v| v.outcome != Outcome::Ok)
                .map(|v| v.detail.as_str())
                .filter(|d| !d.is_empty())
                .or(j.reason.as_deref())
                .unwrap_or("not measured");
            let _ = write!(
                h,
                "<div class=\"note\"><span class=\"badge fail\">{}</span> {} {}: not measured: {}</div>",
                if j.status == JobStatus::Skipped {
                    "SKIP"
                } else {
                    "FAIL"
                },
                esc(&j.kind),
                esc(&j.label),
                esc(why)
            );
        }
        h.push_str("</div>\n");
    }
    h.push_str("</section>\n");
}

fn round_bars(
    h: &mut String,
    ctx: &Ctx<'_>,
    rows: &[(&JobResult, &Verdict)],
    scale: &HashMap<String, f64>,
) {
    if rows.is_empty() {
        return;
    }
    let label_w = 320.0;
    let bar_w = 440.0;
    let right_w = 420.0;
    let row_h = 34.0;
    let w = label_w + bar_w + right_w;
    let hh = row_h * rows.len() as f64 + 4.0;
    let _ = write!(
        h,
        "<svg class=\"bars\" width=\"100%\" viewBox=\"0 0 {w:.0} {hh:.0}\" preserveAspectRatio=\"xMinYMin meet\" role=\"img\">"
    );
    for (i, (_, v)) in rows.iter().enumerate() {
        let y = row_h * i as f64 + 2.0;
        let max = scale.get(&v.unit).copied().unwrap_or(1.0).max(1e-9) * 1.04;
        let x_of = |val: f64| label_w + (val / max).clamp(0.0, 1.0) * bar_w;
        let flow = compare::flow_of(&v.gate, &ctx.nodes);
        let label = match &flow {
            Some(f) => format!(
                "{} &#8594; {}",
                esc(&f.src_endpoint()),
                esc(&f.dst_endpoint())
            ),
            None => esc(&v.gate),
        };
        let via = match flow.as_ref().and_then(|f| ctx.isls(f)) {
            Some(isls) if isls.is_empty() => "no ISL".to_string(),
            Some(isls) => format!("via {}", isls.join(", ")),
            None => String::new(),
        };
        let kind = v.metric.map(|m| m.name()).unwrap_or("");
        let _ = write!(
            h,
            "<g class=\"bar {}\"><title>{}: {}{}; gate {}: {}</title>",
            class(v.outcome),
            esc(&v.gate),
            v.measured
                .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                .unwrap_or_else(|| "not measured".into()),
            v.expected
                .map(|e| format!(", expected {}", fmt_val(e)))
                .unwrap_or_default(),
            esc(&v.threshold),
            v.outcome.as_str()
        );
        let _ = write!(
            h,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\"><tspan fill=\"#59636e\">{}</tspan> {label}</text><text x=\"0\" y=\"{:.1}\" font-size=\"10.5\" fill=\"#59636e\">{}</text>",
            y + 12.0,
            esc(kind),
            y + 26.0,
            via
        );
        let _ = write!(
            h,
            "<rect x=\"{label_w}\" y=\"{:.1}\" width=\"{bar_w}\" height=\"18\" fill=\"#f6f8fa\"/>",
            y + 4.0
        );
        let color = match v.outcome {
            Outcome::Ok => "#2da44e",
            Outcome::Warn => "#bf8700",
            Outcome::Fail => "#cf222e",
        };
        if let Some(m) = v.measured {
            let _ = write!(
                h,
                "<rect x=\"{label_w}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{color}\" rx=\"2\"/>",
                y + 4.0,
                (x_of(m) - label_w).max(1.0)
            );
        }
        if let Some(e) = v.expected {
            let x = x_of(e);
            let _ = write!(
                h,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"26\" fill=\"#1f2328\"/>",
                x - 1.5,
                y
            );
        }
        if let Some(metric) = v.metric
            && let Some(p) = ctx.pass_bound(metric, v.expected)
        {
            let x = x_of(p);
            let _ = write!(
                h,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#1f2328\" stroke-dasharray=\"3 2\"/>",
                y + 1.0,
                y + 25.0
            );
        }
        if let Some(o) = ctx.was.get(&v.gate) {
            let x = x_of(*o);
            let yc = y + 13.0;
            let _ = write!(
                h,
                "<path d=\"M{x:.1} {:.1} L{:.1} {yc:.1} L{x:.1} {:.1} L{:.1} {yc:.1} Z\" fill=\"#8250df\" stroke=\"#fff\"/>",
                yc - 6.0,
                x + 6.0,
                yc + 6.0,
                x - 6.0
            );
        }
        let mut right = match v.measured {
            Some(m) => format!(
                "<tspan font-weight=\"600\">{} {}</tspan>",
                fmt_val(m),
                esc(&v.unit)
            ),
            None => "not measured".into(),
        };
        if let (Some(m), Some(e)) = (v.measured, v.expected) {
            let _ = write!(right, " of {} ({:.0}%)", fmt_val(e), m / e * 100.0);
        }
        if let Some(o) = ctx.was.get(&v.gate) {
            let _ = write!(
                right,
                " &#183; was {} ({})",
                fmt_val(*o),
                base::fmt_change(v.measured.and_then(|m| compare::change_pct(*o, m)))
            );
        }
        let _ = write!(
            h,
            "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"12\"><tspan fill=\"{color}\" font-weight=\"700\">{}</tspan> {right}</text></g>",
            label_w + bar_w + 10.0,
            y + 17.0,
            v.outcome.as_str()
        );
    }
    h.push_str("</svg>");
}

fn nccl(h: &mut String, ctx: &Ctx<'_>) {
    let jobs: Vec<&JobResult> = ctx.r.jobs.iter().filter(|j| compare::is_nccl(j)).collect();
    if jobs.is_empty() {
        return;
    }
    h.push_str("<section id=\"nccl\"><h2>NCCL: bus bandwidth against message size</h2>\n<div class=\"grid\">\n");
    for j in jobs {
        let rows = compare::nccl_rows_of(j);
        let subject = compare::nccl_subject(j);
        let old_rows: Vec<compare::NcclRow> = ctx
            .baseline
            .and_then(|b| {
                b.jobs
                    .iter()
                    .find(|bj| compare::is_nccl(bj) && compare::nccl_subject(bj) == subject)
            })
            .map(compare::nccl_rows_of)
            .unwrap_or_default();
        let _ = write!(
            h,
            "<figure class=\"nccl-chart\"><figcaption>{}</figcaption>",
            esc(&format!("{} {}", j.round_name, j.label))
        );
        if rows.is_empty() {
            let _ = write!(
                h,
                "<p class=\"note\">no rows: {}</p>",
                esc(j.reason.as_deref().unwrap_or("nothing was measured"))
            );
        } else {
            nccl_chart(h, ctx, j, &rows, &old_rows);
        }
        h.push_str("<table>");
        for v in j.verdicts.iter() {
            let _ = write!(
                h,
                "<tr><td><span class=\"badge {}\">{}</span></td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                class(v.outcome),
                v.outcome.as_str(),
                esc(short_gate(j, &v.gate)),
                v.measured
                    .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                    .unwrap_or_default(),
                esc(if v.threshold.is_empty() {
                    &v.detail
                } else {
                    &v.threshold
                })
            );
        }
        h.push_str("</table></figure>\n");
    }
    h.push_str("</div></section>\n");
}

/// An NCCL job's gate without the test's name (`transport`, `16 KiB time`).
fn short_gate<'g>(j: &JobResult, gate: &'g str) -> &'g str {
    let kind = j.round_name.split_whitespace().next().unwrap_or("nccl");
    [
        format!("{kind} {} ", j.label),
        format!("{} ", compare::nccl_subject(j)),
    ]
    .iter()
    .find_map(|p| gate.strip_prefix(p.as_str()))
    .unwrap_or(gate)
}

fn nccl_chart(
    h: &mut String,
    ctx: &Ctx<'_>,
    j: &JobResult,
    rows: &[compare::NcclRow],
    old: &[compare::NcclRow],
) {
    let (w, hh) = (560.0, 290.0);
    let (l, r, t, b) = (52.0, 30.0, 14.0, 44.0);
    let pts: Vec<(f64, f64, &compare::NcclRow)> = rows
        .iter()
        .filter(|x| x.size_bytes > 0)
        .filter_map(|x| Some(((x.size_bytes as f64).log2(), x.busbw_gbs?, x)))
        .collect();
    let opts: Vec<(f64, f64)> = old
        .iter()
        .filter(|x| x.size_bytes > 0)
        .filter_map(|x| Some(((x.size_bytes as f64).log2(), x.busbw_gbs?)))
        .collect();
    if pts.is_empty() {
        return;
    }
    let avg = j
        .verdicts
        .iter()
        .find(|v| v.metric == Some(Metric::NcclBusbw) && !base::is_baseline_verdict(v));
    let gate = avg.and_then(|v| ctx.pass_bound(Metric::NcclBusbw, v.expected));
    let x0 = pts
        .iter()
        .map(|p| p.0)
        .chain(opts.iter().map(|p| p.0))
        .fold(f64::INFINITY, f64::min);
    let x1 = pts
        .iter()
        .map(|p| p.0)
        .chain(opts.iter().map(|p| p.0))
        .fold(f64::NEG_INFINITY, f64::max)
        .max(x0 + 1.0);
    let ymax = pts
        .iter()
        .map(|p| p.1)
        .chain(opts.iter().map(|p| p.1))
        .chain(gate)
        .fold(0.0, f64::max)
        .max(0.1)
        * 1.12;
    let px = |x: f64| l + (x - x0) / (x1 - x0) * (w - l - r);
    let py = |y: f64| t + (1.0 - y / ymax) * (hh - t - b);
    let _ = write!(
        h,
        "<svg width=\"{w}\" height=\"{hh}\" viewBox=\"0 0 {w} {hh}\" role=\"img\" aria-label=\"bus bandwidth against message size\">"
    );
    // axes and grid
    let ystep = nice_step(ymax / 5.0);
    let mut y = 0.0;
    while y <= ymax + 1e-9 {
        let yy = py(y);
        let _ = write!(
            h,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#eaeef2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#59636e\">{}</text>",
            w - r,
            l - 5.0,
            yy + 3.5,
            trim_num(y)
        );
        y += ystep;
    }
    let mut e = x0.ceil();
    let every = ((x1 - x0) / 8.0).ceil().max(1.0);
    while e <= x1 + 1e-9 {
        let xx = px(e);
        let _ = write!(
            h,
            "<line x1=\"{xx:.1}\" y1=\"{t}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#eaeef2\"/><text x=\"{xx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#59636e\">{}</text>",
            hh - b,
            hh - b + 14.0,
            compare::size(2f64.powf(e).round() as u64)
        );
        e += every;
    }
    let _ = write!(
        h,
        "<line x1=\"{l}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#8c959f\"/><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{:.1}\" stroke=\"#8c959f\"/>",
        hh - b,
        w - r,
        hh - b,
        hh - b
    );
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#59636e\">message size (log scale)</text><text x=\"12\" y=\"{:.1}\" font-size=\"11\" fill=\"#59636e\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\">busbw GB/s</text>",
        (l + w - r) / 2.0,
        hh - 8.0,
        (t + hh - b) / 2.0,
        (t + hh - b) / 2.0
    );
    if let Some(g) = gate {
        let yy = py(g);
        let _ = write!(
            h,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#cf222e\" stroke-dasharray=\"6 4\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" text-anchor=\"end\" fill=\"#cf222e\">avg busbw gate &#8805; {} GB/s</text>",
            w - r,
            w - r - 2.0,
            yy - 4.0,
            fmt_val(g)
        );
    }
    if let Some(v) = avg
        && let Some(m) = v.measured
    {
        let yy = py(m);
        let _ = write!(
            h,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#0969da\" stroke-dasharray=\"2 3\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" text-anchor=\"end\" fill=\"#0969da\">avg busbw {} GB/s{}</text>",
            w - r,
            w - r - 2.0,
            yy + 13.0,
            fmt_val(m),
            if gate.is_none() { " (not gated)" } else { "" }
        );
    }
    if !opts.is_empty() {
        let d: Vec<String> = opts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            h,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#8250df\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"><title>baseline</title></polyline><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" fill=\"#8250df\">baseline</text>",
            d.join(" "),
            l + 4.0,
            t + 10.0
        );
    }
    let d: Vec<String> = pts
        .iter()
        .map(|(x, y, _)| format!("{:.1},{:.1}", px(*x), py(*y)))
        .collect();
    let _ = write!(
        h,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"/>",
        d.join(" ")
    );
    for (x, y, row) in &pts {
        let _ = write!(
            h,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.2\" fill=\"#0969da\"><title>{}: busbw {} GB/s{}</title></circle>",
            px(*x),
            py(*y),
            compare::size(row.size_bytes),
            fmt_val(*y),
            row.time_us
                .map(|t| format!(", in-place time {} us", fmt_val(t)))
                .unwrap_or_default()
        );
    }
    h.push_str("</svg>");
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let f = raw / p;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * p
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// An element of the picture and what crossed it.
#[derive(Default)]
struct Mark {
    ok: usize,
    warn: usize,
    fail: usize,
    /// A check that names the element failed (discovery, MTU, ping).
    check_fail: bool,
    notes: Vec<String>,
}

impl Mark {
    fn add(&mut self, o: Outcome, note: String) {
        match o {
            Outcome::Ok => self.ok += 1,
            Outcome::Warn => self.warn += 1,
            Outcome::Fail => self.fail += 1,
        }
        if o != Outcome::Ok && self.notes.len() < 6 {
            self.notes.push(note);
        }
    }

    /// FAIL when every flow over it failed or a check on it failed, WARN when some did not
    /// pass, OK when all passed; `None` when nothing crossed it.
    fn class(&self) -> Option<&'static str> {
        let n = self.ok + self.warn + self.fail;
        if self.check_fail || (n > 0 && self.fail == n) {
            Some("fab-fail")
        } else if self.warn + self.fail > 0 {
            Some("fab-warn")
        } else if n > 0 {
            Some("fab-ok")
        } else {
            None
        }
    }

    fn title(&self) -> String {
        let n = self.ok + self.warn + self.fail;
        let mut s = if n == 0 {
            "nothing measured over it".to_string()
        } else {
            format!(
                "{n} measurement(s): {} OK, {} WARN, {} FAIL",
                self.ok, self.warn, self.fail
            )
        };
        for x in &self.notes {
            s.push('\n');
            s.push_str(x);
        }
        s
    }
}

fn fabric(h: &mut String, ctx: &Ctx<'_>) {
    h.push_str("<section id=\"fabric\"><h2>The fabric</h2>\n");
    let (Some(p), Some(fab)) = (ctx.plan, ctx.fabric.as_ref()) else {
        let _ = writeln!(
            h,
            "<p class=\"note\">No picture: {}</p></section>",
            esc(ctx
                .plan_note
                .as_deref()
                .unwrap_or("the run directory has no plan.toml"))
        );
        return;
    };
    // marks: per node, per segment member (its cable), per ISL
    let mut node_mark: Vec<Mark> = p.nodes.iter().map(|_| Mark::default()).collect();
    let mut seg_mark: HashMap<(usize, usize), Mark> = HashMap::new();
    let mut isl_mark: Vec<Mark> = p.isls.iter().map(|_| Mark::default()).collect();
    let ep_names: Vec<(String, Endpoint, usize, usize)> =
        p.segments
            .iter()
            .flat_map(|s| {
                s.members.iter().enumerate().map(move |(mi, m)| {
                    (p.endpoint_name(&m.endpoint), m.endpoint.clone(), s.id.0, mi)
                })
            })
            .collect();
    let find = |name: &str| ep_names.iter().find(|(n, ..)| n == name);
    for d in &ctx.r.discovery {
        if !d.reachable
            && let Some(i) = p.nodes.iter().position(|n| n.name == d.node)
        {
            node_mark[i].check_fail = true;
            node_mark[i].add(
                Outcome::Fail,
                format!("unreachable: {}", d.error.clone().unwrap_or_default()),
            );
        }
    }
    // checks (preflight) name endpoints: mark their cables and nodes
    for v in &ctx.r.preflight {
        for tok in v.gate.split_whitespace() {
            if let Some((_, e, s, m)) = find(tok) {
                let mk = seg_mark.entry((*s, *m)).or_default();
                if v.outcome == Outcome::Fail {
                    mk.check_fail = true;
                    mk.notes.push(format!("{}: {}", v.gate, v.detail));
                }
                if v.outcome == Outcome::Fail {
                    node_mark[e.node.0].notes.push(format!("{}: FAIL", v.gate));
                }
            } else if let Some(i) = p.nodes.iter().position(|n| n.name == tok)
                && v.outcome != Outcome::Ok
            {
                node_mark[i]
                    .notes
                    .push(format!("{}: {}", v.gate, v.outcome.as_str()));
            }
        }
    }
    // measurements: every flow marks the cables at both ends and the ISLs it crossed
    for it in bw_items(ctx).iter().filter(|it| it.flow.half != "both") {
        let note = format!(
            "{} {}",
            it.v.gate,
            it.v.measured
                .map(|m| format!("{} {}", fmt_val(m), it.v.unit))
                .unwrap_or_else(|| "not measured".into())
        );
        let (Some(c), Some(s)) = (find(&it.flow.src_endpoint()), find(&it.flow.dst_endpoint()))
        else {
            continue;
        };
        seg_mark
            .entry((c.2, c.3))
            .or_default()
            .add(it.v.outcome, note.clone());
        if (s.2, s.3) != (c.2, c.3) {
            seg_mark
                .entry((s.2, s.3))
                .or_default()
                .add(it.v.outcome, note.clone());
        }
        if let Some(path) = fab.path(p, &c.1, &s.1) {
            for (isl, _) in path.isl_hops() {
                isl_mark[isl.0].add(it.v.outcome, note.clone());
            }
        }
    }
    fabric_svg(h, p, &node_mark, &seg_mark, &isl_mark);
    h.push_str("<div class=\"legend\"><span><span class=\"swatch\" style=\"background:#2da44e\"></span>every measurement over it passed</span><span><span class=\"swatch\" style=\"background:#bf8700\"></span>some did not pass</span><span><span class=\"swatch\" style=\"background:#cf222e\"></span>all failed, or a check on it failed</span><span><span class=\"swatch\" style=\"background:#8c959f\"></span>not measured</span><span>hover an element for its measurements</span></div>\n</section>\n");
}

fn mark_color(c: Option<&str>) -> &'static str {
    match c {
        Some("fab-fail") => "#cf222e",
        Some("fab-warn") => "#bf8700",
        Some("fab-ok") => "#2da44e",
        _ => "#8c959f",
    }
}

fn fabric_svg(
    h: &mut String,
    p: &Plan,
    node_mark: &[Mark],
    seg_mark: &HashMap<(usize, usize), Mark>,
    isl_mark: &[Mark],
) {
    let n = p.nodes.len().max(1);
    let switched = !p.switches.is_empty();
    let node_w = 112.0;
    let node_h = 40.0;
    let width: f64 = (n as f64 * (node_w + 36.0) + 80.0).clamp(560.0, 1180.0);
    // positions
    let mut pos: Vec<(f64, f64)> = Vec::new();
    let mut sw_pos: Vec<(f64, f64)> = Vec::new();
    let height;
    if switched {
        // nodes in a row, grouped by the first switch they land on; switches below them
        let first_switch = |ni: usize| -> usize {
            p.segments
                .iter()
                .flat_map(|s| s.members.iter())
                .find(|m| m.endpoint.node.0 == ni && m.switch.is_some())
                .and_then(|m| m.switch)
                .map(|s| s.0)
                .unwrap_or(usize::MAX)
        };
        let mut order: Vec<usize> = (0..p.nodes.len()).collect();
        order.sort_by_key(|i| (first_switch(*i), *i));
        let per = n.min(((width - 40.0) / (node_w + 16.0)).floor().max(1.0) as usize);
        let rows = n.div_ceil(per);
        pos = vec![(0.0, 0.0); p.nodes.len()];
        for (k, ni) in order.iter().enumerate() {
            let (row, col) = (k / per, k % per);
            let in_row = if row + 1 == rows { n - row * per } else { per };
            let step = (width - 40.0) / in_row as f64;
            pos[*ni] = (20.0 + step * (col as f64 + 0.5), 40.0 + row as f64 * 70.0);
        }
        let sy = 40.0 + rows as f64 * 70.0 + 90.0;
        for s in &p.switches {
            let xs: Vec<f64> = p
                .segments
                .iter()
                .flat_map(|seg| seg.members.iter())
                .filter(|m| m.switch == Some(s.id))
                .map(|m| pos[m.endpoint.node.0].0)
                .collect();
            let x = if xs.is_empty() {
                width / 2.0
            } else {
                xs.iter().sum::<f64>() / xs.len() as f64
            };
            sw_pos.push((x, sy));
        }
        // switches at the same place: spread them
        for i in 0..sw_pos.len() {
            for j in 0..i {
                if (sw_pos[i].0 - sw_pos[j].0).abs() < 150.0 {
                    sw_pos[i].0 = (sw_pos[j].0 + 170.0).min(width - 80.0);
                }
            }
        }
        height = sy + 60.0;
    } else {
        // nodes on a circle (two nodes: side by side)
        let cx = width / 2.0;
        let rad = if n <= 2 {
            210.0
        } else {
            150.0 + 12.0 * n as f64
        };
        let cy = if n <= 2 { 90.0 } else { rad + 50.0 };
        for k in 0..p.nodes.len() {
            let a = if n <= 2 {
                std::f64::consts::PI * k as f64
            } else {
                -std::f64::consts::FRAC_PI_2 + std::f64::consts::TAU * k as f64 / n as f64
            };
            pos.push((
                cx - rad * a.cos() * if n <= 2 { 1.0 } else { -1.0 },
                cy + rad * a.sin() * if n <= 2 { 0.0 } else { 1.0 },
            ));
        }
        height = if n <= 2 { 180.0 } else { cy + rad + 50.0 };
    }
    let _ = write!(
        h,
        "<svg class=\"fabric\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"the fabric\">"
    );
    // direct and ring links: one curve per segment (half), the halves of a pair fanned out; the
    // ports at each end and the link's name once per pair, as on a cabling diagram
    let mut pairs: Vec<((usize, usize), Vec<&crate::plan::Segment>)> = Vec::new();
    for s in &p.segments {
        if s.members.len() == 2 && s.members.iter().all(|m| m.switch.is_none()) {
            let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
            let key = (a.min(b), a.max(b));
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(s),
                None => pairs.push((key, vec![s])),
            }
        }
    }
    let (fx, fy) = {
        let n = pos.len().max(1) as f64;
        (
            pos.iter().map(|p| p.0).sum::<f64>() / n,
            pos.iter().map(|p| p.1).sum::<f64>() / n,
        )
    };
    for (_, segs) in &pairs {
        let c = segs.len();
        let mut max_off: f64 = 0.0;
        for (k, s) in segs.iter().enumerate() {
            let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
            let mk = seg_mark.get(&(s.id.0, 0));
            let mk2 = seg_mark.get(&(s.id.0, 1));
            let cls = worst_class(mk.and_then(Mark::class), mk2.and_then(Mark::class));
            let (x1, y1) = pos[a];
            let (x2, y2) = pos[b];
            let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
            let (dx, dy) = (x2 - x1, y2 - y1);
            let len = (dx * dx + dy * dy).sqrt().max(1.0);
            let off = (k as f64 - (c as f64 - 1.0) / 2.0) * 40.0;
            max_off = max_off.max(off.abs());
            let (nx, ny) = (-dy / len * off, dx / len * off);
            let (qx, qy) = (mx + nx, my + ny);
            // the curve's own middle (t = 1/2 of the quadratic)
            let (cx, cy) = ((x1 + 2.0 * qx + x2) / 4.0, (y1 + 2.0 * qy + y2) / 4.0);
            let end = |m: &crate::plan::Member| {
                format!(
                    "{} {}.{} {}",
                    esc(&p.node(m.endpoint.node).name),
                    esc(&m.endpoint.port),
                    esc(&m.endpoint.half),
                    m.address
                )
            };
            let title = format!(
                "link {} ({}): {} &#8212; {}\n{}",
                esc(&s.name),
                esc(&s.subnet.to_string()),
                end(&s.members[0]),
                end(&s.members[1]),
                esc(&mk
                    .map(Mark::title)
                    .unwrap_or_else(|| "nothing measured over it".into()))
            );
            let _ = write!(
                h,
                "<g class=\"fab-link {}\"><title>{title}</title><path d=\"M{x1:.1} {y1:.1} Q{qx:.1} {qy:.1} {x2:.1} {y2:.1}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"10.5\" font-weight=\"600\" text-anchor=\"middle\" fill=\"{}\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"4\">{}</text></g>",
                cls.unwrap_or("fab-none"),
                mark_color(cls),
                if cls == Some("fab-fail") { 5 } else { 3 },
                cy + 4.0,
                mark_color(cls),
                esc(&s.half),
            );
        }
        // ports near each end, the link's name beside the pair, away from the picture's middle
        let s = segs[0];
        let (a, b) = (s.members[0].endpoint.node.0, s.members[1].endpoint.node.0);
        let (x1, y1) = pos[a];
        let (x2, y2) = pos[b];
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ux, uy) = (dx / len, dy / len);
        let reach = (node_w / 2.0 + 20.0).min(len / 3.0);
        for (m, (x, y), dir) in [
            (&s.members[0], (x1, y1), 1.0),
            (&s.members[1], (x2, y2), -1.0),
        ] {
            let _ = write!(
                h,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" text-anchor=\"middle\" fill=\"#3d444d\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"4\">{}</text>",
                x + ux * reach * dir,
                y + uy * reach * dir + if uy.abs() < 0.3 { -10.0 } else { 4.0 },
                esc(&m.endpoint.port)
            );
        }
        let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
        let (mut nx, mut ny) = (-uy, ux);
        if (mx + nx - fx).powi(2) + (my + ny - fy).powi(2) < (mx - fx).powi(2) + (my - fy).powi(2) {
            (nx, ny) = (-nx, -ny);
        }
        let name = s
            .name
            .strip_suffix(&format!(".{}", s.half))
            .unwrap_or(&s.name);
        let d = max_off / 2.0 + 18.0;
        let anchor = if nx > 0.3 {
            "start"
        } else if nx < -0.3 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"{anchor}\" fill=\"#59636e\">{}</text>",
            mx + nx * d,
            my + ny * d + 4.0,
            esc(name)
        );
    }
    // switched: node half -> switch
    for s in &p.segments {
        for (mi, m) in s.members.iter().enumerate() {
            let Some(sw) = m.switch else { continue };
            let mk = seg_mark.get(&(s.id.0, mi));
            let cls = mk.and_then(Mark::class);
            let (x1, y1) = pos[m.endpoint.node.0];
            let (x2, y2) = sw_pos[sw.0];
            let off = if m.endpoint.half == "a" { -8.0 } else { 8.0 };
            let title = format!(
                "{} {}.{} on {} ({}, {})\n{}",
                esc(&p.node(m.endpoint.node).name),
                esc(&m.endpoint.port),
                esc(&m.endpoint.half),
                esc(&p.switches[sw.0].name),
                esc(&s.name),
                m.address,
                esc(&mk
                    .map(Mark::title)
                    .unwrap_or_else(|| "nothing measured over it".into()))
            );
            let _ = write!(
                h,
                "<g class=\"fab-cable {}\"><title>{title}</title><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-width=\"{}\"/></g>",
                cls.unwrap_or("fab-none"),
                x1 + off,
                y1 + node_h / 2.0,
                x2 + off * 2.0,
                y2 - 16.0,
                mark_color(cls),
                if cls == Some("fab-fail") { 4 } else { 2 },
            );
        }
    }
    for (ii, isl) in p.isls.iter().enumerate() {
        let (x1, y1) = sw_pos[isl.a.0];
        let (x2, y2) = sw_pos[isl.b.0];
        let cls = isl_mark[ii].class();
        let title = format!(
            "ISL {} {} &#8212; {}, {} Gb/s per direction\n{}",
            esc(&isl.name),
            esc(&p.switches[isl.a.0].name),
            esc(&p.switches[isl.b.0].name),
            fmt_val(isl.capacity_gbps),
            esc(&isl_mark[ii].title())
        );
        let _ = write!(
            h,
            "<g class=\"fab-isl {}\"><title>{title}</title><line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#3d444d\">{} &#183; {} Gb/s</text></g>",
            cls.unwrap_or("fab-none"),
            mark_color(cls),
            if cls == Some("fab-fail") { 8 } else { 6 },
            (x1 + x2) / 2.0,
            (y1 + y2) / 2.0 + 24.0,
            esc(&isl.name),
            fmt_val(isl.capacity_gbps)
        );
    }
    for (si, s) in p.switches.iter().enumerate() {
        let (x, y) = sw_pos[si];
        let _ = write!(
            h,
            "<g class=\"fab-switch\"><title>switch {}{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"120\" height=\"32\" rx=\"4\" fill=\"#24292f\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"#fff\" text-anchor=\"middle\">{}</text></g>",
            esc(&s.name),
            s.description
                .as_deref()
                .map(|d| format!(": {}", esc(d)))
                .unwrap_or_default(),
            x - 60.0,
            y - 16.0,
            y + 4.0,
            esc(&s.name)
        );
    }
    for (ni, node) in p.nodes.iter().enumerate() {
        let (x, y) = pos[ni];
        let mk = &node_mark[ni];
        let failed = mk.check_fail;
        let warned = !mk.notes.is_empty();
        let cls = if failed {
            "fab-node fab-fail"
        } else if warned {
            "fab-node fab-warn"
        } else {
            "fab-node"
        };
        let stroke = if failed {
            "#cf222e"
        } else if warned {
            "#bf8700"
        } else {
            "#57606a"
        };
        let mut title = format!("node {}", esc(&node.name));
        for x in &mk.notes {
            title.push('\n');
            title.push_str(&esc(x));
        }
        let _ = write!(
            h,
            "<g class=\"{cls}\"><title>{title}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{node_w}\" height=\"{node_h}\" rx=\"6\" fill=\"#fff\" stroke=\"{stroke}\" stroke-width=\"{}\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12.5\" font-weight=\"600\" text-anchor=\"middle\">{}</text></g>",
            x - node_w / 2.0,
            y - node_h / 2.0,
            if failed || warned { 3.0 } else { 1.5 },
            y + 4.5,
            esc(&node.name)
        );
    }
    h.push_str("</svg>");
}

fn worst_class(a: Option<&'static str>, b: Option<&'static str>) -> Option<&'static str> {
    let rank = |c: Option<&str>| match c {
        Some("fab-fail") => 3,
        Some("fab-warn") => 2,
        Some("fab-ok") => 1,
        _ => 0,
    };
    if rank(a) >= rank(b) { a } else { b }
}

fn all_gates(h: &mut String, r: &RunResults) {
    let _ = writeln!(
        h,
        "<section id=\"gates\"><h2>Every gate</h2><details><summary>{} gate(s): show the table</summary><table><tr><th>gate</th><th></th><th class=\"num\">measured</th><th>threshold</th><th>trap and fix, or evidence</th></tr>",
        r.verdicts().count()
    );
    for v in r.verdicts() {
        let trap = match (&v.trap_name, &v.fix) {
            (Some(t), Some(f)) => format!("<b>{}</b>: {}", esc(t), esc(f)),
            _ => esc(&v.detail),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"num\">{}</td><td>{}</td><td>{trap}</td></tr>",
            esc(&v.gate),
            class(v.outcome),
            v.outcome.as_str(),
            v.measured
                .map(|m| format!("{} {}", fmt_val(m), esc(&v.unit)))
                .unwrap_or_default(),
            esc(&v.threshold),
        );
    }
    h.push_str("</table></details></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            esc("<script>\"a\" & 'b'\u{1b}[2J"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;\\u{1b}[2J"
        );
    }

    #[test]
    fn dates_and_steps() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_124_412_899), "2026-12-01 11:26:52 UTC");
        assert_eq!(nice_step(4.7), 5.0);
        assert_eq!(nice_step(0.23), 0.5);
    }
}
