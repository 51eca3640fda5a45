//! What Slurm's own clients print about the launcher's work, read: `salloc`'s grant or refusal,
//! `srun`'s reasons a step did not run or was ended, and `sinfo`'s node states. Pure; the Slurm
//! launcher runs the clients and turns what is read here into results (the wording is Slurm
//! 22.05's, as `tests/lab_slurm.rs` records it; later versions keep these phrases).

use serde::Serialize;

/// Why Slurm did not run, or ended, what was asked of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlurmFailureKind {
    /// The node cannot take work: down, drained, reserved, or not in the allocation.
    NodeUnavailable,
    /// The step was created but its tasks were not started on a node (its slurmd did not answer,
    /// or refused), or the step could not be created at all.
    StepLaunch,
    /// The job's time limit ended it.
    TimeLimit,
    /// The allocation was refused or not granted in time.
    AllocationRefused,
    /// The job is gone (expired, completed, or its id was never valid).
    JobGone,
    /// Cancelled (by `scancel`, or a node failure), not for its time limit.
    Cancelled,
}

/// One failure Slurm reported: its kind, Slurm's own words, and the node it named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlurmFailure {
    pub kind: SlurmFailureKind,
    /// The line Slurm printed, without its `srun: error: ` prefix.
    pub message: String,
    pub node: Option<String>,
}

/// The client's prefixes before a message (`srun: error: `, `salloc: error: `).
fn message(line: &str) -> &str {
    let mut l = line.trim();
    for p in ["srun: ", "salloc: ", "sbatch: ", "scancel: "] {
        if let Some(r) = l.strip_prefix(p) {
            l = r;
            break;
        }
    }
    for p in ["error: ", "fatal: "] {
        if let Some(r) = l.strip_prefix(p) {
            return r;
        }
    }
    l
}

/// The node a `... failed on node NODE: ...` line names.
fn node_after(line: &str, marker: &str) -> Option<String> {
    let rest = line.split(marker).nth(1)?;
    let node: String = rest
        .chars()
        .take_while(|c| !matches!(c, ':' | ' ' | ','))
        .collect();
    (!node.is_empty()).then_some(node)
}

/// The most telling failure in `srun`'s or `salloc`'s stderr, if it reports one. A time limit
/// or a launch failure names the cause; the generic lines that follow them (`Job step
/// aborted`) do not.
pub fn failure(stderr: &str) -> Option<SlurmFailure> {
    // the cause before its consequences: a time limit or a node before a generic refusal
    let rank = |k: SlurmFailureKind| match k {
        SlurmFailureKind::TimeLimit => 0,
        SlurmFailureKind::NodeUnavailable => 1,
        SlurmFailureKind::StepLaunch => 2,
        SlurmFailureKind::JobGone => 3,
        SlurmFailureKind::AllocationRefused => 4,
        SlurmFailureKind::Cancelled => 5,
    };
    // the first of the highest rank, kept as the lines go (memory does not grow with them)
    let mut best: Option<SlurmFailure> = None;
    let mut found = |f: SlurmFailure| {
        if best.as_ref().is_none_or(|b| rank(f.kind) < rank(b.kind)) {
            best = Some(f);
        }
    };
    for line in stderr.lines() {
        let m = message(line);
        let f = |kind, node| SlurmFailure {
            kind,
            message: m.to_string(),
            node,
        };
        let l = m.to_ascii_lowercase();
        if l.contains("due to time limit") {
            found(f(SlurmFailureKind::TimeLimit, node_after(m, " ON ")));
        } else if l.starts_with("task launch for stepid=") || l.contains("failed on node ") {
            found(f(SlurmFailureKind::StepLaunch, node_after(m, "on node ")));
        } else if l.starts_with("node failure on ") {
            // `srun: error: Node failure on spark-2`: the controller declared the node failed
            found(f(
                SlurmFailureKind::NodeUnavailable,
                node_after(m, "ode failure on "),
            ));
        } else if l.starts_with("application launch failed") {
            found(f(SlurmFailureKind::StepLaunch, None));
        } else if l.contains("required node not available")
            || l.contains("requested node configuration is not available")
            || l.contains("node not responding")
        {
            found(f(SlurmFailureKind::NodeUnavailable, None));
        } else if l.contains("has expired")
            || l.contains("invalid job id specified")
            || l.contains("already completing or completed")
        {
            found(f(SlurmFailureKind::JobGone, None));
        } else if l.starts_with("unable to create step for job") {
            found(f(SlurmFailureKind::StepLaunch, None));
        } else if l.starts_with("unable to allocate resources")
            || l.starts_with("job submit/allocate failed")
            || l.starts_with("invalid partition")
            || l.starts_with("invalid account")
        {
            found(f(SlurmFailureKind::AllocationRefused, None));
        } else if l.contains("cancelled at") || l.starts_with("job has been cancelled") {
            found(f(SlurmFailureKind::Cancelled, node_after(m, " ON ")));
        }
    }
    best
}

/// The job id in `salloc: Granted job allocation N`.
pub fn granted(stderr: &str) -> Option<u32> {
    job_after(stderr, "Granted job allocation ")
}

/// The job id in `salloc: Pending job allocation N` (it exists, waiting, until cancelled).
pub fn pending(stderr: &str) -> Option<u32> {
    job_after(stderr, "Pending job allocation ")
}

fn job_after(text: &str, marker: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let rest = l.split(marker).nth(1)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// A node as `sinfo -h -N -o '%N|%T|%E'` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeState {
    pub node: String,
    /// Slurm's state, with its flag suffix (`idle`, `down*`, `drained`, `allocated*`).
    pub state: String,
    /// Slurm's reason for a down or drained node (`none` read as no reason).
    pub reason: Option<String>,
}

/// Read `sinfo -h -N -o '%N|%T|%E'`: one entry per node (a node in several partitions is listed
/// once per partition; the first line counts).
pub fn node_states(stdout: &str) -> Vec<NodeState> {
    let mut out: Vec<NodeState> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for line in stdout.lines() {
        let mut parts = line.splitn(3, '|');
        let (Some(node), Some(state)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (node, state) = (node.trim(), state.trim());
        if node.is_empty() || state.is_empty() || !seen.insert(node) {
            continue;
        }
        let reason = parts
            .next()
            .map(str::trim)
            .filter(|r| !r.is_empty() && *r != "none" && *r != "(null)")
            .map(str::to_string);
        out.push(NodeState {
            node: node.to_string(),
            state: state.to_string(),
            reason,
        });
    }
    out
}

impl NodeState {
    /// The base state, without the flag suffix (`down*` -> `down`).
    fn base(&self) -> &str {
        self.state
            .trim_end_matches(|c: char| "*~#!%$@^-".contains(c))
    }

    /// Whether Slurm would run a new step on it: not down, drained or draining, failing, of
    /// unknown state, powered off, or not responding (`*`).
    pub fn usable(&self) -> bool {
        let off_flag = self.state.ends_with(['*', '~', '%', '!']);
        let out = matches!(
            self.base(),
            "down"
                | "drain"
                | "drained"
                | "draining"
                | "drng"
                | "fail"
                | "failing"
                | "unknown"
                | "unk"
                | "future"
                | "inval"
                | "maint"
                | "powered_down"
                | "power_down"
                | "powering_down"
                | "reboot_issued"
        );
        !off_flag && !out
    }

    /// `down* (not responding; Slurm's reason: Not responding)`.
    /// Drained, or draining (a drain flag set while jobs finish).
    pub fn drained(&self) -> bool {
        self.state.contains("drain") || self.base() == "drng"
    }

    pub fn describe(&self) -> String {
        let flag = match self.state.chars().last() {
            Some('*') => Some("not responding"),
            Some('~') => Some("powered off"),
            Some('#') => Some("powering up"),
            Some('%') => Some("powering down"),
            Some('!') => Some("to be powered down"),
            Some('$') => Some("in a maintenance reservation"),
            Some('@') => Some("reboot pending"),
            _ => None,
        };
        let mut notes: Vec<String> = flag.into_iter().map(str::to_string).collect();
        if let Some(r) = &self.reason {
            notes.push(format!("Slurm's reason: {r}"));
        }
        if notes.is_empty() {
            format!("`{}`", self.state)
        } else {
            format!("`{}` ({})", self.state, notes.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text, truncated or hostile: every reader answers without panicking, and a node
        /// state it returns is one of the input's lines.
        #[test]
        fn any_text_is_read_without_panic(text in "(?s).{0,400}", cut in 0usize..400) {
            let cut = text.char_indices().nth(cut).map_or(text.len(), |(i, _)| i);
            for t in [text.as_str(), &text[..cut]] {
                let _ = failure(t);
                let _ = granted(t);
                let _ = pending(t);
                for n in node_states(t) {
                    prop_assert!(t.contains(&n.node));
                    let _ = (n.usable(), n.describe());
                }
            }
        }
    }

    /// Large outputs are read in one pass: 200,000 failure lines keep one failure, and 200,000
    /// sinfo lines of 20,000 nodes give 20,000 states.
    #[test]
    fn large_outputs_stay_linear() {
        let mut err = String::new();
        for i in 0..200_000 {
            err.push_str(&format!(
                "srun: error: Unable to create step for job {i}: busy\n"
            ));
        }
        err.push_str(
            "srun: error: *** STEP 7.0 ON spark-b CANCELLED AT 2026-12-01 DUE TO TIME LIMIT ***\n",
        );
        let f = failure(&err).expect("a failure");
        assert_eq!(f.kind, SlurmFailureKind::TimeLimit);
        assert_eq!(f.node.as_deref(), Some("spark-b"));
        let mut sinfo = String::new();
        for i in 0..200_000 {
            sinfo.push_str(&format!("n{:05}|idle|none\n", i % 20_000));
        }
        assert_eq!(node_states(&sinfo).len(), 20_000);
    }

    /// Texts as Slurm 22.05 printed them in the lab (tests/lab/README.md).
    #[test]
    fn srun_failures_are_named() {
        let launch = "srun: error: Task launch for StepId=12.0 failed on node spark-b: Communication connection failure\n\
                      srun: error: Application launch failed: Communication connection failure\n\
                      srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n";
        let f = failure(launch).unwrap();
        assert_eq!(f.kind, SlurmFailureKind::StepLaunch);
        assert_eq!(f.node.as_deref(), Some("spark-b"));
        assert!(
            f.message.starts_with("Task launch for StepId=12.0"),
            "{f:?}"
        );

        // a node the controller declared failed while the step ran, named
        let failed = "srun: error: Node failure on spark-2\nsrun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n";
        let f = failure(failed).unwrap();
        assert_eq!(f.kind, SlurmFailureKind::NodeUnavailable);
        assert_eq!(f.node.as_deref(), Some("spark-2"));

        let limit = "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n\
                     slurmstepd-c: error: *** STEP 7.0 ON c CANCELLED AT 2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n\
                     srun: error: c: task 0: Terminated\n";
        let f = failure(limit).unwrap();
        assert_eq!(f.kind, SlurmFailureKind::TimeLimit);
        assert_eq!(f.node.as_deref(), Some("c"));

        let drained = "srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)\n";
        assert_eq!(
            failure(drained).unwrap().kind,
            SlurmFailureKind::NodeUnavailable
        );
        let outside = "srun: error: Unable to create step for job 1: Requested node configuration is not available\n";
        assert_eq!(
            failure(outside).unwrap().kind,
            SlurmFailureKind::NodeUnavailable
        );
        let expired = "srun: error: Slurm job 1 has expired\nsrun: Check SLURM_JOB_ID environment variable. Expired or invalid job 1\n";
        assert_eq!(failure(expired).unwrap().kind, SlurmFailureKind::JobGone);
        let cancelled = "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n\
                         slurmstepd-a: error: *** STEP 1.6 ON a CANCELLED AT 2026-12-01T13:00:45 ***\n\
                         srun: error: a: task 0: Killed\n";
        let f = failure(cancelled).unwrap();
        assert_eq!(f.kind, SlurmFailureKind::Cancelled);
        assert_eq!(f.node.as_deref(), Some("a"));
        assert_eq!(failure("Couldn't connect to 1.2.3.4\n"), None);
        assert_eq!(failure(""), None);
    }

    #[test]
    fn salloc_answers_are_read() {
        assert_eq!(granted("salloc: Granted job allocation 1\n"), Some(1));
        let refused = "salloc: error: invalid partition specified: nope\n\
                       salloc: error: Job submit/allocate failed: Invalid partition name specified\n";
        assert_eq!(granted(refused), None);
        let f = failure(refused).unwrap();
        assert_eq!(f.kind, SlurmFailureKind::AllocationRefused);
        let waited = "salloc: Required node not available (down, drained or reserved)\n\
                      salloc: Pending job allocation 5\n\
                      salloc: job 5 queued and waiting for resources\n\
                      salloc: error: Unable to allocate resources: Connection timed out\n";
        assert_eq!(pending(waited), Some(5));
        assert_eq!(
            failure(waited).unwrap().kind,
            SlurmFailureKind::NodeUnavailable
        );
    }

    #[test]
    fn node_states_and_their_words() {
        let s = node_states(
            "a|idle|none\nb|down*|Not responding\nc|draining|lab drain test\nc|draining|lab drain test\nd|allocated*|none\ne|mixed|none\n",
        );
        assert_eq!(s.len(), 5);
        let usable: Vec<bool> = s.iter().map(NodeState::usable).collect();
        assert_eq!(usable, [true, false, false, false, true]);
        assert_eq!(
            s[1].describe(),
            "`down*` (not responding; Slurm's reason: Not responding)"
        );
        assert_eq!(
            s[2].describe(),
            "`draining` (Slurm's reason: lab drain test)"
        );
        assert_eq!(s[0].describe(), "`idle`");
        assert_eq!(s[3].describe(), "`allocated*` (not responding)");
    }
}
