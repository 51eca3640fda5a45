//! The banner block (test title, `key : value` setup lines), the server wait boxes and the
//! address block (`local address:` / `remote address:` lines with their `GID:` lines).

use serde::{Deserialize, Serialize};

/// Every key `ctx_print_test_info` prints (FORMATS.md 1.2), all banner generations.
const KEYS: &[&str] = &[
    "Dual-port",
    "Device",
    "Number of qps",
    "Transport type",
    "Connection type",
    "Using SRQ",
    "PCIe relax order",
    "Lock-free",
    "ibv_wr* API",
    "Using DDP",
    "Using Enhanced Reorder",
    "TX depth",
    "Post List",
    "Recv Post List",
    "RX depth",
    "CQ Moderation",
    "CQE Poll Batch",
    "Mtu",
    "Link type",
    "GID index",
    "Max inline data",
    "Outstand reads",
    "rdma_cm QPs",
    "Data ex. method",
    "TOS",
    "NUMA node",
];

const VERBS: &[&str] = &[
    "Send",
    "Send_imm",
    "RDMA_Write",
    "RDMA_Write_imm",
    "RDMA_Read",
    "Atomic",
];

/// `Some((title, is_bw))` when `t` (trimmed) is a test title line such as `RDMA_Write BW Test`
/// or `Send Latency Test`; whitespace in the title is normalised to single spaces.
pub(crate) fn title(t: &str) -> Option<(String, bool)> {
    let words: Vec<&str> = t.split_whitespace().collect();
    let first = words.first()?;
    if !VERBS.contains(first) || words.last() != Some(&"Test") || words.len() > 8 {
        return None;
    }
    let is_bw = words.contains(&"BW");
    if !is_bw && !words.contains(&"Latency") {
        return None;
    }
    Some((words.join(" "), is_bw))
}

/// Compare ignoring ASCII case and all whitespace.
fn compact_eq(a: &str, b: &str) -> bool {
    let mut x = a.chars().filter(|c| !c.is_whitespace());
    let mut y = b.chars().filter(|c| !c.is_whitespace());
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(p), Some(q)) if p.eq_ignore_ascii_case(&q) => {}
            _ => return false,
        }
    }
}

/// If `text` ends with `key` (ignoring whitespace and ASCII case), the text before it.
fn strip_key_suffix<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut want = key.chars().rev().filter(|c| !c.is_whitespace()).peekable();
    let mut cut = text.len();
    for (i, c) in text.char_indices().rev() {
        if want.peek().is_none() {
            break;
        }
        if c.is_whitespace() {
            continue;
        }
        let k = want.next()?;
        if !c.eq_ignore_ascii_case(&k) {
            return None;
        }
        cut = i;
    }
    if want.peek().is_some() {
        return None;
    }
    text.get(..cut)
}

fn known_key(part: &str) -> Option<&'static str> {
    KEYS.iter().copied().find(|k| compact_eq(part, k))
}

/// Parse a banner line into `(key, value)` pairs.
///
/// Why not split on TABs: the two-column lines (`Dual-port : OFF<TAB><TAB>Device : mlx5_0`) reach
/// us with the TABs turned into spaces or deleted (FORMATS.md 1.2 and 7), so `OFFDevice` can be
/// glued. Each middle segment between two colons is `value` + `next key`; the next key is found as
/// the longest known key that ends the segment.
pub(crate) fn key_values(t: &str) -> Option<Vec<(&'static str, String)>> {
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() < 2 {
        return None;
    }
    let mut key = known_key(parts.first()?)?;
    let mut out = Vec::new();
    let last = parts.len() - 1;
    let mut i = 1;
    while i < last {
        let part = parts.get(i).copied().unwrap_or("");
        let next = KEYS
            .iter()
            .filter_map(|k| strip_key_suffix(part, k).map(|v| (*k, v)))
            .max_by_key(|(k, _)| k.len());
        match next {
            Some((k, value)) => {
                out.push((key, value.trim().to_string()));
                key = k;
                i += 1;
            }
            None => break,
        }
    }
    let rest = parts.get(i..).map(|p| p.join(":")).unwrap_or_default();
    out.push((key, rest.trim().to_string()));
    Some(out)
}

/// Leading decimal digits of a value such as `4096[B]`.
pub(crate) fn leading_u32(v: &str) -> Option<u32> {
    let end = v
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(v.len(), |(i, _)| i);
    v.get(..end)?.parse().ok()
}

/// Which side of the address block a line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Local,
    Remote,
}

/// `local address:` / `remote address:` lines.
pub(crate) fn address_side(t: &str) -> Option<Side> {
    let lower = t.get(..16).unwrap_or(t).to_ascii_lowercase();
    if lower.starts_with("local address") {
        Some(Side::Local)
    } else if lower.starts_with("remote address") {
        Some(Side::Remote)
    } else {
        None
    }
}

/// A GID from the address block. perftest prints the 16 bytes in DECIMAL, at least two digits
/// each, colon-separated (FORMATS.md 1.3) -- not hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gid {
    /// As printed (e.g. `00:00:00:00:00:00:00:00:00:00:255:255:192:168:01:39`).
    pub raw: String,
    /// The dotted IPv4 address when the GID is IPv4-mapped (`::ffff:a.b.c.d`, RoCEv2).
    pub ipv4: Option<String>,
    /// All 16 bytes zero: the GID table entry is empty (container / bond problems).
    pub all_zero: bool,
}

/// `GID: ...` / `MGID: ...` lines; `None` for anything else.
pub(crate) fn gid_line(t: &str) -> Option<Gid> {
    let rest = t.strip_prefix("GID:").or_else(|| t.strip_prefix("MGID:"))?;
    let raw = rest.split_whitespace().next()?.to_string();
    let bytes: Option<Vec<u8>> = raw
        .split(':')
        .map(|b| {
            if b.is_empty() || b.len() > 3 || !b.bytes().all(|c| c.is_ascii_digit()) {
                None
            } else {
                b.parse::<u8>().ok()
            }
        })
        .collect();
    let bytes = bytes.filter(|b| b.len() == 16);
    let (ipv4, all_zero) = match &bytes {
        Some(b) => {
            let mapped = b.iter().take(10).all(|x| *x == 0)
                && b.get(10) == Some(&255)
                && b.get(11) == Some(&255);
            let v4 = if mapped {
                b.get(12..16)
                    .map(|q| q.iter().map(u8::to_string).collect::<Vec<_>>().join("."))
            } else {
                None
            };
            (v4, b.iter().all(|x| *x == 0))
        }
        None => (None, false),
    };
    Some(Gid {
        raw,
        ipv4,
        all_zero,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_column_lines_with_tabs_spaces_or_nothing() {
        let want = vec![
            ("Dual-port", "OFF".to_string()),
            ("Device", "mlx5_0".to_string()),
        ];
        assert_eq!(
            key_values(" Dual-port       : OFF\t\tDevice         : mlx5_0"),
            Some(want.clone())
        );
        assert_eq!(
            key_values(" Dual-port       : OFF          Device         : mlx5_0"),
            Some(want.clone())
        );
        assert_eq!(
            key_values(" Dual-port       : OFFDevice         : mlx5_0"),
            Some(want)
        );
        let kv = key_values(" Data ex. method : Ethernet\tTOS    : 41").unwrap();
        assert_eq!(
            kv,
            vec![("Data ex. method", "Ethernet".into()), ("TOS", "41".into())]
        );
        let kv = key_values(" rdma_cm QPs\t : ON").unwrap();
        assert_eq!(kv, vec![("rdma_cm QPs", "ON".into())]);
        let kv = key_values(" Recv Post List  : 4").unwrap();
        assert_eq!(kv, vec![("Recv Post List", "4".into())]);
        let kv = key_values(" ibv_wr* API     : ONUsing Enhanced Reorder      : OFF").unwrap();
        assert_eq!(kv[1], ("Using Enhanced Reorder", "OFF".into()));
        assert_eq!(key_values("Couldn't connect to 10.0.0.1:18515"), None);
    }

    #[test]
    fn gids_are_decimal() {
        let g = gid_line("GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:01:39").unwrap();
        assert_eq!(g.ipv4.as_deref(), Some("192.168.1.39"));
        assert!(!g.all_zero);
        let g = gid_line("GID: 254:128:00:00:00:00:00:00:148:109:174:03:00:50:07:120").unwrap();
        assert_eq!(g.ipv4, None);
        let g = gid_line("GID: 00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00").unwrap();
        assert!(g.all_zero);
        let g = gid_line("GID: X:X:X:X").unwrap();
        assert!(!g.all_zero && g.ipv4.is_none());
    }

    #[test]
    fn titles() {
        assert_eq!(
            title("RDMA_Write BW Test"),
            Some(("RDMA_Write BW Test".into(), true))
        );
        assert_eq!(
            title("Send   Latency Test"),
            Some(("Send Latency Test".into(), false))
        );
        assert_eq!(title("My BW Test"), None);
    }
}
