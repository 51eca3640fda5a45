//! The seam between the plan language and the test kinds: `[tests.<kind>]` sections belong to
//! their kinds. The plan layer reads everything else; each kind (in `crate::kinds`, which hands
//! its [`Catalog`] to [`super::load`]) declares its section's key and schema, and reads it with
//! the building blocks of [`SectionReader`] (schedules, halves, declared rounds, NCCL ranks), so
//! a new kind is one file, its section included, and no line here.

use std::ops::Range;

use schemars::{Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use toml::de::ValueDeserializer;

use super::diag::Problem;
use super::model::{BwTest, IperfTest, LatTest, NcclTest};
pub use super::model::{Section, SectionData};
use super::raw::{RawBwTest, RawIperfTest, RawLatTest, RawNcclTest};
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

/// What the plan language needs to know of the test kinds: their sections and the templates a
/// plan may override.
pub trait Catalog: Sync {
    fn sections(&self) -> Vec<&'static dyn SectionKind>;

    /// The metrics the kinds measure: each has a `[gates.<metric>]` table and a `[regression]`
    /// key.
    fn metrics(&self) -> Vec<&'static MetricSpec>;

    /// Names of the built-in templates.
    fn template_names(&self) -> Vec<&'static str>;

    /// The variables template `name` is given.
    fn template_variables(&self, name: &str) -> Vec<&'static str>;

    /// Check an override of template `name` (syntax, variables its job provides).
    fn check_template(&self, name: &str, source: &str) -> Result<(), String>;
}

/// A catalog of no test kinds and no templates: for plans without `[tests]` sections.
pub struct NoKinds;

impl Catalog for NoKinds {
    fn sections(&self) -> Vec<&'static dyn SectionKind> {
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
}

/// The plan so far and the problem list, as a kind's section reader sees them: the building
/// blocks the validation offers test sections (schedules, halves, declared rounds, NCCL ranks),
/// each of which reads one shape of section and warns about its size.
pub trait SectionReader {
    /// Where the table being read is.
    fn at(&self) -> Range<usize>;

    /// Report a problem.
    fn push(&mut self, p: Problem);

    /// A bandwidth section (`rdma-bw`, `rdma-bw-both` when `both`), named `key`.
    fn bw(&mut self, t: &RawBwTest, key: &str, both: bool) -> Option<BwTest>;

    /// A latency section, named `key`.
    fn lat(&mut self, t: &RawLatTest, key: &str) -> Option<LatTest>;

    /// A TCP sanity section, named `key`.
    fn iperf(&mut self, t: &RawIperfTest, key: &str) -> Option<IperfTest>;

    /// One NCCL test (names unique across the plan's NCCL tests).
    fn nccl(&mut self, t: &RawNcclTest) -> Option<NcclTest>;
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
}
