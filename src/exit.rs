//! Exit codes, documented: scripts depend on them.

/// Every gate OK or WARN.
pub const OK: i32 = 0;
/// A gate failed, or a job could not measure.
pub const FAIL: i32 = 1;
/// The plan itself is invalid (or cannot be read).
pub const INVALID_PLAN: i32 = 2;
/// Bad command-line usage (clap uses 2 as well).
pub const USAGE: i32 = 2;
/// The run directory could not be written completely (a disk full, a permission): the
/// verdict was printed, but its evidence is not all there.
pub const EVIDENCE: i32 = 3;
/// Interrupted (Ctrl-C, SIGTERM): partial results were written.
pub const INTERRUPTED: i32 = 130;
