//! `rdma-bw`: ib_write_bw per half, one link at a time, in declared rounds or all pairs; judged
//! against the capacity model's expected value with the throttle, RSTP and software-forwarding
//! signatures.

pub mod section;

use minijinja::context;
use schemars::{Schema, SchemaGenerator};
use toml::de::ValueDeserializer;

use super::view::{LINK_BANDWIDTH, LINK_EXPECTED};
use super::{FlowSeries, Matrix, TestKind, mismatch};
use crate::gate::classify::{self, Context};
use crate::gate::judge::Verdict;
use crate::gate::threshold::{Metric, MetricSpec, Threshold, Unit};
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::plan::section::SectionData;
use crate::plan::{Plan, ScheduleKind, SectionKind, SectionReader};
use crate::render::job::{JobCommands, PairTemplates, Resolution, pair_commands};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::schedule::stages::{all_pairs, declared, per_link, sampled, selected_segments};
use crate::schedule::{Job, KindId, Round, Stage};
use crate::tools::perftest::parse::BwReport;

pub const ID: KindId = KindId("rdma-bw");

use section::BwTest;

pub struct RdmaBw;

/// ib_write_bw (and ib_read_bw) average per half, Gb/s, against the capacity model: 80% of
/// expected passes (90 Gb/s on an uncontended GB10 half, ~111.9 expected), so a fairly shared ISL
/// (81.9 of ~82 expected) passes while a throttled half (13 Gb/s) fails.
pub static METRIC: MetricSpec = MetricSpec {
    metric: Metric::new("rdma-bw"),
    unit: Unit::Gbps,
    about: "RDMA bandwidth per half (ib_write_bw, ib_read_bw average), Gb/s",
    pass: Some(Threshold::PctOfExpected { pct: 80.0 }),
    warn: Some(Threshold::PctOfExpected { pct: 27.0 }),
    trap: Trap::FirmwareThrottle,
    per_flow: true,
    ceiling: Some(crate::gate::threshold::Ceiling::Half),
};

/// The variables of the perftest bandwidth templates.
const BW_VARS: &[&str] = &[
    "tool",
    "bidirectional",
    "device",
    "gid_index",
    "port",
    "duration_s",
    "size_bytes",
    "qps",
    "netdev",
    "local_ip",
    "server_ip",
    "node",
];

/// The perftest bandwidth server and client: every bandwidth kind's.
pub(super) const TEMPLATES: &[Template] = &[
    Template {
        name: "rdma-bw-server",
        source: include_str!("templates/rdma-bw-server.j2"),
        variables: BW_VARS,
    },
    Template {
        name: "rdma-bw-client",
        source: include_str!("templates/rdma-bw-client.j2"),
        variables: BW_VARS,
    },
];

impl SectionKind for RdmaBw {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "RDMA bandwidth per half (`ib_write_bw`), one link at a time, in declared rounds or all pairs."
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<section::RawBwTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        section::read_table(table, r, ID.name(), false)
    }
}

/// The rounds of the bandwidth section of kind `id`: its schedule's.
pub(super) fn stages(plan: &Plan, id: KindId) -> Vec<Stage> {
    let Some(t) = plan.section::<BwTest>(id.name()) else {
        return Vec::new();
    };
    let segs = selected_segments(plan, &t.halves);
    vec![match t.schedule {
        ScheduleKind::PerLink => per_link(plan, id, &segs, t.direction),
        ScheduleKind::Rounds => declared(id, &t.rounds, t.direction),
        ScheduleKind::AllPairs => all_pairs(plan, id, segs, t.direction),
        ScheduleKind::Sampled(s) => sampled(id, segs, s, t.direction),
    }]
}

/// A perftest bandwidth pair of `section`, running `tool`: shared by the bandwidth kinds.
#[allow(clippy::too_many_arguments)]
pub(super) fn perftest_bw_commands(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    res: &Resolution,
    job: &Job,
    section: &BwTest,
    tool: &str,
) -> Result<JobCommands, RenderError> {
    let t = PairTemplates {
        server: "rdma-bw-server",
        client: "rdma-bw-client",
        timeout_s: section.timeout_s,
        needs_device: true,
    };
    let bidirectional = job.pair.as_ref().is_some_and(|p| p.bidirectional);
    pair_commands(plan, renderer, style, res, job, &t, |end| {
        context! {
            tool => tool, bidirectional => bidirectional,
            device => end.device.value.clone(), gid_index => end.gid.value.clone(),
            port => end.port, duration_s => section.duration_s, size_bytes => section.size_bytes,
            qps => section.qps, netdev => end.netdev.value.clone(),
            local_ip => end.local_ip.to_string(), server_ip => end.server_ip.to_string(),
            node => end.node,
        }
    })
}

/// A bandwidth per flow and its expected value, in the metrics file.
pub(super) const fn bandwidth_series(metric: &MetricSpec) -> FlowSeries {
    FlowSeries {
        metric: metric.metric,
        family: &LINK_BANDWIDTH,
        exp: 9,
        expected: Some(&LINK_EXPECTED),
    }
}

static SERIES: [FlowSeries; 1] = [bandwidth_series(&METRIC)];

impl TestKind for RdmaBw {
    fn id(&self) -> KindId {
        ID
    }

    /// Every link measured each way in turn: one link at a time on cables, every pair of
    /// ports on a switch (seeded random pairings past [`super::Drafted::ALL_PAIRS_UP_TO`]).
    fn starter(&self, shape: &super::Drafted) -> Option<String> {
        let (schedule, why) = match shape.switched_members {
            0 => ("per-link", "one link at a time".to_string()),
            n if n <= super::Drafted::ALL_PAIRS_UP_TO => (
                "all-pairs",
                format!("every pair of the {n} ports on the switch, concurrently"),
            ),
            n => (
                "sampled",
                format!(
                    "seeded random pairings of the {n} ports on the switch (all-pairs past {} ports runs for hours)",
                    super::Drafted::ALL_PAIRS_UP_TO
                ),
            ),
        };
        Some(format!(
            "# bandwidth per half, {why}, each way in turn (a transmit fault at either end shows)\n[tests.{}]\nschedule = \"{schedule}\"\ndirection = \"both\"\n",
            ID.name()
        ))
    }

    fn tool(&self) -> Tool {
        Tool::IB_WRITE_BW
    }

    fn loopback(&self) -> bool {
        true
    }

    fn metric(&self) -> &'static MetricSpec {
        &METRIC
    }

    fn templates(&self) -> &'static [Template] {
        TEMPLATES
    }

    fn stages(&self, plan: &Plan) -> Vec<Stage> {
        stages(plan, ID)
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
        perftest_bw_commands(plan, renderer, style, res, job, t, "ib_write_bw")
    }

    fn expected(&self, plan: &Plan, round: &Round) -> Vec<Option<f64>> {
        crate::capacity::expected(plan, round)
    }

    fn matrix(&self) -> Option<Matrix> {
        Some(Matrix {
            tag: "",
            legend: "one half measured alone",
        })
    }

    fn series(&self) -> &'static [FlowSeries] {
        &SERIES
    }

    fn judge(&self, plan: &Plan, _job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict> {
        match parsed.get::<BwReport>() {
            Some(r) => classify::bandwidth(&plan.gate(&METRIC), r, ctx),
            None => mismatch(ctx, parsed),
        }
    }
}
