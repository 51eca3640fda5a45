//! `rdma-lat`: ib_write_lat per link, 2-byte writes; t_typical against the hardware floor (a
//! wrong device or a software path shows as microseconds too many).

pub(super) mod section;

use minijinja::context;
use schemars::{Schema, SchemaGenerator};
use toml::de::ValueDeserializer;

use super::view::LINK_LATENCY;
use super::{FlowSeries, TestKind, mismatch};
use crate::gate::classify::{self, Context};
use crate::gate::judge::Verdict;
use crate::gate::threshold::{Metric, MetricSpec, Threshold, Unit};
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::plan::section::SectionData;
use crate::plan::{Plan, SectionKind, SectionReader};
use crate::render::job::{JobCommands, PairTemplates, Resolution, pair_commands};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::schedule::stages::one_way_per_link;
use crate::schedule::{Job, KindId, Stage};
use crate::tools::perftest::parse::LatReport;
use section::LatTest;

pub const ID: KindId = KindId("rdma-lat");

pub struct RdmaLat;

/// ib_write_lat t_typical, us, against the hardware floor (~1.45 us on a GB10 direct cable).
pub static METRIC: MetricSpec = MetricSpec {
    metric: Metric::new("rdma-lat"),
    unit: Unit::Us,
    about: "RDMA latency per half (ib_write_lat typical), us",
    pass: Some(Threshold::Absolute { value: 3.0 }),
    warn: Some(Threshold::Absolute { value: 10.0 }),
    trap: Trap::SlowLatency,
    per_flow: true,
    ceiling: None,
};

const LAT_VARS: &[&str] = &[
    "tool",
    "device",
    "gid_index",
    "port",
    "size_bytes",
    "iterations",
    "netdev",
    "local_ip",
    "server_ip",
    "node",
];

const TEMPLATES: &[Template] = &[
    Template {
        name: "rdma-lat-server",
        source: include_str!("templates/rdma-lat-server.j2"),
        variables: LAT_VARS,
    },
    Template {
        name: "rdma-lat-client",
        source: include_str!("templates/rdma-lat-client.j2"),
        variables: LAT_VARS,
    },
];

impl SectionKind for RdmaLat {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "RDMA latency per half (`ib_write_lat`, 2-byte writes)."
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<section::RawLatTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        section::read(table, r)
    }
}

static SERIES: [FlowSeries; 1] = [FlowSeries {
    metric: METRIC.metric,
    family: &LINK_LATENCY,
    exp: -6,
    expected: None,
}];

impl TestKind for RdmaLat {
    fn id(&self) -> KindId {
        ID
    }

    /// Latency on every link: a slow hop shows here first.
    fn starter(&self, _shape: &super::Drafted) -> Option<String> {
        Some(format!(
            "# latency per link (2-byte writes): a slow hop or a bad cable shows here first\n[tests.{}]\n",
            ID.name()
        ))
    }

    fn tool(&self) -> Tool {
        Tool::IB_WRITE_LAT
    }

    fn metric(&self) -> &'static MetricSpec {
        &METRIC
    }

    fn templates(&self) -> &'static [Template] {
        TEMPLATES
    }

    fn stages(&self, plan: &Plan) -> Vec<Stage> {
        plan.section::<LatTest>(ID.name())
            .map(|t| vec![one_way_per_link(plan, ID, &t.halves)])
            .unwrap_or_default()
    }

    fn commands(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        style: &dyn LaunchStyle,
        res: &Resolution,
        job: &Job,
    ) -> Result<JobCommands, RenderError> {
        let s = super::section_of::<LatTest>(plan, ID, job)?;
        let t = PairTemplates {
            server: "rdma-lat-server",
            client: "rdma-lat-client",
            timeout_s: s.timeout_s,
            needs_device: true,
        };
        pair_commands(plan, renderer, style, res, job, &t, |end| {
            context! {
                tool => "ib_write_lat", device => end.device.value.clone(), gid_index => end.gid.value.clone(),
                port => end.port, size_bytes => s.size_bytes, iterations => s.iterations,
                netdev => end.netdev.value.clone(), local_ip => end.local_ip.to_string(),
                server_ip => end.server_ip.to_string(), node => end.node,
            }
        })
    }

    fn series(&self) -> &'static [FlowSeries] {
        &SERIES
    }

    fn judge(&self, plan: &Plan, _job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict> {
        match parsed.get::<LatReport>() {
            Some(r) => classify::latency(&plan.gate(&METRIC), r, ctx),
            None => mismatch(ctx, parsed),
        }
    }
}
