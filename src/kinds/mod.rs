//! Test kinds: each kind of measurement is a folder here owning what makes it that kind: its
//! plan section (the raw table, the model it runs from, its checks, in `section.rs`), how it
//! expands into rounds, the templates it runs (and which of them only the SSH launcher writes),
//! its tool and the parser bound to it (`parse.rs` or `parse/`, a [`crate::parse::ToolSpec`]
//! that `fabricplan parse` lists through [`tools`]), the metrics and default gates it judges
//! with, what the reports show of it (its matrix cells, its series, its sweep: [`view`]) and how
//! the simulated fabric runs its own tool (`sim.rs`, see [`simulated`]). Kinds that share a
//! shape share its code (the bandwidth kinds read `rdma_bw::section`); tools shared by several
//! kinds (perftest, nccl-tests, mpirun, ping) stay in `crate::parse` and `crate::sim`.
//! [`ALL`] is the one list they are registered in; nothing else in fabricplan matches over
//! kinds or names one: reports, compare, metrics, validation and the simulator ask a kind
//! through its descriptor ([`TestKind`], [`crate::plan::Catalog`]), and `tests/architecture.rs`
//! fails on a kind's name as a literal in shipped code outside this folder.
//!
//! Kinds are pure and synchronous: they produce commands and judge what came back. The runner
//! drives them.

pub mod iperf3;
pub mod nccl;
pub mod parts;
pub mod preflight;
mod rdma_bw;
mod rdma_bw_both;
mod rdma_lat;
mod rdma_pingpong;
mod rdma_read_bw;
pub mod simulated;
pub mod view;

use crate::gate::classify::Context;
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::threshold::{Metric, MetricSpec};
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::plan::{Catalog, Plan, SectionKind, TestSize};
use crate::render::job::{JobCommands, Resolution};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::results::{JobResult, RunResults};
use crate::schedule::{Job, KindId, Round, Schedule, Stage};

pub use nccl::{
    Answer, LaunchCheck, LaunchFailed, judge_launch, launch_check, tests as nccl_tests,
};
pub use view::{Family, FlowSeries, Matrix, Sample, Sweep, SweepRow, sweep};

/// What a test kind is to the rest of fabricplan. Its plan section is the [`SectionKind`] half.
pub trait TestKind: SectionKind {
    /// Its name: the plan's `[tests.<name>]` key, `--only` selector and job id prefix.
    fn id(&self) -> KindId;

    /// The tool it runs; its output goes through that tool's parser.
    fn tool(&self) -> Tool;

    /// The metric of its main gate: the one whose `attempts` repeat the job.
    fn metric(&self) -> &'static MetricSpec;

    /// Every metric it judges with (its main gate's first): each has a `[gates.<metric>]` table.
    fn metrics(&self) -> Vec<&'static MetricSpec> {
        vec![self.metric()]
    }

    /// The command templates it owns (a plan may override them by name).
    fn templates(&self) -> &'static [Template];

    /// Those of its templates only the SSH launcher writes (under Slurm the kind's command is
    /// built another way, so an override of them would be ignored).
    fn ssh_only_templates(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// The rounds the plan's sections of this kind expand to, in order.
    fn stages(&self, plan: &Plan) -> Vec<Stage>;

    /// How many rounds and jobs its stages hold, counted without building a round: what
    /// validation bounds a plan by.
    fn size(&self, plan: &Plan) -> (usize, usize) {
        self.stages(plan)
            .iter()
            .fold((0usize, 0usize), |(r, j), s| {
                (r.saturating_add(s.rounds()), j.saturating_add(s.jobs(plan)))
            })
    }

    /// The commands of one of its jobs.
    #[allow(clippy::too_many_arguments)]
    fn commands(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        style: &dyn LaunchStyle,
        res: &Resolution,
        job: &Job,
    ) -> Result<JobCommands, RenderError>;

    /// Each job's expected value in its round (the capacity model), where the kind has one.
    fn expected(&self, _plan: &Plan, round: &Round) -> Vec<Option<f64>> {
        vec![None; round.jobs.len()]
    }

    /// The verdicts of one job from what its tool printed.
    fn judge(&self, plan: &Plan, job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict>;

    /// Verdicts on a round's jobs taken together (both halves summed), added to its results.
    fn judge_round(&self, _plan: &Plan, _round: &Round, _jobs: &mut [JobResult]) {}

    /// Whether the output holds a reading even when no verdict carries a measured value.
    fn measured(&self, _parsed: &Parsed) -> bool {
        false
    }

    /// Its pairs in the node x node bandwidth matrix (summary.md, report.html), and how its
    /// cells are tagged there.
    fn matrix(&self) -> Option<Matrix> {
        None
    }

    /// How its per-flow metrics go to the metrics file.
    fn series(&self) -> &'static [FlowSeries] {
        &[]
    }

    /// The metrics file's families it feeds, in their order there.
    fn families(&self) -> Vec<&'static Family> {
        view::series_families(self.series())
    }

    /// The metrics file's samples of one of its jobs.
    fn samples(&self, r: &RunResults, job: &JobResult) -> Vec<Sample> {
        view::flow_samples(self.series(), r, job)
    }

    /// Its job's figures over message sizes, when it sweeps them (compare matches them by
    /// size, report.html draws the curve).
    fn sweep(&self, _job: &JobResult) -> Option<Sweep> {
        None
    }

    /// Whether the ends of its failing flows that no passing flow cleared are measured alone
    /// afterwards, looped back through their own NIC (see [`crate::localise::loopbacks`]).
    fn loopback(&self) -> bool {
        false
    }

    /// The parts a verdict of one of its jobs is about (implicated when it fails, cleared when
    /// it passes): by default the job's halves, cables and ISLs, or the software or reach its
    /// trap names (see [`parts::job_parts`]).
    fn parts(&self, plan: &Plan, job: &Job, verdict: &Verdict, _parsed: &Parsed) -> Vec<Part> {
        parts::job_parts(plan, job, verdict)
    }

    /// How the simulated fabric runs its tool, when the tool is its own (the shared tools are
    /// the simulator's): see [`simulated`].
    fn simulated(&self) -> Option<&'static dyn simulated::SimTool> {
        None
    }

    /// The `[tests.<key>]` table(s) a site starts with for a fabric of this shape, with a
    /// comment saying why (`fabricplan init`); `None` when the kind is not one a site starts
    /// with.
    fn starter(&self, _shape: &Drafted) -> Option<String> {
        None
    }
}

/// The shape of a drafted fabric, as `fabricplan init` found it: what the kinds' starting
/// tests ([`TestKind::starter`]) are sized by.
#[derive(Debug, Clone, Default)]
pub struct Drafted {
    /// The members of the largest switched segment (0: no switch).
    pub switched_members: usize,
    /// The node groups a collective can span (each pair of a group reaches the other over the
    /// fabric: a direct pair, a ring of three, the ports of one switched fabric).
    pub groups: Vec<Vec<String>>,
}

impl Drafted {
    /// Past this many ports on one switched segment, bandwidth is sampled, not all-pairs.
    pub const ALL_PAIRS_UP_TO: usize = 16;
}

/// Every kind's starting tables for `shape`, in the order the kinds run.
pub fn starters(shape: &Drafted) -> Vec<String> {
    ALL.iter().filter_map(|k| k.starter(shape)).collect()
}

/// Every test kind, in the order their rounds run: bandwidth per half first (a throttled link
/// makes every later number meaningless), both halves, latency, iperf3, NCCL.
pub static ALL: &[&dyn TestKind] = &[
    &rdma_bw::RdmaBw,
    &rdma_read_bw::RdmaReadBw,
    &rdma_bw_both::RdmaBwBoth,
    &rdma_lat::RdmaLat,
    &rdma_pingpong::RdmaPingpong,
    &iperf3::Iperf3,
    &nccl::Nccl,
];

/// The plan's `[tests.ID]` section a job of kind `id` is rendered from; a job whose kind has
/// no section in the plan cannot be rendered, and the error names the section.
pub(crate) fn section_of<'p, T: std::any::Any>(
    plan: &'p Plan,
    id: KindId,
    job: &Job,
) -> Result<&'p T, RenderError> {
    plan.section::<T>(id.name()).ok_or_else(|| RenderError {
        name: job.id.clone(),
        message: format!("the plan has no [tests.{}]", id.name()),
    })
}

/// How many times the jobs of kind `id` run (their main gate's `attempts`).
pub fn attempts(plan: &Plan, id: KindId) -> u32 {
    get(id).map_or(1, |k| plan.gate(k.metric()).attempts.max(1))
}

/// Every built-in template: each kind's, and the preflight's (ping).
pub fn templates() -> Vec<Template> {
    let mut out: Vec<Template> = Vec::new();
    for t in ALL
        .iter()
        .flat_map(|k| k.templates().iter())
        .chain(preflight::TEMPLATES)
    {
        if !out.iter().any(|o| o.name == t.name) {
            out.push(*t);
        }
    }
    out
}

/// The renderer of a plan: every built-in template, the plan's overrides instead where given.
pub fn renderer(plan: &Plan) -> Renderer {
    Renderer::new(&templates(), &plan.templates)
}

/// The test kinds, as the plan language needs them: their sections and templates.
pub struct Kinds;

/// The catalog of every registered kind.
pub static CATALOG: Kinds = Kinds;

impl Catalog for Kinds {
    fn sections(&self) -> Vec<&'static dyn SectionKind> {
        ALL.iter().map(|k| *k as &'static dyn SectionKind).collect()
    }

    fn sizes(&self, plan: &Plan) -> Vec<TestSize> {
        ALL.iter()
            .map(|k| {
                let (rounds, jobs) = k.size(plan);
                TestSize {
                    key: k.key(),
                    rounds,
                    jobs,
                }
            })
            .filter(|s| s.rounds > 0)
            .collect()
    }

    fn metrics(&self) -> Vec<&'static MetricSpec> {
        metrics()
    }

    fn template_names(&self) -> Vec<&'static str> {
        templates().iter().map(|t| t.name).collect()
    }

    fn template_variables(&self, name: &str) -> Vec<&'static str> {
        let mut v = templates()
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.variables.to_vec())
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    fn check_template(&self, name: &str, source: &str) -> Result<(), String> {
        match templates().iter().find(|t| t.name == name) {
            Some(t) => crate::render::check_template(t, source),
            None => Err(format!("no built-in template `{name}`")),
        }
    }

    fn ssh_only_templates(&self) -> Vec<&'static str> {
        ssh_only_templates()
    }
}

/// Every kind's templates only the SSH launcher writes (see [`TestKind::ssh_only_templates`]).
pub fn ssh_only_templates() -> Vec<&'static str> {
    ALL.iter().flat_map(|k| k.ssh_only_templates()).collect()
}

/// Read and validate a plan file, its test sections read by the registered kinds.
pub fn load(path: &std::path::Path) -> Result<crate::plan::Loaded, crate::plan::LoadError> {
    crate::plan::load(path, &CATALOG)
}

/// [`load`] from text.
pub fn load_str(
    path: &std::path::Path,
    text: &str,
    base_dir: &std::path::Path,
) -> Result<crate::plan::Loaded, crate::plan::LoadError> {
    crate::plan::load_str(path, text, base_dir, &CATALOG)
}

/// The plan's JSON Schema with every kind's section.
pub fn json_schema() -> String {
    crate::plan::json_schema(&CATALOG)
}

/// A tool by name: the shared ones (perftest, nccl-tests, mpirun, ping, ...) and every kind's
/// own.
pub fn tool(name: &str) -> Option<Tool> {
    tools().into_iter().find(|t| t.name() == name)
}

/// Every tool fabricplan reads, in `fabricplan parse`'s order: the shared ones, then the
/// kinds' own (each once).
pub fn tools() -> Vec<Tool> {
    let mut out = Tool::ALL.to_vec();
    for t in ALL.iter().map(|k| k.tool()) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Every metric the kinds judge with, in registry order (each once).
pub fn metrics() -> Vec<&'static MetricSpec> {
    let mut out: Vec<&'static MetricSpec> = Vec::new();
    for m in ALL.iter().flat_map(|k| k.metrics()) {
        if !out.iter().any(|o| o.metric == m.metric) {
            out.push(m);
        }
    }
    out
}

/// What `metric` is, when a kind of this build measures it.
pub fn metric(metric: Metric) -> Option<&'static MetricSpec> {
    ALL.iter()
        .flat_map(|k| k.metrics())
        .find(|m| m.metric == metric)
}

/// The kind of a job's result, when this build knows it.
pub fn of(job: &JobResult) -> Option<&'static dyn TestKind> {
    ALL.iter().copied().find(|k| k.id().name() == job.kind)
}

/// The kind named `id`.
pub fn get(id: KindId) -> Option<&'static dyn TestKind> {
    ALL.iter().copied().find(|k| k.id() == id)
}

/// The plan's schedule: every kind's stages, in registry order.
pub fn schedule(plan: &Plan) -> Schedule {
    Schedule::new(ALL.iter().flat_map(|k| k.stages(plan)).collect())
}

/// The commands of `job`, by its kind.
pub fn commands(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    res: &Resolution,
    job: &Job,
) -> Result<JobCommands, RenderError> {
    match get(job.kind) {
        Some(k) => k.commands(plan, renderer, style, res, job),
        None => Err(RenderError {
            name: job.id.clone(),
            message: format!("no test kind `{}`", job.kind),
        }),
    }
}

/// The expected values of a round's jobs, by its kind.
pub fn expected(plan: &Plan, round: &Round) -> Vec<Option<f64>> {
    match get(round.kind) {
        Some(k) => k.expected(plan, round),
        None => vec![None; round.jobs.len()],
    }
}

/// A parser answered with another tool's report: a bug, said as one.
fn mismatch(ctx: &Context, parsed: &Parsed) -> Vec<Verdict> {
    vec![Verdict::check(
        &ctx.gate,
        Outcome::Fail,
        format!(
            "internal: the output was read as {:?}, not this kind's tool",
            parsed.status()
        ),
        Some(Trap::Unparseable),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::threshold::Threshold;

    fn gates(extra: &str) -> std::collections::BTreeMap<Metric, crate::gate::GateSpec> {
        let text = format!(
            "format-version = 1\nname = \"g\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[cable]]\nkind = \"direct\"\nends = [\"a.f0\", \"b.f0\"]\nhalves = [\"a\"]\nsubnets = {{ a = \"198.51.100.0/30\" }}\n{extra}"
        );
        load_str(
            std::path::Path::new("g.toml"),
            &text,
            std::path::Path::new("."),
        )
        .unwrap()
        .plan
        .gates
    }

    #[test]
    fn pass_only_keeps_a_compatible_default_warn() {
        let (lat, bw) = (rdma_lat::METRIC.metric, rdma_bw::METRIC.metric);
        let g = gates("[gates.rdma-lat]\npass = \"2.5 us\"\n");
        assert_eq!(g[&lat].pass, Some(Threshold::Absolute { value: 2.5 }));
        assert_eq!(g[&lat].warn, Some(Threshold::Absolute { value: 10.0 }));
        // an absolute pass beside the relative default warn: no band rather than a mixed one
        let g = gates("[gates.rdma-bw]\npass = \"95 Gb/s\"\n");
        assert_eq!(g[&bw].warn, Some(Threshold::Absolute { value: 95.0 }));
        let g = gates("[gates.rdma-bw]\nmin-pct-of-expected = 85\n");
        assert_eq!(g[&bw].warn, Some(Threshold::PctOfExpected { pct: 27.0 }));
    }

    #[test]
    fn every_kind_metric_has_a_default_gate_in_the_plan() {
        let g = gates("");
        for m in metrics() {
            assert_eq!(
                g[&m.metric],
                crate::gate::GateSpec::default_for(m),
                "{}",
                m.name()
            );
        }
        assert_eq!(g.len(), metrics().len());
    }
}
