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
mod inventory;
mod nccl;
mod rounds;
mod verdict;

use std::sync::LazyLock;

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

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

/// The page's templates (`templates/`), embedded in the binary.
const TEMPLATES: &[(&str, &str)] = &[
    ("page.html", include_str!("templates/page.html")),
    ("header.html", include_str!("templates/header.html")),
    ("fix.html", include_str!("templates/fix.html")),
    ("baseline.html", include_str!("templates/baseline.html")),
    ("gates.html", include_str!("templates/gates.html")),
    ("heatmap.html", include_str!("templates/heatmap.html")),
    ("rounds.html", include_str!("templates/rounds.html")),
    ("nccl.html", include_str!("templates/nccl.html")),
    ("fabric.html", include_str!("templates/fabric.html")),
    ("inventory.html", include_str!("templates/inventory.html")),
];

/// The templates' environment: every template HTML-escaped (its SVG too) through the one
/// escaper, a name the context does not define an error, block tags leaving no blank lines.
fn environment() -> Result<Environment<'static>, minijinja::Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()?,
    );
    format::register(&mut env);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)?;
    }
    Ok(env)
}

static ENV: LazyLock<Result<Environment<'static>, minijinja::Error>> = LazyLock::new(environment);

/// Everything the page shows, section by section: computed here, laid out by the templates.
#[derive(Serialize)]
struct Page {
    version: &'static str,
    format_version: u32,
    /// The page's own style sheet and script (safe: written as they are), the script's hash
    /// for the Content-Security-Policy.
    style: Value,
    script: Value,
    script_hash: String,
    head: verdict::Head,
    fix: verdict::Fix,
    baseline: Vec<baseline::Row>,
    heatmap: Option<heatmap::Heatmap>,
    rounds: Option<rounds::Rounds>,
    nccl: Vec<nccl::Figure>,
    fabric: fabric::Section,
    inventory: Option<inventory::Inventory>,
    gates: gates::Gates,
}

/// The report; `Err` only when a template does not render (a defect of the page itself).
pub fn render(i: &Inputs<'_>) -> Result<String, minijinja::Error> {
    let r = i.results;
    let script_hash = {
        use sha2::Digest;
        data_encoding::BASE64.encode(&sha2::Sha256::digest(SCRIPT.as_bytes()))
    };
    let ctx = Ctx::new(i);
    let page = Page {
        version: env!("CARGO_PKG_VERSION"),
        format_version: r.format_version,
        style: Value::from_safe_string(STYLE.to_string()),
        script: Value::from_safe_string(SCRIPT.to_string()),
        script_hash,
        head: verdict::head(r),
        fix: verdict::fix(r),
        baseline: baseline::rows(r),
        heatmap: heatmap::heatmaps(&ctx),
        rounds: rounds::rounds(&ctx),
        nccl: nccl::nccl(&ctx),
        fabric: fabric::fabric(&ctx),
        inventory: inventory::inventory(r),
        gates: gates::gates(r),
    };
    let env = ENV.as_ref().map_err(|e| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("report.html's templates do not load: {e}"),
        )
    })?;
    env.get_template("page.html")?
        .render(Value::from(minijinja::value::Serde(&page)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_templates_load_and_a_name_they_do_not_get_is_an_error() {
        let env = environment().expect("every template compiles");
        for (name, _) in TEMPLATES {
            env.get_template(name).expect("registered");
        }
        assert!(env.render_str("{{ nothing }}", ()).is_err());
        assert!(
            env.render_str("{{ x.nothing }}", minijinja::context! { x => 1 })
                .is_err()
        );
    }
}
