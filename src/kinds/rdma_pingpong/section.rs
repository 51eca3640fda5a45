//! `[tests.rdma-pingpong]`: the table as written, what the kind runs from, and its checks.

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::ValueDeserializer;

use crate::kinds::rdma_lat::section::{LatTest, Written, read_per_half};
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

/// A validated ping-pong section: the shape `rdma-lat`'s is.
pub type PingpongTest = LatTest;

/// One `[tests.rdma-pingpong]` table, read: `None` when disabled (4096-byte messages by
/// default, rc_pingpong's own).
pub(super) fn read(table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
    let t: RawPingpongTest = r.deserialize(table)?;
    let written = Written {
        enabled: t.enabled,
        size_bytes: t.size_bytes,
        iterations: t.iterations,
        halves: t.halves.as_ref(),
        timeout_s: t.timeout_s,
    };
    read_per_half(super::ID, written, 4096, r)
}
