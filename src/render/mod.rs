//! Command lines from templates: built-in minijinja templates (one `.j2` per command, included
//! at compile time, overridable from the plan) and the fixed wrappers that make remote runs safe
//! (detached servers, remote timeouts, process-group kills).
//!
//! Every value interpolated into a command is shell-quoted by the environment's formatter;
//! `|safe` (or a value built with [`safe`]) is the explicit opt-out, used only for values this
//! module constructs itself (placeholders). Templates are checked at plan load time against the
//! variables their job provides.

pub mod job;
pub mod launch;
mod quote;

use std::collections::BTreeMap;

use minijinja::{Environment, UndefinedBehavior, Value};

pub use quote::quote;

/// A built-in command template: its name (what a plan's `[templates.<name>]` overrides), its
/// source, and the variables its job gives it. Each test kind owns its own.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    pub name: &'static str,
    pub source: &'static str,
    pub variables: &'static [&'static str],
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_debug(true);
    env.set_formatter(|out, _state, value| {
        if value.is_undefined() || value.is_none() {
            return Err(minijinja::Error::new(
                minijinja::ErrorKind::UndefinedError,
                "a value interpolated into a command is undefined",
            ));
        }
        // strings as they are, without a copy; other values through Display
        let owned;
        let text = match value.as_str() {
            Some(s) => s,
            None => {
                owned = value.to_string();
                owned.as_str()
            }
        };
        if value.is_safe() || quote::is_bare(text) {
            out.write_str(text).map_err(minijinja::Error::from)
        } else {
            match quote(text) {
                Some(q) => out.write_str(&q).map_err(minijinja::Error::from),
                None => Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    "a value interpolated into a command contains a NUL byte",
                )),
            }
        }
    });
    env
}

/// Check `source`, an override of `template`: its syntax, and that it uses only the variables
/// its job provides.
pub fn check_template(template: &Template, source: &str) -> Result<(), String> {
    let env = environment();
    let tmpl = env
        .template_from_str(source)
        .map_err(|e| format!("does not parse: {}", e.detail().unwrap_or(&e.to_string())))?;
    let allowed = template.variables;
    let mut unknown: Vec<String> = tmpl
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !allowed.contains(&v.as_str()))
        .collect();
    unknown.sort();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "uses {}, which its job does not provide",
            unknown
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Renders commands from the built-in templates and a plan's overrides.
pub struct Renderer {
    env: Environment<'static>,
}

/// A template failed to render (a bug or a bad override: load-time checks catch most).
#[derive(Debug, thiserror::Error)]
#[error("template `{name}`: {message}")]
pub struct RenderError {
    pub name: String,
    pub message: String,
}

impl Renderer {
    /// The renderer of `builtins`, each replaced by the plan's override of the same name.
    pub fn new(builtins: &[Template], overrides: &BTreeMap<String, String>) -> Renderer {
        let mut env = environment();
        for t in builtins {
            let src = overrides
                .get(t.name)
                .cloned()
                .unwrap_or_else(|| t.source.to_string());
            // overrides were checked at load time; a failure here leaves the name missing and
            // surfaces as a RenderError when used.
            let _ = env.add_template_owned(t.name.to_string(), src);
        }
        Renderer { env }
    }

    pub fn render(&self, name: &str, ctx: Value) -> Result<String, RenderError> {
        let err = |message: String| RenderError {
            name: name.to_string(),
            message,
        };
        let t = self
            .env
            .get_template(name)
            .map_err(|e| err(e.to_string()))?;
        t.render(ctx).map(trim_owned).map_err(|e| {
            err(e
                .detail()
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string()))
        })
    }
}

/// `s.trim()` as an owned string of its own length, reusing `s` when there is nothing to trim
/// (shrunk in place: a rendered string's spare capacity can be as large as the string).
fn trim_owned(mut s: String) -> String {
    let t = s.trim();
    if t.len() == s.len() {
        s.shrink_to_fit();
        s
    } else {
        t.to_string()
    }
}

/// A value this module vouches for: rendered without quoting. Private: only values the renderer
/// builds itself ([`Placeholder`]s, lists composed by [`name_list`]) are vouched for; a value from
/// the plan never is, whatever it looks like.
fn safe(s: impl Into<String>) -> Value {
    Value::from_safe_string(s.into())
}

/// A value known only at run time, shown in a dry run as `<spark-a.f0.a:device>`. Typed, not
/// string-shaped: only the renderer makes one, so a plan value that happens to look like
/// `<x:y>` is still data and still quoted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Placeholder(String);

impl Placeholder {
    /// The placeholder for `what` (`device`, `netdev`, `gid`) of an endpoint. Endpoint names are
    /// validated plan names (letters, digits, `-`, `_`, `.`).
    pub fn new(endpoint: &str, what: &str) -> Placeholder {
        Placeholder(format!("<{endpoint}:{what}>"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The template value: rendered as it is.
    pub fn value(&self) -> Value {
        safe(self.0.clone())
    }
}

impl std::fmt::Display for Placeholder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One name in a list rendered into a command (`NCCL_IB_HCA=a,b`): known, or still a
/// placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamePart {
    Known(String),
    Unknown(Placeholder),
}

impl NamePart {
    pub fn text(&self) -> &str {
        match self {
            NamePart::Known(s) => s,
            NamePart::Unknown(p) => p.as_str(),
        }
    }
}

/// A `sep`-joined list as a template value. All known: an ordinary value, quoted by the
/// formatter like any other. With placeholders: each known part quoted on its own, the
/// placeholders as they are, so the result is still one inert shell word around them.
pub fn name_list(parts: &[NamePart], sep: &str) -> Result<Value, RenderError> {
    let joined = || {
        parts
            .iter()
            .map(NamePart::text)
            .collect::<Vec<_>>()
            .join(sep)
    };
    if parts.iter().all(|p| matches!(p, NamePart::Known(_))) {
        return Ok(Value::from(joined()));
    }
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(&quote(sep).unwrap_or_default());
        }
        match p {
            NamePart::Known(s) => out.push_str(&quote(s).ok_or_else(|| RenderError {
                name: joined(),
                message: "a name contains a NUL byte".into(),
            })?),
            NamePart::Unknown(ph) => out.push_str(ph.as_str()),
        }
    }
    Ok(safe(out))
}

/// Remote paths and wrappers. The remote login shell may be csh or fish: every script runs
/// under `/bin/sh -c`.
pub mod wrap {
    use super::quote;
    use std::collections::BTreeMap;

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

    /// Start `cmd` detached: its own session (setsid), stdin from /dev/null, output to a log
    /// unique to the run and job, its process-group id written to `<job>.pgid`, and a remote
    /// timeout so it dies even if we lose the connection. A server started any other way dies
    /// with its SSH session and the client reports "Couldn't connect".
    ///
    /// Only the `setsid` command itself is put in the background: were the whole `mkdir && cd
    /// && setsid ... &` list backgrounded, bash (`/bin/sh` on RHEL and Fedora) would run it in
    /// a subshell that keeps the session's stdout and stderr open until the server exits, so
    /// the SSH channel starting it would not close before the server's timeout.
    pub fn detached(
        dir: &str,
        job: &str,
        timeout_s: u32,
        env: &BTreeMap<String, String>,
        cmd: &str,
    ) -> String {
        let inner = format!("echo $$ > {job}.pgid; exec timeout -k 5 {timeout_s} {cmd}");
        format!(
            "{}mkdir -p {d} && cd {d} && rm -f {job}.log {job}.pgid || exit 1; setsid /bin/sh -c {} </dev/null >{job}.log 2>&1 &",
            exports(env),
            quote(&inner).unwrap_or_default(),
            d = quote(dir).unwrap_or_default(),
        )
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
                Some(ns) if start.is_none() => {
                    start = ns.trim().parse::<f64>().ok().map(|n| n / 1e6)
                }
                _ => rest.push_str(line),
            }
        }
        (start, rest)
    }

    /// The line a successful readiness poll ([`ready`]) writes after the pgid:
    /// `@fabricplan-ready STARTED_NS LISTENING_NS`.
    pub const READY_MARK: &str = "@fabricplan-ready";

    /// A readiness poll's answer: the pgid line, and (started, listening) in Unix ms by the
    /// host's clock when the poll reported both.
    pub fn take_ready_mark(stdout: &str) -> (String, Option<(f64, f64)>) {
        let mut marks = None;
        let mut rest = String::new();
        for line in stdout.lines() {
            match line.trim_end().strip_prefix(READY_MARK) {
                Some(v) => {
                    let ns: Vec<f64> = v
                        .split_whitespace()
                        .filter_map(|n| n.parse::<f64>().ok())
                        .collect();
                    if let [a, b] = ns[..] {
                        marks = Some((a / 1e6, b / 1e6));
                    }
                }
                None => {
                    rest.push_str(line);
                    rest.push('\n');
                }
            }
        }
        (rest, marks)
    }

    /// What a staged foreground script writes to stderr once its shell runs and waits.
    pub const ARMED_MARK: &str = "@fabricplan-armed";

    /// A [`foreground`] script staged for a simultaneous release: it prepares (environment,
    /// directory), writes [`ARMED_MARK`] to stderr and waits for one line on stdin; only then does
    /// it take its start mark and exec the command. Stdin is otherwise never written to, as
    /// before. A script without a start mark waits before anything.
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

    /// Run `cmd` in the foreground under a remote timeout (clients, mpirun, probes).
    pub fn foreground(
        dir: &str,
        timeout_s: u32,
        env: &BTreeMap<String, String>,
        cmd: &str,
    ) -> String {
        format!(
            "{}mkdir -p {d} && cd {d} && printf '{START_MARK} %s\\n' \"$(date +%s%N)\" >&2 && exec timeout -k 5 {timeout_s} {cmd}",
            exports(env),
            d = quote(dir).unwrap_or_default(),
        )
    }

    /// Run a launcher (`mpirun`) in the foreground, like [`foreground`], but in a session of
    /// its own, and stop whatever is left of that session when it ends: a launcher starts
    /// children (`ssh` to every other rank) that put themselves in process groups of their own
    /// and outlive it when it is killed (a launch that hangs on an MTU 1500 ISL and times out
    /// left three `ssh` running). The session is what we recorded: the launcher's own pid, as
    /// `setsid` gives it a session without forking (a background job of a shell without job
    /// control is no group leader). The launcher's exit status is the script's.
    pub fn foreground_session(
        dir: &str,
        timeout_s: u32,
        env: &BTreeMap<String, String>,
        cmd: &str,
    ) -> String {
        format!(
            "{}mkdir -p {d} && cd {d} && printf '{START_MARK} %s\\n' \"$(date +%s%N)\" >&2 && {{ setsid timeout -k 5 {timeout_s} {cmd} & s=$!; wait $s; rc=$?; {REAP} reap $s; exit $rc; }}",
            exports(env),
            d = quote(dir).unwrap_or_default(),
        )
    }

    /// `reap SID`: stop every live process of session SID (TERM, then KILL after a second),
    /// found by its session id, never by name; a zombie is already gone. Without `ps` nothing
    /// can be found and nothing is done.
    const REAP: &str = "reap() { left() { ps -eo sid=,pid=,stat= 2>/dev/null | \
awk -v s=\"$1\" '$1 == s && $3 !~ /^Z/ { print $2 }'; }; l=$(left \"$1\"); [ -n \"$l\" ] || return 0; \
kill -TERM $l 2>/dev/null; n=0; while [ $n -lt 50 ]; do l=$(left \"$1\"); [ -n \"$l\" ] || return 0; \
sleep 0.02; n=$((n+1)); done; kill -KILL $l 2>/dev/null; };";

    /// Poll until the server of `job` listens on `port` (or died): prints its pgid on ready,
    /// then [`READY_MARK`] with the server's start (when its shell wrote the pgid file, right
    /// before it exec'd the tool) and when the poll saw it listen, both in ns by the host's clock.
    /// Exit 0 ready, 3 died, 4 gave up after `limit_s`. Polls every 10 ms; never a fixed sleep.
    ///
    /// Each poll forks only `grep` and `sleep`: the group's liveness is asked of the shell's own
    /// `kill -0` every time, and the zombie-aware `alive` (`ps` and `awk`) only every 20th poll.
    /// The poll runs while the server starts, on the same cores: five processes per poll slowed
    /// the very start it waited for (a lab stand-in's interpreter, several per round).
    pub fn ready(dir: &str, job: &str, port: u16, limit_s: u32) -> String {
        let hex = format!("{port:04X}");
        format!(
            "{alive} cd {d} || exit 5; n=0; g=; while [ $n -lt {tries} ]; do \
if grep -qE ':{hex} [0-9A-F]+:0000 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null; then cat {job}.pgid 2>/dev/null; \
printf '{READY_MARK} %s %s\\n' \"$(date -r {job}.pgid +%s%N 2>/dev/null)\" \"$(date +%s%N 2>/dev/null)\"; exit 0; fi; \
if [ -z \"$g\" ] && [ -s {job}.pgid ]; then read -r g < {job}.pgid; fi; \
if [ -n \"$g\" ]; then kill -0 -\"$g\" 2>/dev/null || exit 3; \
if [ $((n % 20)) -eq 19 ] && ! alive \"$g\"; then exit 3; fi; fi; \
sleep 0.01; n=$((n+1)); done; exit 4",
            alive = ALIVE,
            d = quote(dir).unwrap_or_default(),
            tries = limit_s * 100,
        )
    }

    /// Kill exactly the process group we started (never by name), then confirm it is gone.
    /// Exit 0 gone, 1 still there after SIGKILL.
    ///
    /// A process group is named `kill -SIG -PGID`, without `--`: dash (`/bin/sh` on Debian and
    /// Ubuntu, DGX OS included) rejects `kill -0 -- -PGID` with "Illegal number", so with `--`
    /// every kill failed and every liveness check read "gone". bash and busybox accept both.
    pub fn kill_group(pgid: u32) -> String {
        format!(
            "{ALIVE} kill -TERM -{pgid} 2>/dev/null; n=0; while alive {pgid}; do \
n=$((n+1)); if [ $n -eq 50 ]; then kill -KILL -{pgid} 2>/dev/null; fi; if [ $n -gt 100 ]; then exit 1; fi; sleep 0.02; done; exit 0"
        )
    }

    /// `alive PGID`: true while the process group has a member that is not a zombie. It sets
    /// the shell variable `p`: callers keep nothing of their own in it.
    ///
    /// A detached server is orphaned when its starting shell exits, so its parent is PID 1 of
    /// its PID namespace; a process that dies stays a zombie until that parent reaps it, and
    /// `kill -0` still succeeds on a zombie. Where PID 1 reaps late (a container's init, or a
    /// PID 1 that never reaps) a dead server would otherwise read alive: every kill waited for
    /// the reaper (1.5 s per round in the lab) or ended "survived SIGKILL", and the readiness
    /// poll missed a server that had died. Without a working `ps`, `kill -0` decides alone.
    const ALIVE: &str = "alive() { kill -0 -\"$1\" 2>/dev/null || return 1; \
p=$(ps -eo pgid=,stat= 2>/dev/null) || return 0; \
printf '%s\\n' \"$p\" | awk -v g=\"$1\" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'; };";

    /// Read a remote file (a server's log) after the job.
    pub fn cat(dir: &str, file: &str) -> String {
        format!(
            "cat {}/{} 2>/dev/null",
            quote(dir).unwrap_or_default(),
            file
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bandwidth client's template, as a kind declares one.
    const CLIENT: Template = Template {
        name: "rdma-bw-client",
        source: "{{ tool }} -d {{ device }} -i 1 -x {{ gid_index }} -F --report_gbits -D {{ duration_s }} -s {{ size_bytes }} -q {{ qps }} -p {{ port }} {{ server_ip }}",
        variables: &[
            "tool",
            "device",
            "gid_index",
            "port",
            "duration_s",
            "size_bytes",
            "qps",
            "server_ip",
        ],
    };

    #[test]
    fn undeclared_variable_is_reported() {
        check_template(&CLIENT, CLIENT.source).unwrap();
        let err =
            check_template(&CLIENT, "ib_write_bw -d {{ device }} {{ serverip }}").unwrap_err();
        assert!(err.contains("`serverip`"), "{err}");
    }

    #[test]
    fn hostile_values_render_inert() {
        let r = Renderer::new(&[CLIENT], &BTreeMap::new());
        let ctx = minijinja::context! {
            tool => "ib_write_bw", device => "$(touch /tmp/x)", gid_index => 3, port => 18515,
            duration_s => 6, size_bytes => 65536, qps => 1, server_ip => "1.2.3.4; rm -rf /",
        };
        let out = r.render("rdma-bw-client", ctx).unwrap();
        assert!(out.contains("'$(touch /tmp/x)'"), "{out}");
        assert!(out.contains("'1.2.3.4; rm -rf /'"), "{out}");
    }

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

    /// The state letter of a `/proc/PID/stat` line and the fields after it (the command
    /// name, in parentheses, may hold spaces).
    fn stat_fields(stat: &str) -> Vec<&str> {
        stat.rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect()
    }

    /// Whether the process group has a member that is not a zombie, from /proc.
    fn group_alive(pgid: u32) -> bool {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
            .any(|stat| {
                let rest = stat_fields(&stat);
                rest.len() > 2 && rest[2] == pgid.to_string() && rest[0] != "Z"
            })
    }

    /// Whether `kill -0` reaches the group (a zombie member still answers).
    fn answers_kill0(pgid: u32) -> bool {
        // procps kill (not a shell builtin) needs `--` before a negative pid
        std::process::Command::new("/bin/kill")
            .args(["-0", "--", &format!("-{pgid}")])
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// The wrappers' process-group kill really kills, and its liveness check really sees a
    /// live group, under every POSIX shell found here.
    #[test]
    fn kill_group_and_ready_work_under_real_shells() {
        for shell in shells() {
            let dir = scratch("wrap", shell);
            let d = dir.to_string_lossy().into_owned();
            // a detached "server" that never listens: the readiness poll must see it alive
            // (exit 4 after its limit), then the kill must take its whole group
            let start = wrap::detached(&d, "job", 30, &BTreeMap::new(), "sleep 30");
            let t = std::time::Instant::now();
            // output(): waits until stdout and stderr close, like an SSH channel does
            let out = sh(shell, &start);
            assert!(out.status.success(), "{shell}: {out:?}");
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "{shell}: starting a detached server held the session's output for {:?}",
                t.elapsed()
            );
            let ready = sh(shell, &wrap::ready(&d, "job", 1, 1));
            assert_eq!(
                ready.status.code(),
                Some(4),
                "{shell}: a live server that does not listen is not `died` (3): {ready:?}"
            );
            let pgid: u32 = std::fs::read_to_string(dir.join("job.pgid"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(
                group_alive(pgid),
                "{shell}: the group {pgid} should be alive"
            );
            let kill = sh(shell, &wrap::kill_group(pgid));
            assert_eq!(kill.status.code(), Some(0), "{shell}: {kill:?}");
            assert!(
                !group_alive(pgid),
                "{shell}: the group {pgid} survived kill_group"
            );
            // a group that is gone: ready says died (3)
            let ready = sh(shell, &wrap::ready(&d, "job", 1, 1));
            assert_eq!(ready.status.code(), Some(3), "{shell}: {ready:?}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A server that listens: the poll prints its pgid, then when it started (its pgid file
    /// written) and when it was seen listening, by this host's clock, under every shell.
    #[test]
    fn ready_reports_when_the_server_started_and_listened() {
        // a listening socket of this process stands for the server
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for shell in shells() {
            let dir = scratch("ready-marks", shell);
            std::fs::write(dir.join("job.pgid"), "4242\n").unwrap();
            let d = dir.to_string_lossy().into_owned();
            let ready = sh(shell, &wrap::ready(&d, "job", port, 1));
            assert_eq!(ready.status.code(), Some(0), "{shell}: {ready:?}");
            let (pgid, marks) = wrap::take_ready_mark(&String::from_utf8_lossy(&ready.stdout));
            assert_eq!(pgid, "4242\n", "{shell}");
            let (started, listening) = marks.unwrap_or_else(|| panic!("{shell}: {ready:?}"));
            assert!(
                started > 1.0e12 && started <= listening,
                "{shell}: {ready:?}"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
        drop(listener);
    }

    /// Whether any process is alive (not a zombie) with this pid, from /proc.
    fn pid_alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| stat_fields(&stat).first() != Some(&"Z"))
            .unwrap_or(false)
    }

    /// A launcher (mpirun) whose children put themselves in process groups of their own
    /// (mpirun's `ssh` to the other ranks): run by [`wrap::foreground_session`], the launcher's
    /// exit status is the script's, and the children are gone when the script returns, whether
    /// the launcher ended by itself or by its timeout. A plain [`wrap::foreground`] leaves them.
    #[test]
    fn a_launchers_children_in_their_own_groups_end_with_it() {
        // the child that leaves its group is a python3 one-liner (.ci/run installs python3)
        assert!(
            std::path::Path::new("/usr/bin/python3").exists(),
            "python3 is needed to start a child in a process group of its own"
        );
        for shell in shells() {
            let dir = scratch("session", shell);
            let d = dir.to_string_lossy().into_owned();
            // a child that leaves its parent's process group (not its session), as ssh is
            // left by mpirun, records its pid, and would live for five minutes
            std::fs::write(
                dir.join("child.py"),
                format!(
                    "import os, time\nos.setpgid(0, 0)\nopen('{d}/child.pid', 'w').write(str(os.getpid()))\ntime.sleep(300)\n"
                ),
            )
            .unwrap();
            let child = format!("python3 {d}/child.py");
            // The timeouts leave python3 time to start on a loaded machine: the first is never
            // reached, the second is reached once the child has written its pid.
            for (body, timeout, code) in [
                // ends by itself with status 7 once its child runs
                (
                    format!(
                        "{child} &\nwhile [ ! -s {d}/child.pid ]; do sleep 0.01; done\nexit 7\n"
                    ),
                    300,
                    Some(7),
                ),
                // hangs until its timeout: 124, as `timeout` says
                (format!("{child} &\nwait\n"), 10, Some(124)),
            ] {
                let _ = std::fs::remove_file(dir.join("child.pid"));
                std::fs::write(dir.join("launcher.sh"), &body).unwrap();
                let launcher = format!("/bin/sh {d}/launcher.sh");
                let script = wrap::foreground_session(&d, timeout, &BTreeMap::new(), &launcher);
                // not waiting for stdout to close: a child left behind would hold it open
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

    /// A process group whose only member is a zombie (its parent, started here, never reaps
    /// it): the parent, to kill when done, and the group.
    /// A process killed and reaped when dropped, however the test ends.
    struct Reaped(std::process::Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A process group whose only member is a zombie: a python3 parent forks a child that
    /// makes itself a session (and group) leader, writes its pid and exits; the parent never
    /// reaps it and waits to be killed, which the returned guard does. (Built in python, not
    /// with `setsid(1)`, which forks a second time when it is a group leader, leaving an orphan
    /// that init reaps; and with SIGCHLD's default action, so no inherited SIG_IGN reaps it.)
    /// Polls until the member is a zombie.
    fn zombie_group(_shell: &str, dir: &std::path::Path) -> (Reaped, u32) {
        let zpg = dir.join("zombie.pgid");
        let script = format!(
            "import os, signal, time\n\
             signal.signal(signal.SIGCHLD, signal.SIG_DFL)\n\
             if os.fork() == 0:\n    os.setsid()\n    open({:?}, 'w').write(str(os.getpid()))\n    os._exit(0)\n\
             time.sleep(600)\n",
            zpg.display().to_string()
        );
        let parent = Reaped(
            std::process::Command::new("python3")
                .arg("-c")
                .arg(script)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        let mut zpgid = 0u32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::time::Instant::now() < deadline {
            if let Some(p) = std::fs::read_to_string(&zpg)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                zpgid = p;
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                if stat_fields(&stat).first() == Some(&"Z") {
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        (parent, zpgid)
    }

    /// A `sleep` first on PATH that only records it was called, in the file returned.
    fn recording_sleep(dir: &std::path::Path) -> (String, std::path::PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let fake = dir.join("fakebin");
        std::fs::create_dir_all(&fake).unwrap();
        let waited = dir.join("waited");
        std::fs::write(
            fake.join("sleep"),
            format!("#!/bin/sh\necho \"$@\" >> {}\n", waited.display()),
        )
        .unwrap();
        std::fs::set_permissions(fake.join("sleep"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = format!(
            "{}:{}",
            fake.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        (path, waited)
    }

    /// A group whose only member is a zombie is gone at the first look: the kill loop never
    /// waits, where a zombie read alive waited for SIGKILL and then failed.
    #[test]
    fn kill_group_does_not_wait_for_a_zombie_only_group() {
        for shell in shells() {
            let dir = scratch("zombie", shell);
            let (parent, zpgid) = zombie_group(shell, &dir);
            assert!(
                answers_kill0(zpgid) && !group_alive(zpgid),
                "{shell}: {zpgid} should be a zombie that answers kill -0"
            );
            let (path, waited) = recording_sleep(&dir);
            let kill = std::process::Command::new(shell)
                .arg("-c")
                .arg(wrap::kill_group(zpgid))
                .env("PATH", path)
                .output()
                .unwrap();
            assert_eq!(kill.status.code(), Some(0), "{shell}: {kill:?}");
            assert!(
                !waited.exists(),
                "{shell}: a zombie-only group was waited for: {:?}",
                std::fs::read_to_string(&waited)
            );
            drop(parent);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn group_kill_works_under_dash() {
        // a real process group, killed by the exact script the runner sends
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        // reap it when it dies, as init does on a real host (a zombie still answers kill -0)
        let reaper = std::thread::spawn(move || child.wait());
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(wrap::kill_group(pgid))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !reaper.join().unwrap().unwrap().success(),
            "killed by a signal"
        );
    }

    #[test]
    fn ready_mark_is_split_off_the_pgid() {
        assert_eq!(
            wrap::take_ready_mark(
                "4242\n@fabricplan-ready 1796026335076500000 1796026335101500000\n"
            ),
            (
                "4242\n".to_string(),
                Some((1_796_026_335_076.5, 1_796_026_335_101.5))
            )
        );
        // a poll that could not read the start (no pgid file, no `date -r`): no marks
        assert_eq!(
            wrap::take_ready_mark("4242\n@fabricplan-ready  1796026335101692884\n"),
            ("4242\n".to_string(), None)
        );
        // an older answer, the simulator's, the fake's
        assert_eq!(
            wrap::take_ready_mark("4242\n"),
            ("4242\n".to_string(), None)
        );
    }

    #[test]
    fn start_mark_is_split_off_stderr() {
        let (t, rest) =
            wrap::take_start_mark("@fabricplan-start 1796026335076692884\nCouldn't connect\n");
        assert!((t.unwrap() - 1_796_026_335_076.693).abs() < 0.01);
        assert_eq!(rest, "Couldn't connect\n");
        assert_eq!(wrap::take_start_mark("x\n"), (None, "x\n".to_string()));
    }

    #[test]
    fn placeholders_stay_visible() {
        let server = Template {
            name: "rdma-bw-server",
            source: "{{ tool }} -d {{ device }} -i 1 -x {{ gid_index }} -F --report_gbits -D {{ duration_s }} -s {{ size_bytes }} -q {{ qps }} -p {{ port }}",
            variables: CLIENT.variables,
        };
        let r = Renderer::new(&[server], &BTreeMap::new());
        let ctx = minijinja::context! {
            tool => "ib_write_bw", device => Placeholder::new("spark-a.f0.a", "device").value(), gid_index => Placeholder::new("spark-a.f0.a", "gid").value(),
            port => 18515, duration_s => 6, size_bytes => 65536, qps => 1,
        };
        let out = r.render("rdma-bw-server", ctx).unwrap();
        assert!(
            out.contains("-d <spark-a.f0.a:device> -i 1 -x <spark-a.f0.a:gid>"),
            "{out}"
        );
    }
}
