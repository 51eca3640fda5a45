//! Running the system tools the lab is built from (`ip`, `tc`, `ssh-keygen`, `nsenter`).

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `argv` to completion and returns its output (never fails: a spawn error becomes an
/// output with exit code 127 and the error text on stderr).
pub fn run(argv: &[&str]) -> Output {
    match Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) => failed(&format!("cannot run {}: {e}", argv[0])),
    }
}

/// An output with exit code 127 and `msg` on stderr (a command that could not be run).
pub fn failed(msg: &str) -> Output {
    Output {
        status: exit_status(127),
        stdout: Vec::new(),
        stderr: msg.as_bytes().to_vec(),
    }
}

/// Runs `argv` and turns a non-zero exit into an error naming the command and its stderr.
pub fn run_ok(argv: &[&str]) -> Result<String, String> {
    let out = run(argv);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Runs a shell snippet with `sh -c`.
pub fn sh(script: &str) -> Output {
    run(&["sh", "-c", script])
}

fn exit_status(code: i32) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(code << 8)
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pids of every process whose network namespace is `ns` (`ip netns pids`).
pub fn netns_pids(ns: &str) -> Vec<u32> {
    String::from_utf8_lossy(&run(&["ip", "netns", "pids", ns]).stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The command line of a process, arguments joined by spaces (empty if it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|part| !part.is_empty())
                .map(|part| String::from_utf8_lossy(part).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// SIGKILLs every process in `ns` and waits (bounded) until none is left.
pub fn kill_netns_processes(ns: &str) {
    wait_for(Duration::from_secs(5), || {
        let pids = netns_pids(ns);
        for pid in &pids {
            run(&["kill", "-KILL", &pid.to_string()]);
        }
        pids.is_empty()
    });
}
