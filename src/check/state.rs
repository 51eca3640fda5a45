//! What one check leaves for the next: when it read the node, every planned half as it was
//! resolved (carrier changes, MTU, address, hardware), and the MAC each cable's far end
//! answered with. The next check judges what changed since against it (a flap between two
//! checks is a carrier count that grew). Pure: the executor reads and writes the file.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::discover::HalfResolution;
use crate::plan::{NodeId, Plan};

/// The state file's format.
pub const STATE_VERSION: u32 = 1;

/// The largest state file read (a node's halves: a few kB).
pub const STATE_MAX_BYTES: u64 = 1 << 20;

/// One check's reading, kept for the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format_version: u32,
    /// The plan's name and the node: a state of another plan or node is not compared.
    pub plan: String,
    pub node: String,
    /// When the node was read (Unix ms).
    pub unix_ms: u64,
    pub halves: Vec<HalfResolution>,
    /// Per half (`spark-1.f0.a`): the MAC its far end answered with.
    #[serde(default)]
    pub far_macs: BTreeMap<String, String>,
}

impl State {
    /// Read a state file's text: `None` when it is not one of this plan and node (or not one at
    /// all, said in the error).
    pub fn read(text: &str, plan: &Plan, node: &str) -> Result<Option<State>, String> {
        let s: State = serde_json::from_str(text).map_err(|e| format!("not a state file: {e}"))?;
        if s.format_version != STATE_VERSION {
            return Err(format!(
                "format {} (this fabricplan reads {STATE_VERSION})",
                s.format_version
            ));
        }
        Ok((s.plan == plan.name && s.node == node).then_some(s))
    }

    /// The halves as the change gate reads them, under `node`.
    pub fn by_node(&self, node: NodeId) -> HashMap<NodeId, Vec<HalfResolution>> {
        HashMap::from([(node, self.halves.clone())])
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// `2026-12-07 19:20:01 UTC` of Unix milliseconds.
pub fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    // days since 1970-01-01 to a civil date (Howard Hinnant's algorithm)
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_reads_as_a_date() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_671_201_000), "2026-12-07 19:20:01 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn a_state_of_another_plan_or_node_is_not_compared() {
        let plan = crate::plan::load_str(
            std::path::Path::new("p.toml"),
            "format-version = 1\nname = \"p\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
             [[cable]]\nkind = \"direct\"\nends = [\"a.f0\", \"b.f0\"]\n\
             subnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n",
            std::path::Path::new("."),
            &crate::plan::NoKinds,
        )
        .unwrap()
        .plan;
        let s = State {
            format_version: STATE_VERSION,
            plan: "p".into(),
            node: "a".into(),
            unix_ms: 1,
            halves: Vec::new(),
            far_macs: BTreeMap::new(),
        };
        let text = s.to_json();
        assert_eq!(State::read(&text, &plan, "a").unwrap(), Some(s.clone()));
        assert_eq!(State::read(&text, &plan, "b").unwrap(), None);
        assert!(State::read("{}", &plan, "a").is_err());
        let newer = text.replace("\"format_version\": 1", "\"format_version\": 9");
        assert!(
            State::read(&newer, &plan, "a")
                .unwrap_err()
                .contains("format 9")
        );
    }
}
