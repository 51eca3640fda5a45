//! `fabricplan plan PLAN`: the dry run, written the way the chosen launcher writes commands.

use std::path::Path;

use super::launcher::LauncherArgs;
use super::{Format, Stdout, load_or_report};
use crate::exit;
use crate::report::plan_view;
use crate::topology::Fabric;

pub fn run(plan: &Path, format: Format, launcher: &LauncherArgs) -> i32 {
    let Some(l) = load_or_report(plan) else {
        return exit::INVALID_PLAN;
    };
    let choice = match launcher.choice(Some(&l.plan)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let fabric = Fabric::build(&l.plan);
    let schedule = crate::kinds::schedule(&l.plan);
    let run_id = "<run-id>";
    let mut out = Stdout::new();
    let style = choice.style();
    let opening = choice.opening(&l.plan);
    // `Stdout` swallows a closed pipe: the dry run's exit code stays its own
    let r = match format {
        Format::Text => plan_view::write_text_with(
            &mut out,
            &l.plan,
            &fabric,
            &schedule,
            style.as_ref(),
            run_id,
            &opening,
        ),
        Format::Json => plan_view::write_json_with(
            &mut out,
            &l.plan,
            &fabric,
            &schedule,
            style.as_ref(),
            run_id,
            &opening,
        ),
    };
    match r {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            exit::FAIL
        }
    }
}
