//! The SSH transport (russh): one connection per node, reused; handshakes capped separately from
//! channels (sshd's MaxStartups and MaxSessions); host keys verified against known_hosts inside
//! that one connection's key exchange (strict by default; `accept_new` learns unknown keys; a
//! changed key is always refused with the `ssh-keyscan` line to run); aliases resolved with
//! `ssh -G`; TCP_NODELAY, since every packet we send is small and waited for. A node that
//! refuses or times out is tried again after a jittered exponential backoff (`retry.rs`); one
//! that still fails is unreachable, and the run goes on without it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use russh::ChannelMsg;
use tokio::sync::{Mutex, Semaphore, oneshot, watch};

mod retry;

pub use retry::Retry;
use retry::{Failure, with_retries};

use super::transport::{BoxFuture, Output, Transport, TransportError, released};
use crate::plan::{Node, SshDefaults, SshTarget};
use crate::render::wrap;

/// Settings of the SSH transport.
#[derive(Debug, Clone)]
pub struct SshOptions {
    /// ssh_config file for aliases (`ssh -G -F FILE`); default the user's.
    pub config: Option<PathBuf>,
    /// known_hosts to verify against; default `~/.ssh/known_hosts` (or ssh_config's UserKnownHostsFile).
    pub known_hosts: Option<PathBuf>,
    pub accept_new: bool,
    pub connect_timeout: Duration,
    pub default_user: Option<String>,
    /// Connections being set up at once, all nodes together (the plan's `max-connections`): a
    /// permit covers one attempt's TCP connect, key exchange and authentication, and is given
    /// back before the wait for the next attempt.
    pub max_handshakes: usize,
    /// Channels per connection (sshd MaxSessions 10).
    pub max_channels: usize,
    /// When a node is retried (the plan's `connect-attempts` and `retry-backoff-ms`).
    pub retry: Retry,
}

impl Default for SshOptions {
    fn default() -> Self {
        SshOptions {
            config: None,
            known_hosts: None,
            accept_new: false,
            connect_timeout: Duration::from_secs(u64::from(SshDefaults::CONNECT_TIMEOUT_S)),
            default_user: None,
            max_handshakes: SshDefaults::MAX_CONNECTIONS as usize,
            max_channels: 8,
            retry: Retry::default(),
        }
    }
}

/// Where and how to connect, after ssh_config.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub identity: Option<PathBuf>,
    pub known_hosts: PathBuf,
}

struct Conn {
    client: Arc<russh::client::Handle<Verifier>>,
    channels: Arc<Semaphore>,
}

pub struct SshTransport {
    opts: SshOptions,
    handshakes: Semaphore,
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    /// per node: a lock so one node is connected once
    connecting: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

fn expand(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(r) => home().join(r),
        None => PathBuf::from(p),
    }
}

/// What a node's `[ssh]` says before ssh_config: the alias, and the explicit user, port and key.
type Declared = (String, Option<String>, Option<u16>, Option<PathBuf>);

fn declared(node: &Node) -> Declared {
    match &node.ssh {
        SshTarget::Alias(a) => (a.clone(), None, None, None),
        SshTarget::Host {
            host,
            user,
            port,
            identity_file,
        } => (host.clone(), user.clone(), *port, identity_file.clone()),
    }
}

fn ssh_g_args(alias: &str, opts: &SshOptions) -> Vec<std::ffi::OsString> {
    let mut args = Vec::new();
    if let Some(c) = &opts.config {
        args.push("-F".into());
        args.push(c.into());
    }
    args.extend(["-G".into(), "--".into(), alias.into()]);
    args
}

/// Resolve a node's target with `ssh -G` (fully evaluated ssh_config: Match, tokens, includes).
pub fn resolve_target(node: &Node, opts: &SshOptions) -> Result<Target, String> {
    let d = declared(node);
    let out = std::process::Command::new("ssh")
        .args(ssh_g_args(&d.0, opts))
        .stdin(std::process::Stdio::null())
        .output();
    evaluate(d, opts, out)
}

/// [`resolve_target`] without blocking the runtime: `ssh -G` is a process per node (~5 ms), and
/// run synchronously it stalled a worker thread for every node a fan-out connected to.
async fn resolve_target_async(node: &Node, opts: &SshOptions) -> Result<Target, String> {
    let d = declared(node);
    let out = tokio::process::Command::new("ssh")
        .args(ssh_g_args(&d.0, opts))
        .stdin(std::process::Stdio::null())
        .output()
        .await;
    evaluate(d, opts, out)
}

fn evaluate(
    (alias, user, port, identity): Declared,
    opts: &SshOptions,
    out: std::io::Result<std::process::Output>,
) -> Result<Target, String> {
    let out = out.map_err(|e| format!("cannot run `ssh -G` to resolve `{alias}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`ssh -G {alias}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut g: HashMap<String, Vec<String>> = HashMap::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(' ') {
            g.entry(k.to_ascii_lowercase())
                .or_default()
                .push(v.trim().to_string());
        }
    }
    let first = |k: &str| g.get(k).and_then(|v| v.first()).cloned();
    let host = first("hostname").unwrap_or(alias.clone());
    let port = port
        .or_else(|| first("port").and_then(|p| p.parse().ok()))
        .unwrap_or(22);
    let user = user
        .or_else(|| opts.default_user.clone())
        .or_else(|| first("user"))
        .unwrap_or_else(|| "root".into());
    let identities_only = first("identitiesonly").is_some_and(|v| v == "yes");
    let identity = identity.or_else(|| {
        let files: Vec<PathBuf> = g
            .get("identityfile")
            .map(|v| v.iter().map(|p| expand(p)).collect())
            .unwrap_or_default();
        let existing: Vec<PathBuf> = files.into_iter().filter(|p| p.exists()).collect();
        // with an agent and no explicit key, the agent is used; otherwise the first key on disk
        if identities_only || std::env::var_os("SSH_AUTH_SOCK").is_none() {
            existing.into_iter().next()
        } else {
            None
        }
    });
    let known_hosts = opts
        .known_hosts
        .clone()
        .or_else(|| {
            first("userknownhostsfile").and_then(|v| v.split_whitespace().next().map(expand))
        })
        .unwrap_or_else(|| home().join(".ssh/known_hosts"));
    Ok(Target {
        host,
        port,
        user,
        identity,
        known_hosts,
    })
}

/// Decide on a server's key against known_hosts: Ok(()) known and matching (or learned with
/// accept-new); Err(reason) otherwise, with the `ssh-keyscan` line to run.
fn check_host_key(
    t: &Target,
    accept_new: bool,
    key: &russh::keys::PublicKey,
) -> Result<(), String> {
    let q = |s: &str| crate::render::quote(s).unwrap_or_else(|| "''".into());
    let keyscan = format!(
        "ssh-keyscan -p {} {} >> {}",
        t.port,
        q(&t.host),
        q(&t.known_hosts.display().to_string())
    );
    match russh::keys::check_known_hosts_path(&t.host, t.port, key, &t.known_hosts) {
        Ok(true) => Ok(()),
        Ok(false) if accept_new => {
            russh::keys::known_hosts::learn_known_hosts_path(&t.host, t.port, key, &t.known_hosts)
                .map_err(|e| {
                    format!(
                        "cannot record the host key in {}: {e}",
                        t.known_hosts.display()
                    )
                })
        }
        Ok(false) => Err(format!(
            "host key of {} is not in {}: refused (verify it, then run `{keyscan}`, or pass --accept-new-host-keys)",
            t.host,
            t.known_hosts.display()
        )),
        Err(russh::keys::Error::KeyChanged { line }) => Err(format!(
            "HOST KEY CHANGED for {} ({}:{line}): refused; if the change is legitimate remove the old entry and run `{keyscan}`",
            t.host,
            t.known_hosts.display()
        )),
        Err(e) => Err(format!(
            "cannot check the host key of {} against {}: {e}",
            t.host,
            t.known_hosts.display()
        )),
    }
}

/// The connection's handler: the server's key is checked against known_hosts inside the very
/// connection that is then used, before anything is sent over it (authentication comes after
/// the key exchange). A refused key ends the handshake; why is left in `refused` (russh itself
/// only reports "unknown key"). One connection, one handshake per node: a separate connection
/// just to fetch the key doubled every node's handshakes (and sshd's fork, re-exec and key
/// exchange per connection) for nothing.
struct Verifier {
    target: Target,
    accept_new: bool,
    refused: Arc<std::sync::Mutex<Option<String>>>,
}

impl russh::client::Handler for Verifier {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &russh::keys::PublicKey,
    ) -> Result<bool, Self::Error> {
        match check_host_key(&self.target, self.accept_new, key) {
            Ok(()) => Ok(true),
            Err(reason) => {
                if let Ok(mut r) = self.refused.lock() {
                    *r = Some(reason);
                }
                Ok(false)
            }
        }
    }
}

/// Offer only the configured key (or the agent's identities when there is none).
async fn authenticate(
    h: &mut russh::client::Handle<Verifier>,
    user: &str,
    identity: Option<&Path>,
) -> Result<(), Failure> {
    let lost = |e: russh::Error| Failure::Connect(e.to_string());
    let hash = h.best_supported_rsa_hash().await.map_err(lost)?.flatten();
    match identity {
        Some(p) => {
            let key = russh::keys::load_secret_key(p, None)
                .map_err(|e| Failure::Auth(format!("cannot load the key {}: {e}", p.display())))?;
            let r = h
                .authenticate_publickey(
                    user,
                    russh::keys::PrivateKeyWithHashAlg::new(Arc::new(key), hash),
                )
                .await
                .map_err(lost)?;
            if r.success() {
                Ok(())
            } else {
                Err(Failure::Auth(format!(
                    "key authentication failed ({} refused)",
                    p.display()
                )))
            }
        }
        None => {
            let mut agent = russh::keys::agent::client::AgentClient::connect_env()
                .await
                .map_err(|e| Failure::Auth(format!("no key file and no SSH agent: {e}")))?;
            let ids = agent
                .request_identities()
                .await
                .map_err(|e| Failure::Auth(format!("the SSH agent lists no identities: {e}")))?;
            for id in ids {
                let r = h
                    .authenticate_publickey_with(
                        user,
                        id.public_key().into_owned(),
                        hash,
                        &mut agent,
                    )
                    .await;
                if r.is_ok_and(|r| r.success()) {
                    return Ok(());
                }
            }
            Err(Failure::Auth(
                "agent authentication failed: no identity was accepted".into(),
            ))
        }
    }
}

/// One connection attempt: TCP, key exchange with the host key checked, authentication.
async fn handshake(
    target: &Target,
    accept_new: bool,
) -> Result<russh::client::Handle<Verifier>, Failure> {
    let config = Arc::new(russh::client::Config {
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 4,
        // Nagle's algorithm (russh's default) holds every small request until the previous
        // one is acknowledged: with delayed ACKs that cost ~40 ms per handshake step and per
        // command; our packets are all small and latency-bound.
        nodelay: true,
        ..Default::default()
    });
    let refused = Arc::new(std::sync::Mutex::new(None));
    let verifier = Verifier {
        target: target.clone(),
        accept_new,
        refused: refused.clone(),
    };
    let connected =
        russh::client::connect(config, (target.host.as_str(), target.port), verifier).await;
    let mut h = match connected {
        Ok(h) => h,
        Err(e) => {
            return Err(match refused.lock().ok().and_then(|mut r| r.take()) {
                Some(reason) => Failure::HostKey(reason),
                None => Failure::Connect(e.to_string()),
            });
        }
    };
    authenticate(&mut h, &target.user, target.identity.as_deref()).await?;
    Ok(h)
}

impl SshTransport {
    pub fn new(opts: SshOptions) -> SshTransport {
        SshTransport {
            handshakes: Semaphore::new(opts.max_handshakes.max(1)),
            opts,
            conns: Mutex::new(HashMap::new()),
            connecting: Mutex::new(HashMap::new()),
        }
    }

    async fn connect(&self, node: &Node) -> Result<Arc<Conn>, TransportError> {
        let unreachable = |reason: String| TransportError::Unreachable {
            host: node.name.clone(),
            reason,
        };
        let lock = {
            let mut m = self.connecting.lock().await;
            m.entry(node.name.clone())
                .or_insert_with(|| Arc::new(Mutex::new(())))
                .clone()
        };
        let _guard = lock.lock().await;
        if let Some(c) = self.conns.lock().await.get(&node.name)
            && !c.client.is_closed()
        {
            return Ok(c.clone());
        }
        let target = resolve_target_async(node, &self.opts)
            .await
            .map_err(unreachable)?;
        let attempt = || async {
            match tokio::time::timeout(
                self.opts.connect_timeout,
                handshake(&target, self.opts.accept_new),
            )
            .await
            {
                Ok(r) => r,
                Err(_) => Err(Failure::Connect(format!(
                    "no SSH handshake within {} s",
                    self.opts.connect_timeout.as_secs()
                ))),
            }
        };
        let seed = Retry::seed(&node.name);
        match with_retries(&self.handshakes, self.opts.retry, seed, attempt).await {
            Ok(handle) => {
                let conn = Arc::new(Conn {
                    client: Arc::new(handle),
                    channels: Arc::new(Semaphore::new(self.opts.max_channels.max(1))),
                });
                self.conns
                    .lock()
                    .await
                    .insert(node.name.clone(), conn.clone());
                Ok(conn)
            }
            Err(Failure::HostKey(reason)) => Err(TransportError::HostKey {
                host: node.name.clone(),
                reason,
            }),
            Err(Failure::Auth(last) | Failure::Connect(last)) => Err(unreachable(format!(
                "{}@{}:{}: {last}",
                target.user, target.host, target.port
            ))),
        }
    }

    /// Run `script` on `node`; with a `gate`, staged: the channel is opened and the remote shell
    /// started first ([`wrap::gated`]), `armed` is signalled once it says it waits, and the one
    /// line releasing it is sent when `go` turns true. Without a free channel on the connection
    /// it is not staged (staging must never hold a channel another staged command waits for):
    /// armed at once, run on release.
    /// Run `script`; with `gate`, staged: armed once the remote shell waits, run on release.
    /// `timeout` bounds the work before the wait for the release and, afresh, the command after
    /// it: how long the round keeps a staged client waiting is the runner's business.
    async fn run(
        &self,
        node: &Node,
        script: &str,
        gate: Option<(oneshot::Sender<()>, watch::Receiver<bool>)>,
        timeout: Duration,
    ) -> Result<Output, TransportError> {
        let timed_out = || TransportError::Timeout {
            host: node.name.clone(),
            secs: timeout.as_secs(),
        };
        let mut deadline = tokio::time::Instant::now() + timeout;
        let conn = tokio::time::timeout_at(deadline, self.connect(node))
            .await
            .map_err(|_| timed_out())??;
        let (mut gate, _permit) = match gate {
            None => (
                None,
                tokio::time::timeout_at(deadline, conn.channels.acquire())
                    .await
                    .map_err(|_| timed_out())?,
            ),
            // staged only while a channel stays free for the commands the release waits for
            // (a server's start and readiness on this host); else armed now, and the channel
            // taken once released
            Some((armed, go)) => match conn
                .channels
                .try_acquire()
                .ok()
                .filter(|_| conn.channels.available_permits() > 0)
            {
                Some(p) => (Some((armed, go)), Ok(p)),
                None => {
                    let _ = armed.send(());
                    if !released(go).await {
                        return Err(TransportError::Withdrawn {
                            host: node.name.clone(),
                        });
                    }
                    deadline = tokio::time::Instant::now() + timeout;
                    let p = tokio::time::timeout_at(deadline, conn.channels.acquire())
                        .await
                        .map_err(|_| timed_out())?;
                    (None, p)
                }
            },
        };
        let staged = gate.is_some();
        let lost = |reason: String| TransportError::Lost {
            host: node.name.clone(),
            reason,
        };
        let opened = async {
            let ch = conn
                .client
                .channel_open_session()
                .await
                .map_err(|e| lost(e.to_string()))?;
            // the login shell may be csh or fish: always run under /bin/sh
            let cmd = if staged {
                wrap::sh(&wrap::gated(script))
            } else {
                wrap::sh(script)
            };
            ch.exec(true, cmd.as_bytes())
                .await
                .map_err(|e| lost(e.to_string()))?;
            Ok::<_, TransportError>(ch)
        };
        let mut ch = tokio::time::timeout_at(deadline, opened)
            .await
            .map_err(|_| timed_out())??;
        let mut out = Output {
            status: -1,
            ..Output::default()
        };
        let (mut so, mut se) = (Vec::new(), Vec::new());
        loop {
            let msg = tokio::select! {
                m = ch.wait() => m,
                _ = tokio::time::sleep_until(deadline) => return Err(timed_out()),
            };
            let Some(msg) = msg else { break };
            match msg {
                ChannelMsg::Data { data } => so.extend_from_slice(&data),
                ChannelMsg::ExtendedData { data, ext: 1 } => {
                    se.extend_from_slice(&data);
                    if gate.is_some() && se.ends_with(b"\n") {
                        let text = String::from_utf8_lossy(&se);
                        if text.lines().any(|l| l == wrap::ARMED_MARK)
                            && let Some((armed, go)) = gate.take()
                        {
                            let _ = armed.send(());
                            if !released(go).await {
                                // withdrawn: the remote shell reads EOF and exits unrun
                                let _ = ch.eof().await;
                                let _ = ch.close().await;
                                return Err(TransportError::Withdrawn {
                                    host: node.name.clone(),
                                });
                            }
                            deadline = tokio::time::Instant::now() + timeout;
                            ch.data(&b"\n"[..]).await.map_err(|e| lost(e.to_string()))?;
                        }
                    }
                }
                ChannelMsg::ExitStatus { exit_status } => out.status = exit_status as i32,
                ChannelMsg::ExitSignal { signal_name, .. } => {
                    out.status = 128 + signal_number(&signal_name)
                }
                _ => {}
            }
        }
        out.stdout = String::from_utf8_lossy(&so).into_owned();
        out.stderr = String::from_utf8_lossy(&se).into_owned();
        if staged {
            out.stderr = wrap::take_armed_mark(&out.stderr).1;
        }
        if out.status == -1 {
            return Err(lost("the channel closed without an exit status".into()));
        }
        Ok(out)
    }
}

fn signal_number(s: &russh::Sig) -> i32 {
    use russh::Sig;
    match s {
        Sig::ABRT => 6,
        Sig::ALRM => 14,
        Sig::FPE => 8,
        Sig::HUP => 1,
        Sig::ILL => 4,
        Sig::INT => 2,
        Sig::KILL => 9,
        Sig::PIPE => 13,
        Sig::QUIT => 3,
        Sig::SEGV => 11,
        Sig::TERM => 15,
        Sig::USR1 => 10,
        _ => 0,
    }
}

impl Transport for SshTransport {
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(self.run(node, script, None, timeout))
    }

    fn exec_released<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
        armed: oneshot::Sender<()>,
        go: watch::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(self.run(node, script, Some((armed, go)), timeout))
    }

    fn name(&self) -> &'static str {
        "ssh"
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let conns: Vec<Arc<Conn>> = self.conns.lock().await.drain().map(|(_, c)| c).collect();
            for c in conns {
                let _ = c
                    .client
                    .disconnect(russh::Disconnect::ByApplication, "", "")
                    .await;
            }
        })
    }
}
