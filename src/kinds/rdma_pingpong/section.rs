//! `[tests.rdma-pingpong]`: the table as written, what the kind runs from, and its checks.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::ValueDeserializer;

use crate::plan::SectionReader;
use crate::plan::section::SectionData;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawPingpongTest {
    pub enabled: Option<bool>,
    /// `-s`, bytes per message, 1 to 1048576 (default 4096, rc_pingpong's own).
    #[schemars(range(min = 1, max = 1048576))]
    pub size_bytes: Option<u64>,
    /// `-n`, round trips, 1 to 100000000 (default 1000, rc_pingpong's own).
    #[schemars(range(min = 1, max = 100000000))]
    pub iterations: Option<u32>,
    #[schemars(with = "Option<Vec<String>>")]
    pub halves: Option<Vec<Spanned<String>>>,
    /// Per-job timeout in seconds, 1 to 86400 (default 30).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_s: Option<u32>,
}

/// A validated ping-pong section.
#[derive(Debug, Clone, PartialEq)]
pub struct PingpongTest {
    pub size_bytes: u64,
    pub iterations: u32,
    pub halves: Vec<String>,
    pub timeout_s: u32,
}

/// One `[tests.rdma-pingpong]` table, read: `None` when disabled. Each pair runs alone: a large
/// switched fabric is worth a warning (`rdma-bw` measures one in bounded rounds).
pub(super) fn read(table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
    let t: RawPingpongTest = r.deserialize(table)?;
    if t.enabled == Some(false) {
        return None;
    }
    let test = PingpongTest {
        size_bytes: t.size_bytes.unwrap_or(4096),
        iterations: t.iterations.unwrap_or(1000),
        halves: r.halves(t.halves.as_ref()),
        timeout_s: t.timeout_s.unwrap_or(30),
    };
    let bounded_by = Some(super::super::rdma_bw::ID.name());
    r.per_link_size(super::ID.name(), &test.halves, 0, None, bounded_by);
    Some(Arc::new(test))
}
