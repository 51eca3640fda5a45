//! A recording fake transport for tests: commands in, canned outputs back, and a log of what
//! ran where and in which order.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::transport::{BoxFuture, Output, Spawned, Transport, TransportError};
use crate::plan::Node;

/// One command the fake received.
#[derive(Debug, Clone)]
pub struct Call {
    pub seq: usize,
    pub host: String,
    pub script: String,
    pub at: Instant,
}

type Answer = Box<dyn Fn(&str, &str) -> Option<Result<Output, TransportError>> + Send + Sync>;

/// Answers by rule: the first rule returning `Some` wins; unmatched commands succeed silently.
pub struct FakeTransport {
    rules: Vec<Answer>,
    log: Mutex<Vec<Call>>,
    delay: Mutex<Vec<(String, Duration)>>,
}

impl Default for FakeTransport {
    fn default() -> Self {
        FakeTransport::new()
    }
}

impl FakeTransport {
    pub fn new() -> FakeTransport {
        FakeTransport {
            rules: Vec::new(),
            log: Mutex::new(Vec::new()),
            delay: Mutex::new(Vec::new()),
        }
    }

    /// Answer `output` when the host is `host` (or any, with `"*"`) and the script contains `needle`.
    pub fn on(mut self, host: &str, needle: &str, output: Result<Output, TransportError>) -> Self {
        let host = host.to_string();
        let needle = needle.to_string();
        self.rules.push(Box::new(move |h, s| {
            ((host == "*" || host == h) && s.contains(&needle)).then(|| output.clone())
        }));
        self
    }

    /// A rule computed from (host, script).
    pub fn rule(
        mut self,
        f: impl Fn(&str, &str) -> Option<Result<Output, TransportError>> + Send + Sync + 'static,
    ) -> Self {
        self.rules.push(Box::new(f));
        self
    }

    /// Hold commands containing `needle` for `d` before answering (a slow or hung tool).
    pub fn delay(self, needle: &str, d: Duration) -> Self {
        self.delay
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((needle.to_string(), d));
        self
    }

    /// Everything received, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What a server the fake started is stopped as, in its log: `stop PGID`. A rule on it answers
/// the server's log.
pub fn stop_call(pgid: u32) -> String {
    format!("stop {pgid}")
}

/// The process group every server the fake starts is in.
pub const FAKE_PGID: u32 = 4242;

/// What a server's start is recorded as, before its script: `spawn: SCRIPT`.
pub const SPAWN_CALL: &str = "spawn: ";

impl FakeTransport {
    fn record(&self, node: &Node, script: &str) -> usize {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let seq = log.len();
        log.push(Call {
            seq,
            host: node.name.clone(),
            script: script.to_string(),
            at: Instant::now(),
        });
        seq
    }
}

impl Transport for FakeTransport {
    /// A server is recorded as [`SPAWN_CALL`] and its script; the first rule its script
    /// matches that answers an error fails its start.
    fn spawn<'a>(
        &'a self,
        node: &'a Node,
        _job: &'a str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<Spawned, TransportError>> {
        Box::pin(async move {
            let seq = self.record(node, &format!("{SPAWN_CALL}{script}"));
            if let Some(Err(e)) = self.rules.iter().find_map(|r| r(&node.name, script)) {
                return Err(e);
            }
            Ok(Spawned {
                id: seq as u64,
                pgid: FAKE_PGID,
                started_unix_ms: None,
            })
        })
    }

    /// Recorded as [`stop_call`]; answered by the first rule on that text (the server's log),
    /// else ended by the stop's SIGTERM with nothing written.
    fn stop_spawned<'a>(
        &'a self,
        node: &'a Node,
        job: &'a Spawned,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            let call = stop_call(job.pgid);
            self.record(node, &call);
            match self.rules.iter().find_map(|r| r(&node.name, &call)) {
                Some(out) => out,
                None => Ok(Output {
                    status: 143,
                    ..Output::default()
                }),
            }
        })
    }

    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            self.record(node, script);
            let wait = self
                .delay
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .find(|(n, _)| script.contains(n.as_str()))
                .map(|(_, d)| *d);
            if let Some(d) = wait {
                if d > timeout {
                    tokio::time::sleep(timeout).await;
                    return Err(TransportError::Timeout {
                        host: node.name.clone(),
                        secs: timeout.as_secs(),
                    });
                }
                tokio::time::sleep(d).await;
            }
            for r in &self.rules {
                if let Some(out) = r(&node.name, script) {
                    return out;
                }
            }
            Ok(Output::default())
        })
    }

    fn name(&self) -> &'static str {
        "fake"
    }
}
