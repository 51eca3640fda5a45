//! A Slurm client process run from this machine (NCCL's `srun`, `salloc`, `scancel`, `sinfo`):
//! started from its argument vector (no shell), in a process group of its own (a Ctrl-C at the
//! terminal is fabricplan's to handle, not srun's), its output read as it comes (the step's id
//! the moment its script writes it), and always waited for.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use crate::exec::capture::Capture;
use crate::launchers::slurm::render::{STEP_MARK, is_step_id};

/// A line of stderr longer than this is no step mark: it is not held to be read as one.
const MARK_LINE: usize = 4096;

/// What a finished client left: its exit status (128 + n for a signal, like a shell), its
/// output.
#[derive(Debug, Clone)]
pub(super) struct Finished {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    /// Bytes of the middle of stdout and stderr left out (see [`Capture`]).
    pub omitted_bytes: u64,
}

/// How a client is to be ended.
#[derive(Debug, Clone, Copy)]
enum End {
    /// SIGTERM: srun ends its step (`srun: forcing job termination`), salloc gives up.
    Term,
    /// SIGINT: salloc withdraws a pending allocation.
    Int,
    /// SIGKILL: the last resort, the process alone.
    Kill,
}

/// A running client.
pub(super) struct Proc {
    /// The step id its script wrote, once written.
    pub step: watch::Receiver<Option<String>>,
    /// Set once it exited and its output is read.
    pub done: watch::Receiver<Option<Arc<Finished>>>,
    end: Option<tokio::sync::mpsc::UnboundedSender<End>>,
}

/// Start `argv` with `env`, stdin from /dev/null.
pub(super) fn spawn(argv: &[String], env: &[(String, String)]) -> Result<Proc, String> {
    let mut child =
        crate::exec::session::process::start_in_group(argv, env, std::process::Stdio::null())?;
    let pid = child.id();
    let mut out = child.stdout.take();
    let err = child.stderr.take();
    let (step_tx, step) = watch::channel(None);
    let (done_tx, done) = watch::channel(None);
    let (end_tx, mut end_rx) = tokio::sync::mpsc::unbounded_channel::<End>();
    tokio::spawn(async move {
        // both streams held in bounded memory, whatever the ranks print
        let read_out = read_kept(out.take());
        let read_err = read_marked(err, step_tx);
        let wait = async {
            loop {
                tokio::select! {
                    s = child.wait() => return s,
                    e = end_rx.recv() => match e {
                        Some(End::Kill) => { let _ = child.start_kill(); }
                        Some(End::Term) => signal(pid, libc::SIGTERM),
                        Some(End::Int) => signal(pid, libc::SIGINT),
                        // every handle dropped, the client still running: it ends its step
                        None => {
                            signal(pid, libc::SIGTERM);
                            return child.wait().await;
                        }
                    },
                }
            }
        };
        let (so, se, status) = tokio::join!(read_out, read_err, wait);
        let status = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                s.code()
                    .or_else(|| s.signal().map(|n| 128 + n))
                    .unwrap_or(-1)
            }
            Err(_) => -1,
        };
        let ((stdout, a), (stderr, b)) = (so.finish(), se.finish());
        done_tx.send_replace(Some(Arc::new(Finished {
            status,
            stdout,
            stderr,
            omitted_bytes: a + b,
        })));
    });
    Ok(Proc {
        step,
        done,
        end: Some(end_tx),
    })
}

/// Read a stream to its end, held in bounded memory.
async fn read_kept(out: Option<tokio::process::ChildStdout>) -> Capture {
    let mut kept = Capture::default();
    if let Some(mut o) = out {
        let mut buf = vec![0u8; 16384];
        while let Ok(n @ 1..) = o.read(&mut buf).await {
            kept.push(&buf[..n]);
        }
    }
    kept
}

/// Read stderr to its end, held in bounded memory, saying the step's id the moment its script
/// writes it (a line of at most [`MARK_LINE`] bytes is looked at).
async fn read_marked(
    err: Option<tokio::process::ChildStderr>,
    step_tx: watch::Sender<Option<String>>,
) -> Capture {
    let mut kept = Capture::default();
    let Some(mut e) = err else { return kept };
    let mut buf = vec![0u8; 16384];
    let mut line: Vec<u8> = Vec::new();
    while let Ok(n @ 1..) = e.read(&mut buf).await {
        kept.push(&buf[..n]);
        for &b in &buf[..n] {
            if b != b'\n' {
                if line.len() < MARK_LINE {
                    line.push(b);
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            if let Some(id) = text.trim_end().strip_prefix(STEP_MARK).map(str::trim)
                && is_step_id(id)
            {
                step_tx.send_if_modified(|s| {
                    let first = s.is_none();
                    if first {
                        *s = Some(id.to_string());
                    }
                    first
                });
            }
            line.clear();
        }
    }
    kept
}

/// Send `sig` to exactly the process we started (its pid, never a name).
fn signal(pid: Option<u32>, sig: i32) {
    if let Some(p) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) on the pid of a child this process started and has not reaped yet
        // (the task reaping it is the one asking, before its wait returned).
        unsafe {
            libc::kill(p, sig);
        }
    }
}

impl Proc {
    /// Its output once it has exited.
    pub async fn finished(&mut self) -> Arc<Finished> {
        loop {
            if let Some(f) = self.done.borrow().clone() {
                return f;
            }
            if self.done.changed().await.is_err() {
                // the reading task ended without a result (it cannot): report a lost process
                return Arc::new(Finished {
                    status: -1,
                    stdout: String::new(),
                    stderr: "the client process was lost".into(),
                    omitted_bytes: 0,
                });
            }
        }
    }

    /// Its output, if it exits within `limit`.
    pub async fn finished_within(&mut self, limit: Duration) -> Option<Arc<Finished>> {
        tokio::time::timeout(limit, self.finished()).await.ok()
    }

    /// Whether it has exited.
    pub fn is_done(&self) -> bool {
        self.done.borrow().is_some()
    }

    /// The step id its script wrote, if it did.
    pub fn step_id(&self) -> Option<String> {
        self.step.borrow().clone()
    }

    fn send(&self, e: End) {
        if let Some(t) = &self.end {
            let _ = t.send(e);
        }
    }

    /// SIGTERM: srun ends its step itself, salloc gives up its request.
    pub fn terminate(&self) {
        self.send(End::Term);
    }

    /// SIGINT (salloc withdraws a pending allocation).
    pub fn interrupt(&self) {
        self.send(End::Int);
    }

    /// SIGKILL, the process alone.
    pub fn kill(&self) {
        self.send(End::Kill);
    }
}
