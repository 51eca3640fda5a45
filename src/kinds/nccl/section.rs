//! `[[tests.nccl]]`: the table as written, what the kind runs from, and its checks (ranks and
//! their fabric paths, sizes, environment names).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;
use toml::de::ValueDeserializer;

use crate::plan::diag::Problem;
use crate::plan::section::SectionData;
use crate::plan::validate::MAX_LABELS;
use crate::plan::{Node, NodeId, SectionReader, Segment};

/// What NCCL tests' names are, in problems: unique among them.
const WHAT: &str = "NCCL test";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawNcclTest {
    /// Job name (default: the collective).
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// `all_reduce`, `all_gather` or `sendrecv`.
    #[schemars(with = "CollectiveSchema")]
    pub collective: Spanned<String>,
    /// Ranks, one per node, in rank order (default: every node).
    #[schemars(with = "Option<Vec<String>>")]
    pub nodes: Option<Spanned<Vec<Spanned<String>>>>,
    /// Halves whose devices NCCL may use (default all cabled).
    #[schemars(with = "Option<Vec<String>>")]
    pub halves: Option<Vec<Spanned<String>>>,
    /// `-b` (default 8), bytes with optional K/M/G suffix.
    #[schemars(with = "Option<String>")]
    pub min_bytes: Option<Spanned<String>>,
    /// `-e` (default 128M; GB10 memory is unified: raise past 1G only deliberately).
    #[schemars(with = "Option<String>")]
    pub max_bytes: Option<Spanned<String>>,
    /// `-f`, the factor between sizes, 2 to 1024 (default 2).
    #[schemars(range(min = 2, max = 1024))]
    pub step_factor: Option<u32>,
    /// `-w`, warm-up iterations, 0 to 10000 (default 5).
    #[schemars(range(min = 0, max = 10000))]
    pub warmup: Option<u32>,
    /// `-n`, iterations, 1 to 100000 (default 20).
    #[schemars(range(min = 1, max = 100000))]
    pub iterations: Option<u32>,
    /// Extra or overriding NCCL environment (e.g. `NCCL_IB_MERGE_NICS = "0"`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Job timeout in seconds, 1 to 86400 (default 300).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_s: Option<u32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
enum CollectiveSchema {
    AllReduce,
    AllGather,
    Sendrecv,
}

/// The collective an NCCL test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    AllReduce,
    AllGather,
    Sendrecv,
}

impl Collective {
    pub fn binary(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce_perf",
            Collective::AllGather => "all_gather_perf",
            Collective::Sendrecv => "sendrecv_perf",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::Sendrecv => "sendrecv",
        }
    }
}

/// A validated NCCL test.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclTest {
    pub name: String,
    pub collective: Collective,
    pub nodes: Vec<NodeId>,
    pub halves: Vec<String>,
    pub min_bytes: String,
    pub max_bytes: String,
    pub step_factor: u32,
    pub warmup: u32,
    pub iterations: u32,
    pub env: BTreeMap<String, String>,
    pub timeout_s: u32,
}

/// One `[[tests.nccl]]` table, read: `None` when it is wrong.
pub(super) fn read(table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
    let t: RawNcclTest = r.deserialize(table)?;
    let t = nccl_test(r, &t)?;
    Some(Arc::new(t))
}

/// One `[[tests.nccl]]`: names unique across the plan's NCCL tests, at least two ranks with a
/// fabric path between every pair, sizes in range, environment names that are names.
fn nccl_test(r: &mut dyn SectionReader, t: &RawNcclTest) -> Option<NcclTest> {
    let collectives = [
        ("all_reduce", Collective::AllReduce),
        ("all_gather", Collective::AllGather),
        ("sendrecv", Collective::Sendrecv),
    ];
    let collective = r.keyword(
        "plan::collective",
        "collective",
        &t.collective,
        &collectives,
    )?;
    let name = match &t.name {
        Some(n) => {
            r.declare(WHAT, n);
            n.get_ref().clone()
        }
        None => collective.name().to_string(),
    };
    let (ids, at): (Vec<NodeId>, Range<usize>) = match &t.nodes {
        Some(list) => (
            list.get_ref()
                .iter()
                .filter_map(|n| r.node(n, WHAT))
                .collect(),
            list.span(),
        ),
        None => (
            r.nodes().iter().map(|n| n.id).collect(),
            t.collective.span(),
        ),
    };
    // a node it names that is not declared is its own error: count what was written
    let given = t.nodes.as_ref().map_or(ids.len(), |l| l.get_ref().len());
    if given < 2 {
        r.push(
            Problem::error(
                "plan::nccl-ranks",
                format!("NCCL test `{name}` needs at least two nodes"),
            )
            .at(at.clone(), "here")
            .help("list the ranks' nodes in `nodes`"),
        );
    }
    let halves = r.halves(t.halves.as_ref());
    let resolved = ids.len() == given;
    if let Some(p) =
        nccl_paths(&name, &ids, &halves, at, r.nodes(), r.segments()).filter(|_| resolved)
    {
        r.push(p);
    }
    nccl_sizes(r, t);
    for k in t.env.keys() {
        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || k.is_empty() {
            r.push(
                Problem::error(
                    "plan::env-name",
                    format!("`{k}` is not an environment variable name"),
                )
                .at(t.collective.span(), "in this test")
                .help("letters, digits and `_`"),
            );
        }
    }
    let size = |v: &Option<Spanned<String>>, default: &str| {
        v.as_ref()
            .map(|s| s.get_ref().trim().to_string())
            .unwrap_or_else(|| default.into())
    };
    Some(NcclTest {
        name,
        collective,
        nodes: ids,
        halves,
        min_bytes: size(&t.min_bytes, "8"),
        max_bytes: size(&t.max_bytes, "128M"),
        step_factor: t.step_factor.unwrap_or(2).max(2),
        warmup: t.warmup.unwrap_or(5),
        iterations: t.iterations.unwrap_or(20).max(1),
        env: t.env.clone(),
        timeout_s: t.timeout_s.unwrap_or(300),
    })
}

/// The largest NCCL message a plan may ask for: GB10 memory is unified (a 16 GB buffer froze a
/// node), so a size past this is a typo (`128G` for `128M`), not a measurement.
const NCCL_MAX_BYTES: u64 = 64 << 30;

/// `min-bytes` and `max-bytes`: sizes from 1 byte to 64G, the minimum not above the maximum (a
/// zero minimum never grows by `step-factor`).
fn nccl_sizes(r: &mut dyn SectionReader, t: &RawNcclTest) {
    let mut sizes = [Some(8), Some(128 << 20)];
    for (i, (k, v)) in [("min-bytes", &t.min_bytes), ("max-bytes", &t.max_bytes)]
        .into_iter()
        .enumerate()
    {
        let Some(v) = v else { continue };
        sizes[i] = crate::text::size::parse(v.get_ref());
        match sizes[i] {
            None => r.push(Problem::error("plan::size", format!("`{k} = \"{}\"` is not a size", v.get_ref())).at(v.span(), "not a size").help("bytes with an optional K, M or G suffix (binary multiples, as nccl-tests reads them): `8`, `128M`, `1G`")),
            Some(n) if n == 0 || n > NCCL_MAX_BYTES => {
                sizes[i] = None;
                r.push(
                    Problem::error("plan::size", format!("`{k} = \"{}\"` is out of range", v.get_ref()))
                        .at(v.span(), "out of range")
                        .help("a size from 1 byte to `64G`; GB10 memory is unified: raise past `1G` only deliberately"),
                );
            }
            Some(_) => {}
        }
    }
    if let [Some(lo), Some(hi)] = sizes
        && lo > hi
    {
        let shown = |v: &Option<Spanned<String>>, default: &str| {
            v.as_ref().map_or(format!("{default} (default)"), |v| {
                format!("\"{}\"", v.get_ref())
            })
        };
        let mut p = Problem::error(
            "plan::size",
            format!(
                "`min-bytes = {}` is above `max-bytes = {}`",
                shown(&t.min_bytes, "8"),
                shown(&t.max_bytes, "\"128M\"")
            ),
        )
        .help("nccl-tests runs from `min-bytes` up to `max-bytes`");
        for (v, label) in [(&t.min_bytes, "minimum"), (&t.max_bytes, "maximum")] {
            if let Some(v) = v {
                p = if p.primary.is_none() {
                    p.at(v.span(), label)
                } else {
                    p.also(v.span(), label)
                };
            }
        }
        r.push(p);
    }
}

/// Every pair of ranks needs a fabric path (a shared segment on some half): each node's
/// eligible segments, sorted, and a pair is joined when their lists meet.
fn nccl_paths(
    name: &str,
    ids: &[NodeId],
    halves: &[String],
    at: Range<usize>,
    nodes: &[Node],
    segments: &[Segment],
) -> Option<Problem> {
    let mut segs_of: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for s in segments
        .iter()
        .filter(|s| halves.is_empty() || halves.contains(&s.half))
    {
        for m in &s.members {
            let list = &mut segs_of[m.endpoint.node.0];
            if list.last() != Some(&s.id.0) {
                list.push(s.id.0);
            }
        }
    }
    let shared = |a: &[usize], b: &[usize]| {
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    };
    // one segment holding every rank (a switched fabric) joins every pair
    let mut common: Vec<usize> = ids
        .first()
        .map(|a| segs_of[a.0].clone())
        .unwrap_or_default();
    for r in ids.iter().skip(1) {
        common.retain(|s| segs_of[r.0].binary_search(s).is_ok());
    }
    if !common.is_empty() {
        return None;
    }
    // every pair, within a budget: the pairs without a path are one problem naming a few
    let mut missing: Vec<String> = Vec::new();
    let (mut count, mut checks, mut complete) = (0usize, 0usize, true);
    'scan: for (i, a) in ids.iter().enumerate() {
        for b in ids.iter().skip(i + 1) {
            checks += 1;
            if checks > PAIR_CHECKS {
                complete = false;
                break 'scan;
            }
            if !shared(&segs_of[a.0], &segs_of[b.0]) {
                count += 1;
                if missing.len() < MAX_LABELS {
                    missing.push(format!("`{}` and `{}`", nodes[a.0].name, nodes[b.0].name));
                }
            }
        }
    }
    let message = match (count, complete) {
        (0, _) => return None,
        (1, true) => format!("NCCL test `{name}`: no fabric path between {}", missing[0]),
        (n, true) if n <= MAX_LABELS => format!(
            "NCCL test `{name}`: no fabric path between {n} pairs of ranks: {}",
            missing.join(", ")
        ),
        (n, true) => format!(
            "NCCL test `{name}`: no fabric path between {n} pairs of ranks: {}, ...",
            missing.join(", ")
        ),
        (n, false) => format!(
            "NCCL test `{name}`: no fabric path between at least {n} pairs of ranks: {}, ...",
            missing.join(", ")
        ),
    };
    Some(
        Problem::error("plan::no-path", message)
            .at(at, "these ranks")
            .help(if nodes.len() >= 4 {
                "every pair of ranks needs a direct link or a shared switch; a switchless ring of four or more has no path between opposite nodes: add a switch or run the test on adjacent nodes"
            } else {
                "every pair of ranks needs a direct link or a shared switch: cable them, or run the test on nodes that are"
            }),
    )
}

/// Pairs of ranks checked for a fabric path per NCCL test (every pair up to about 2800 ranks);
/// past it the check names what it found.
const PAIR_CHECKS: usize = 4_000_000;
