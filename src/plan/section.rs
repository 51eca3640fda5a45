//! The seam between the plan language and the test kinds: `[tests.<kind>]` sections belong to
//! their kinds. The plan layer reads everything else; each kind (in `crate::kinds`, which hands
//! its [`Catalog`] to [`super::load`]) declares its section's key and schema, and reads it with
//! the building blocks of [`SectionReader`] (halves, schedules, declared rounds, node references,
//! unique names), so a new kind's section (its raw form, model and checks) is in its own folder,
//! and no line here.

use std::ops::Range;

use schemars::{Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::ValueDeserializer;

use super::diag::{Problem, did_you_mean};
use super::model::{DeclaredRound, Node, NodeId, ScheduleKind, Segment};
pub use super::model::{Section, SectionData};
use super::raw::RawRound;
use crate::gate::threshold::MetricSpec;

/// A test kind's section of the plan, as the plan language sees it.
pub trait SectionKind: Sync {
    /// Its key under `[tests]` (`rdma-bw`).
    fn key(&self) -> &'static str;

    /// One sentence for the schema: what the section runs.
    fn describe(&self) -> &'static str;

    /// `[[tests.<key>]]`: an array of tables, each one test.
    fn repeated(&self) -> bool {
        false
    }

    /// The schema of one table of the section (its raw type's), from `gen`.
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema;

    /// Read one table of the section (spans kept, pointing into the plan) into what the kind
    /// runs from; problems go to `r`. `None` when it is disabled or wrong.
    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData>;
}

/// What one kind's tests in a plan would run, counted without building a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestSize {
    /// The kind's section key (`rdma-bw`).
    pub key: &'static str,
    pub rounds: usize,
    pub jobs: usize,
}

/// What the plan language needs to know of the test kinds: their sections and the templates a
/// plan may override.
pub trait Catalog: Sync {
    fn sections(&self) -> Vec<&'static dyn SectionKind>;

    /// What the validated plan's tests would run, per kind that runs something.
    fn sizes(&self, plan: &super::model::Plan) -> Vec<TestSize>;

    /// The metrics the kinds measure: each has a `[gates.<metric>]` table and a `[regression]`
    /// key.
    fn metrics(&self) -> Vec<&'static MetricSpec>;

    /// Names of the built-in templates.
    fn template_names(&self) -> Vec<&'static str>;

    /// The variables template `name` is given.
    fn template_variables(&self, name: &str) -> Vec<&'static str>;

    /// Check an override of template `name` (syntax, variables its job provides).
    fn check_template(&self, name: &str, source: &str) -> Result<(), String>;

    /// The built-in templates only the SSH launcher writes (mpirun lines): a plan run by the
    /// Slurm launcher may not override them.
    fn ssh_only_templates(&self) -> Vec<&'static str>;
}

/// A catalog of no test kinds and no templates: for plans without `[tests]` sections.
pub struct NoKinds;

impl Catalog for NoKinds {
    fn sections(&self) -> Vec<&'static dyn SectionKind> {
        Vec::new()
    }

    fn sizes(&self, _plan: &super::model::Plan) -> Vec<TestSize> {
        Vec::new()
    }

    fn metrics(&self) -> Vec<&'static MetricSpec> {
        Vec::new()
    }

    fn template_names(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn template_variables(&self, _name: &str) -> Vec<&'static str> {
        Vec::new()
    }

    fn check_template(&self, name: &str, _source: &str) -> Result<(), String> {
        Err(format!("no built-in template `{name}`"))
    }

    fn ssh_only_templates(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// The keys of a section that schedules pairs (`schedule`, `rounds`, `seed`, declared rounds,
/// `halves`), as its raw table holds them: what [`SectionReader::sampling`] checks.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleKeys<'a> {
    pub schedule: Option<&'a Spanned<String>>,
    pub rounds: Option<&'a Spanned<u32>>,
    pub seed: Option<&'a Spanned<u64>>,
    pub round: &'a [RawRound],
    pub halves: Option<&'a Vec<Spanned<String>>>,
}

/// The plan so far and the problem list, as a kind's section reader sees them: the building
/// blocks the validation offers test sections (halves, schedules, declared rounds, node
/// references, unique names, size warnings), each of which reads one shape of key and reports
/// its problems.
pub trait SectionReader {
    /// Where the table being read is.
    fn at(&self) -> Range<usize>;

    /// Report a problem.
    fn push(&mut self, p: Problem);

    /// The plan's nodes and layer-2 segments.
    fn nodes(&self) -> &[Node];
    fn segments(&self) -> &[Segment];

    /// `halves = [...]`: each a half some cable carries (every cabled half when absent).
    fn halves(&mut self, raw: Option<&Vec<Spanned<String>>>) -> Vec<String>;

    /// `schedule`: `per-link` (the default; `rounds` when rounds are declared), `rounds`,
    /// `all-pairs` or `sampled`.
    fn schedule(&mut self, raw: Option<&Spanned<String>>, has_rounds: bool) -> ScheduleKind;

    /// `rounds` and `seed` of `schedule = "sampled"`, checked against the schedule and the
    /// halves (a switched fabric to sample).
    fn sampling(&mut self, keys: ScheduleKeys<'_>, schedule: ScheduleKind) -> ScheduleKind;

    /// Declared rounds of flows (`[[tests.<kind>.round]]`): names unique, no half in two flows
    /// of one round.
    fn rounds(&mut self, raw: &[RawRound]) -> Vec<DeclaredRound>;

    /// A node named by `what` (`NCCL test`), declared in the plan.
    fn node(&mut self, name: &Spanned<String>, what: &str) -> Option<NodeId>;

    /// A name that must be unique among every `what` of the plan's sections (`NCCL test`); a
    /// repeat is reported once the sections are read.
    fn declare(&mut self, what: &'static str, name: &Spanned<String>);

    /// A warning when a test that runs each pair alone (`key`, over `halves`, `duration_s` a
    /// round) meets a large switched fabric: the rounds and the time it would take.
    /// `bounded_by` names the test that measures such a fabric in bounded rounds, when it is
    /// another (`None`: this one, with another `schedule`).
    fn per_link_size(
        &mut self,
        key: &str,
        halves: &[String],
        duration_s: u32,
        schedule_at: Option<Range<usize>>,
        bounded_by: Option<&str>,
    );
}

impl dyn SectionReader + '_ {
    /// Deserialize the table into `T` (spans kept); a type the shape check let through but
    /// serde refuses is a problem at its span.
    pub fn deserialize<T: DeserializeOwned>(&mut self, table: ValueDeserializer<'_>) -> Option<T> {
        match T::deserialize(table) {
            Ok(t) => Some(t),
            Err(e) => {
                let p = Problem::error("plan::toml", e.message().trim().to_string())
                    .help("`fabricplan schema` lists every key of the section")
                    .at(e.span().unwrap_or(self.at()), "here");
                self.push(p);
                None
            }
        }
    }

    /// One of `options` named by `value` (`direction = "both"`); an unknown one is a problem
    /// with `code`, naming the options (or the nearest).
    pub fn keyword<T: Copy>(
        &mut self,
        code: &'static str,
        what: &str,
        value: &Spanned<String>,
        options: &[(&str, T)],
    ) -> Option<T> {
        if let Some((_, v)) = options.iter().find(|(k, _)| *k == value.get_ref()) {
            return Some(*v);
        }
        let names: Vec<&str> = options.iter().map(|(k, _)| *k).collect();
        let mut p = Problem::error(code, format!("unknown {what} `{}`", value.get_ref()))
            .at(value.span(), format!("unknown {what}"));
        p = match did_you_mean(value.get_ref(), names.iter().copied()) {
            Some(s) => p.help(format!("did you mean `{s}`?")),
            None => p.help(format!(
                "one of {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        self.push(p);
        None
    }
}
