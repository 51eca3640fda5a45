//! The local transport: every node's commands run on this machine under `/bin/sh -c`.
//! For single-box checks and tests with real processes.

use std::process::Stdio;
use std::time::Duration;

use super::transport::{BoxFuture, Output, Transport, TransportError};
use crate::plan::Node;

#[derive(Debug, Default)]
pub struct LocalTransport;

impl Transport for LocalTransport {
    fn exec<'a>(
        &'a self,
        node: &'a Node,
        script: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, TransportError>> {
        Box::pin(async move {
            let mut cmd = tokio::process::Command::new("/bin/sh");
            cmd.arg("-c")
                .arg(script)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let child = cmd.spawn().map_err(|e| TransportError::Unreachable {
                host: node.name.clone(),
                reason: e.to_string(),
            })?;
            match tokio::time::timeout(timeout, child.wait_with_output()).await {
                Err(_) => Err(TransportError::Timeout {
                    host: node.name.clone(),
                    secs: timeout.as_secs(),
                }),
                Ok(Err(e)) => Err(TransportError::Lost {
                    host: node.name.clone(),
                    reason: e.to_string(),
                }),
                Ok(Ok(out)) => {
                    use std::os::unix::process::ExitStatusExt;
                    let status = out
                        .status
                        .code()
                        .or_else(|| out.status.signal().map(|s| 128 + s))
                        .unwrap_or(-1);
                    Ok(Output {
                        status,
                        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    })
                }
            }
        })
    }

    fn name(&self) -> &'static str {
        "local"
    }
}
