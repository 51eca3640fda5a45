//! `iperf3`: TCP sanity per link. Informational unless the plan gates it: one TCP stream on GB10
//! ARM cores sits near 12 Gb/s whatever the link.

pub mod parse;
mod section;
mod sim;

use minijinja::context;
use schemars::{Schema, SchemaGenerator};
use toml::de::ValueDeserializer;

use super::simulated::SimTool;
use super::{FlowSeries, TestKind, mismatch};
use crate::gate::GateSpec;
use crate::gate::classify::{Context, error_verdict, not_a_measurement};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::threshold::{Metric, MetricSpec, Unit};
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::plan::section::SectionData;
use crate::plan::{Plan, SectionKind, SectionReader};
use crate::render::job::{JobCommands, PairTemplates, Resolution, pair_commands};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::schedule::stages::one_way_per_link;
use crate::schedule::{Job, KindId, Round, Stage};
use parse::IperfReport;
use section::IperfTest;

pub const ID: KindId = KindId("iperf3");

pub struct Iperf3;

const VARS: &[&str] = &[
    "port",
    "local_ip",
    "server_ip",
    "duration_s",
    "streams",
    "node",
];

const TEMPLATES: &[Template] = &[
    Template {
        name: "iperf3-server",
        source: include_str!("templates/iperf3-server.j2"),
        variables: VARS,
    },
    Template {
        name: "iperf3-client",
        source: include_str!("templates/iperf3-client.j2"),
        variables: VARS,
    },
];

/// iperf3 receiver rate, Gb/s: informational (one TCP stream on GB10 sits near 12 Gb/s whatever
/// the link).
pub static METRIC: MetricSpec = MetricSpec {
    metric: Metric::new("iperf3"),
    unit: Unit::Gbps,
    about: "TCP rate per half (iperf3 receiver), Gb/s; informational by default",
    pass: None,
    warn: None,
    trap: Trap::BelowLineRate,
    per_flow: true,
    ceiling: None,
};

impl SectionKind for Iperf3 {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "TCP sanity per link (`iperf3`), informational unless gated."
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<section::RawIperfTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        section::read(table, r)
    }
}

static SERIES: [FlowSeries; 1] = [super::rdma_bw::bandwidth_series(&METRIC)];

/// Informational unless the plan gates it.
fn judge(spec: &GateSpec, parsed: &IperfReport, ctx: &Context) -> Vec<Verdict> {
    if let Some(v) = error_verdict(&ctx.gate, parsed.error.as_ref()) {
        return vec![v];
    }
    if let Some(v) = not_a_measurement(&ctx.gate, &parsed.rejected) {
        return vec![v];
    }
    match parsed.gbps {
        Some(g) => {
            let mut v = spec.judge(&ctx.gate, &[g], None);
            if spec.pass.is_none() {
                v.detail = "one TCP stream on GB10 ARM cores sits near 12 Gb/s whatever the link: informational".into();
            }
            vec![v]
        }
        None => vec![Verdict::check(
            &ctx.gate,
            Outcome::Fail,
            "no iperf3 summary",
            Some(Trap::Unparseable),
        )],
    }
}

impl TestKind for Iperf3 {
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
        plan.section::<IperfTest>(ID.name())
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
        let s = super::section_of::<IperfTest>(plan, ID, job)?;
        let t = PairTemplates {
            server: "iperf3-server",
            client: "iperf3-client",
            timeout_s: s.timeout_s,
            needs_device: false,
        };
        pair_commands(plan, renderer, style, res, job, &t, |end| {
            context! {
                port => end.port, local_ip => end.local_ip.to_string(),
                server_ip => end.server_ip.to_string(), duration_s => s.duration_s,
                streams => s.streams, node => end.node,
            }
        })
    }

    fn expected(&self, plan: &Plan, round: &Round) -> Vec<Option<f64>> {
        crate::capacity::expected(plan, round)
    }

    fn series(&self) -> &'static [FlowSeries] {
        &SERIES
    }

    fn judge(&self, plan: &Plan, _job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict> {
        match parsed.get::<IperfReport>() {
            Some(r) => judge(&plan.gate(&METRIC), r, ctx),
            None => mismatch(ctx, parsed),
        }
    }

    fn simulated(&self) -> Option<&'static dyn SimTool> {
        Some(&sim::Iperf3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of 1.8e19 bit/s is no measurement: the gate says so instead of passing.
    #[test]
    fn a_rate_above_any_link_is_not_a_measurement() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/parse/iperf3/json-rate-above-any-link.json"
        );
        let r = parse::parse(&std::fs::read_to_string(path).unwrap());
        let ctx = Context {
            gate: "iperf3 x".into(),
            ..Context::default()
        };
        let v = judge(&GateSpec::default_for(&METRIC), &r, &ctx);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].outcome, v[0].measured), (Outcome::Fail, None));
        assert!(
            v[0].detail.starts_with("the tool's output is not a measurement: line 1: end.sum_sent.bits_per_second `1.8e19` is above the 100,000 Gb/s"),
            "{}",
            v[0].detail
        );
    }
}
