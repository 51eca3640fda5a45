//! `fabricplan plan PLAN`: the dry run, written the way the chosen launcher writes commands.

use std::path::Path;

use super::launcher::LauncherArgs;
use super::{CliError, Format, Outcome, Stdout, load};
use crate::exit;
use crate::plan::Plan;
use crate::report::plan_view;
use crate::topology::Fabric;

pub fn run(plan: &Path, format: Format, launcher: &LauncherArgs, setup: bool) -> Outcome {
    show(&load(plan)?.plan, format, launcher, setup)
}

/// The dry run of a loaded plan; with `setup`, first what `run --setup` runs on each host.
pub fn show(plan: &Plan, format: Format, launcher: &LauncherArgs, setup: bool) -> Outcome {
    if setup && plan.setup.is_none() {
        return Err(CliError::Usage(
            "--setup given but the plan declares no [setup] stage (`[setup]` with `packages`, \
             `build-nccl-tests`, `nccl-tests-repo`)"
                .into(),
        ));
    }
    let choice = launcher.choice(Some(plan)).map_err(CliError::Usage)?;
    let fabric = Fabric::build(plan);
    let schedule = crate::kinds::schedule(plan);
    let mut out = Stdout::new();
    let style = crate::launchers::style(&choice);
    let opening = crate::launchers::opening(&choice, plan);
    let scripts: Vec<(String, String)> = if setup {
        plan.nodes
            .iter()
            .filter_map(|n| {
                let s = crate::exec::setup::script(plan, n.id)?;
                Some((n.name.clone(), style.oneshot(n, &s)))
            })
            .collect()
    } else {
        Vec::new()
    };
    // `Stdout` swallows a closed pipe: the dry run's exit code stays its own
    let r = match format {
        Format::Text => {
            if setup {
                out.write(&setup_text(plan, &scripts));
            }
            plan_view::write_text_with(&mut out, plan, &fabric, &schedule, style.as_ref(), &opening)
        }
        Format::Json if setup => {
            let mut buf: Vec<u8> = Vec::new();
            plan_view::write_json_with(&mut buf, plan, &fabric, &schedule, style.as_ref(), &opening)
                .and_then(|()| {
                    let mut v: serde_json::Value = serde_json::from_slice(&buf)?;
                    v["setup"] = serde_json::Value::Array(
                        scripts
                            .iter()
                            .map(|(n, c)| serde_json::json!({ "node": n, "command": c }))
                            .collect(),
                    );
                    out.write(&format!("{}\n", serde_json::to_string_pretty(&v)?));
                    Ok(())
                })
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
    let style = crate::launchers::style(&choice);
    let opening = crate::launchers::opening(&choice, plan);
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

/// What `run --setup` runs on each host before anything else, in words then exactly (each
/// command whole on its own line, as the launcher runs it).
fn setup_text(plan: &Plan, scripts: &[(String, String)]) -> String {
    let Some(s) = &plan.setup else {
        return String::new();
    };
    let mut what: Vec<String> = Vec::new();
    if !s.packages.is_empty() {
        what.push(format!(
            "installs {} with apt-get (sudo -n when not root)",
            s.packages.join(" ")
        ));
    }
    if s.build_nccl_tests {
        what.push(format!(
            "builds nccl-tests with MPI=1 into each node's nccl-tests-dir (cloned from {} when \
             not there)",
            s.nccl_tests_repo
                .as_deref()
                .unwrap_or(crate::exec::setup::NCCL_TESTS_REPO)
        ));
    }
    let head = format!(
        "setup (`run --setup`, before discovery; it changes the hosts, nothing else does): {}",
        what.join("; ")
    );
    let opts = textwrap::Options::new(super::width())
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .subsequent_indent("  ");
    let mut t = String::new();
    for l in textwrap::wrap(&crate::text::inert(&head), opts) {
        t.push_str(&format!("{}\n", l.trim_end()));
    }
    // each command whole on a line of its own: it copies as it runs
    for (node, cmd) in scripts {
        t.push_str(&format!("  on {node}:\n    {}\n", crate::text::inert(cmd)));
    }
    t.push('\n');
    t
}
