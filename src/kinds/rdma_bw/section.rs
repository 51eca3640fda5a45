//! The bandwidth section (`[tests.rdma-bw]`, and `[tests.rdma-read-bw]`, `[tests.rdma-bw-both]`
//! which share its shape): the table as written, what the kinds run from, and its checks
//! (schedules, sampling, declared rounds and the direction through the plan's building blocks).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::ValueDeserializer;

use crate::plan::diag::Problem;
use crate::plan::raw::RawRound;
use crate::plan::section::{ScheduleKeys, SectionData};
use crate::plan::{DeclaredRound, Direction, ScheduleKind, SectionReader};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawBwTest {
    /// Set false to keep the table but skip the test.
    pub enabled: Option<bool>,
    /// `-D`, seconds, 1 to 3600 (default 6).
    #[schemars(range(min = 1, max = 3600))]
    pub duration_s: Option<u32>,
    /// `-s`, bytes, 1 to 8388608 (default 65536; perftest's largest message is 8 MiB).
    #[schemars(range(min = 1, max = 8388608))]
    pub size_bytes: Option<u64>,
    /// `-q`, queue pairs, 1 to 64 (default 1; more queue pairs do not raise a half's rate).
    #[schemars(range(min = 1, max = 64))]
    pub qps: Option<u32>,
    /// `per-link` (default: each link alone), `rounds` (declared below), `all-pairs` or
    /// `sampled` (a switched fabric in `rounds` random pairings).
    #[schemars(with = "Option<ScheduleSchema>")]
    pub schedule: Option<Spanned<String>>,
    /// `schedule = "sampled"`: random pairings to run, 2 to 1000 (default 8); each is one
    /// round of concurrent pairs (followed by its reverse with `direction = "both"`).
    #[serde(default)]
    #[schemars(with = "Option<u32>", range(min = 2, max = 1000))]
    pub rounds: Option<Spanned<u32>>,
    /// `schedule = "sampled"`: the seed of the pairings, 0 to 9223372036854775807 (TOML's
    /// largest integer; default 1): the same seed and plan, the same rounds.
    #[serde(default)]
    #[schemars(with = "Option<u64>", range(max = 9223372036854775807_u64))]
    pub seed: Option<Spanned<u64>>,
    /// `both` (default: each way in turn, each alone), `one` (the second end of a link sends to
    /// the first) or `bidirectional` (both ways at once, perftest's `-b`). Declared rounds run
    /// as declared (`one`) unless this is given.
    #[schemars(with = "Option<DirectionSchema>")]
    pub direction: Option<Spanned<String>>,
    /// Halves to measure (default all cabled).
    #[schemars(with = "Option<Vec<String>>")]
    pub halves: Option<Vec<Spanned<String>>>,
    /// Declared concurrent rounds (schedule = "rounds").
    #[serde(default)]
    pub round: Vec<RawRound>,
    /// Per-job timeout in seconds, 1 to 86400 (default: duration + 30).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_s: Option<u32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum DirectionSchema {
    One,
    Both,
    Bidirectional,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum ScheduleSchema {
    PerLink,
    Rounds,
    AllPairs,
    Sampled,
}

/// A validated bandwidth section: what its jobs run from.
#[derive(Debug, Clone, PartialEq)]
pub struct BwTest {
    pub duration_s: u32,
    pub size_bytes: u64,
    pub qps: u32,
    pub schedule: ScheduleKind,
    /// Which way each pair is measured.
    pub direction: Direction,
    /// Halves to measure; empty = all.
    pub halves: Vec<String>,
    pub rounds: Vec<DeclaredRound>,
    pub timeout_s: u32,
}

impl RawBwTest {
    /// The keys the schedule building blocks read.
    fn schedule_keys(&self) -> ScheduleKeys<'_> {
        ScheduleKeys {
            schedule: self.schedule.as_ref(),
            rounds: self.rounds.as_ref(),
            seed: self.seed.as_ref(),
            round: &self.round,
            halves: self.halves.as_ref(),
        }
    }
}

/// One table of the bandwidth shape, deserialized and read (see [`read`]).
pub(in crate::kinds) fn read_table(
    table: ValueDeserializer<'_>,
    r: &mut dyn SectionReader,
    key: &str,
    both: bool,
) -> Option<SectionData> {
    let raw: RawBwTest = r.deserialize(table)?;
    let t = read(r, &raw, key, both)?;
    Some(Arc::new(t))
}

/// Read `[tests.<key>]` of the bandwidth shape; `both` (rdma-bw-both) runs both halves of each
/// cable together and takes no schedule. `None` when disabled.
pub(in crate::kinds) fn read(
    r: &mut dyn SectionReader,
    t: &RawBwTest,
    key: &str,
    both: bool,
) -> Option<BwTest> {
    if t.enabled == Some(false) {
        return None;
    }
    let at = t.schedule.as_ref().map(|s| s.span()).unwrap_or(0..0);
    let schedule = r.schedule(t.schedule.as_ref(), !t.round.is_empty());
    if schedule == ScheduleKind::Rounds && t.round.is_empty() {
        r.push(
            Problem::error(
                "plan::rounds-missing",
                "schedule `rounds` declares no rounds",
            )
            .at(at.clone(), "here")
            .help(format!(
                "add `[[tests.{key}.round]]` tables with `name` and `flows`"
            )),
        );
    }
    if both && schedule != ScheduleKind::PerLink {
        r.push(
            Problem::error(
                "plan::schedule",
                format!("`{key}` always runs both halves of each cable together"),
            )
            .at(at, "here")
            .help(format!("remove `schedule` from `[tests.{key}]`")),
        );
    }
    let schedule = r.sampling(t.schedule_keys(), schedule);
    let rounds: Vec<DeclaredRound> = r.rounds(&t.round);
    let duration_s = t.duration_s.unwrap_or(6).max(1);
    let direction = direction(r, t.direction.as_ref(), schedule);
    let test = BwTest {
        duration_s,
        size_bytes: t.size_bytes.unwrap_or(65536),
        qps: t.qps.unwrap_or(1).max(1),
        schedule,
        direction,
        halves: r.halves(t.halves.as_ref()),
        rounds,
        timeout_s: t.timeout_s.unwrap_or(duration_s.saturating_add(30)),
    };
    if test.schedule == ScheduleKind::PerLink && !both {
        let at = t.schedule.as_ref().map(|s| s.span());
        r.per_link_size(key, &test.halves, test.duration_s, at, None);
    }
    Some(test)
}

/// `direction`: declared rounds are declared flows and run the way they are written (`one`);
/// every other schedule measures each way in turn (`both`) unless told.
fn direction(
    r: &mut dyn SectionReader,
    raw: Option<&Spanned<String>>,
    schedule: ScheduleKind,
) -> Direction {
    match raw {
        None if schedule == ScheduleKind::Rounds => Direction::One,
        None => Direction::Both,
        Some(d) => r
            .keyword(
                "plan::direction",
                "direction",
                d,
                &[
                    ("one", Direction::One),
                    ("both", Direction::Both),
                    ("bidirectional", Direction::Bidirectional),
                ],
            )
            .unwrap_or(Direction::Both),
    }
}
