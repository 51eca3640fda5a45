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
    let style = crate::exec::launch::style(&choice);
    let opening = super::launcher::opening(&choice, plan);
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
