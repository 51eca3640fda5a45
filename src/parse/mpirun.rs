//! Open MPI `mpirun` (ORTE v4 and PRRTE v5 wording) and MPICH/Hydra error output: finds every
//! help box, classifies it into an [`ErrorKind`], and pulls out exit code, rank, host and signal.
//!
//! Boxes are framed by 74-dash lines, but captures lose frames (markdown pastes, truncation) and
//! wrap sentences at different points between versions, so classification does not rely on the
//! frame: every line is joined with its successors into one whitespace-normalised text and the
//! trigger phrases are searched there. The frame (or a blank-line paragraph) only bounds which
//! lines belong to the message.

use super::text::{is_blank, push_capped};
use super::{ErrorKind, MAX_STORED_NOTES, Status, ToolError};
use crate::tools::nccl_tests::parse::nccl_log::clean;
use aho_corasick::{AhoCorasick, MatchKind};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// What an mpirun capture says about the job launch and its end.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MpirunReport {
    pub status: Status,
    /// The most specific error found (root causes such as the docker0 trap rank before the
    /// generic "exited with non-zero status" box they cause); ties go to the first.
    pub error: Option<ToolError>,
    /// Every classified box, in order of appearance.
    pub errors: Vec<ToolError>,
    /// `Exit code:` / MPICH `EXIT CODE:` of the first failing process.
    pub exit_code: Option<i64>,
    /// The rank named by the box (`Process name: [[j,a],R]`, `process rank R`).
    pub rank: Option<u64>,
    pub pid: Option<u64>,
    /// The node named by the box (failing process, remote daemon, target node, local host).
    pub host: Option<String>,
    /// Signal number from `exited on signal N (NAME)` or MPICH `(signal N)`.
    pub signal: Option<i64>,
    pub signal_name: Option<String>,
    /// Slots requested in a not-enough-slots box.
    pub requested_slots: Option<u64>,
    /// First lines of WARNING boxes that are not errors (openib port / CPC warnings, ...).
    pub warnings: Vec<String>,
    /// The executable named by an executable-not-found box (`Executable: ...`) or the
    /// application a not-enough-slots box names.
    pub executable: Option<String>,
    /// Error boxes and warnings read past the [`MAX_STORED_NOTES`] cap (not stored).
    pub not_stored: usize,
}

impl crate::parse::Report for MpirunReport {
    fn status(&self) -> crate::parse::Status {
        self.status
    }

    fn error(&self) -> Option<&crate::parse::ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        MpirunReport::summary(self)
    }
}

impl MpirunReport {
    fn empty() -> Self {
        MpirunReport {
            status: Status::Unrecognized,
            error: None,
            errors: Vec::new(),
            exit_code: None,
            rank: None,
            pid: None,
            host: None,
            signal: None,
            signal_name: None,
            requested_slots: None,
            warnings: Vec::new(),
            executable: None,
            not_stored: 0,
        }
    }
}

/// A trigger phrase (lower case, single spaces) and the kind it announces.
const TRIGGERS: &[(&str, ErrorKind)] = &[
    (
        "has detected an attempt to run as root",
        ErrorKind::RunAsRoot,
    ),
    (
        "cannot find a corresponding process entry",
        ErrorKind::ProcessEntry,
    ),
    (
        "there are not enough slots available in the system",
        ErrorKind::NotEnoughSlots,
    ),
    (
        "was unable to reliably start one or more daemons",
        ErrorKind::DaemonLaunchFailed,
    ),
    (
        "daemon has unexpectedly failed after launch",
        ErrorKind::DaemonLaunchFailed,
    ),
    (
        "has lost communication with a remote daemon",
        ErrorKind::DaemonLost,
    ),
    (
        "does not know how to route a message to the specified daemon",
        ErrorKind::RouteFailed,
    ),
    (
        "is unable to establish a communication connection",
        ErrorKind::RouteFailed,
    ),
    (
        "detected that one or more processes exited with non-zero status",
        ErrorKind::NonzeroExit,
    ),
    (
        "terminated normally, but 1 process returned",
        ErrorKind::NonzeroExit,
    ),
    ("terminated normally, but ", ErrorKind::NonzeroExit),
    ("exiting improperly", ErrorKind::ExitedImproperly),
    (
        "was unable to launch the specified application as it could not access",
        ErrorKind::ExecNotFound,
    ),
    (
        "was unable to find the specified executable file",
        ErrorKind::ExecNotFound,
    ),
    (
        "was unable to start the specified application as it encountered an error",
        ErrorKind::Other,
    ),
    ("noticed that process rank", ErrorKind::Signal),
    (
        "bad termination of one of your application processes",
        ErrorKind::NonzeroExit,
    ),
];

/// All [`TRIGGERS`] phrases in one automaton, built once.
fn trigger_matcher() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        // leftmost-longest: of two phrases of one kind at one place, the longer; phrases of
        // different kinds never overlap
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(TRIGGERS.iter().map(|(p, _)| *p))
            .expect("static phrases build an automaton")
    })
}

/// How specific a kind is when several boxes are present (lower = chosen first; among boxes of
/// one kind, the first that names the process, else the first).
fn specificity(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::RunAsRoot => 0,
        ErrorKind::ProcessEntry => 1,
        ErrorKind::ExecNotFound => 2,
        ErrorKind::NotEnoughSlots => 3,
        ErrorKind::DaemonLaunchFailed => 4,
        ErrorKind::DaemonLost => 5,
        ErrorKind::RouteFailed => 6,
        ErrorKind::Signal => 7,
        ErrorKind::ExitedImproperly => 8,
        ErrorKind::Other => 9,
        ErrorKind::NonzeroExit => 10,
        _ => 11,
    }
}

/// ssh / shell lines that explain a daemon launch failure; appended to that error's message.
const LAUNCH_HINTS: &[&str] = &[
    "command not found",
    "Host key verification failed",
    "Permission denied",
    "ssh: connect to host",
    "Could not resolve hostname",
    "No route to host",
    "Connection refused",
    "Connection timed out",
    "error while loading shared libraries",
];

#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    frame: bool,
}

fn is_frame(s: &str) -> bool {
    let t = s.trim();
    t.len() >= 10 && (t.chars().all(|c| c == '-') || t.chars().all(|c| c == '='))
}

/// MPICH prints its block with `=   ` in front of each line.
fn unframe(s: &str) -> &str {
    let t = s.trim();
    if is_frame(t) {
        return t;
    }
    match t.strip_prefix('=') {
        Some(rest) if rest.starts_with([' ', '\t']) => rest.trim(),
        _ => t,
    }
}

/// Lines a block may grow to before the older part is read and dropped (see [`Scanner`]).
const BLOCK_LINES: usize = 256;
/// Lines kept from a flushed block: a box body (30 lines) plus a wrapped trigger (3 lines) and
/// MPICH's exit string after its frame (3 lines) fit in it.
const BLOCK_OVERLAP: usize = 40;
/// Launch hints kept for daemon-launch errors.
const MAX_HINTS: usize = 4;

/// Line-by-line reader of mpirun output, so that a capture of any size is read in bounded
/// memory. Lines are grouped into blocks ended by a dash frame (the boxes' own frame); a block
/// longer than [`BLOCK_LINES`] is read up to [`BLOCK_OVERLAP`] lines before its end and carries
/// those lines over, so a box is always read whole. Within a block every line is joined with its
/// successors into one whitespace-normalised text and the trigger phrases are searched there.
pub struct Scanner<'a> {
    block: Vec<Line<'a>>,
    /// Triggers of the current block before this line index were already read.
    block_done: usize,
    report: MpirunReport,
    /// Index of the chosen error in `report.errors`, or the chosen error itself when it was not
    /// stored (cap reached).
    best: Option<(u8, ToolError)>,
    hints: Vec<&'a str>,
    looks: bool,
    not_stored: usize,
}

impl Default for Scanner<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Scanner<'a> {
    pub fn new() -> Self {
        Scanner {
            block: Vec::new(),
            block_done: 0,
            report: MpirunReport::empty(),
            best: None,
            hints: Vec::new(),
            looks: false,
            not_stored: 0,
        }
    }

    /// Read one line of the capture (without its newline).
    pub fn line(&mut self, raw: &'a str) {
        if raw.len() <= super::MAX_LINE_BYTES {
            self.line_cleaned(raw, clean(raw));
        }
    }

    /// [`Scanner::line`] for a caller that already has the line through [`clean`].
    pub(crate) fn line_cleaned(&mut self, raw: &'a str, cleaned: &'a str) {
        if raw.len() > super::MAX_LINE_BYTES {
            return;
        }
        if !self.looks && looks_like_mpirun(raw) {
            self.looks = true;
        }
        let text = unframe(cleaned);
        if self.hints.len() < MAX_HINTS && LAUNCH_HINTS.iter().any(|h| text.contains(h)) {
            self.hints.push(text.trim());
        }
        let frame = is_frame(text);
        self.block.push(Line { text, frame });
        // A dash frame ends a box; MPICH's `=` frames do not (its exit string follows one).
        if frame && text.trim().starts_with('-') {
            self.read_block(self.block.len());
            self.block.clear();
            self.block_done = 0;
        } else if self.block.len() >= BLOCK_LINES {
            let upto = self.block.len() - BLOCK_OVERLAP;
            self.read_block(upto);
            self.block.drain(..upto);
            self.block_done = 0;
        }
    }

    /// Read the triggers of the current block that start before line `upto`.
    fn read_block(&mut self, upto: usize) {
        let found = triggers(&self.block);
        for (idx, (li, kind)) in found.iter().enumerate() {
            if *li < self.block_done || *li >= upto {
                continue;
            }
            let next = found.get(idx + 1).map(|(l, _)| *l).unwrap_or(usize::MAX);
            let e = read_box(&self.block, *li, *kind, next, &mut self.report);
            self.add_error(e);
        }
        self.read_warnings(&found, upto);
        self.block_done = upto;
    }

    /// WARNING boxes that carried no trigger, and the openib connection-scheme warning.
    fn read_warnings(&mut self, found: &[(usize, ErrorKind)], upto: usize) {
        for (i, l) in self
            .block
            .iter()
            .enumerate()
            .take(upto)
            .skip(self.block_done)
        {
            let warn = l.text.starts_with("WARNING:")
                || l.text
                    .starts_with("No OpenFabrics connection schemes reported");
            if warn && !found.iter().any(|(fl, _)| i.abs_diff(*fl) <= 3) {
                push_capped(
                    &mut self.report.warnings,
                    l.text.to_string(),
                    MAX_STORED_NOTES,
                    &mut self.not_stored,
                );
            }
        }
    }

    fn add_error(&mut self, e: ToolError) {
        // same kind: the box naming the process (exit code, rank, node) says more
        let facts = ["Exit code:", "Process name:", "Node:", "PID", "node "]
            .iter()
            .any(|k| e.message.contains(k));
        let rank = specificity(e.kind) * 2 + u8::from(!facts);
        if self.best.as_ref().is_none_or(|(r, _)| rank < *r) {
            self.best = Some((rank, e.clone()));
        }
        push_capped(
            &mut self.report.errors,
            e,
            MAX_STORED_NOTES,
            &mut self.not_stored,
        );
    }

    /// The report, once every line was read.
    pub fn finish(mut self) -> MpirunReport {
        self.read_block(self.block.len());
        let hints = self.hints.join("\n");
        let with_hints = |e: &mut ToolError| {
            if e.kind == ErrorKind::DaemonLaunchFailed && !hints.is_empty() {
                e.message.push('\n');
                e.message.push_str(&hints);
            }
        };
        self.report.errors.iter_mut().for_each(with_hints);
        let mut r = self.report;
        r.error = self.best.map(|(_, mut e)| {
            with_hints(&mut e);
            e
        });
        // a daemon that could not be started: the host ssh itself names
        // (`ssh: connect to host 198.51.100.2 port 22: Connection refused`)
        if r.host.is_none()
            && r.error
                .as_ref()
                .is_some_and(|e| e.kind == ErrorKind::DaemonLaunchFailed)
        {
            r.host = self.hints.iter().find_map(|h| {
                let rest = h.split("ssh: connect to host ").nth(1)?;
                let host = rest.split_whitespace().next()?;
                (!host.is_empty()).then(|| host.to_string())
            });
        }
        r.not_stored = self.not_stored;
        r.status = if r.error.is_some() {
            Status::Error
        } else if self.looks {
            Status::Ok
        } else {
            Status::Unrecognized
        };
        r
    }
}

/// Triggers of a block: (line index, kind), one per (line, kind), in line order.
fn triggers(lines: &[Line]) -> Vec<(usize, ErrorKind)> {
    // Normalised joined text with the line index of every line's start.
    let mut joined = String::new();
    let mut starts: Vec<(usize, usize)> = Vec::new(); // (offset in joined, line index)
    for (i, l) in lines.iter().enumerate() {
        if l.frame || l.text.is_empty() {
            continue;
        }
        starts.push((joined.len(), i));
        for w in l.text.split_whitespace() {
            joined.push_str(w);
            joined.push(' ');
        }
    }

    let line_at = |off: usize| -> usize {
        let idx = starts.partition_point(|(o, _)| *o <= off);
        starts
            .get(idx.saturating_sub(1))
            .map(|(_, i)| *i)
            .unwrap_or(0)
    };
    // one pass for every phrase (ASCII case-insensitive); the longer phrase of a kind wins on
    // the same line: identical (line, kind) pairs merge
    let mut found: Vec<(usize, ErrorKind)> = Vec::new();
    for m in trigger_matcher().find_iter(&joined) {
        let Some((_, kind)) = TRIGGERS.get(m.pattern().as_usize()) else {
            continue;
        };
        let li = line_at(m.start());
        if !found.iter().any(|(l, k)| *l == li && *k == *kind) {
            found.push((li, *kind));
        }
    }
    found.sort_by_key(|(l, _)| *l);
    found
}

/// Read the box of the trigger at line `li`: from the trigger to the next frame (or the next
/// trigger), at most 30 lines; fills the report's fields the box names.
fn read_box(
    lines: &[Line],
    li: usize,
    kind: ErrorKind,
    next_trigger: usize,
    report: &mut MpirunReport,
) -> ToolError {
    let mut end = lines
        .iter()
        .enumerate()
        .skip(li + 1)
        .find(|(i, l)| l.frame || *i >= next_trigger)
        .map(|(i, _)| i)
        .unwrap_or(lines.len())
        .min(li + 30);
    if lines
        .get(li)
        .is_some_and(|l| l.text.to_lowercase().contains("bad termination"))
    {
        // MPICH puts the exit string on the line after its closing `=` frame
        end = (end + 3).min(lines.len()).min(next_trigger);
    }
    // sentence lines may begin one line above the trigger when the phrase wraps
    let start = box_start(lines, li);
    let body: Vec<&str> = lines
        .get(start..end)
        .unwrap_or(&[])
        .iter()
        .filter(|l| !l.frame)
        .map(|l| l.text.trim())
        .collect();
    let flat = body.join(" ");
    let mut kind = kind;
    let mut fields = Fields::default();
    extract(&flat, &mut fields);
    if flat.to_lowercase().contains("bad termination") && fields.signal.is_some() {
        kind = ErrorKind::Signal;
    }
    let message = key_lines(&body);
    report.exit_code = report.exit_code.or(fields.exit_code);
    report.rank = report.rank.or(fields.rank);
    report.pid = report.pid.or(fields.pid);
    report.signal = report.signal.or(fields.signal);
    if report.signal_name.is_none() {
        report.signal_name = fields.signal_name;
    }
    if report.host.is_none() {
        report.host = fields.host;
    }
    report.requested_slots = report.requested_slots.or(fields.slots);
    if report.executable.is_none() {
        report.executable = fields.executable;
    }
    ToolError { kind, message }
}

/// Parse `text` (mpirun's combined stdout/stderr, or anything that contains it).
pub fn parse(text: &str) -> MpirunReport {
    if is_blank(text) {
        let mut r = MpirunReport::empty();
        r.status = Status::Empty;
        return r;
    }
    let mut sc = Scanner::new();
    for l in text.lines() {
        sc.line(l);
    }
    sc.finish()
}

/// The trigger line, or the line above it when the sentence started there (wrapped phrase).
fn box_start(lines: &[Line], li: usize) -> usize {
    let mut start = li;
    while start > 0 {
        let Some(prev) = lines.get(start - 1) else {
            break;
        };
        if prev.frame || prev.text.trim().is_empty() || start + 2 <= li {
            break;
        }
        // continue only if the previous line does not end a sentence
        if prev.text.trim_end().ends_with(['.', ':']) {
            break;
        }
        start -= 1;
    }
    start
}

/// The lines worth keeping in a message: the first paragraph plus `key: value` field lines.
fn key_lines(body: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut in_first = true;
    // the not-enough-slots box names the application on the line after this
    let mut app_next = false;
    for l in body {
        if l.is_empty() {
            if !out.is_empty() {
                in_first = false;
            }
            continue;
        }
        let field = FIELD_KEYS.iter().any(|k| l.starts_with(k));
        if in_first || field || app_next {
            out.push(l);
        }
        app_next = l.ends_with("requested by the application:");
        if out.len() >= 10 {
            break;
        }
    }
    out.join("\n")
}

const FIELD_KEYS: &[&str] = &[
    "Process name:",
    "Exit code:",
    "Local host:",
    "Remote host:",
    "Local PID:",
    "PID:",
    "HNP daemon",
    "Remote daemon",
    "my node:",
    "target node:",
    "Node:",
    "Executable:",
    "Error code:",
    "Error name:",
    "PID ",
    "EXIT CODE:",
    "YOUR APPLICATION TERMINATED",
    "while attempting to start process rank",
    "You can override this protection by adding the --allow-run-as-root",
    "./",
    "/",
];

#[derive(Default)]
struct Fields {
    exit_code: Option<i64>,
    rank: Option<u64>,
    pid: Option<u64>,
    host: Option<String>,
    signal: Option<i64>,
    signal_name: Option<String>,
    slots: Option<u64>,
    executable: Option<String>,
}

fn word_after<'a>(flat: &'a str, key: &str) -> Option<&'a str> {
    let pos = flat.find(key)?;
    flat.get(pos + key.len()..)?.split_whitespace().next()
}

fn int_after(flat: &str, key: &str) -> Option<i64> {
    let w = word_after(flat, key)?;
    w.trim_end_matches(['.', ',', ')']).parse().ok()
}

fn extract(flat: &str, f: &mut Fields) {
    f.exit_code = int_after(flat, "Exit code:").or_else(|| int_after(flat, "EXIT CODE:"));
    // Process name: [[12345,1],0]  (v4)  or  [prterun-host-123@1,0]  (v5)
    if let Some(name) = word_after(flat, "Process name:") {
        let inner = name.trim_end_matches(']');
        if let Some(r) = inner.rsplit(',').next() {
            f.rank = r.parse().ok();
        }
    }
    if let Some(pos) = flat.find("process rank ") {
        let rest = flat.get(pos..).unwrap_or("");
        f.rank = f
            .rank
            .or(int_after(rest, "process rank ").map(|v| v.max(0) as u64));
        f.pid = int_after(rest, "with PID ").map(|v| v.max(0) as u64);
        if let Some(h) = word_after(rest, "on node ").or_else(|| word_after(rest, " on node")) {
            f.host = Some(h.trim_end_matches(['.', ',']).to_string());
        }
        if let Some(sig) = int_after(rest, "exited on signal ") {
            f.signal = Some(sig);
            if let Some(open) = rest.find("exited on signal ") {
                let tail = rest.get(open..).unwrap_or("");
                if let (Some(a), Some(b)) = (tail.find('('), tail.find(')')) {
                    if a < b {
                        f.signal_name = tail.get(a + 1..b).map(str::to_string);
                    }
                }
            }
        }
    }
    if f.host.is_none() {
        for key in [
            "Remote daemon:",
            "target node:",
            " on node ",
            "Local host:",
            "Node:",
            "RUNNING AT ",
        ] {
            if let Some(pos) = flat.find(key) {
                let rest = flat.get(pos + key.len()..).unwrap_or("");
                // "Remote daemon: [[1,0],1] on node spark-b"
                let h = if key == "Remote daemon:" {
                    word_after(rest, "on node ").or_else(|| rest.split_whitespace().next())
                } else {
                    rest.split_whitespace().next()
                };
                if let Some(h) = h {
                    f.host = Some(h.trim_end_matches(['.', ',']).to_string());
                    break;
                }
            }
        }
    }
    if f.pid.is_none() {
        f.pid = int_after(flat, "PID:")
            .or_else(|| int_after(flat, "PID "))
            .map(|v| v.max(0) as u64);
    }
    // MPICH: "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"
    if f.signal.is_none() {
        if let Some(pos) = flat.find("(signal ") {
            f.signal = int_after(flat.get(pos..).unwrap_or(""), "(signal ");
            if let Some(s) = flat.get(..pos).and_then(|h| h.rsplit(':').next()) {
                let name = s.trim();
                if !name.is_empty() {
                    f.signal_name = Some(name.to_string());
                }
            }
        }
    }
    if let Some(exe) = word_after(flat, "Executable:")
        .or_else(|| word_after(flat, "requested by the application:"))
    {
        f.executable = Some(exe.to_string());
    }
    if f.rank.is_none() {
        f.rank = int_after(flat, "start process rank ").map(|v| v.max(0) as u64);
    }
    if let Some(pos) = flat.find("to satisfy the ") {
        f.slots =
            int_after(flat.get(pos..).unwrap_or(""), "to satisfy the ").map(|v| v.max(0) as u64);
    }
}

fn looks_like_mpirun(text: &str) -> bool {
    const MARKS: &[&str] = &[
        "<stdout>:",
        "<stderr>:",
        "mpirun",
        "prterun",
        "orted",
        "Open MPI",
        "PMIx",
        "NCCL INFO",
        "# nThread",
        "Avg bus bandwidth",
        "Using devices",
    ];
    MARKS.iter().any(|m| text.contains(m))
}

impl MpirunReport {
    /// One or two human lines.
    pub fn summary(&self) -> String {
        match (&self.error, self.status) {
            (Some(e), _) => {
                let mut s = format!("mpirun error: {}", e.kind.as_str());
                let mut details = Vec::new();
                if let Some(r) = self.rank {
                    details.push(format!("rank {r}"));
                }
                if let Some(h) = &self.host {
                    details.push(format!("host {h}"));
                }
                if let Some(x) = &self.executable {
                    details.push(format!("executable {x}"));
                }
                if let Some(c) = self.exit_code {
                    details.push(format!("exit code {c}"));
                }
                if let Some(sig) = self.signal {
                    match &self.signal_name {
                        Some(n) => details.push(format!("signal {sig} ({n})")),
                        None => details.push(format!("signal {sig}")),
                    }
                }
                if !details.is_empty() {
                    s.push_str(&format!(" ({})", details.join(", ")));
                }
                if let Some(first) = e.message.lines().next() {
                    s.push_str(&format!("\n  {first}"));
                }
                if self.errors.len() > 1 {
                    s.push_str(&format!("\n  {} error boxes in all", self.errors.len()));
                }
                s
            }
            (None, Status::Ok) => "mpirun: no error reported".to_string(),
            (None, Status::Empty) => "mpirun: empty input".to_string(),
            _ => "mpirun: no recognizable mpirun output".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DASH: &str = "--------------------------------------------------------------------------";

    #[test]
    fn nonzero_exit_fields() {
        let t = format!(
            "{DASH}\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.\n{DASH}\n{DASH}\nmpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[4242,1],1]\n  Exit code:    3\n{DASH}\n"
        );
        let r = parse(&t);
        assert_eq!(r.status, Status::Error);
        assert_eq!(r.errors.len(), 2);
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(r.rank, Some(1));
        assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::NonzeroExit));
    }

    #[test]
    fn wrapped_process_entry() {
        let t = format!(
            "{DASH}\nWARNING: Open MPI accepted a TCP connection from what appears to be a\nanother Open MPI process but cannot find a corresponding process\nentry for that peer.\n\nThis attempted connection will be ignored; your MPI job may or may not\ncontinue properly.\n\n  Local host: spark-b\n  PID:        2211\n{DASH}\n"
        );
        let r = parse(&t);
        assert_eq!(
            r.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::ProcessEntry)
        );
        assert_eq!(r.host.as_deref(), Some("spark-b"));
        assert_eq!(r.pid, Some(2211));
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn signal_line() {
        let r = parse(
            "mpirun noticed that process rank 1 with PID 0 on node spark-b exited on signal 11 (Segmentation fault).\n",
        );
        assert_eq!(r.signal, Some(11));
        assert_eq!(r.signal_name.as_deref(), Some("Segmentation fault"));
        assert_eq!(r.host.as_deref(), Some("spark-b"));
        assert_eq!(r.rank, Some(1));
    }

    #[test]
    fn the_matcher_builds_and_finds_wrapped_phrases() {
        let r = parse("mpirun has detected an attempt\nto RUN as root.\n");
        assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::RunAsRoot));
    }

    #[test]
    fn a_box_cut_by_the_block_limit_is_read_whole() {
        // more noise than one block holds, then a box: the overlap keeps it whole
        let mut t = "noise line\n".repeat(BLOCK_LINES - 5);
        t.push_str("mpirun noticed that process rank 3 with PID 77 on node\nspark-z exited on signal 9 (Killed).\n");
        t.push_str(&"more noise\n".repeat(3 * BLOCK_LINES));
        let r = parse(&t);
        assert_eq!(r.errors.len(), 1);
        assert_eq!((r.rank, r.host.as_deref()), (Some(3), Some("spark-z")));
    }

    #[test]
    fn plain_text_is_unrecognized() {
        assert_eq!(parse("hello\n").status, Status::Unrecognized);
        assert_eq!(parse("").status, Status::Empty);
    }
}
