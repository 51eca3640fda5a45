//! `[tests.rdma-lat]`: the table as written, what the kind runs from, and its checks.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::ValueDeserializer;

use crate::plan::SectionReader;
use crate::plan::section::SectionData;
use crate::schedule::KindId;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawLatTest {
    pub enabled: Option<bool>,
    /// `-s`, bytes, 1 to 8388608 (default 2).
    #[schemars(range(min = 1, max = 8388608))]
    pub size_bytes: Option<u64>,
    /// `-n`, iterations, 5 to 100000000 (default 1000; perftest's own limits).
    #[schemars(range(min = 5, max = 100000000))]
    pub iterations: Option<u32>,
    #[schemars(with = "Option<Vec<String>>")]
    pub halves: Option<Vec<Spanned<String>>>,
    /// Per-job timeout in seconds, 1 to 86400 (default 30).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_s: Option<u32>,
}

/// A validated per-half exchange section: `rdma-lat`'s, and `rdma-pingpong`'s, which shares
/// its shape (only the written table's limits and the default message size differ).
#[derive(Debug, Clone, PartialEq)]
pub struct LatTest {
    pub size_bytes: u64,
    pub iterations: u32,
    pub halves: Vec<String>,
    pub timeout_s: u32,
}

/// A per-half exchange table as written, whichever kind's.
pub(crate) struct Written<'t> {
    pub enabled: Option<bool>,
    pub size_bytes: Option<u64>,
    pub iterations: Option<u32>,
    pub halves: Option<&'t Vec<Spanned<String>>>,
    pub timeout_s: Option<u32>,
}

/// One `[tests.rdma-lat]` table, read: `None` when disabled.
pub(super) fn read(table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
    let t: RawLatTest = r.deserialize(table)?;
    let written = Written {
        enabled: t.enabled,
        size_bytes: t.size_bytes,
        iterations: t.iterations,
        halves: t.halves.as_ref(),
        timeout_s: t.timeout_s,
    };
    read_per_half(super::ID, written, 2, r)
}

/// The section of kind `id` from its table as written (`size_bytes` by default
/// `default_size`, 1000 iterations, a 30 s timeout): `None` when disabled. Each pair runs
/// alone: a large switched fabric is worth a warning (`rdma-bw` measures one in bounded
/// rounds).
pub(crate) fn read_per_half(
    id: KindId,
    t: Written<'_>,
    default_size: u64,
    r: &mut dyn SectionReader,
) -> Option<SectionData> {
    if t.enabled == Some(false) {
        return None;
    }
    let test = LatTest {
        size_bytes: t.size_bytes.unwrap_or(default_size),
        iterations: t.iterations.unwrap_or(1000),
        halves: r.halves(t.halves),
        timeout_s: t.timeout_s.unwrap_or(30),
    };
    let bounded_by = Some(super::super::rdma_bw::ID.name());
    r.per_link_size(id.name(), &test.halves, 0, None, bounded_by);
    Some(Arc::new(test))
}
