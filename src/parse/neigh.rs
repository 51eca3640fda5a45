//! iproute2's neighbour table, `ip -j neigh show [dev NETDEV]` (JSON, one array on one line) or
//! the plain `ip neigh show` lines: which link-layer address answered for each IP address on
//! each netdev. After a ping over a planned link, the entry for the peer's address names the MAC
//! that answered: the cable's far end, proven.
//!
//! Judgement calls: an entry without `lladdr` (`INCOMPLETE`, `FAILED`: nothing answered) is kept
//! without one; an `lladdr` that is not six octets is rejected (no NIC answers with it); a JSON
//! array cut short keeps the entries that were complete (status `incomplete`); an empty table
//! (`[]`) is a complete reading. `Option "-j" is unknown` (an iproute2 older than 4.13) and
//! `Cannot find device` are the tool's errors.

use serde::{Deserialize, Serialize};

use super::text::{is_blank, push_capped, reject};
use super::{ErrorKind, MAX_LINE_BYTES, MAX_STORED_ROWS, Rejected, Status, ToolError};

/// One neighbour entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighEntry {
    /// The neighbour's IP address, as printed.
    pub dst: String,
    /// The netdev it was learnt on; absent when the listing was filtered by `dev`.
    pub dev: Option<String>,
    /// The link-layer address that answered, lowercase; absent when nothing answered.
    pub lladdr: Option<String>,
    /// `REACHABLE`, `STALE`, `DELAY`, `PROBE`, `FAILED`, `INCOMPLETE`, `PERMANENT`, `NOARP`...
    pub state: Vec<String>,
    pub router: bool,
}

/// What was read from one neighbour listing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NeighReport {
    pub status: Status,
    pub error: Option<ToolError>,
    /// `json` or `text`, when recognised.
    pub format: Option<String>,
    pub entries: Vec<NeighEntry>,
    /// Entries rejected for an impossible value (an `lladdr` that is no MAC), capped.
    pub rejected: Vec<Rejected>,
    /// Entries and notes read past their caps (not stored, counted).
    pub not_stored: usize,
}

impl super::Report for NeighReport {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        NeighReport::summary(self)
    }

    /// Beyond its status: a table when `ok`, every entry an IP address, every `lladdr` a
    /// lowercase six-octet MAC.
    fn check(&self) -> Result<(), String> {
        let r = self;
        if r.status == Status::Ok && r.format.is_none() {
            return Err("ok without a table".into());
        }
        for e in &r.entries {
            if e.dst.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("neighbour `{}` accepted", e.dst));
            }
            if let Some(m) = &e.lladdr
                && mac(m).as_deref() != Some(m.as_str())
            {
                return Err(format!("lladdr `{m}` accepted"));
            }
        }
        Ok(())
    }
}

impl NeighReport {
    fn new(status: Status) -> NeighReport {
        NeighReport {
            status,
            error: None,
            format: None,
            entries: Vec::new(),
            rejected: Vec::new(),
            not_stored: 0,
        }
    }

    /// The entry for `dst` (on `dev`, when the listing names devices).
    pub fn entry(&self, dst: &str, dev: &str) -> Option<&NeighEntry> {
        self.entries
            .iter()
            .find(|e| e.dst == dst && e.dev.as_deref().is_none_or(|d| d == dev))
    }

    pub fn summary(&self) -> String {
        match self.status {
            Status::Empty => return "ip neigh: empty input".into(),
            Status::Unrecognized => return "ip neigh: unrecognized: no neighbour table".into(),
            _ => {}
        }
        if let Some(e) = &self.error {
            return format!("ip neigh: error: {}", e.message);
        }
        let answered = self.entries.iter().filter(|e| e.lladdr.is_some()).count();
        format!(
            "ip neigh: {} entr{} ({answered} answered){}",
            self.entries.len(),
            if self.entries.len() == 1 { "y" } else { "ies" },
            if self.status == Status::Incomplete {
                ", incomplete"
            } else {
                ""
            }
        )
    }
}

/// `aa:bb:cc:dd:ee:ff`, lowercase, or `None` when `s` is not six hex octets.
pub fn mac(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.trim().split(':').collect();
    let ok = parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
    ok.then(|| s.trim().to_ascii_lowercase())
}

/// One entry as iproute2 writes it in JSON: `state` is a list (a string in some builds).
#[derive(Deserialize)]
struct RawEntry {
    dst: Option<String>,
    dev: Option<String>,
    lladdr: Option<String>,
    #[serde(default)]
    state: Option<StateField>,
    /// Flags (`router`, `proxy`...) are keys whose value is `null`: kept by name.
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StateField {
    List(Vec<String>),
    One(String),
}

/// The tool's own error lines.
fn tool_error(line: &str) -> Option<ToolError> {
    let l = line.trim();
    let known = l.starts_with("Option \"")
        || l.starts_with("Cannot find device")
        || l.starts_with("Error:")
        || l.contains("Object \"neigh\" is unknown")
        || l.starts_with("Device \"");
    known.then(|| ToolError {
        kind: ErrorKind::Other,
        message: l.to_string(),
    })
}

/// Parse a neighbour listing (JSON or text).
pub fn parse(text: &str) -> NeighReport {
    if is_blank(text) {
        return NeighReport::new(Status::Empty);
    }
    if let Some(e) = text.lines().find_map(tool_error) {
        let mut r = NeighReport::new(Status::Error);
        r.error = Some(e);
        return r;
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        parse_json(trimmed)
    } else {
        parse_text(text)
    }
}

/// Add one entry, or reject it.
fn add(r: &mut NeighReport, line: usize, e: NeighEntry) {
    if e.dst.is_empty() || e.dst.parse::<std::net::IpAddr>().is_err() {
        reject(
            &mut r.rejected,
            line,
            format!("`{}` is not an IP address", e.dst),
            &mut r.not_stored,
        );
        return;
    }
    push_capped(&mut r.entries, e, MAX_STORED_ROWS, &mut r.not_stored);
}

fn entry_of(raw: RawEntry, r: &mut NeighReport, index: usize) -> Option<NeighEntry> {
    let lladdr = match raw.lladdr {
        Some(m) => match mac(&m) {
            Some(m) => Some(m),
            None => {
                reject(
                    &mut r.rejected,
                    index,
                    format!("lladdr `{m}` is not a MAC address"),
                    &mut r.not_stored,
                );
                return None;
            }
        },
        None => None,
    };
    Some(NeighEntry {
        dst: raw.dst.unwrap_or_default(),
        dev: raw.dev,
        lladdr,
        state: match raw.state {
            Some(StateField::List(v)) => v,
            Some(StateField::One(s)) => vec![s],
            None => Vec::new(),
        },
        router: raw.rest.contains_key("router"),
    })
}

/// The JSON array; cut short, the complete objects before the cut are kept (`incomplete`).
fn parse_json(text: &str) -> NeighReport {
    let mut r = NeighReport::new(Status::Ok);
    r.format = Some("json".into());
    let (raws, complete): (Vec<Option<RawEntry>>, bool) =
        match serde_json::from_str::<Vec<serde_json::Value>>(text.trim_end()) {
            Ok(values) => (
                values
                    .into_iter()
                    .map(|v| serde_json::from_value(v).ok())
                    .collect(),
                true,
            ),
            Err(_) => (
                objects(text)
                    .into_iter()
                    .map(|o| serde_json::from_str(o).ok())
                    .collect(),
                false,
            ),
        };
    if !complete && raws.is_empty() {
        return NeighReport::new(Status::Unrecognized);
    }
    for (i, raw) in raws.into_iter().enumerate() {
        let Some(raw) = raw else {
            reject(
                &mut r.rejected,
                i + 1,
                format!("entry {} is not a neighbour object", i + 1),
                &mut r.not_stored,
            );
            continue;
        };
        if let Some(e) = entry_of(raw, &mut r, i + 1) {
            add(&mut r, i + 1, e);
        }
    }
    if !complete || !r.rejected.is_empty() {
        r.status = Status::Incomplete;
    }
    r
}

/// The complete top-level `{...}` objects of a JSON array that may be cut short (strings and
/// escapes respected; nesting kept inside an object).
fn objects(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut in_str, mut esc) = (0usize, None, false, false);
    for (i, c) in text.char_indices() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(s) = start.take()
                {
                    out.push(&text[s..=i]);
                }
            }
            _ => {}
        }
    }
    out
}

/// `DST [dev DEV] [lladdr MAC] [router] STATE` per line.
fn parse_text(text: &str) -> NeighReport {
    let mut r = NeighReport::new(Status::Unrecognized);
    for (i, line) in text.lines().enumerate() {
        if line.len() > MAX_LINE_BYTES {
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(dst) = toks.first() else { continue };
        if dst.parse::<std::net::IpAddr>().is_err() {
            continue;
        }
        let after = |k: &str| {
            toks.windows(2)
                .find(|w| w[0] == k)
                .map(|w| w[1].to_string())
        };
        let raw = RawEntry {
            dst: Some(dst.to_string()),
            dev: after("dev"),
            lladdr: after("lladdr"),
            state: toks
                .last()
                .filter(|s| s.chars().all(|c| c.is_ascii_uppercase()) && toks.len() > 1)
                .map(|s| StateField::One(s.to_string())),
            rest: if toks.contains(&"router") {
                serde_json::Map::from_iter([("router".to_string(), serde_json::Value::Null)])
            } else {
                serde_json::Map::new()
            },
        };
        r.format = Some("text".into());
        if let Some(e) = entry_of(raw, &mut r, i + 1) {
            add(&mut r, i + 1, e);
        }
    }
    if r.format.is_some() {
        r.status = if r.rejected.is_empty() {
            Status::Ok
        } else {
            Status::Incomplete
        };
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_entries_answered_and_not() {
        let r = parse(
            r#"[{"dst":"198.19.251.9","dev":"enp1s0f0np0","state":["INCOMPLETE"]},{"dst":"198.19.250.2","dev":"enp1s0f0np0","lladdr":"C2:2A:1A:17:3C:40","state":["REACHABLE"]}]"#,
        );
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.entries.len(), 2);
        let e = r.entry("198.19.250.2", "enp1s0f0np0").unwrap();
        assert_eq!(e.lladdr.as_deref(), Some("c2:2a:1a:17:3c:40"));
        assert!(
            r.entry("198.19.251.9", "enp1s0f0np0")
                .unwrap()
                .lladdr
                .is_none()
        );
        assert!(r.entry("198.19.250.2", "enp1s0f1np1").is_none());
    }

    #[test]
    fn cut_short_keeps_what_was_complete() {
        let r = parse(
            r#"[{"dst":"198.19.250.2","lladdr":"c2:2a:1a:17:3c:40","state":["REACHABLE"]},{"dst":"198.19."#,
        );
        assert_eq!(r.status, Status::Incomplete);
        assert_eq!(r.entries.len(), 1);
        // filtered by dev: any dev matches
        assert!(r.entry("198.19.250.2", "x").is_some());
    }

    #[test]
    fn text_and_errors() {
        let r = parse(
            "198.19.250.2 dev enp1s0f0np0 lladdr c2:2a:1a:17:3c:40 REACHABLE\n198.19.251.9 dev enp1s0f0np0 FAILED\n",
        );
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.entries[1].state, vec!["FAILED"]);
        let r = parse("Option \"-j\" is unknown, try \"ip -help\".\n");
        assert_eq!(r.status, Status::Error);
        assert_eq!(parse("  \n").status, Status::Empty);
        assert_eq!(parse("hello\n").status, Status::Unrecognized);
        let r = parse(r#"[{"dst":"198.19.250.2","lladdr":"zz:2a","state":["REACHABLE"]}]"#);
        assert_eq!(r.status, Status::Incomplete);
        assert!(r.entries.is_empty());
        assert_eq!(parse("[]").status, Status::Ok);
    }
}
