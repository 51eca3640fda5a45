//! `fabricplan check`'s executor: on this machine, no SSH. The discovery probe run by `/bin/sh`
//! here, then every far-end ping at once, then the neighbour table; each process in a group
//! of its own, ended with its group at the deadline (a probe that hangs, a ping that never
//! returns: what arrived before is kept and judged). The state file read and replaced safely,
//! and this node drained or resumed through Slurm's `scontrol`.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::io::AsyncReadExt;

use crate::check::state::STATE_MAX_BYTES;
use crate::check::{Checked, Reading, far};
use crate::launchers::slurm::exec::{SlurmControl, slurm_conf};
use crate::plan::{NodeId, Plan};
use crate::results::service::{drain_argv, resume_argv};

/// The most kept of any one process's output.
const KEEP_BYTES: usize = 4 << 20;

/// What one process left.
struct Ran {
    stdout: String,
    stderr: String,
    /// It exited by itself before the limit.
    finished: bool,
}

/// Read `from` into `into`, at most [`KEEP_BYTES`] kept.
async fn drain_into<R: tokio::io::AsyncRead + Unpin>(from: Option<R>, into: &mut Vec<u8>) {
    let Some(mut r) = from else { return };
    let mut buf = vec![0u8; 16384];
    while let Ok(n @ 1..) = r.read(&mut buf).await {
        let room = KEEP_BYTES.saturating_sub(into.len()).min(n);
        into.extend_from_slice(&buf[..room]);
    }
}

/// `/bin/sh -c script` until it exits or `until`; at `until` its whole process group is killed
/// and what it printed so far is kept.
async fn run_sh(script: &str, until: Instant) -> Result<Ran, String> {
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run /bin/sh: {e}"))?;
    let pid = child.id();
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let limit = until.saturating_duration_since(Instant::now());
    let finished = {
        let work = async {
            tokio::join!(drain_into(out, &mut o), drain_into(err, &mut e));
            child.wait().await
        };
        tokio::time::timeout(limit, work).await.is_ok()
    };
    if !finished {
        kill_group(pid);
        let _ = child.wait().await;
    }
    Ok(Ran {
        stdout: String::from_utf8_lossy(&o).into_owned(),
        stderr: String::from_utf8_lossy(&e).into_owned(),
        finished,
    })
}

/// SIGKILL to the process group this process started (its leader's pid: never a name).
fn kill_group(pid: Option<u32>) {
    if let Some(p) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
        // SAFETY: killpg(2) on the group of a child this process started and has not reaped.
        unsafe {
            libc::killpg(p, libc::SIGKILL);
        }
    }
}

/// Read the node: the probe, then (when it finished) the far-end pings and the neighbour table,
/// all by `until`.
pub async fn read(plan: &Plan, node: NodeId, until: Instant, deadline_s: f64) -> Reading {
    let mut r = Reading {
        deadline_s,
        ..Reading::default()
    };
    let probe = match run_sh(crate::discover::PROBE_SCRIPT, until).await {
        Ok(p) => p,
        Err(e) => {
            r.probe_error = Some(e);
            r.unix_ms = crate::results::now_ms();
            return r;
        }
    };
    r.unix_ms = crate::results::now_ms();
    r.probe_text = probe.stdout;
    if !probe.finished {
        r.cut.push(format!(
            "the probe did not finish (it read {}); the far ends were not pinged",
            if crate::check::Reached::of(&r.probe_text).sysfs {
                "the RDMA devices, not the addresses, links and routes"
            } else {
                "no RDMA device to its end"
            }
        ));
        return r;
    }
    let p = crate::discover::probe::parse(&r.probe_text);
    let halves = crate::check::resolve(plan, node, &p);
    let sent = far::plan_pings(plan, &crate::kinds::renderer(plan), &halves);
    let outs = join_all(sent.iter().map(|s| run_sh(&s.command, until))).await;
    for (s, o) in sent.into_iter().zip(outs) {
        let said = match o {
            Ok(o) if o.finished => Some(Ok(format!("{}{}", o.stdout, o.stderr))),
            Ok(_) => {
                r.cut.push(format!("`{}`", s.command));
                None
            }
            Err(e) => Some(Err(e)),
        };
        r.pings.push((s, said));
    }
    if !r.pings.is_empty() {
        match run_sh("ip -4 neigh show", until).await {
            Ok(n) if n.finished => r.neighbours = Some(crate::parse::neigh::parse(&n.stdout)),
            Ok(_) => r
                .cut
                .push("the neighbour table (`ip -4 neigh show`)".into()),
            Err(_) => {}
        }
    }
    r
}

/// This machine's hostname, as the kernel has it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// The last check's state: `Ok(None)` when there is none. A link, or a file that is not a
/// regular one of this user's, is refused (fabricplan runs as root: it reads and replaces only
/// its own file); it is opened without following a link and judged by what was opened.
pub fn read_state(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err("is a symbolic link: a state file is only ever a file of its own".into());
        }
        Err(e) => return Err(e.to_string()),
    };
    let m = f.metadata().map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err(format!(
            "is {}, not a regular file: a state file is only ever a file of its own",
            crate::files::kind_of(&m)
        ));
    }
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(format!(
            "belongs to uid {}, not to this user ({me})",
            m.uid()
        ));
    }
    if m.len() > STATE_MAX_BYTES {
        return Err(format!(
            "is {} bytes, more than a state file holds",
            m.len()
        ));
    }
    let mut text = String::new();
    f.take(STATE_MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(Some(text))
}

/// Replace the state file: mode 0600, atomically, never through a link (its folder is created
/// 0700 when missing).
pub fn write_state(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = crate::files::output::folder_of(path);
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| "names no file".to_string())?;
    crate::files::output::write_atomic_private(&dir, &name, text.as_bytes())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// What was asked of Slurm.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked {
    pub drain: bool,
    pub resume: bool,
}

/// Drain this node (`slurm_name`) when the check failed, or resume it when it passed and a
/// check drained it; never a node drained or down by someone else. Each line says what was done.
pub async fn service(slurm_name: &str, c: &Checked, asked: Asked, until: Instant) -> Vec<String> {
    let control = match slurm_conf() {
        Ok(conf) => SlurmControl::new(conf),
        Err(e) => return vec![format!("Slurm cannot be asked: {e}")],
    };
    let limit = until
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(100));
    let work = async {
        let states = control.states(&[slurm_name]).await?;
        let state = states.into_iter().find(|s| s.node == slurm_name);
        let Some(state) = state else {
            return Err(format!("{slurm_name} is not a Slurm node"));
        };
        let reason = state.reason.clone().unwrap_or_default();
        let ours = reason.starts_with(&crate::check::output::own_reason_prefix());
        let failed = c.exit_code() != crate::exit::OK;
        match (failed, asked) {
            (true, Asked { drain: true, .. }) => {
                let Some(why) = crate::check::output::drain_reason(c) else {
                    return Ok("nothing to drain for".to_string());
                };
                if !state.usable() {
                    let whose = if ours {
                        "by an earlier check"
                    } else {
                        "by someone else: left alone"
                    };
                    return Ok(format!(
                        "{slurm_name} is already {} ({reason}) {whose}",
                        state.state
                    ));
                }
                control.run(&drain_argv(slurm_name, &why)).await?;
                Ok(format!("drained {slurm_name}: {why}"))
            }
            (false, Asked { resume: true, .. }) if state.drained() && ours => {
                control.run(&resume_argv(slurm_name)).await?;
                Ok(format!(
                    "resumed {slurm_name} (drained by a check: {reason})"
                ))
            }
            (false, Asked { resume: true, .. }) if state.drained() => Ok(format!(
                "{slurm_name} stays drained: not by a check ({reason})"
            )),
            _ => Ok(format!("{slurm_name} left {} ", state.state)
                .trim_end()
                .to_string()),
        }
    };
    match tokio::time::timeout(limit, work).await {
        Ok(Ok(line)) => vec![line],
        Ok(Err(e)) => vec![format!("Slurm: {e}")],
        Err(_) => vec!["Slurm did not answer before the deadline".into()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_file_is_read_only_when_it_is_ours_and_written_private() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/check-p.json");
        assert_eq!(read_state(&p).unwrap(), None);
        write_state(&p, "{}\n").unwrap();
        assert_eq!(read_state(&p).unwrap().as_deref(), Some("{}\n"));
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(p.parent().unwrap()), 0o700);
        let theirs = d.path().join("theirs");
        std::fs::write(&theirs, "secret").unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        assert!(read_state(&link).unwrap_err().contains("symbolic link"));
        assert!(write_state(&link, "x").is_err());
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "secret");
        assert!(
            read_state(d.path())
                .unwrap_err()
                .contains("not a regular file")
        );
    }
}
