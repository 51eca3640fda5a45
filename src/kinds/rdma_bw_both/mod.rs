//! `rdma-bw-both`: both halves of each cable at once, one ib_write_bw per half, each half judged
//! like `rdma-bw` and their sum per node pair against the port's expected rate (one half dead or
//! throttled shows here).

use schemars::{Schema, SchemaGenerator};
use std::collections::BTreeMap;
use toml::de::ValueDeserializer;

use super::rdma_bw::section::BwTest;
use super::{FlowSeries, Matrix, TestKind, mismatch};
use crate::gate::classify::{self, Context};
use crate::gate::judge::Verdict;
use crate::gate::threshold::{Metric, MetricSpec, Threshold, Unit};
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::plan::section::SectionData;
use crate::plan::{Plan, SectionKind, SectionReader};
use crate::render::job::{JobCommands, Resolution};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::results::JobResult;
use crate::schedule::stages::both_halves;
use crate::schedule::{Job, KindId, Round, Stage};
use crate::tools::perftest::parse::BwReport;

pub const ID: KindId = KindId("rdma-bw-both");

pub struct RdmaBwBoth;

/// Both halves of a cable at once, summed per node pair, Gb/s: 90% of the expected sum passes.
pub static METRIC: MetricSpec = MetricSpec {
    metric: Metric::new("rdma-bw-both"),
    unit: Unit::Gbps,
    about: "both halves of a cable at once, summed per node pair, Gb/s",
    pass: Some(Threshold::PctOfExpected { pct: 90.0 }),
    warn: Some(Threshold::PctOfExpected { pct: 50.0 }),
    trap: Trap::HalfDeadOrThrottled,
    per_flow: true,
    ceiling: Some(crate::gate::threshold::Ceiling::Port),
};

impl SectionKind for RdmaBwBoth {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "Both halves of each cable at once (`ib_write_bw` per half), summed per node."
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<super::rdma_bw::section::RawBwTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        super::rdma_bw::section::read_table(table, r, ID.name(), true)
    }
}

static SERIES: [FlowSeries; 2] = [
    super::rdma_bw::bandwidth_series(&super::rdma_bw::METRIC),
    super::rdma_bw::bandwidth_series(&METRIC),
];

impl TestKind for RdmaBwBoth {
    fn id(&self) -> KindId {
        ID
    }

    fn tool(&self) -> Tool {
        Tool::IB_WRITE_BW
    }

    fn metric(&self) -> &'static MetricSpec {
        &super::rdma_bw::METRIC
    }

    fn metrics(&self) -> Vec<&'static MetricSpec> {
        vec![&super::rdma_bw::METRIC, &METRIC]
    }

    fn templates(&self) -> &'static [Template] {
        // the perftest bandwidth pair of `rdma-bw`
        super::rdma_bw::TEMPLATES
    }

    fn stages(&self, plan: &Plan) -> Vec<Stage> {
        match plan.section::<BwTest>(ID.name()) {
            Some(t) => vec![both_halves(plan, ID, &t.halves, t.direction)],
            None => Vec::new(),
        }
    }

    fn commands(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        style: &dyn LaunchStyle,
        res: &Resolution,
        job: &Job,
    ) -> Result<JobCommands, RenderError> {
        let t = super::section_of::<BwTest>(plan, ID, job)?;
        super::rdma_bw::perftest_bw_commands(plan, renderer, style, res, job, t, "ib_write_bw")
    }

    fn expected(&self, plan: &Plan, round: &Round) -> Vec<Option<f64>> {
        crate::capacity::expected(plan, round)
    }

    fn matrix(&self) -> Option<Matrix> {
        Some(Matrix {
            tag: "+",
            legend: "that half while both halves of the cable ran at once",
        })
    }

    fn series(&self) -> &'static [FlowSeries] {
        &SERIES
    }

    fn judge(&self, plan: &Plan, _job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict> {
        match parsed.get::<BwReport>() {
            Some(r) => classify::bandwidth(&plan.gate(&super::rdma_bw::METRIC), r, ctx),
            None => mismatch(ctx, parsed),
        }
    }

    /// Both halves of one cable, summed per node pair, on the last job of each group. A group is
    /// judged only when every half measured: a skipped or failed half already has its own
    /// verdict, and a partial sum would name the wrong trap.
    fn judge_round(&self, plan: &Plan, round: &Round, jobs: &mut [JobResult]) {
        let mut groups: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
        for j in &round.jobs {
            if let Some(g) = &j.group {
                let value = jobs
                    .iter()
                    .find(|r| r.job == j.id)
                    .and_then(JobResult::main_value);
                groups.entry(g.clone()).or_default().push(value);
            }
        }
        let spec = plan.gate(&METRIC);
        // each half's expected value as the run judged it (a narrowed PCIe link caps it)
        let expected: Vec<Option<f64>> = round
            .jobs
            .iter()
            .map(|j| {
                jobs.iter()
                    .find(|r| r.job == j.id)
                    .and_then(|r| r.expected_gbps)
            })
            .collect();
        for (g, vals) in groups {
            let Some(vals) = vals.into_iter().collect::<Option<Vec<f64>>>() else {
                continue;
            };
            let sum: f64 = vals.iter().sum();
            let group_expected: Vec<f64> = round
                .jobs
                .iter()
                .zip(&expected)
                .filter(|(j, _)| j.group.as_deref() == Some(g.as_str()))
                .filter_map(|(_, e)| *e)
                .collect();
            let exp = (!group_expected.is_empty()).then(|| group_expected.iter().sum());
            let mut v = spec.judge(format!("{} {g}", ID.name()), &[sum], exp);
            // the sum is about every half of the group's flows, and the cables into them
            let mut parts: Vec<crate::gate::part::Part> = Vec::new();
            for j in round
                .jobs
                .iter()
                .filter(|j| j.group.as_deref() == Some(g.as_str()))
            {
                if let Some(p) = &j.pair {
                    let (halves, cables, isls) = super::parts::pair_path(plan, p);
                    for x in halves.into_iter().chain(cables).chain(isls) {
                        if !parts.contains(&x) {
                            parts.push(x);
                        }
                    }
                }
            }
            v.set_about(parts);
            // the flow of the whole port: the group's ends, both halves
            v.flow = round
                .jobs
                .iter()
                .find(|j| j.group.as_deref() == Some(g.as_str()))
                .and_then(|j| j.flow(plan))
                .map(|f| crate::gate::flow::Flow {
                    half: "both".into(),
                    ..f
                });
            if v.outcome != crate::gate::judge::Outcome::Ok {
                v.detail = format!(
                    "the halves sum to {sum:.2} Gb/s ({}){}",
                    vals.iter()
                        .map(|x| format!("{x:.2}"))
                        .collect::<Vec<_>>()
                        .join(" + "),
                    exp.map(|e| format!(" of {e:.1} expected"))
                        .unwrap_or_default()
                );
            }
            // on the group's last job
            let last = round
                .jobs
                .iter()
                .rev()
                .find(|j| j.group.as_deref() == Some(g.as_str()))
                .map(|j| j.id.clone());
            if let Some(r) = jobs.iter_mut().find(|r| Some(&r.job) == last.as_ref()) {
                r.verdicts.push(v);
            }
        }
    }
}
