//! `rdma-read-bw`: ib_read_bw per half: the responder's NIC reads the requester's memory, the
//! path a storage or parameter-server fetch takes. Scheduled, gated and trapped like `rdma-bw`
//! (its `[gates.rdma-bw]`, the throttle, RSTP and software-forwarding signatures), against its
//! own expected value: a read carries a request each way, and ConnectX-7 reads reach ~97% of
//! what writes do on the same half.

use schemars::{Schema, SchemaGenerator};
use toml::de::ValueDeserializer;

use super::rdma_bw::section::BwTest;
use super::{FlowSeries, Matrix, TestKind, mismatch};
use crate::gate::classify::{self, Context};
use crate::gate::judge::Verdict;
use crate::gate::threshold::MetricSpec;
use crate::parse::{Parsed, Tool};
use crate::plan::section::SectionData;
use crate::plan::{Plan, SectionKind, SectionReader};
use crate::render::job::{JobCommands, Resolution};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::schedule::{Job, KindId, Round, Stage};
use crate::tools::perftest::parse::BwReport;

pub const ID: KindId = KindId("rdma-read-bw");

/// What an RDMA read reaches of the line rate a write reaches on the same half.
const READ_SHARE: f64 = 0.97;

pub struct RdmaReadBw;

impl SectionKind for RdmaReadBw {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "RDMA read bandwidth per half (`ib_read_bw`), scheduled like `rdma-bw`."
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<super::rdma_bw::section::RawBwTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        super::rdma_bw::section::read_table(table, r, ID.name(), false)
    }
}

static SERIES: [FlowSeries; 1] = [super::rdma_bw::bandwidth_series(&super::rdma_bw::METRIC)];

impl TestKind for RdmaReadBw {
    fn id(&self) -> KindId {
        ID
    }

    fn tool(&self) -> Tool {
        Tool::IB_READ_BW
    }

    fn metric(&self) -> &'static MetricSpec {
        &super::rdma_bw::METRIC
    }

    fn templates(&self) -> &'static [Template] {
        // the perftest bandwidth pair, with `tool = ib_read_bw`
        super::rdma_bw::TEMPLATES
    }

    fn stages(&self, plan: &Plan) -> Vec<Stage> {
        super::rdma_bw::stages(plan, ID)
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
        super::rdma_bw::perftest_bw_commands(plan, renderer, style, res, job, t, "ib_read_bw")
    }

    fn expected(&self, plan: &Plan, round: &Round) -> Vec<Option<f64>> {
        crate::capacity::expected(plan, round)
            .into_iter()
            .map(|e| e.map(|e| e * READ_SHARE))
            .collect()
    }

    fn matrix(&self) -> Option<Matrix> {
        Some(Matrix {
            tag: "r",
            legend: "that half's RDMA reads",
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
}
