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

/// Classify one trimmed line; `None` when it is not an error line.
pub(crate) fn classify(t: &str) -> Option<(ErrorKind, Weight)> {
    use ErrorKind::*;
    use Weight::*;
    let has = |s: &str| t.contains(s);
    let starts = |s: &str| t.starts_with(s);
    // no device
    if has("Did not detect devices")
        || has("No IB devices found")
        || has("Couldn't get device list")
    {
        return Some((NoDevice, Root));
    }
    if starts("IB device ") && has(" not found") {
        return Some((NoDevice, Root));
    }
    if has("Unable to find the Infiniband/RoCE device")
        || has("If device exists, check if driver is up")
    {
        return Some((NoDevice, FollowUp));
    }
    // port state / link layer
    if has("Unable to query port")
        || (starts("Port number ") && has(" state is "))
        || (has("Link layer on port") && has("Unknown"))
    {
        return Some((PortState, Root));
    }
    if has("Couldn't set the link layer") || has("Couldn't get context for the device") {
        return Some((PortState, FollowUp));
    }
    // out-of-band TCP / rdma_cm connection
    if starts("Couldn't listen to port") {
        return Some((ListenFailed, Root));
    }
    if starts("server accept:") || has("accept() failed") {
        return Some((ListenFailed, FollowUp));
    }
    if starts("Couldn't connect to ")
        || has("Problem in resolving basic address and port")
        || starts("Unable to connect (retries")
        || has("times ADDR_ERROR")
        || has("rdma_resolve_addr failed")
    {
        return Some((ConnectFailed, Root));
    }
    // Builds before perftest PR #228 print these two on one line; substring match covers both.
    if has("Unable to open file descriptor for socket connection")
        || has("Unable to init the socket connection")
    {
        return Some((ConnectFailed, FollowUp));
    }
    // QP bring-up
    if has("Failed to modify QP") {
        if has("RTR") {
            return Some((QpRtrFailed, Root));
        }
        if has("RTS") {
            return Some((QpRtsFailed, Root));
        }
        return Some((Other, Root));
    }
    if has("Unable to Connect the HCA") {
        return Some((Other, FollowUp));
    }
    // GID
    if has("Unable to set up socket connection") || has("Incompatibility issue with GID types") {
        return Some((Gid, Root));
    }
    if has("Please Try to use a different IP version") {
        return Some((Gid, FollowUp));
    }
    // resources
    if has("Unable to create QP")
        || has("Failed to create QP")
        || has("Couldn't create IB resources")
        || has("Cannot allocate memory")
        || has("ENOMEM")
        || starts("Couldn't allocate")
        || starts("Failed to allocate")
        || (starts("Couldn't create") && !has("RDMA_CM"))
    {
        return Some((Resource, Root));
    }
    // completions
    if has("Completion with error at") {
        return Some((CompletionError, Root));
    }
    if starts("Failed status")
        || starts("scnt=")
        || starts("rcnt=")
        || has("Failed to complete run_iter")
    {
        return Some((CompletionError, FollowUp));
    }
    // everything else perftest says when it gives up
    if has("Failed to exchange data between server and clients")
        || has("Couldn't read remote address")
        || starts("Couldn't parse line")
        || has("not compatible with versions older than")
        || has("is below bw limit")
        || (has("Msg rate") && has("below msg_rate limit"))
        || starts("poll CQ failed")
        || has("Did not get Message for")
        || starts("Invalid MTU")
        || starts("unexpected CM event")
    {
        return Some((Other, Root));
    }
    // getopt's own words name the option; perftest's line after them only says it gave up
    if has("invalid option") || has("unrecognized option") || has("requires an argument") {
        return Some((Other, Root));
    }
    if has("Parser function exited with Error") {
        return Some((Other, FollowUp));
    }
    if has("Error occurred while running infinitely")
        || has("Unable to read to socket/rdma_cm")
        || has("Unable to create RDMA_CM resources")
        || starts("Couldn't ")
        || starts("Unable to ")
        || starts("Failed to ")
    {
        return Some((Other, FollowUp));
    }
    None
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
