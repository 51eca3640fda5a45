//! Sessions: one long-lived control loop per host for a whole run, through which every command
//! of the run goes. A command over SSH used to cost a channel, an sshd session and the user's
//! login shell (`bash -c`, which reads `~/.bashrc`: conda, pyenv or Lmod set-up on many GPU
//! hosts); under Slurm, a job step. A session pays that once per host: the loop ([`wire`],
//! plain POSIX sh, nothing installed) is started once, reads framed requests on its stdin and
//! writes framed answers on its stdout.
//!
//! Each command is a job of the loop: its own session and process group (`setsid`), its own
//! directory inside the session's private one, its own stdout, stderr and exit status (128 + n
//! for signal n), its own deadline (past it, the loop stops exactly the process group it
//! recorded, never a name and never a number read back from the host), and whatever it left
//! running is stopped when it ends and said. Jobs run at once (a server's start and its
//! readiness poll; two jobs on one node). A server is a job that runs until stopped. A staged
//! job waits at a gate after its preparation, and its release costs one line. Answers come back
//! through one writer on the host, so they never interleave, and outputs travel as base64, so
//! nothing a command prints can pass for an answer. Each output is bounded: the loop stops a
//! tool that writes more than its limit on the host, and here only the first and the last
//! [`crate::exec::capture::KEPT`] bytes of each stream are held, the rest counted.
//!
//! What carries a session is the transport's: an SSH channel ([`crate::launchers::ssh::exec`]), a Slurm
//! step's `srun` or a local process ([`process`]). A session that ends or stops answering is
//! that host's: its commands fail with why, and the transport opens another when asked.

pub mod pool;
pub mod process;
pub mod wire;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::capture::Capture;
use super::transport::{Output, Spawned, TransportError, released};
use wire::{Answer, Verb};

/// What a carrier delivers of the loop's output: bytes as they come, then why it ended.
#[derive(Debug)]
pub enum Chunk {
    Data(Vec<u8>),
    End(String),
}

/// The loop's output, as its carrier delivers it: a bounded channel, so a carrier waits for the
/// session to read (over SSH, the channel's window then stops the host) rather than holding
/// what a tool prints in memory.
pub type Source = mpsc::Receiver<Chunk>;

/// How many chunks of a carrier's output may wait to be read.
pub const SOURCE_DEPTH: usize = 64;
/// The loop's input.
pub type Sink = Box<dyn AsyncWrite + Send + Unpin>;

/// How long stopping a job past its deadline may take before the session counts as hung.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// How long a request may wait to be taken in before the session counts as hung.
const WRITE_LIMIT: Duration = Duration::from_secs(20);
/// How long the loop has to stop what still runs and end, once told to.
const CLOSE_LIMIT: Duration = Duration::from_secs(8);
/// How often the controller tells the loop it is still there (its watchdog ends a session
/// silent for 20-30 s).
const BEAT_EVERY: Duration = Duration::from_secs(5);
/// How long a background job (a server) may take to say it started.
const SPAWN_LIMIT: Duration = Duration::from_secs(20);
/// A line of the loop's output longer than this is not an answer (what a login shell printed
/// before the loop started): it is dropped as it comes, never held.
const MAX_LINE: usize = 64 * 1024;

/// A job while it runs: its process group once known, who waits for its start, its gate and
/// its end.
#[derive(Default)]
struct Slot {
    pgid: Option<u32>,
    started: Option<oneshot::Sender<(u32, Option<u64>)>>,
    armed: Option<oneshot::Sender<()>>,
    done: Option<oneshot::Sender<Output>>,
}

struct Inner {
    host: String,
    dir: String,
    pid: u32,
    sink: tokio::sync::Mutex<Option<Sink>>,
    slots: Mutex<HashMap<u64, Slot>>,
    next: AtomicU64,
    /// Why the session ended, once it has.
    ended: watch::Sender<Option<String>>,
    /// It was closed on purpose.
    closing: AtomicBool,
    /// The background jobs (servers) started and not yet stopped, by id: what waits for their
    /// end.
    spawned: Mutex<HashMap<u64, Waits>>,
    /// How long stopping a job may take ([`STOP_LIMIT`]).
    stop_limit: Mutex<Duration>,
}

impl Inner {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session is over: record why (the first reason stays) and fail every waiting job.
    fn end(&self, why: String) {
        self.ended.send_if_modified(|e| {
            let first = e.is_none();
            if first {
                *e = Some(why);
            }
            first
        });
        // every waiter fails (its sender dropped); what ran is the loop's to stop
        self.slots().clear();
        let spawned: Vec<Waits> = self.spawned().drain().map(|(_, w)| w).collect();
        drop(spawned);
    }

    fn spawned(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waits>> {
        self.spawned.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Removes a job's slot when whoever waits for it is done (or gone).
struct Guard {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.inner.slots().remove(&self.id);
    }
}

/// What a submitted job answers through.
struct Waits {
    id: u64,
    started: Option<oneshot::Receiver<(u32, Option<u64>)>>,
    armed: Option<oneshot::Receiver<()>>,
    done: oneshot::Receiver<Output>,
    _guard: Guard,
}

/// Take out of `open` (node name -> what holds its session) every session that ended without
/// being closed: the ones a transport opens again before the next round.
pub fn take_ended<T>(
    open: &mut HashMap<String, std::sync::Arc<T>>,
    session: impl Fn(&T) -> &Session,
) -> Vec<std::sync::Arc<T>> {
    let names: Vec<String> = open
        .iter()
        .filter(|(_, o)| {
            let s = session(o);
            s.ended().is_some() && !s.closed()
        })
        .map(|(n, _)| n.clone())
        .collect();
    names.iter().filter_map(|n| open.remove(n)).collect()
}

/// One host's session.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

/// Lines of a carrier's output, and why it ended.
struct Lines {
    source: Source,
    /// What arrived and is not read yet: `buf[at..]`.
    buf: Vec<u8>,
    at: usize,
    /// A line longer than [`MAX_LINE`] is being dropped up to its end.
    skipping: bool,
    end: Option<String>,
    /// The bound the loop puts on each output stream of a job, bytes (its hello says).
    bound: u64,
}

impl Lines {
    fn new(source: Source) -> Lines {
        Lines {
            source,
            buf: Vec::new(),
            at: 0,
            skipping: false,
            end: None,
            bound: u64::MAX,
        }
    }

    /// The next line (without its newline), or why the output ended. A line longer than
    /// [`MAX_LINE`] is dropped whole as it arrives: memory stays bounded whatever is printed.
    /// Lines are read in place (no copy of what follows them), so a long answer costs its
    /// length, not its length squared.
    async fn next(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf[self.at..].iter().position(|b| *b == b'\n') {
                let line = &self.buf[self.at..self.at + i];
                self.at += i + 1;
                if std::mem::take(&mut self.skipping) {
                    continue;
                }
                return Ok(String::from_utf8_lossy(line).into_owned());
            }
            // nothing left but a part line: keep only it
            self.buf.drain(..self.at);
            self.at = 0;
            if self.buf.len() > MAX_LINE {
                self.buf.clear();
                self.skipping = true;
            }
            if let Some(why) = &self.end {
                return Err(why.clone());
            }
            match self.source.recv().await {
                Some(Chunk::Data(d)) => self.buf.extend_from_slice(&d),
                Some(Chunk::End(why)) => self.end = Some(why),
                None => self.end = Some("its carrier is gone".to_string()),
            }
        }
    }

    /// One output of a `D` answer: base64 lines up to `.`, held as a [`Capture`]: its text,
    /// the bytes left out of it, and whether it reached the loop's bound.
    async fn output(&mut self) -> Result<(String, u64, bool), String> {
        let mut kept = Capture::default();
        loop {
            let line = self.next().await?;
            if wire::is_output_end(&line) {
                let full = kept.total() >= self.bound;
                let (text, omitted) = kept.finish();
                return Ok((text, omitted, full));
            }
            match wire::decode_line(&line) {
                Some(b) => kept.push(&b),
                None => return Err(format!("its answer was garbled: {line:?}")),
            }
        }
    }

    /// The three outputs of a `D` answer: stdout, stderr and what the job left running.
    async fn outputs(&mut self, status: i32) -> Result<Output, String> {
        let (stdout, a, fa) = self.output().await?;
        let (stderr, b, fb) = self.output().await?;
        let (left, _, _) = self.output().await?;
        Ok(Output {
            status,
            stdout,
            stderr,
            omitted_bytes: a + b,
            bound_reached: fa || fb,
            left: left
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(64)
                .map(|l| crate::text::inert(l).into_owned())
                .collect(),
        })
    }
}

/// Why a session did not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    /// The loop ran on the host and said why it cannot go on (`@fp F`): its private
    /// directory could not be made or used, or a program it needs is missing. The host's
    /// fault, not the carrier's.
    #[error("fabricplan's session could not start: {0}")]
    Refused(String),
    /// No hello: the carrier ended first, or nothing answered in time.
    #[error("{0}")]
    NoHello(String),
}

impl AttachError {
    /// As a transport error of `host`: a refusal is the host's (its temporary directory, or a
    /// program missing there); no hello is the carrier's, said as unreachable.
    pub fn into_transport(self, host: &str) -> TransportError {
        match &self {
            AttachError::Refused(why) => TransportError::Launch {
                host: host.to_string(),
                reason: self.to_string(),
                trap: if why.contains("is not installed") {
                    crate::gate::trap::Trap::ToolError
                } else {
                    crate::gate::trap::Trap::HostScratch
                },
            },
            AttachError::NoHello(why) => TransportError::Unreachable {
                host: host.to_string(),
                reason: why.clone(),
            },
        }
    }
}

/// Wait for the loop's hello (`@fp H TOKEN ...`), skipping what a login shell printed first.
async fn hello(lines: &mut Lines, token: &str) -> Result<(u32, u64, String), AttachError> {
    loop {
        let line = lines.next().await.map_err(|why| {
            AttachError::NoHello(format!("the session ended before it started: {why}"))
        })?;
        match wire::answer(&line) {
            Some(Answer::Hello {
                token: t,
                pid,
                limit,
                dir,
            }) if t == token => return Ok((pid, limit, dir)),
            Some(Answer::Failed(why)) => return Err(AttachError::Refused(why)),
            _ => {}
        }
    }
}

/// Read the loop's answers until its output ends, handing each to the job it is for.
async fn pump(inner: Arc<Inner>, mut lines: Lines) {
    let why = loop {
        let line = match lines.next().await {
            Ok(l) => l,
            Err(why) => break why,
        };
        match wire::answer(&line) {
            Some(Answer::Started {
                id,
                pgid,
                started_ns,
            }) => {
                let started = inner.slots().get_mut(&id).and_then(|s| {
                    s.pgid = Some(pgid);
                    s.started.take()
                });
                if let Some(t) = started {
                    let _ = t.send((pgid, started_ns));
                }
            }
            Some(Answer::Armed(id)) => {
                let armed = inner.slots().get_mut(&id).and_then(|s| s.armed.take());
                if let Some(a) = armed {
                    let _ = a.send(());
                }
            }
            Some(Answer::Done { id, status }) => {
                let out = match lines.outputs(status).await {
                    Ok(o) => o,
                    Err(why) => break why,
                };
                let done = inner.slots().get_mut(&id).and_then(|s| s.done.take());
                if let Some(d) = done {
                    let _ = d.send(out);
                }
            }
            _ => {}
        }
    };
    inner.end(why);
}

/// Tell the loop every [`BEAT_EVERY`] that its controller is there, until the session ends.
async fn beat(s: Session) {
    let mut ended = s.inner.ended.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(BEAT_EVERY) => {}
            _ = ended.wait_for(Option::is_some) => return,
        }
        if s.inner.closing.load(Ordering::SeqCst) || s.send(wire::BEAT).await.is_err() {
            return;
        }
    }
}

impl Session {
    /// Take over a loop started (by its carrier) with `token`: wait up to `limit` for its hello,
    /// then read its answers from `source` and write requests into `sink`.
    pub async fn attach(
        host: &str,
        token: &str,
        sink: Sink,
        source: Source,
        limit: Duration,
    ) -> Result<Session, AttachError> {
        let mut lines = Lines::new(source);
        let (pid, bound, dir) = tokio::time::timeout(limit, hello(&mut lines, token))
            .await
            .map_err(|_| {
                AttachError::NoHello(format!(
                    "fabricplan's session did not start within {} s",
                    limit.as_secs()
                ))
            })??;
        let inner = Arc::new(Inner {
            host: host.to_string(),
            dir,
            pid,
            sink: tokio::sync::Mutex::new(Some(sink)),
            slots: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            ended: watch::channel(None).0,
            closing: AtomicBool::new(false),
            spawned: Mutex::new(HashMap::new()),
            stop_limit: Mutex::new(STOP_LIMIT),
        });
        lines.bound = bound;
        tokio::spawn(pump(inner.clone(), lines));
        let session = Session { inner };
        tokio::spawn(beat(session.clone()));
        Ok(session)
    }

    /// The host (the plan's node name) the session is on.
    pub fn host(&self) -> &str {
        &self.inner.host
    }

    /// The loop's directory on the host.
    pub fn dir(&self) -> &str {
        &self.inner.dir
    }

    /// The loop's pid on the host.
    pub fn pid(&self) -> u32 {
        self.inner.pid
    }

    /// Why the session ended, once it has (`None` while it runs).
    pub fn ended(&self) -> Option<String> {
        self.inner.ended.borrow().clone()
    }

    /// Whether it ended because it was closed ([`Session::close`]).
    pub fn closed(&self) -> bool {
        self.inner.closing.load(Ordering::SeqCst)
    }

    /// How long stopping a job past its deadline may take before the session counts as hung
    /// (tests make it short).
    pub fn set_stop_limit(&self, limit: Duration) {
        *self
            .inner
            .stop_limit
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = limit;
    }

    /// Wait until the session has ended (however).
    pub async fn wait_ended(&self) {
        let mut rx = self.inner.ended.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    fn lost(&self) -> TransportError {
        TransportError::Lost {
            host: self.inner.host.clone(),
            reason: format!(
                "fabricplan's session on the host ended: {}",
                self.ended().unwrap_or_else(|| "no answer".into())
            ),
        }
    }

    /// End the session for `why` (it stopped answering): every job waiting fails.
    fn fail(&self, why: String) {
        self.inner.end(why);
    }

    /// Write a request, unless the session stopped taking them.
    async fn send(&self, bytes: &[u8]) -> Result<(), TransportError> {
        let mut sink = self.inner.sink.lock().await;
        let Some(s) = sink.as_mut() else {
            return Err(self.lost());
        };
        let wrote = tokio::time::timeout(WRITE_LIMIT, async {
            s.write_all(bytes).await?;
            s.flush().await
        })
        .await;
        drop(sink);
        match wrote {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.fail(format!("its input is closed ({e})"));
                Err(self.lost())
            }
            Err(_) => {
                self.fail(format!(
                    "it took no request for {} s",
                    WRITE_LIMIT.as_secs()
                ));
                Err(self.lost())
            }
        }
    }

    /// Hand `script` to the loop as a new job.
    async fn submit(&self, script: &str, verb: Verb) -> Result<Waits, TransportError> {
        if self.ended().is_some() {
            return Err(self.lost());
        }
        let id = self.inner.next.fetch_add(1, Ordering::SeqCst);
        let (done_tx, done) = oneshot::channel();
        let (armed_tx, armed) = if verb == Verb::Staged {
            let (t, r) = oneshot::channel();
            (Some(t), Some(r))
        } else {
            (None, None)
        };
        let (started_tx, started) = oneshot::channel();
        self.inner.slots().insert(
            id,
            Slot {
                pgid: None,
                started: Some(started_tx),
                armed: armed_tx,
                done: Some(done_tx),
            },
        );
        let guard = Guard {
            inner: self.inner.clone(),
            id,
        };
        let body = if verb == Verb::Staged {
            crate::render::wrap::gated_with(script, &wire::gate(id, &self.inner.dir))
        } else {
            script.to_string()
        };
        self.send(&wire::run_request(id, &body, verb)).await?;
        Ok(Waits {
            id,
            started: Some(started),
            armed,
            done,
            _guard: guard,
        })
    }

    fn stop_limit(&self) -> Duration {
        *self
            .inner
            .stop_limit
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Stop job `id` past its deadline: the loop stops the process group its watcher recorded
    /// (TERM, KILL after 2 s). A session that never said the job started, or whose job does not
    /// end once told, has stopped answering: it is ended.
    async fn stop(&self, id: u64, done: &mut oneshot::Receiver<Output>) -> Option<Output> {
        if self.inner.slots().get(&id).and_then(|s| s.pgid).is_none() {
            self.fail("it never said a job it was given had started".into());
            return None;
        }
        let limit = self.stop_limit();
        if self.send(&wire::stop_request(id)).await.is_err() {
            return None;
        }
        match tokio::time::timeout(limit, done).await {
            Ok(Ok(out)) => Some(out),
            _ => {
                if self.ended().is_none() {
                    self.fail(format!(
                        "it did not answer within {} s when told to stop a job",
                        limit.as_secs()
                    ));
                }
                None
            }
        }
    }

    /// Wait for a job's end within `timeout`; past it, stop it and say so.
    async fn finish(
        &self,
        id: u64,
        mut done: oneshot::Receiver<Output>,
        timeout: Duration,
    ) -> Result<Output, TransportError> {
        match tokio::time::timeout(timeout, &mut done).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(_)) => Err(self.lost()),
            Err(_) => {
                self.stop(id, &mut done).await;
                Err(TransportError::Timeout {
                    host: self.inner.host.clone(),
                    secs: timeout.as_secs(),
                })
            }
        }
    }

    /// Run `script` (POSIX sh) as a job; past `timeout` it is stopped and the answer is
    /// [`TransportError::Timeout`].
    pub async fn run(&self, script: &str, timeout: Duration) -> Result<Output, TransportError> {
        let w = self.submit(script, Verb::Run).await?;
        self.finish(w.id, w.done, timeout).await
    }

    /// Start `script` as a job that runs until stopped (a server): answers once the loop says
    /// it started, with its process group and its start by the host's clock. Its end is taken
    /// by [`Session::stop_spawned`]; one that ended before it could say it started (its
    /// directory could not be made) is an error with what it wrote.
    pub async fn spawn(&self, script: &str) -> Result<Spawned, TransportError> {
        let mut w = self.submit(script, Verb::Background).await?;
        let started = w.started.take().expect("every job has a start");
        let said = tokio::time::timeout(SPAWN_LIMIT, async {
            tokio::select! {
                s = started => s.map(Ok).map_err(|_| ()),
                d = &mut w.done => d.map(Err).map_err(|_| ()),
            }
        })
        .await;
        match said {
            Ok(Ok(Ok((pgid, ns)))) => {
                let id = w.id;
                self.inner.spawned().insert(id, w);
                Ok(Spawned {
                    id,
                    pgid,
                    started_unix_ms: ns.map(|n| n as f64 / 1e6),
                })
            }
            Ok(Ok(Err(out))) => Err(TransportError::Launch {
                host: self.inner.host.clone(),
                reason: format!(
                    "the job could not start there (status {}): {}",
                    out.status,
                    out.stderr.trim()
                ),
                trap: crate::gate::trap::Trap::HostScratch,
            }),
            Ok(Err(())) => Err(self.lost()),
            Err(_) => {
                self.fail(format!(
                    "it did not say within {} s that a job it was given had started",
                    SPAWN_LIMIT.as_secs()
                ));
                Err(self.lost())
            }
        }
    }

    /// Stop a job started by [`Session::spawn`] and take its end: what it wrote and how it
    /// ended (it may have ended by itself before). Told once; a job that does not end within
    /// the stop limit ends the session.
    pub async fn stop_spawned(&self, id: u64) -> Result<Output, TransportError> {
        let Some(mut w) = self.inner.spawned().remove(&id) else {
            if self.ended().is_some() {
                return Err(self.lost());
            }
            return Err(TransportError::Lost {
                host: self.inner.host.clone(),
                reason: format!("fabricplan's session holds no job {id}"),
            });
        };
        if let Ok(out) = w.done.try_recv() {
            return Ok(out);
        }
        if self.ended().is_some() {
            return Err(self.lost());
        }
        match self.stop(id, &mut w.done).await {
            Some(out) => Ok(out),
            None => Err(self.lost()),
        }
    }

    /// Run `script` staged: the job prepares, waits at its gate and says so (`armed` is
    /// signalled; dropped unsent when the job ended or failed first), and runs once `go` turns
    /// true; `go`'s sender dropped unset withdraws it (it ends unrun:
    /// [`TransportError::Withdrawn`]). `timeout` bounds the preparation and, afresh from the
    /// release, the run.
    pub async fn run_released(
        &self,
        script: &str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> Result<Output, TransportError> {
        let mut w = self.submit(script, Verb::Staged).await?;
        let mut gate = w.armed.take().expect("a staged job has a gate");
        let waited = tokio::time::timeout(timeout, async {
            tokio::select! {
                a = &mut gate => a.map(|()| None).map_err(|_| ()),
                d = &mut w.done => d.map(Some).map_err(|_| ()),
            }
        })
        .await;
        match waited {
            Err(_) => {
                self.stop(w.id, &mut w.done).await;
                return Err(TransportError::Timeout {
                    host: self.inner.host.clone(),
                    secs: timeout.as_secs(),
                });
            }
            // it ended before its gate (its preparation failed): that is its answer
            Ok(Ok(Some(out))) => return Ok(out),
            Ok(Err(())) => return Err(self.lost()),
            Ok(Ok(None)) => {}
        }
        let _ = armed.send(());
        if !released(go).await {
            if self.send(&wire::gate_request(w.id, false)).await.is_ok() {
                let _ = tokio::time::timeout(STOP_LIMIT, &mut w.done).await;
            }
            return Err(TransportError::Withdrawn {
                host: self.inner.host.clone(),
            });
        }
        self.send(&wire::gate_request(w.id, true)).await?;
        self.finish(w.id, w.done, timeout).await
    }

    /// End the session: the loop stops every job still running (by its recorded process
    /// group, and by the mark its processes carry), removes its directory and exits; its input
    /// is closed. Waits up to a few seconds.
    pub async fn close(&self) {
        self.inner.closing.store(true, Ordering::SeqCst);
        if self.ended().is_none() {
            let _ = self.send(wire::EXIT).await;
        }
        if let Some(mut s) = self.inner.sink.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), s.shutdown()).await;
        }
        let _ = tokio::time::timeout(CLOSE_LIMIT, self.wait_ended()).await;
        self.inner.end("closed".into());
    }
}

#[cfg(test)]
mod tests;
