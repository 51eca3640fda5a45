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

mod assets;
mod baseline;
mod ctx;
mod fabric;
mod format;
mod gates;
mod heatmap;
mod nccl;
mod rounds;
mod verdict;

use std::fmt::Write as _;

use crate::plan::Plan;
use crate::results::RunResults;
use assets::{SCRIPT, STYLE};
use ctx::Ctx;

pub use format::esc;

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

/// A big run (more jobs than [`LINE_PER_JOB_ABOVE`](crate::results::LINE_PER_JOB_ABOVE)) is
/// summarised so that the page stays a page: the heatmap groups nodes when there are more than
/// it can draw one by one, the rounds show only their problems, the gates list only the WARN
/// and FAIL ones and counts the rest.
fn big(r: &RunResults) -> bool {
    r.jobs.len() > crate::results::LINE_PER_JOB_ABOVE
}

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
        esc(&verdict::verdict_line(r)),
    );
    verdict::header(&mut h, r);
    verdict::fix_list(&mut h, r);
    let ctx = Ctx::new(i);
    baseline::baseline_table(&mut h, r);
    heatmap::heatmaps(&mut h, &ctx);
    rounds::rounds(&mut h, &ctx);
    nccl::nccl(&mut h, &ctx);
    fabric::fabric(&mut h, &ctx);
    gates::all_gates(&mut h, r);
    let _ = writeln!(
        h,
        "<footer>fabricplan {} &#183; from results.json (format version {}) &#183; run directory evidence: results.json, junit.xml, summary.md, jobs/</footer>\n</main>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION"),
        r.format_version
    );
    h
}
