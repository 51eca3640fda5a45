//! A session carried by a process of this machine: its stdin is the loop's input, its stdout
//! the loop's answers (`/bin/sh` itself for tests and `--local`-like uses; a Slurm step's
//! `srun`, whose task is the loop). The process is started from its argument vector (no shell),
//! in a process group of its own (a Ctrl-C at the terminal is fabricplan's to handle), and
//! always waited for: [`Child::end`] stops it by its pid and reaps it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, BufReader};
use tokio::sync::{mpsc, watch};

use super::{Chunk, Sink, Source};

/// How much of a carrier's stderr is kept to say why it ended.
const STDERR_KEPT: usize = 4096;

/// A carrier process: its pid, its exit once known, and its stderr so far.
#[derive(Clone)]
pub struct Child {
    pid: Option<u32>,
    exited: watch::Receiver<Option<i32>>,
    stderr: Arc<Mutex<String>>,
    end: mpsc::UnboundedSender<i32>,
}

impl Child {
    /// Its pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Its exit status (128 + n for signal n), once it has exited and been reaped.
    pub fn exit(&self) -> Option<i32> {
        *self.exited.borrow()
    }

    /// What it wrote on stderr (the last few KB).
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Send it `signal` (by its pid, never a name), unless it has exited.
    pub fn signal(&self, signal: i32) {
        let _ = self.end.send(signal);
    }

    /// Wait for it to exit, up to `limit`: its status, or `None` if it still runs.
    pub async fn exited_within(&self, limit: Duration) -> Option<i32> {
        let mut rx = self.exited.clone();
        let waited = tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(s)) => *s,
            _ => None,
        }
    }

    /// End it and reap it: SIGTERM, SIGKILL after `grace`; returns its status (`None` only if
    /// it survived SIGKILL for 5 s, which a process of ours cannot).
    pub async fn end(&self, grace: Duration) -> Option<i32> {
        if let Some(s) = self.exit() {
            return Some(s);
        }
        self.signal(libc::SIGTERM);
        if let Some(s) = self.exited_within(grace).await {
            return Some(s);
        }
        self.signal(libc::SIGKILL);
        self.exited_within(Duration::from_secs(5)).await
    }
}

/// Start `argv` with `env` added, in a process group of its own (so that ending it reaches
/// everything it started), stdout and stderr piped, stdin as `stdin` says. The one place a
/// child of this machine is started: the local sessions, the Slurm steps and their clients.
pub fn start_in_group(
    argv: &[String],
    env: &[(String, String)],
    stdin: std::process::Stdio,
) -> Result<tokio::process::Child, String> {
    let Some((program, args)) = argv.split_first() else {
        return Err("an empty command".into());
    };
    tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `{program}`: {e}"))
}

/// Start `argv` with `env` added: its stdin and stdout carry a session, its stderr is kept.
pub fn spawn(argv: &[String], env: &[(String, String)]) -> Result<(Sink, Source, Child), String> {
    let mut child = start_in_group(argv, env, std::process::Stdio::piped())?;
    let program = argv.first().cloned().unwrap_or_default();
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!("`{program}` was started without its pipes"));
    };
    let (chunks, source) = mpsc::channel(super::SOURCE_DEPTH);
    let (exited_tx, exited) = watch::channel(None);
    let (end, end_rx) = mpsc::unbounded_channel();
    let stderr = Arc::new(Mutex::new(String::new()));
    tokio::spawn(keep_stderr(err, stderr.clone()));
    tokio::spawn(reap(child, pid, end_rx, exited_tx));
    let handle = Child {
        pid,
        exited,
        stderr,
        end,
    };
    tokio::spawn(forward(stdout, chunks, handle.clone(), program.clone()));
    Ok((Box::new(stdin), source, handle))
}

/// Keep the last [`STDERR_KEPT`] bytes of what the process writes on stderr.
async fn keep_stderr(err: tokio::process::ChildStderr, kept: Arc<Mutex<String>>) {
    let mut r = BufReader::new(err);
    let mut buf = vec![0u8; 4096];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut k) = kept.lock() {
                    k.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if k.len() > STDERR_KEPT {
                        let mut cut = k.len() - STDERR_KEPT;
                        while !k.is_char_boundary(cut) {
                            cut += 1;
                        }
                        k.drain(..cut);
                    }
                }
            }
        }
    }
}

/// Forward stdout as it comes; at its end, why: the exit status (given a moment to arrive) and
/// the last line the process said on stderr.
async fn forward(
    mut out: tokio::process::ChildStdout,
    chunks: mpsc::Sender<Chunk>,
    child: Child,
    program: String,
) {
    let mut buf = vec![0u8; 16384];
    loop {
        match out.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if chunks.send(Chunk::Data(buf[..n].to_vec())).await.is_err() {
                    break;
                }
            }
        }
    }
    let status = child.exited_within(Duration::from_secs(1)).await;
    let said = child
        .stderr()
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| format!(": {l}"))
        .unwrap_or_default();
    let why = match status {
        Some(s) if s > 128 => format!("`{program}` was killed by signal {}{said}", s - 128),
        Some(s) => format!("`{program}` exited {s}{said}"),
        None => format!("`{program}` closed its output{said}"),
    };
    let _ = chunks.send(Chunk::End(why)).await;
}

/// Wait for the process, sending it the signals asked for; when every handle is gone while it
/// still runs, it gets SIGTERM and is still waited for.
async fn reap(
    mut child: tokio::process::Child,
    pid: Option<u32>,
    mut end: mpsc::UnboundedReceiver<i32>,
    exited: watch::Sender<Option<i32>>,
) {
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            sig = end.recv() => match sig {
                Some(sig) => signal(pid, sig),
                None => {
                    signal(pid, libc::SIGTERM);
                    break child.wait().await;
                }
            },
        }
    };
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .ok()
        .and_then(|s| s.code().or_else(|| s.signal().map(|n| 128 + n)))
        .unwrap_or(-1);
    exited.send_replace(Some(code));
}

/// Send `sig` to exactly the process we started (its pid), while it is ours to signal.
fn signal(pid: Option<u32>, sig: i32) {
    if let Some(p) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) on the pid of a child this process started and has not reaped yet
        // (the task that reaps it is the one sending, before its wait returned).
        unsafe {
            libc::kill(p, sig);
        }
    }
}
