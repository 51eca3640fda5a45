//! Classification of perftest's own error lines (FORMATS.md 1.6) into [`ErrorKind`]s, and the
//! choice of the root cause when a failure prints a cascade of follow-up lines.

use crate::parse::{ErrorKind, ToolError};

/// How much a line says about the cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Weight {
    /// The line names the cause (`Couldn't connect to ...`, `Failed to modify QP 59 to RTR`).
    Root,
    /// A line printed by a caller after the root line (` Unable to init the socket connection`).
    FollowUp,
}

/// A test on a trimmed line.
#[derive(Debug, Clone, Copy)]
enum Pat {
    /// The line contains the text.
    Has(&'static str),
    /// The line starts with the text.
    Starts(&'static str),
    /// The line contains both texts.
    HasBoth(&'static str, &'static str),
    /// The line starts with the first text and contains the second.
    StartsHas(&'static str, &'static str),
    /// The line starts with the first text and does not contain the second.
    StartsLacks(&'static str, &'static str),
}

impl Pat {
    /// Whether trimmed line `t` passes the test.
    fn matches(self, t: &str) -> bool {
        match self {
            Pat::Has(s) => t.contains(s),
            Pat::Starts(s) => t.starts_with(s),
            Pat::HasBoth(a, b) => t.contains(a) && t.contains(b),
            Pat::StartsHas(a, b) => t.starts_with(a) && t.contains(b),
            Pat::StartsLacks(a, b) => t.starts_with(a) && !t.contains(b),
        }
    }
}

/// perftest's error lines: a line is the kind and weight of the first rule one of whose
/// patterns it matches, so a specific rule comes before a general one.
const RULES: &[(ErrorKind, Weight, &[Pat])] = {
    use ErrorKind::*;
    use Pat::*;
    use Weight::*;
    &[
        // no device
        (
            NoDevice,
            Root,
            &[
                Has("Did not detect devices"),
                Has("No IB devices found"),
                Has("Couldn't get device list"),
                StartsHas("IB device ", " not found"),
            ],
        ),
        (
            NoDevice,
            FollowUp,
            &[
                Has("Unable to find the Infiniband/RoCE device"),
                Has("If device exists, check if driver is up"),
            ],
        ),
        // port state / link layer
        (
            PortState,
            Root,
            &[
                Has("Unable to query port"),
                StartsHas("Port number ", " state is "),
                HasBoth("Link layer on port", "Unknown"),
            ],
        ),
        (
            PortState,
            FollowUp,
            &[
                Has("Couldn't set the link layer"),
                Has("Couldn't get context for the device"),
            ],
        ),
        // out-of-band TCP / rdma_cm connection
        (ListenFailed, Root, &[Starts("Couldn't listen to port")]),
        (
            ListenFailed,
            FollowUp,
            &[Starts("server accept:"), Has("accept() failed")],
        ),
        (
            ConnectFailed,
            Root,
            &[
                Starts("Couldn't connect to "),
                Has("Problem in resolving basic address and port"),
                Starts("Unable to connect (retries"),
                Has("times ADDR_ERROR"),
                Has("rdma_resolve_addr failed"),
            ],
        ),
        // Builds before perftest PR #228 print these two on one line; substring match covers both.
        (
            ConnectFailed,
            FollowUp,
            &[
                Has("Unable to open file descriptor for socket connection"),
                Has("Unable to init the socket connection"),
            ],
        ),
        // QP bring-up
        (QpRtrFailed, Root, &[HasBoth("Failed to modify QP", "RTR")]),
        (QpRtsFailed, Root, &[HasBoth("Failed to modify QP", "RTS")]),
        (Other, Root, &[Has("Failed to modify QP")]),
        (Other, FollowUp, &[Has("Unable to Connect the HCA")]),
        // GID
        (
            Gid,
            Root,
            &[
                Has("Unable to set up socket connection"),
                Has("Incompatibility issue with GID types"),
            ],
        ),
        (
            Gid,
            FollowUp,
            &[Has("Please Try to use a different IP version")],
        ),
        // resources
        (
            Resource,
            Root,
            &[
                Has("Unable to create QP"),
                Has("Failed to create QP"),
                Has("Couldn't create IB resources"),
                Has("Cannot allocate memory"),
                Has("ENOMEM"),
                Starts("Couldn't allocate"),
                Starts("Failed to allocate"),
                StartsLacks("Couldn't create", "RDMA_CM"),
            ],
        ),
        // completions
        (CompletionError, Root, &[Has("Completion with error at")]),
        (
            CompletionError,
            FollowUp,
            &[
                Starts("Failed status"),
                Starts("scnt="),
                Starts("rcnt="),
                Has("Failed to complete run_iter"),
            ],
        ),
        // everything else perftest says when it gives up
        (
            Other,
            Root,
            &[
                Has("Failed to exchange data between server and clients"),
                Has("Couldn't read remote address"),
                Starts("Couldn't parse line"),
                Has("not compatible with versions older than"),
                Has("is below bw limit"),
                HasBoth("Msg rate", "below msg_rate limit"),
                Starts("poll CQ failed"),
                Has("Did not get Message for"),
                Starts("Invalid MTU"),
                Starts("unexpected CM event"),
                // getopt's own words name the option; perftest's line after them only says it
                // gave up
                Has("invalid option"),
                Has("unrecognized option"),
                Has("requires an argument"),
            ],
        ),
        (
            Other,
            FollowUp,
            &[
                Has("Parser function exited with Error"),
                Has("Error occurred while running infinitely"),
                Has("Unable to read to socket/rdma_cm"),
                Has("Unable to create RDMA_CM resources"),
                Starts("Couldn't "),
                Starts("Unable to "),
                Starts("Failed to "),
            ],
        ),
    ]
};

/// Classify one trimmed line; `None` when it is not an error line.
pub(crate) fn classify(t: &str) -> Option<(ErrorKind, Weight)> {
    RULES
        .iter()
        .find(|(_, _, pats)| pats.iter().any(|p| p.matches(t)))
        .map(|(kind, weight, _)| (*kind, *weight))
}

/// One classified error line.
#[derive(Debug)]
struct ErrorLine {
    text: String,
    kind: ErrorKind,
    weight: Weight,
}

/// Collected error lines, in capture order.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    lines: Vec<ErrorLine>,
}

impl Errors {
    pub(crate) fn push(&mut self, t: &str, kind: ErrorKind, weight: Weight) {
        if self.lines.last().is_some_and(|l| l.text == t)
            || self.lines.len() >= crate::parse::MAX_STORED_NOTES
        {
            return;
        }
        self.lines.push(ErrorLine {
            text: t.to_string(),
            kind,
            weight,
        });
    }

    pub(crate) fn status_number(&self) -> Option<u32> {
        self.lines.iter().find_map(|l| wc_status(&l.text))
    }

    /// The error the capture reports, if any.
    ///
    /// The root cause is the first line that names a specific cause; `other` root lines (such as
    /// exchange failures) lose to a specific one, follow-up lines only decide when nothing else
    /// was captured (stderr partly lost). `zero_gid` upgrades a QP / completion failure to `gid`:
    /// an all-zero GID means the GID table entry is empty, which is what makes RoCE QPs fail to
    /// reach RTR or time out (FORMATS.md 1.3, 1.6).
    pub(crate) fn finish(&self, zero_gid: bool) -> Option<ToolError> {
        let rank = |k: ErrorKind, w: Weight| (w, k == ErrorKind::Other);
        let mut kind = self
            .lines
            .iter()
            .min_by_key(|l| rank(l.kind, l.weight))
            .map(|l| l.kind)?;
        if zero_gid
            && matches!(
                kind,
                ErrorKind::QpRtrFailed | ErrorKind::QpRtsFailed | ErrorKind::CompletionError
            )
        {
            kind = ErrorKind::Gid;
        }
        let message = self
            .lines
            .iter()
            .take(12)
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Some(ToolError { kind, message })
    }
}

/// The work-completion status number from ` Failed status 12: ...` (old) or
/// ` Failed status-transport retry counter exceeded (12): ...` (since Aug 2025).
fn wc_status(l: &str) -> Option<u32> {
    let rest = l.strip_prefix("Failed status")?;
    if let Some(r) = rest.strip_prefix(' ') {
        let n = r.split(':').next()?.trim();
        return n.parse().ok();
    }
    let open = rest.find('(')?;
    let close = rest.get(open..)?.find(')')? + open;
    rest.get(open + 1..close)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(text: &str) -> Option<ErrorKind> {
        let mut e = Errors::default();
        for l in text.lines() {
            if let Some((k, w)) = classify(l.trim()) {
                e.push(l.trim(), k, w);
            }
        }
        e.finish(false).map(|e| e.kind)
    }

    #[test]
    fn root_cause_wins_over_follow_ups() {
        let t = "Couldn't connect to 10.1.1.2:18515\nUnable to open file descriptor for socket connection Unable to init the socket connection";
        assert_eq!(kind_of(t), Some(ErrorKind::ConnectFailed));
        let t = " Failed to exchange data between server and clients\n Found Incompatibility issue with GID types.";
        assert_eq!(kind_of(t), Some(ErrorKind::Gid));
        let t = " Unable to init the socket connection";
        assert_eq!(kind_of(t), Some(ErrorKind::ConnectFailed));
        assert_eq!(
            kind_of("libibverbs: Warning: couldn't load driver 'rxe'"),
            None
        );
    }

    #[test]
    fn wc_status_both_forms() {
        assert_eq!(
            wc_status("Failed status 12: wr_id 0 syndrom 0x81"),
            Some(12)
        );
        assert_eq!(
            wc_status("Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81"),
            Some(12)
        );
        assert_eq!(wc_status("Failed status-x (: "), None);
    }
}
