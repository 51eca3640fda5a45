//! `[tests.iperf3]`: the table as written, what the kind runs from, and its checks.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::ValueDeserializer;

use crate::plan::SectionReader;
use crate::plan::section::SectionData;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawIperfTest {
    pub enabled: Option<bool>,
    /// `-t`, seconds, 1 to 3600 (default 2).
    #[schemars(range(min = 1, max = 3600))]
    pub duration_s: Option<u32>,
    /// `-P`, parallel streams, 1 to 128 (default 1; iperf3's own limit).
    #[schemars(range(min = 1, max = 128))]
    pub streams: Option<u32>,
    #[schemars(with = "Option<Vec<String>>")]
    pub halves: Option<Vec<Spanned<String>>>,
    /// Per-job timeout in seconds, 1 to 86400 (default: duration + 20).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_s: Option<u32>,
}

/// A validated TCP sanity section.
#[derive(Debug, Clone, PartialEq)]
pub struct IperfTest {
    pub duration_s: u32,
    pub streams: u32,
    pub halves: Vec<String>,
    pub timeout_s: u32,
}

/// One `[tests.iperf3]` table, read: `None` when disabled. Each pair runs alone: a large
/// switched fabric is worth a warning (`rdma-bw` measures one in bounded rounds).
pub(super) fn read(table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
    let t: RawIperfTest = r.deserialize(table)?;
    if t.enabled == Some(false) {
        return None;
    }
    let d = t.duration_s.unwrap_or(2).max(1);
    let test = IperfTest {
        duration_s: d,
        streams: t.streams.unwrap_or(1).max(1),
        halves: r.halves(t.halves.as_ref()),
        timeout_s: t.timeout_s.unwrap_or(d.saturating_add(20)),
    };
    let bounded_by = Some(super::super::rdma_bw::ID.name());
    r.per_link_size(super::ID.name(), &test.halves, d, None, bounded_by);
    Some(Arc::new(test))
}
