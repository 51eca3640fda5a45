//! One connection attempt to a node, carried by async-ssh2-tokio's [`Client`], with the host
//! key policy kept exactly as strict as OpenSSH's `StrictHostKeyChecking yes` (and
//! `accept-new` when asked).
//!
//! The crate checks a server key one of a few ways, and reports any refusal as one generic
//! failure; it has no accept-new. So the policy is decided here, before and around its
//! handshake, and the handshake itself is pinned:
//!
//! * the keys recorded for the host are read from known_hosts (hashed names and `[host]:port`
//!   entries included); the handshake is pinned to one of them
//!   ([`ServerCheckMethod::PublicKey`]) with the host key algorithms it may negotiate narrowed
//!   to that key's type, so a key of that type that does not match can only be a changed key,
//!   and is refused and named as changed, with its known_hosts line;
//! * a server that offers none of the pinned type (the negotiation says which it offers) is
//!   tried pinned to a recorded key of a type it does offer; one offering none of the recorded
//!   types is refused (a host that dropped its recorded key type is not quietly re-learned);
//! * a host with no recorded key: its key is fetched in a first handshake that stops after the
//!   key exchange (as `ssh-keyscan` does). Strict: refused, with the key's fingerprint and the
//!   `ssh-keyscan` line to run. With accept-new: recorded in known_hosts, then connected pinned
//!   to it (a different key in that second handshake is a changed key).
//!
//! Authentication offers only the configured key (or the agent's identities when there is
//! none): an agent offering many wrong keys trips sshd's penalties.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_ssh2_tokio::client::{AuthMethod, Client, ServerCheckMethod};
use russh::keys::{Algorithm, EcdsaCurve, HashAlg, PublicKey};

use super::Target;
use super::retry::Failure;
use crate::render::quote;

/// The client's settings for one handshake, its host key algorithms narrowed to `keys`.
fn config(keys: Option<Vec<Algorithm>>) -> russh::client::Config {
    let mut preferred = russh::Preferred::default();
    if let Some(k) = keys {
        preferred.key = Cow::Owned(k);
    }
    russh::client::Config {
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 4,
        // Nagle's algorithm (russh's default) holds every small request until the previous
        // one is acknowledged: with delayed ACKs that cost ~40 ms per handshake step and per
        // request; every packet here is small and waited for.
        nodelay: true,
        preferred,
        ..Default::default()
    }
}

/// The host key algorithms a recorded key can be presented with.
fn algorithms_of(key: &PublicKey) -> Vec<Algorithm> {
    match key.algorithm() {
        Algorithm::Rsa { .. } => vec![
            Algorithm::Rsa {
                hash: Some(HashAlg::Sha512),
            },
            Algorithm::Rsa {
                hash: Some(HashAlg::Sha256),
            },
            Algorithm::Rsa { hash: None },
        ],
        a => vec![a],
    }
}

/// The order keys are tried in: OpenSSH's (Ed25519, ECDSA, RSA).
fn rank(key: &PublicKey) -> u8 {
    match key.algorithm() {
        Algorithm::Ed25519 => 0,
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP256,
        } => 1,
        Algorithm::Ecdsa { .. } => 2,
        Algorithm::Rsa { .. } => 3,
        _ => 4,
    }
}

/// The `ssh-keyscan` line that records the host's key, quoted.
fn keyscan(t: &Target) -> String {
    let q = |s: &str| quote(s).unwrap_or_else(|| "''".into());
    format!(
        "ssh-keyscan -p {} {} >> {}",
        t.port,
        q(&t.host),
        q(&t.known_hosts.display().to_string())
    )
}

fn changed(t: &Target, line: usize) -> Failure {
    Failure::HostKey(format!(
        "HOST KEY CHANGED for {} ({}:{line}): refused; if the change is legitimate remove the old entry and run `{}`",
        t.host,
        t.known_hosts.display(),
        keyscan(t)
    ))
}

/// A handler that only looks at the server's key and refuses it: the key exchange of a
/// key scan.
struct Scan(Arc<Mutex<Option<PublicKey>>>);

impl russh::client::Handler for Scan {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKey) -> Result<bool, Self::Error> {
        if let Ok(mut k) = self.0.lock() {
            *k = Some(key.clone());
        }
        Ok(false)
    }
}

/// The server's host key, from a handshake stopped after the key exchange.
async fn scan(addr: SocketAddr) -> Result<PublicKey, Failure> {
    let seen = Arc::new(Mutex::new(None));
    let r = russh::client::connect(Arc::new(config(None)), addr, Scan(seen.clone())).await;
    let key = seen.lock().ok().and_then(|mut k| k.take());
    match (key, r) {
        (Some(k), _) => Ok(k),
        (None, Err(e)) => Err(Failure::Connect(e.to_string())),
        (None, Ok(_)) => Err(Failure::Connect("the server showed no host key".into())),
    }
}

/// A host with no recorded key: refused (strict), or its key learned and recorded
/// (accept-new).
async fn first_contact(
    t: &Target,
    addr: SocketAddr,
    accept_new: bool,
) -> Result<PublicKey, Failure> {
    let key = scan(addr).await?;
    if !accept_new {
        return Err(Failure::HostKey(format!(
            "host key of {} is not in {}: refused (it offers {} {}; verify it, then run `{}`, or pass --accept-new-host-keys)",
            t.host,
            t.known_hosts.display(),
            key.algorithm(),
            key.fingerprint(HashAlg::Sha256),
            keyscan(t)
        )));
    }
    russh::keys::known_hosts::learn_known_hosts_path(&t.host, t.port, &key, &t.known_hosts)
        .map_err(|e| {
            Failure::HostKey(format!(
                "cannot record the host key in {}: {e}",
                t.known_hosts.display()
            ))
        })?;
    Ok(key)
}

/// How a pinned handshake ended, when it did not connect.
enum Pinned {
    /// The server offers none of the pinned key's algorithms; these are what it offers.
    OtherTypes(Vec<String>),
    Failed(Failure),
}

/// One handshake pinned to `key` (recorded at known_hosts line `line`, 0 when just learned).
async fn pinned(
    t: &Target,
    addr: SocketAddr,
    key: &PublicKey,
    line: usize,
) -> Result<Client, Pinned> {
    let encoded = key
        .to_openssh()
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
        .ok_or_else(|| {
            Pinned::Failed(Failure::HostKey("a recorded key cannot be encoded".into()))
        })?;
    let auth = match &t.identity {
        Some(p) => AuthMethod::with_key_file(p, None),
        None => AuthMethod::with_agent(),
    };
    let r = Client::connect_with_config(
        addr,
        &t.user,
        auth,
        ServerCheckMethod::PublicKey(encoded),
        config(Some(algorithms_of(key))),
    )
    .await;
    r.map_err(|e| match e {
        async_ssh2_tokio::Error::SshError(russh::Error::NoCommonAlgo {
            kind: russh::AlgorithmKind::Key,
            theirs,
            ..
        }) => Pinned::OtherTypes(theirs),
        e => Pinned::Failed(failure(t, e, line)),
    })
}

/// What a failed pinned handshake means.
fn failure(t: &Target, e: async_ssh2_tokio::Error, line: usize) -> Failure {
    use async_ssh2_tokio::Error as E;
    match e {
        E::SshError(russh::Error::UnknownKey) => changed(t, line),
        E::KeyAuthFailed => Failure::Auth(match &t.identity {
            Some(p) => format!("key authentication failed ({} refused)", p.display()),
            None => "key authentication failed".into(),
        }),
        E::KeyInvalid(k) => Failure::Auth(match &t.identity {
            Some(p) => format!("cannot load the key {}: {k}", p.display()),
            None => format!("cannot load a key: {k}"),
        }),
        E::AgentConnectionFailed
        | E::AgentRequestIdentitiesFailed
        | E::AgentNoIdentities
        | E::AgentAuthenticationFailed
        | E::AgentAuthError(_) => Failure::Auth(format!("no key file, and the SSH agent: {e}")),
        E::SshError(err) => Failure::Connect(err.to_string()),
        other => Failure::Connect(other.to_string()),
    }
}

/// One connection attempt: TCP, key exchange pinned to a recorded (or, with accept-new, just
/// learned) host key, authentication with the configured key.
pub(super) async fn handshake(t: &Target, accept_new: bool) -> Result<Client, Failure> {
    let addr = tokio::net::lookup_host((t.host.as_str(), t.port))
        .await
        .map_err(|e| Failure::Connect(format!("cannot resolve {}: {e}", t.host)))?
        .next()
        .ok_or_else(|| Failure::Connect(format!("{} has no address", t.host)))?;
    let mut recorded =
        russh::keys::known_hosts::known_host_keys_path(&t.host, t.port, &t.known_hosts).map_err(
            |e| {
                Failure::HostKey(format!(
                    "cannot read the host keys recorded in {}: {e}",
                    t.known_hosts.display()
                ))
            },
        )?;
    if recorded.is_empty() {
        recorded.push((0, first_contact(t, addr, accept_new).await?));
    }
    recorded.sort_by_key(|(_, k)| rank(k));
    let (line, key) = recorded[0].clone();
    let theirs = match pinned(t, addr, &key, line).await {
        Ok(c) => return Ok(c),
        Err(Pinned::Failed(f)) => return Err(f),
        Err(Pinned::OtherTypes(theirs)) => theirs,
    };
    let other = recorded.iter().skip(1).find(|(_, k)| {
        algorithms_of(k)
            .iter()
            .any(|a| theirs.iter().any(|s| *s == a.to_string()))
    });
    match other {
        Some((line, key)) => pinned(t, addr, key, *line).await.map_err(|p| match p {
            Pinned::Failed(f) => f,
            Pinned::OtherTypes(_) => changed(t, *line),
        }),
        None => Err(Failure::HostKey(format!(
            "the host keys recorded for {} in {} are of types it no longer offers (it offers {}): refused; if the change is legitimate remove the old entries and run `{}`",
            t.host,
            t.known_hosts.display(),
            theirs.join(", "),
            keyscan(t)
        ))),
    }
}
