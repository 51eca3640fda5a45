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

/// `plan --resolve`: discovery on every node (read-only, the probe `run` uses), then the dry run
/// with each half's device, netdev and GID index as found.
pub fn resolved(
    path: &Path,
    format: Format,
    launcher: &LauncherArgs,
    hosts: &super::hosts::HostArgs,
) -> Outcome {
    use crate::render::job::Resolution;
    let plan = &load(path)?.plan;
    let choice = launcher.choice(Some(plan)).map_err(CliError::Usage)?;
    let l = launcher
        .launcher(Some(plan), hosts)
        .map_err(CliError::Usage)?;
    let nodes: Vec<crate::plan::Node> = plan.nodes.clone();
    let found = super::runtime()?.block_on(super::init::read(l.as_ref(), &nodes, 32));
    let mut res = Resolution::from_plan(plan);
    let mut unresolved: Vec<String> = Vec::new();
    for (node, host) in plan.nodes.iter().zip(&found) {
        let probe = match &host.probe {
            Ok(p) => p,
            Err(e) => {
                unresolved.push(format!(
                    "{}: did not answer ({e}): its placeholders stay",
                    node.name
                ));
                continue;
            }
        };
        for h in crate::discover::resolve_node(plan, node.id, probe) {
            let facts = h.facts();
            if let Some(f) = res.halves.get_mut(&h.endpoint) {
                f.device = f.device.clone().or(facts.device);
                f.netdev = f.netdev.clone().or(facts.netdev);
                f.gid_index = f.gid_index.or(facts.gid_index);
            }
            for p in &h.problems {
                unresolved.push(p.clone());
            }
            if let Some(fix) = &h.fix_command {
                unresolved.push(format!("  run on {}: {fix}", node.name));
            }
        }
    }
    let fabric = Fabric::build(plan);
    let schedule = crate::kinds::schedule(plan);
    let style = crate::exec::launch::style(&choice);
    let opening = super::launcher::opening(&choice, plan);
    let mut out = Stdout::new();
    let r = match format {
        Format::Text => plan_view::write_text_resolved(
            &mut out,
            plan,
            &fabric,
            &schedule,
            style.as_ref(),
            &opening,
            &res,
        ),
        Format::Json => plan_view::write_json_resolved(
            &mut out,
            plan,
            &fabric,
            &schedule,
            style.as_ref(),
            &opening,
            &res,
        ),
    };
    r.map_err(|e| CliError::Failed(e.to_string()))?;
    out.flush();
    if hosts.sim {
        super::say(
            "SIMULATED FABRIC (--sim): resolved from a model of the plan, not a reading of hardware\n",
        );
    }
    for u in &unresolved {
        super::say(&format!("{}\n", crate::text::inert_lines(u)));
    }
    Ok(if unresolved.is_empty() {
        exit::OK
    } else {
        exit::FAIL
    })
}
