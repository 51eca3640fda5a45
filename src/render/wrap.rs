//! How a command is wrapped to run on a node: the node's environment exported, a remote
//! timeout, and the marks the runner reads back (when a client really started, when a server
//! was seen listening, that a staged command waits at its gate). Every script runs under
//! `/bin/sh` as a job of the node's session ([`crate::exec::session`]), in the job's own
//! directory inside the session's private one: nothing here names a path on the host, and no
//! file is written or read back but the job's own streams. The remote login shell may be csh or
//! fish: nothing depends on it.

use std::collections::BTreeMap;

use super::quote;

/// `/bin/sh -c 'SCRIPT'`
pub fn sh(script: &str) -> String {
    format!("/bin/sh -c {}", quote(script).unwrap_or_default())
}

/// `export K=V; ` for the node's environment.
pub fn exports(env: &BTreeMap<String, String>) -> String {
    env.iter()
        .map(|(k, v)| format!("export {k}={}; ", quote(v).unwrap_or_default()))
        .collect()
}

/// A server: run as a job of its node's session that runs until it is stopped (the session
/// records its process group when it starts it and stops exactly that), under a remote timeout
/// so it ends even if the session is lost, its stderr with its stdout (its log, as the session
/// captures it).
pub fn server(timeout_s: u32, env: &BTreeMap<String, String>, cmd: &str) -> String {
    format!("{}exec timeout -k 5 {timeout_s} {cmd} 2>&1", exports(env))
}

/// The line a foreground script writes to stderr first: the remote clock, in ns, when the
/// command really started there (what a round's launch skew is measured from).
pub const START_MARK: &str = "@fabricplan-start";

/// Split the start mark off a command's stderr: (remote start in Unix ms, the rest).
pub fn take_start_mark(stderr: &str) -> (Option<f64>, String) {
    let mut start = None;
    let mut rest = String::with_capacity(stderr.len());
    for line in stderr.split_inclusive('\n') {
        match line.trim_end().strip_prefix(START_MARK) {
            Some(ns) if start.is_none() => start = ns.trim().parse::<f64>().ok().map(|n| n / 1e6),
            _ => rest.push_str(line),
        }
    }
    (start, rest)
}

/// The line a successful readiness poll ([`ready`]) writes: `@fabricplan-ready LISTENING_NS`,
/// when it saw the server listen by the host's clock.
pub const READY_MARK: &str = "@fabricplan-ready";

/// When a readiness poll saw the server listen, Unix ms by the host's clock, if it said.
pub fn take_ready_mark(stdout: &str) -> Option<f64> {
    stdout.lines().find_map(|l| {
        l.trim_end()
            .strip_prefix(READY_MARK)?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n > 0.0)
            .map(|n| n / 1e6)
    })
}

/// What a staged foreground script writes to stderr once its shell runs and waits.
pub const ARMED_MARK: &str = "@fabricplan-armed";

/// A [`foreground`] script staged for a simultaneous release: it prepares (environment), writes
/// [`ARMED_MARK`] to stderr and waits for one line on stdin; only then does it take its start
/// mark and exec the command. Stdin is otherwise never written to, as before. A script without
/// a start mark waits before anything.
pub fn gated(script: &str) -> String {
    gated_with(script, &format!("echo {ARMED_MARK} >&2 && read -r _ && "))
}

/// `script` with `gate` (a command list ending in `&& `) put where [`gated`] puts its own:
/// after the preparation, before the start mark; at the front when there is none.
pub fn gated_with(script: &str, gate: &str) -> String {
    match script.find(&format!("printf '{START_MARK}")) {
        Some(i) => format!("{}{gate}{}", &script[..i], &script[i..]),
        None => format!("{gate}{{ {script}\n}}"),
    }
}

/// Split the armed mark off a staged command's stderr: whether it was there, and the rest.
pub fn take_armed_mark(stderr: &str) -> (bool, String) {
    let mut seen = false;
    let mut rest = String::with_capacity(stderr.len());
    for line in stderr.split_inclusive('\n') {
        if !seen && line.trim_end() == ARMED_MARK {
            seen = true;
        } else {
            rest.push_str(line);
        }
    }
    (seen, rest)
}

/// Run `cmd` in the foreground under a remote timeout (clients, probes).
pub fn foreground(timeout_s: u32, env: &BTreeMap<String, String>, cmd: &str) -> String {
    format!(
        "{}printf '{START_MARK} %s\\n' \"$(date +%s%N)\" >&2 && exec timeout -k 5 {timeout_s} {cmd}",
        exports(env),
    )
}

/// Run a launcher (`mpirun`) in the foreground, like [`foreground`], but in a session of its
/// own, and stop whatever is left of that session when it ends: a launcher starts children
/// (`ssh` to every other rank) that put themselves in process groups of their own and outlive
/// it when it is killed (a launch that hangs on an MTU 1500 ISL and times out left three `ssh`
/// running). The session is what we recorded: the launcher's own pid, as `setsid` gives it a
/// session without forking (a background job of a shell without job control is no group
/// leader). The launcher's exit status is the script's.
pub fn foreground_session(timeout_s: u32, env: &BTreeMap<String, String>, cmd: &str) -> String {
    format!(
        "{}printf '{START_MARK} %s\\n' \"$(date +%s%N)\" >&2 && {{ setsid timeout -k 5 {timeout_s} {cmd} & s=$!; wait $s; rc=$?; {REAP} reap $s; exit $rc; }}",
        exports(env),
    )
}

/// `reap SID`: stop every live process of session SID (TERM, then KILL after a second), found
/// by its session id, never by name; a zombie is already gone. Without `ps` nothing can be
/// found and nothing is done.
const REAP: &str = "reap() { left() { ps -eo sid=,pid=,stat= 2>/dev/null | \
awk -v s=\"$1\" '$1 == s && $3 !~ /^Z/ { print $2 }'; }; l=$(left \"$1\"); [ -n \"$l\" ] || return 0; \
kill -TERM $l 2>/dev/null; n=0; while [ $n -lt 50 ]; do l=$(left \"$1\"); [ -n \"$l\" ] || return 0; \
sleep 0.02; n=$((n+1)); done; kill -KILL $l 2>/dev/null; };";

/// Poll until the server in process group `pgid` (as its session recorded it) listens on
/// `port`, or died: on ready, prints [`READY_MARK`] with when it was seen listening (ns, the
/// host's clock). Exit 0 ready, 3 died, 4 gave up after `limit_s`, 5 the poll could not run.
/// Polls every 10 ms; never a fixed sleep.
///
/// Only a listening socket owned by the run's own user counts (the `uid` column of
/// `/proc/net/tcp`): on a shared host another user could listen on the test port first, and
/// a client sent to that listener would measure whatever it answers.
///
/// Each poll forks only `awk` and `sleep`: the group's liveness is asked of the shell's own
/// `kill -0` every time, and the zombie-aware `alive` (`ps` and `awk`) only every 20th poll.
/// The poll runs while the server starts, on the same cores: five processes per poll slowed
/// the very start it waited for (a lab stand-in's interpreter, several per round).
pub fn ready(pgid: u32, port: u16, limit_s: u32) -> String {
    let hex = format!("{port:04X}");
    format!(
        "{alive} u=$(id -u) || exit 5; t=/proc/net/tcp; [ -r /proc/net/tcp6 ] && t=\"$t /proc/net/tcp6\"; \
n=0; while [ $n -lt {tries} ]; do \
if awk -v p=':{hex}' -v u=\"$u\" '$4 == \"0A\" && $8 == u && substr($2, length($2) - 4) == p {{ f = 1 }} END {{ exit !f }}' $t 2>/dev/null; then \
printf '{READY_MARK} %s\\n' \"$(date +%s%N 2>/dev/null)\"; exit 0; fi; \
kill -0 -{pgid} 2>/dev/null || exit 3; \
if [ $((n % 20)) -eq 19 ] && ! alive {pgid}; then exit 3; fi; \
sleep 0.01; n=$((n+1)); done; exit 4",
        alive = ALIVE,
        tries = limit_s * 100,
    )
}

/// `alive PGID`: true while the process group has a member that is not a zombie. It sets the
/// shell variable `p`: callers keep nothing of their own in it.
///
/// A process that dies stays a zombie until its parent reaps it, and `kill -0` still succeeds
/// on a zombie. Where that parent reaps late a dead server would otherwise read alive, and the
/// readiness poll would miss a server that had died. Without a working `ps`, `kill -0` decides
/// alone.
///
/// A process group is named `kill -SIG -PGID`, without `--`: dash (`/bin/sh` on Debian and
/// Ubuntu, DGX OS included) rejects `kill -0 -- -PGID` with "Illegal number".
const ALIVE: &str = "alive() { kill -0 -\"$1\" 2>/dev/null || return 1; \
p=$(ps -eo pgid=,stat= 2>/dev/null) || return 0; \
printf '%s\\n' \"$p\" | awk -v g=\"$1\" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'; };";

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// The POSIX shells found here (dash is Debian/Ubuntu's /bin/sh).
    fn shells() -> impl Iterator<Item = &'static str> {
        ["/bin/sh", "/bin/dash", "/bin/bash"]
            .into_iter()
            .filter(|s| std::path::Path::new(s).exists())
    }

    /// A scratch folder of this test process, for `what` under `shell`.
    fn scratch(what: &str, shell: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "fabricplan-{what}-{}-{}",
            std::process::id(),
            shell.replace('/', "_")
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `script` run by `shell`, its output once stdout and stderr close.
    fn sh(shell: &str, script: &str) -> std::process::Output {
        std::process::Command::new(shell)
            .arg("-c")
            .arg(script)
            .output()
            .unwrap()
    }

    /// A process killed and reaped when dropped, however the test ends.
    struct Reaped(std::process::Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A TCP listener in a python3 process of `uid` (this process's own when `None`), in a
    /// process group of its own: the process and its port.
    fn listener(uid: Option<u32>) -> (Reaped, u16) {
        use std::io::BufRead;
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c")
            .arg(
                "import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()\n\
                 print(s.getsockname()[1], flush=True)\ntime.sleep(120)\n",
            )
            .stdout(std::process::Stdio::piped())
            .process_group(0);
        if let Some(u) = uid {
            cmd.uid(u).gid(u);
        }
        let mut child = cmd.spawn().expect("python3 runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        (Reaped(child), line.trim().parse().expect("a port"))
    }

    /// The poll under every POSIX shell: a group that is alive but does not listen is waited
    /// for (4), a group that is gone has died (3), a listener of the run's user is ready (0)
    /// and says when it was seen, and a listener of another user on the port is not ours.
    #[test]
    fn ready_sees_our_server_listen_and_nothing_else() {
        let (ours, port) = listener(None);
        let pgid = ours.0.id();
        let (idle, _) = listener(None);
        let idle_pgid = idle.0.id();
        for shell in shells() {
            let ready = sh(shell, &ready(pgid, port, 1));
            assert_eq!(ready.status.code(), Some(0), "{shell}: {ready:?}");
            let seen = take_ready_mark(&String::from_utf8_lossy(&ready.stdout));
            assert!(seen.is_some_and(|t| t > 1.0e12), "{shell}: {ready:?}");
            // alive, but nothing of ours on this port
            let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let free_port = free.local_addr().unwrap().port();
            drop(free);
            let r = sh(shell, &super::ready(idle_pgid, free_port, 1));
            assert_eq!(r.status.code(), Some(4), "{shell}: {r:?}");
        }
        drop(idle);
        // the group gone, nothing listening: died
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let free_port = free.local_addr().unwrap().port();
        drop(free);
        for shell in shells() {
            let r = sh(shell, &ready(idle_pgid, free_port, 1));
            assert_eq!(r.status.code(), Some(3), "{shell}: {r:?}");
        }
        // another user listening on the port (root can start one here)
        if unsafe { libc::geteuid() } == 0 {
            let (theirs, their_port) = listener(Some(65534));
            for shell in shells() {
                let r = sh(shell, &ready(pgid, their_port, 1));
                assert_eq!(
                    r.status.code(),
                    Some(4),
                    "{shell}: another user's listener passed for our server: {r:?}"
                );
            }
            drop(theirs);
        }
        drop(ours);
    }

    /// Whether any process is alive (not a zombie) with this pid, from /proc.
    fn pid_alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                stat.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .next()
                    != Some("Z")
            })
            .unwrap_or(false)
    }

    /// A launcher (mpirun) whose children put themselves in process groups of their own
    /// (mpirun's `ssh` to the other ranks): run by [`foreground_session`], the launcher's exit
    /// status is the script's, and the children are gone when the script returns, whether the
    /// launcher ended by itself or by its timeout.
    #[test]
    fn a_launchers_children_in_their_own_groups_end_with_it() {
        assert!(
            std::path::Path::new("/usr/bin/python3").exists(),
            "python3 is needed to start a child in a process group of its own"
        );
        for shell in shells() {
            let dir = scratch("session", shell);
            let d = dir.to_string_lossy().into_owned();
            std::fs::write(
                dir.join("child.py"),
                format!(
                    "import os, time\nos.setpgid(0, 0)\nopen('{d}/child.pid', 'w').write(str(os.getpid()))\ntime.sleep(300)\n"
                ),
            )
            .unwrap();
            let child = format!("python3 {d}/child.py");
            for (body, timeout, code) in [
                (
                    format!(
                        "{child} &\nwhile [ ! -s {d}/child.pid ]; do sleep 0.01; done\nexit 7\n"
                    ),
                    300,
                    Some(7),
                ),
                (format!("{child} &\nwait\n"), 10, Some(124)),
            ] {
                let _ = std::fs::remove_file(dir.join("child.pid"));
                std::fs::write(dir.join("launcher.sh"), &body).unwrap();
                let launcher = format!("/bin/sh {d}/launcher.sh");
                let script = foreground_session(timeout, &BTreeMap::new(), &launcher);
                let status = std::process::Command::new(shell)
                    .arg("-c")
                    .arg(&script)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .unwrap();
                assert_eq!(status.code(), code, "{shell}: {body}");
                let pid: u32 = std::fs::read_to_string(dir.join("child.pid"))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                assert!(
                    !pid_alive(pid),
                    "{shell}: {body}: the child {pid} outlived its launcher"
                );
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A server script runs its tool under the remote timeout, its stderr with its stdout, and
    /// writes nowhere but its streams.
    #[test]
    fn a_server_writes_only_its_streams() {
        for shell in shells() {
            let dir = scratch("server", shell);
            let env: BTreeMap<String, String> = [("X".to_string(), "a b".to_string())].into();
            let out = std::process::Command::new(shell)
                .arg("-c")
                .arg(server(5, &env, "sh -c 'echo \"$X\"; echo oops >&2'"))
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{shell}: {out:?}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "a b\noops\n");
            assert!(out.stderr.is_empty());
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{shell}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn ready_mark_is_read() {
        assert_eq!(
            take_ready_mark("@fabricplan-ready 1796026335101500000\n"),
            Some(1_796_026_335_101.5)
        );
        // a poll that could not read the clock, an older answer, the fake's
        assert_eq!(take_ready_mark("@fabricplan-ready \n"), None);
        assert_eq!(take_ready_mark("4242\n"), None);
        assert_eq!(take_ready_mark(""), None);
    }

    #[test]
    fn start_mark_is_split_off_stderr() {
        let (t, rest) =
            take_start_mark("@fabricplan-start 1796026335076692884\nCouldn't connect\n");
        assert!((t.unwrap() - 1_796_026_335_076.693).abs() < 0.01);
        assert_eq!(rest, "Couldn't connect\n");
        assert_eq!(take_start_mark("x\n"), (None, "x\n".to_string()));
    }
}
