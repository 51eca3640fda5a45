//! One error per mistake: a problem that only follows from another is left out, as the
//! diagnosis leaves out a gate that follows from a broken part. A fabric that did not build (a
//! cable naming an unknown node or port, a key misspelled in it, a cable given twice) has no
//! path where the plan meant one, so a `no-path` then is a knock-on; a key misspelled in a
//! table (`subnet` for `subnets`) makes the key it meant missing there, so that complaint is one
//! too; so is a cable's missing field when it was given another kind's (`nodes` for `ends`).

use super::diag::Problem;

/// Errors that leave the fabric short of what the plan meant: any `no-path` may follow.
const FABRIC_CAUSES: [&str; 24] = [
    "plan::unknown-node",
    "plan::unknown-port",
    "plan::unknown-half",
    "plan::unknown-switch",
    "plan::unknown-profile",
    "plan::port-ref",
    "plan::cable-kind",
    "plan::cable-ends",
    "plan::cable-field",
    "plan::cabled-twice",
    "plan::subnet-missing",
    "plan::subnet-count",
    "plan::subnet",
    "plan::subnet-pool",
    "plan::subnet-too-small",
    "plan::ring-nodes",
    "plan::ring-ports",
    "plan::ring-too-small",
    "plan::ring-too-large",
    "plan::attach",
    "plan::not-a-switch",
    "plan::isl-ends",
    "plan::duplicate-name",
    "plan::switch-port-twice",
];

/// A field of another kind on a cable (`nodes` on a direct cable) is the mistake; that the cable
/// then lacks its own field (`ends`) follows, in the same table.
const SAME_TABLE: [(&str, &str); 3] = [
    ("plan::cable-field", "plan::cable-ends"),
    ("plan::cable-field", "plan::ring-nodes"),
    ("plan::cable-field", "plan::attach"),
];

/// Tables whose misspelled key leaves the fabric short.
const FABRIC_TABLES: [&str; 5] = [
    "[[cable]]",
    "[[node]]",
    "[[switch]]",
    "[[isl]]",
    "[[profile",
];

/// `problems` without the ones that follow from another (`text` is the plan they point into).
pub fn suppress(problems: Vec<Problem>, text: &str) -> Vec<Problem> {
    let fabric_broken = problems.iter().any(|p| {
        p.is_error()
            && (FABRIC_CAUSES.contains(&p.code)
                || (p.code == "plan::unknown-key"
                    && FABRIC_TABLES.iter().any(|t| p.message.contains(t))))
    });
    // a misspelled key: the table it is in, and the key it meant
    let meant: Vec<(usize, String)> = problems
        .iter()
        .filter(|p| p.code == "plan::unknown-key")
        .filter_map(|p| {
            let at = p.primary.as_ref()?.0.start;
            let key = p.help.as_deref()?.strip_prefix("did you mean `")?;
            Some((table_of(text, at), key.split('`').next()?.to_string()))
        })
        .collect();
    // a cause in a table: the table and the effects it makes knock-ons there
    let causes: Vec<(usize, &str)> = problems
        .iter()
        .filter_map(|p| {
            let at = p.primary.as_ref()?.0.start;
            let effects = SAME_TABLE.iter().filter(|(c, _)| *c == p.code);
            Some(effects.map(move |(_, e)| (table_of(text, at), *e)))
        })
        .flatten()
        .collect();
    problems
        .into_iter()
        .filter(|p| {
            if !p.is_error() || p.code == "plan::unknown-key" {
                return true;
            }
            if fabric_broken && p.code == "plan::no-path" {
                return false;
            }
            // the missing key the misspelled one meant, in the same table
            let Some((span, _)) = &p.primary else {
                return true;
            };
            let table = table_of(text, span.start);
            if causes.iter().any(|(t, e)| *t == table && *e == p.code) {
                return false;
            }
            !meant
                .iter()
                .any(|(t, key)| *t == table && mentions(&p.message, key))
        })
        .collect()
}

/// Where the table holding byte `at` starts: its header line (0 before any header).
fn table_of(text: &str, at: usize) -> usize {
    let head = &text[..at.min(text.len())];
    let mut start = 0;
    let mut offset = 0;
    for line in head.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            start = offset;
        }
        offset += line.len();
    }
    start
}

/// `message` names `key` as a word (`gives no subnets` names `subnets`).
fn mentions(message: &str, key: &str) -> bool {
    message
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .any(|w| w == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_starts_at_its_header() {
        let t = "a = 1\n[[cable]]\nx = 2\n[[node]]\ny = 3\n";
        assert_eq!(table_of(t, 2), 0);
        assert_eq!(table_of(t, t.find("x").unwrap()), 6);
        assert_eq!(
            table_of(t, t.find("y").unwrap()),
            t.find("[[node]]").unwrap()
        );
        assert!(mentions("cable `stack` gives no subnets", "subnets"));
        assert!(!mentions("cable `stack` gives no subnets", "subnet"));
    }
}
