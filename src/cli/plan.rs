//! `fabricplan plan PLAN`: the dry run.

use std::path::Path;

use super::{Format, Stdout, load_or_report};
use crate::exec::launch::SshStyle;
use crate::exit;
use crate::report::plan_view;
use crate::topology::Fabric;

pub fn run(plan: &Path, format: Format) -> i32 {
    let Some(l) = load_or_report(plan) else {
        return exit::INVALID_PLAN;
    };
    let fabric = Fabric::build(&l.plan);
    let schedule = crate::kinds::schedule(&l.plan);
    let run_id = "<run-id>";
    let mut out = Stdout::new();
    let style = SshStyle;
    // `Stdout` swallows a closed pipe: the dry run's exit code stays its own
    let r = match format {
        Format::Text => {
            plan_view::write_text(&mut out, &l.plan, &fabric, &schedule, &style, run_id)
        }
        Format::Json => {
            plan_view::write_json(&mut out, &l.plan, &fabric, &schedule, &style, run_id)
        }
    };
    match r {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            exit::FAIL
        }
    }
}
