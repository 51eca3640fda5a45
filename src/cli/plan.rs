//! `fabricplan plan PLAN`: the dry run, written the way the chosen launcher writes commands.

use std::path::Path;

use super::launcher::LauncherArgs;
use super::{CliError, Format, Outcome, Stdout, load};
use crate::exit;
use crate::plan::Plan;
use crate::report::plan_view;
use crate::topology::Fabric;

pub fn run(plan: &Path, format: Format, launcher: &LauncherArgs) -> Outcome {
    show(&load(plan)?.plan, format, launcher)
}

/// The dry run of a loaded plan.
pub fn show(plan: &Plan, format: Format, launcher: &LauncherArgs) -> Outcome {
    let choice = launcher.choice(Some(plan)).map_err(CliError::Usage)?;
    let fabric = Fabric::build(plan);
    let schedule = crate::kinds::schedule(plan);
    let mut out = Stdout::new();
    let style = crate::exec::launch::style(&choice);
    let opening = super::launcher::opening(&choice, plan);
    // `Stdout` swallows a closed pipe: the dry run's exit code stays its own
    let r = match format {
        Format::Text => {
            plan_view::write_text_with(&mut out, plan, &fabric, &schedule, style.as_ref(), &opening)
        }
        Format::Json => {
            plan_view::write_json_with(&mut out, plan, &fabric, &schedule, style.as_ref(), &opening)
        }
    };
    r.map_err(|e| CliError::Failed(e.to_string()))?;
    Ok(exit::OK)
}
