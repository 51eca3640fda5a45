//! `RawPlan` -> `Plan`: every semantic check, every problem collected, one pass.
//!
//! One file per plan section (names, nodes, switches, cables, addresses, gates, tests and their
//! repeats, templates, settings, sim), and the bounds of what the tests run; this module
//! orchestrates them in order. Each problem points at the span it is about, with a help line;
//! where two places disagree both are labelled.

mod addresses;
mod bounds;
mod cables;
mod gates;
mod launcher;
mod names;
mod nodes;
mod repeats;
mod sampling;
mod sections;
mod settings;
mod sim;
mod switches;
mod templates;

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::DeValue;

use super::diag::{Problem, did_you_mean};
use super::model::*;
use super::raw::*;
use super::section::{Catalog, SectionKind};

pub const FORMAT_VERSION: u32 = 1;

pub use bounds::{MAX_JOBS, MAX_ROUNDS};
pub use cables::MAX_RING_NODES;
pub use names::{MAX_LABELS, is_safe_ifname, is_safe_name};
pub use sim::{SIM_FAULT_HELP, SIM_FAULTS, check_sim_fault, sim_fault_list};

struct Ctx {
    problems: Vec<Problem>,
    base_dir: PathBuf,
    /// Declared node names -> ids (the first declaration of each name), set once the nodes
    /// are read: references resolve in constant time, not by a scan of every node.
    node_ids: HashMap<String, NodeId>,
    /// Declared switch names -> ids, likewise.
    switch_ids: HashMap<String, SwitchId>,
    /// Names left to compare for "did you mean": a plan with thousands of unknown references
    /// to thousands of nodes would otherwise spend its time on suggestions nobody reads (only
    /// the first problems are shown).
    suggestions_left: usize,
}

/// Candidate names compared for "did you mean" in one validation.
const SUGGESTION_BUDGET: usize = 2_000_000;

impl Ctx {
    fn push(&mut self, p: Problem) {
        self.problems.push(p);
    }

    /// "Did you mean" among `candidates`, while the budget lasts.
    fn suggest<'c>(
        &mut self,
        name: &str,
        candidates: impl ExactSizeIterator<Item = &'c str>,
    ) -> Option<&'c str> {
        let n = candidates.len();
        if n > self.suggestions_left {
            self.suggestions_left = 0;
            return None;
        }
        self.suggestions_left -= n;
        did_you_mean(name, candidates)
    }
}

fn span<T>(s: &Spanned<T>) -> Range<usize> {
    s.span()
}

/// Validate a parsed plan. Returns the plan when there is no error; all problems (errors and
/// warnings) in either case.
pub fn validate(
    raw: RawPlan,
    path: &Path,
    text: &str,
    base_dir: &Path,
    sections: Vec<(&'static dyn SectionKind, Spanned<DeValue<'_>>)>,
    catalog: &dyn Catalog,
) -> (Option<Plan>, Vec<Problem>) {
    let mut ctx = Ctx {
        problems: Vec::new(),
        base_dir: base_dir.to_path_buf(),
        node_ids: HashMap::new(),
        switch_ids: HashMap::new(),
        suggestions_left: SUGGESTION_BUDGET,
    };
    let name = raw.name.clone();
    let plan = build(&mut ctx, raw, path, text, sections, catalog);
    // what its tests would run, once the plan is whole (the stages read a valid plan only)
    if let Some(p) = &plan
        && !ctx.problems.iter().any(Problem::is_error)
    {
        bounds::bounds(&mut ctx, p, &name, catalog);
    }
    let has_error = ctx.problems.iter().any(Problem::is_error);
    (if has_error { None } else { plan }, ctx.problems)
}

fn build(
    ctx: &mut Ctx,
    raw: RawPlan,
    path: &Path,
    text: &str,
    sections: Vec<(&'static dyn SectionKind, Spanned<DeValue<'_>>)>,
    catalog: &dyn Catalog,
) -> Option<Plan> {
    if *raw.format_version.get_ref() != FORMAT_VERSION {
        ctx.push(
            Problem::error(
                "plan::format-version",
                format!(
                    "plan format version {} is not supported",
                    raw.format_version.get_ref()
                ),
            )
            .at(span(&raw.format_version), "this version")
            .help(format!(
                "this fabricplan reads `format-version = {FORMAT_VERSION}`"
            )),
        );
    }
    names::name_check(ctx, "plan", &raw.name);

    let profiles = nodes::profiles(ctx, &raw.profile);
    let nodes = nodes::nodes(ctx, &raw.node, &profiles);
    names::case_twins(ctx, "node", raw.node.iter().map(|n| &n.name));
    ctx.node_ids = nodes.iter().map(|n| (n.name.clone(), n.id)).collect();
    let switches = switches::switches(ctx, &raw.switch);
    names::case_twins(ctx, "switch", raw.switch.iter().map(|s| &s.name));
    ctx.switch_ids = switches.iter().map(|s| (s.name.clone(), s.id)).collect();
    let isls = switches::isls(ctx, &raw.isl, &switches);
    let wired = cables::cables(ctx, &raw.cable, &nodes, &profiles, &switches);
    let (cables, segments) = (wired.cables, wired.segments);
    addresses::subnets_and_addresses(ctx, &segments, &wired.seg_spans);
    cables::ring_crossing(
        ctx,
        &raw.cable,
        &cables,
        &segments,
        &nodes,
        &profiles,
        &wired.recabled,
    );
    let metrics = catalog.metrics();
    let gates = gates::gates(ctx, &raw.gates, &metrics, &profiles);
    let regression = gates::regression(ctx, &raw.regression, &metrics);
    let phy = gates::phy(ctx, &raw.gates);
    let tests = sections::tests(ctx, &raw.tests, sections, &raw.cable, &nodes, &segments);
    let templates = templates::templates(ctx, &raw.templates, catalog);
    let capacity = settings::capacity(raw.capacity.as_ref());
    let sim = sim::sim(ctx, raw.sim.as_ref(), &nodes, &switches);
    let ssh = settings::ssh_defaults(raw.ssh.as_ref(), &ctx.base_dir);
    let launcher = launcher::launcher(
        ctx,
        raw.launcher.as_ref(),
        &raw.templates,
        &catalog.ssh_only_templates(),
    );
    let setup = raw.setup.as_ref().map(settings::setup);

    Some(Plan {
        name: raw.name.into_inner(),
        description: raw.description,
        path: path.to_path_buf(),
        text: text.to_string(),
        ssh,
        launcher,
        profiles,
        nodes,
        switches,
        isls,
        cables,
        segments,
        gates,
        tests,
        templates,
        capacity,
        sim,
        setup,
        regression,
        phy,
    })
}
