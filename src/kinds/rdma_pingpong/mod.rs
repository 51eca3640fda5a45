//! `rdma-pingpong`: rdma-core's `ibv_rc_pingpong` between the two ends of every link, a cheap
//! check that the two ends connect a reliable-connected queue pair (the RC handshake through
//! RTR and RTS) and exchange over it; its round trip (usec/iter) is gated.

mod parse;
mod section;
mod sim;

use minijinja::context;
use schemars::{Schema, SchemaGenerator};
use toml::de::ValueDeserializer;

use super::simulated::SimTool;
use super::{Family, FlowSeries, TestKind, mismatch};
use crate::gate::classify::{Context, error_verdict};
use crate::gate::judge::{Outcome, Verdict};
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
use parse::PingpongReport;
use section::PingpongTest;

pub const ID: KindId = KindId("rdma-pingpong");

pub struct RdmaPingpong;

/// ibv_rc_pingpong's round trip, us: a few microseconds on a healthy RoCE link (two one-way
/// latencies and the message); tens mean a software path or a crawling ISL.
pub static METRIC: MetricSpec = MetricSpec {
    metric: Metric::new("rdma-pingpong"),
    unit: Unit::Us,
    about: "RC ping-pong round trip per half (ibv_rc_pingpong usec/iter), us",
    pass: Some(Threshold::Absolute { value: 10.0 }),
    warn: Some(Threshold::Absolute { value: 25.0 }),
    trap: Trap::SlowLatency,
    per_flow: true,
    ceiling: None,
};

/// Measured round trip per flow, seconds.
static ROUND_TRIP: Family = Family {
    name: "fabricplan_link_round_trip_seconds",
    kind: "gauge",
    help: "Measured RC ping-pong round trip of one flow (ibv_rc_pingpong usec/iter).",
};

static SERIES: [FlowSeries; 1] = [FlowSeries {
    metric: METRIC.metric,
    family: &ROUND_TRIP,
    exp: -6,
    expected: None,
}];

const VARS: &[&str] = &[
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
        name: "rdma-pingpong-server",
        source: include_str!("templates/rdma-pingpong-server.j2"),
        variables: VARS,
    },
    Template {
        name: "rdma-pingpong-client",
        source: include_str!("templates/rdma-pingpong-client.j2"),
        variables: VARS,
    },
];

impl SectionKind for RdmaPingpong {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "RC queue-pair handshake and round trip per half (`ibv_rc_pingpong`)."
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<section::RawPingpongTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        section::read(table, r)
    }
}

/// The verdict of one capture: the tool's own error, else its round trip against the gate.
fn judge(plan: &Plan, r: &PingpongReport, ctx: &Context) -> Verdict {
    if let Some(v) = error_verdict(&ctx.gate, r.error.as_ref()) {
        return v;
    }
    match r.usec_per_iter {
        Some(u) => plan.gate(&METRIC).judge(&ctx.gate, &[u], None),
        None => Verdict::check(
            &ctx.gate,
            Outcome::Fail,
            "no `iters in ... usec/iter` line in ibv_rc_pingpong's output",
            Some(Trap::Unparseable),
        ),
    }
}

impl TestKind for RdmaPingpong {
    fn id(&self) -> KindId {
        ID
    }

    fn tool(&self) -> Tool {
        Tool::new(&parse::TOOL)
    }

    fn metric(&self) -> &'static MetricSpec {
        &METRIC
    }

    fn templates(&self) -> &'static [Template] {
        TEMPLATES
    }

    fn stages(&self, plan: &Plan) -> Vec<Stage> {
        plan.section::<PingpongTest>(ID.name())
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
        let s = super::section_of::<PingpongTest>(plan, ID, job)?;
        let t = PairTemplates {
            server: "rdma-pingpong-server",
            client: "rdma-pingpong-client",
            timeout_s: s.timeout_s,
            needs_device: true,
        };
        pair_commands(plan, renderer, style, res, job, &t, |end| {
            context! {
                tool => parse::TOOL.name, device => end.device.value.clone(),
                gid_index => end.gid.value.clone(), port => end.port,
                size_bytes => s.size_bytes, iterations => s.iterations,
                netdev => end.netdev.value.clone(), local_ip => end.local_ip.to_string(),
                server_ip => end.server_ip.to_string(), node => end.node,
            }
        })
    }

    fn series(&self) -> &'static [FlowSeries] {
        &SERIES
    }

    fn judge(&self, plan: &Plan, _job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict> {
        match parsed.get::<PingpongReport>() {
            Some(r) => vec![judge(plan, r, ctx)],
            None => mismatch(ctx, parsed),
        }
    }

    fn simulated(&self) -> Option<&'static dyn SimTool> {
        Some(&sim::Pingpong)
    }
}
