//! The SSH transport: one connection per node (async-ssh2-tokio's client over russh), and on
//! it one channel running the node's session ([`crate::exec::session`]) for the whole run:
//! every command is a job of that session, so the node's login shell is paid once. Handshakes
//! are capped (sshd's MaxStartups) and tried again after a jittered exponential backoff
//! (`retry.rs`); host keys are verified against known_hosts in the one handshake that is used
//! (strict by default; `accept_new` learns unknown keys; a changed key is always refused and
//! named, with the `ssh-keyscan` line to run: `connect.rs`); aliases are resolved with `ssh -G`;
//! TCP_NODELAY, since every packet is small and waited for. A node that still fails is
//! unreachable, and the run goes on without it; a session that ends during the run is that
//! node's, and is opened again once when the runner asks ([`Transport::reopen`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use async_ssh2_tokio::client::Client;
use russh::ChannelMsg;
use tokio::sync::{Semaphore, mpsc};

mod connect;
pub mod launcher;
mod retry;

pub use retry::Retry;
use retry::{Failure, with_retries};

use crate::exec::session::pool::{Carrier, Pool};
use crate::exec::session::{AttachError, Chunk, Session, Sink, Source, wire};
use crate::exec::transport::{BoxFuture, TransportError};
use crate::gate::part::{Part, Software};
use crate::gate::trap::Trap;
use crate::plan::{Node, SshDefaults, SshTarget};

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

/// Every node's session over SSH: one connection each, and on it one channel carrying the
/// session ([`Pool`]).
pub type SshTransport = Pool<SshCarrier>;

/// One SSH connection per node carries its session.
pub struct SshCarrier {
    opts: SshOptions,
    handshakes: Semaphore,
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

/// Carry a session over `channel`: its writer is the loop's stdin; its data, the loop's
/// answers; its end says why (the shell's exit status or signal, the last line it said on
/// stderr).
fn carry(channel: russh::Channel<russh::client::Msg>) -> (Sink, Source) {
    let (mut read, write) = channel.split();
    let sink: Sink = Box::new(write.make_writer());
    let (tx, rx) = mpsc::channel(crate::exec::session::SOURCE_DEPTH);
    tokio::spawn(async move {
        let mut status = None;
        let mut err: Vec<u8> = Vec::new();
        while let Some(msg) = read.wait().await {
            match msg {
                ChannelMsg::Data { data } if tx.send(Chunk::Data(data.to_vec())).await.is_err() => {
                    return;
                }
                ChannelMsg::Data { .. } => {}
                ChannelMsg::ExtendedData { data, ext: 1 } => {
                    err.extend_from_slice(&data);
                    let keep = err.len().saturating_sub(2048);
                    err.drain(..keep);
                }
                ChannelMsg::ExitStatus { exit_status } => {
                    status = Some(format!("its shell exited {exit_status}"))
                }
                ChannelMsg::ExitSignal { signal_name, .. } => {
                    status = Some(format!("its shell was killed by signal {signal_name:?}"))
                }
                _ => {}
            }
        }
        let said = String::from_utf8_lossy(&err)
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        let why = status.unwrap_or_else(|| "the connection closed".to_string());
        let _ = tx.send(Chunk::End(format!("{why}{said}"))).await;
    });
    (sink, rx)
}

/// Start the node's session on `client`: one channel, the loop under the login shell.
async fn start_session(
    client: &Client,
    node: &str,
    limit: Duration,
) -> Result<Session, AttachError> {
    let channel = client
        .get_channel()
        .await
        .map_err(|e| AttachError::NoHello(format!("cannot open a channel: {e}")))?;
    let token = wire::random_word();
    channel
        .exec(true, wire::command(&token))
        .await
        .map_err(|e| AttachError::NoHello(format!("cannot start fabricplan's session: {e}")))?;
    let (sink, source) = carry(channel);
    Session::attach(node, &token, sink, source, limit).await
}

impl SshTransport {
    pub fn new(opts: SshOptions) -> SshTransport {
        Pool::over(SshCarrier {
            handshakes: Semaphore::new(opts.max_handshakes.max(1)),
            opts,
        })
    }
}

impl SshCarrier {
    /// Connect to `node` (retried as the plan says) and start its session.
    async fn connect(&self, node: &Node) -> Result<(Session, Client), TransportError> {
        let unreachable = |reason: String| TransportError::Unreachable {
            host: node.name.clone(),
            reason,
        };
        let target = resolve_target_async(node, &self.opts)
            .await
            .map_err(unreachable)?;
        let attempt = || async {
            match tokio::time::timeout(
                self.opts.connect_timeout,
                connect::handshake(&target, self.opts.accept_new),
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
        let at = format!("{}@{}:{}", target.user, target.host, target.port);
        let client = match with_retries(&self.handshakes, self.opts.retry, seed, attempt).await {
            Ok(c) => c,
            Err(Failure::HostKey(reason)) => {
                return Err(TransportError::HostKey {
                    host: node.name.clone(),
                    reason,
                });
            }
            Err(Failure::Auth(last) | Failure::Connect(last)) => {
                return Err(unreachable(format!("{at}: {last}")));
            }
        };
        let session = match start_session(&client, &node.name, self.opts.connect_timeout).await {
            Ok(s) => s,
            Err(AttachError::NoHello(why)) => return Err(unreachable(format!("{at}: {why}"))),
            Err(e) => {
                let _ = client.disconnect().await;
                return Err(e.into_transport(&node.name));
            }
        };
        Ok((session, client))
    }
}

impl Carrier for SshCarrier {
    type Held = Client;

    fn name(&self) -> &'static str {
        "ssh"
    }

    fn start<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(Session, Client), TransportError>> {
        Box::pin(self.connect(node))
    }

    fn end<'a>(&'a self, client: &'a Client, _closing: bool) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = client.disconnect().await;
        })
    }

    /// The node's sshd: what reaches it.
    fn lost(&self, node: &Node, _client: &Client) -> (Part, Trap) {
        (
            Part::software(&node.name, Software::Sshd),
            Trap::Unreachable,
        )
    }
}
