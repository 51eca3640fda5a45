//! How the Slurm launcher writes commands. Each node gets one long-lived job step of the
//! allocation for the whole run, `srun --overlap --jobid=J -w NODE -N1 -n1` ([`SlurmStyle::task_argv`])
//! carrying the node's session: every command on a node (probes, counter snapshots, pings,
//! servers, clients) runs in it as the same POSIX sh script the SSH launcher writes
//! ([`super::SshStyle`]). NCCL's ranks are one step of their own over every rank, `srun
//! --mpi=pmix` (or `pmi2`), ranks in the plan's order, started from this machine.
//!
//! The script of NCCL's step first writes its own id (`@fabricplan-step J.S`, from
//! `SLURM_JOB_ID` and `SLURM_STEP_ID`) to stderr, so exactly that step can be cancelled. Every
//! value in its line is quoted; the line is one argument vector, run without a shell on this
//! machine.

use minijinja::Value;

use crate::launchers::slurm::plan::{SlurmConfig, SlurmMpi};
use crate::launchers::ssh::render::SshStyle;
use crate::plan::{LauncherConfig, Node, NodeId, Plan};
use crate::render::launch::{LaunchStyle, MpiLaunch, Words, Written};
use crate::render::{RenderError, Renderer, display, quote, wrap};

/// The line a step's script writes to stderr first: `@fabricplan-step JOB.STEP`.
pub const STEP_MARK: &str = "@fabricplan-step";

/// Writes [`STEP_MARK`] with the step's id, from the environment Slurm gives its tasks.
const STEP_PRINTF: &str =
    "printf \"@fabricplan-step %s.%s\\n\" \"$SLURM_JOB_ID\" \"$SLURM_STEP_ID\" >&2";

/// The start mark a released step prints (the host's clock, ns) just before its tool runs.
fn start_mark() -> String {
    format!(
        "printf \"{} %s\\n\" \"$(date +%s%N)\" >&2 && ",
        wrap::START_MARK
    )
}

/// What every step's task runs: its step id written first, then `before` (nothing, or what
/// marks the start), then the command under a timeout. The step is started in `/` (`--chdir`):
/// it makes no file or directory on the node, and its output goes back through `srun`.
fn step_body(before: &str, timeout_s: u32, command: &str) -> String {
    format!("{STEP_PRINTF} && {before}exec timeout -k 5 {timeout_s} {command}")
}

/// Split the step marks off a step's stderr: (its id, the rest). Every rank of a step writes
/// one; they all name the same step.
pub fn take_step_mark(stderr: &str) -> (Option<String>, String) {
    let mut step = None;
    let mut rest = String::with_capacity(stderr.len());
    for line in stderr.split_inclusive('\n') {
        match line.trim_end().strip_prefix(STEP_MARK) {
            Some(id) => {
                let id = id.trim();
                if step.is_none() && is_step_id(id) {
                    step = Some(id.to_string());
                }
            }
            None => rest.push_str(line),
        }
    }
    (step, rest)
}

/// `JOB.STEP`, both numbers: what `scancel` is given, and nothing else.
pub fn is_step_id(s: &str) -> bool {
    let digits = |p: &str| !p.is_empty() && p.len() <= 10 && p.bytes().all(|b| b.is_ascii_digit());
    matches!(s.split_once('.'), Some((j, st)) if digits(j) && digits(st))
}

/// A word of a line: data (quoted) or the renderer's own (options, the `<allocation>`
/// placeholder), written as it is.
enum Word {
    Data(String),
    Own(String),
}

impl Word {
    fn text(&self) -> Result<String, RenderError> {
        match self {
            Word::Own(s) => Ok(s.clone()),
            Word::Data(s) => single_quoted(s).ok_or_else(|| RenderError {
                name: "slurm".into(),
                message: "a value of a Slurm command contains a NUL byte".into(),
            }),
        }
    }
}

/// `s` as one shell word: bare when nothing in it is special ([`quote`]'s rule), else in
/// single quotes with each `'` written `'\''` (a step's script reads best that way). `None`
/// for a NUL byte.
fn single_quoted(s: &str) -> Option<String> {
    match quote(s) {
        Some(q) if q == s => Some(q),
        Some(_) => Some(format!("'{}'", s.replace('\'', "'\\''"))),
        None => None,
    }
}

fn line(words: &[Word]) -> Result<String, RenderError> {
    Ok(words
        .iter()
        .map(Word::text)
        .collect::<Result<Vec<_>, _>>()?
        .join(" "))
}

/// A line known to hold no NUL byte (every value in it came from a validated plan or was built
/// here): the words as they are, a NUL made visible rather than dropped.
fn line_of(words: &[Word]) -> String {
    line(words).unwrap_or_else(|e| format!("<{}>", e.message))
}

/// How the Slurm launcher writes commands: job steps of the allocation `job`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlurmStyle {
    /// The allocation's job id; `None` until it is known (a dry run shows `<allocation>`).
    pub job: Option<u32>,
    pub mpi: SlurmMpi,
}

impl SlurmStyle {
    pub fn new(job: Option<u32>, mpi: SlurmMpi) -> SlurmStyle {
        SlurmStyle { job, mpi }
    }

    /// `--jobid=J`, or `--jobid=<allocation>` before the allocation exists.
    fn jobid(&self) -> Word {
        Word::Own(match self.job {
            Some(j) => format!("--jobid={j}"),
            None => "--jobid=<allocation>".into(),
        })
    }

    /// `srun --overlap --jobid=J -w NODE -N1 -n1`: one task on one node, sharing the allocation
    /// with the steps around it (the program and its arguments follow). An argument vector: the
    /// node's name is one word whatever it holds.
    pub fn task_argv(&self, node: &str) -> Vec<String> {
        let jobid = match self.jobid() {
            Word::Own(s) | Word::Data(s) => s,
        };
        ["srun", "--overlap", &jobid, "-w", node, "-N1", "-n1"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// The line of a node's session step, as a dry run shows it.
    pub fn session_line(&self, node: &str) -> String {
        let mut words: Vec<Word> = self
            .task_argv(node)
            .into_iter()
            .map(|w| {
                if w == node {
                    Word::Data(w)
                } else {
                    Word::Own(w)
                }
            })
            .collect();
        words.push(Word::Own("/bin/sh -c LOOP".into()));
        line_of(&words)
    }
}

/// The `salloc` that allocates `nodes` for a run (`salloc --no-shell`: the allocation is held
/// without a shell, until `scancel JOB`): whole nodes (`--exclusive`: nothing else loads the
/// fabric under test), kept when one of them fails (`--no-kill`: the run goes on with the rest),
/// granted within `wait_s` or refused (`--immediate`), with the plan's partition, account and
/// time limit. An argument vector; [`display`] writes it as a line.
pub fn salloc(cfg: &SlurmConfig, nodes: &[&str], name: &str, wait_s: u32) -> Vec<String> {
    let mut v: Vec<String> = [
        "salloc",
        "--no-shell",
        "--exclusive",
        "--no-kill",
        &format!("--immediate={wait_s}"),
        &format!("--job-name={name}"),
        &format!("--nodes={}", nodes.len()),
        "-w",
        &nodes.join(","),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (opt, v2) in [
        ("-p", &cfg.partition),
        ("-A", &cfg.account),
        ("-t", &cfg.time_limit),
    ] {
        if let Some(x) = v2 {
            v.push(opt.to_string());
            v.push(x.clone());
        }
    }
    v
}

/// A template value of an MPI environment, as a shell word: the renderer's own (placeholders,
/// name lists it quoted part by part) as it is, anything else quoted.
fn env_word(v: &Value) -> Result<String, RenderError> {
    let text = v
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string());
    if v.is_safe() {
        return Ok(text);
    }
    Word::Data(text).text()
}

/// `export K=V; ` for each entry of an MPI app's environment map.
fn env_exports(env: &Value) -> Result<String, RenderError> {
    let mut out = String::new();
    if let Ok(keys) = env.try_iter() {
        for k in keys {
            let Some(name) = k.as_str() else { continue };
            let v = env.get_item(&k).unwrap_or_default();
            out.push_str(&format!(
                "export {}={}; ",
                Word::Data(name.into()).text()?,
                env_word(&v)?
            ));
        }
    }
    Ok(out)
}

impl LaunchStyle for SlurmStyle {
    fn name(&self) -> &'static str {
        "slurm"
    }

    fn words(&self) -> Words {
        Words {
            session: "session step",
            starter: "srun",
            launch_check: "one srun step starts `hostname` on every rank through Slurm's MPI plugin",
            server: "server in its node's step, until stopped",
            client: "client, released with the others",
            collective: "srun over the ranks",
        }
    }

    /// Run in the node's session step, as the SSH launcher writes it: a job its session
    /// stops by the process group it recorded.
    fn server(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String {
        SshStyle.server(plan, node, timeout_s, command)
    }

    /// Run in the node's session step, as the SSH launcher writes it (staged and released with
    /// the round's other clients by the session).
    fn foreground(&self, plan: &Plan, node: NodeId, timeout_s: u32, command: &str) -> String {
        SshStyle.foreground(plan, node, timeout_s, command)
    }

    fn oneshot(&self, node: &Node, script: &str) -> String {
        SshStyle.oneshot(node, script)
    }

    /// One step over every rank, `srun --mpi=pmix` (or `pmi2`), the ranks in the plan's order
    /// (`-m arbitrary` keeps the `-w` order); Open MPI's TCP pinned to the fabric subnets. Ranks
    /// that differ (environment, binary) are told apart by `SLURMD_NODENAME`. The plan's
    /// `nccl` / `mpi-hostname` templates write mpirun lines: they are not used here.
    fn mpi(
        &self,
        plan: &Plan,
        _renderer: &Renderer,
        launch: &MpiLaunch,
    ) -> Result<Written, RenderError> {
        let nodes: Vec<&str> = launch
            .apps
            .iter()
            .flat_map(|a| a.nodes.iter().map(|n| plan.node(*n).name.as_str()))
            .collect();
        let mut script = String::new();
        let binary = match launch.apps.as_slice() {
            [one] => {
                script.push_str(&env_exports(&one.env)?);
                Word::Data(one.binary.clone()).text()?
            }
            apps => {
                script.push_str("case \"$SLURMD_NODENAME\" in ");
                for a in apps {
                    let names: Vec<String> = a
                        .nodes
                        .iter()
                        .map(|n| Word::Data(plan.node(*n).name.clone()).text())
                        .collect::<Result<_, _>>()?;
                    script.push_str(&format!(
                        "{}) {}B={};; ",
                        names.join("|"),
                        env_exports(&a.env)?,
                        Word::Data(a.binary.clone()).text()?
                    ));
                }
                script.push_str("*) echo \"fabricplan: $SLURMD_NODENAME is not a rank of this step\" >&2; exit 2;; esac; ");
                "\"$B\"".to_string()
            }
        };
        let subnets = Word::Data(launch.subnets.join(",")).text()?;
        let args: Vec<String> = launch
            .args
            .iter()
            .map(|a| Word::Data(a.clone()).text())
            .collect::<Result<_, _>>()?;
        let command = if args.is_empty() {
            binary
        } else {
            format!("{binary} {}", args.join(" "))
        };
        script.push_str(&format!(
            "export OMPI_MCA_btl_tcp_if_include={subnets} OMPI_MCA_oob_tcp_if_include={subnets}; {}",
            step_body(&start_mark(), launch.timeout_s, &command)
        ));
        let words = vec![
            Word::Own("srun".into()),
            Word::Own("--overlap".into()),
            self.jobid(),
            Word::Own(format!("--mpi={}", self.mpi.name())),
            Word::Own("--kill-on-bad-exit=1".into()),
            Word::Own("--chdir=/".into()),
            Word::Own("-m".into()),
            Word::Own("arbitrary".into()),
            Word::Own("-w".into()),
            Word::Data(nodes.join(",")),
            Word::Own(format!("-N{}", nodes.len())),
            Word::Own(format!("-n{}", nodes.len())),
            Word::Own("/bin/sh".into()),
            Word::Own("-c".into()),
            Word::Data(script),
        ];
        let command = line(&words)?;
        Ok(Written {
            node: launch.first,
            script: command.clone(),
            command,
        })
    }
}

/// What a dry run says about how the run is opened: under Slurm, the allocation (the exact
/// `salloc`, or the one given) and the shape of every one-task step.
/// How long `salloc` may wait for busy nodes before the allocation counts as refused.
pub const ALLOCATION_WAIT_S: u32 = 60;

pub fn opening(choice: &LauncherConfig, plan: &Plan) -> Vec<String> {
    let mut out = vec![
        "launcher slurm: one long-lived job step per node of one allocation carries every command on that node, started from this machine".to_string(),
    ];
    match choice.slurm.allocation {
        Some(job) => out.push(format!(
            "  allocation {job} (given): it must be RUNNING and hold the nodes; it is not released"
        )),
        None => {
            let names: Vec<&str> = plan.nodes.iter().map(|n| n.name.as_str()).collect();
            out.push(format!(
                "  allocate (the nodes a run needs; these for the whole plan): {}",
                display(&salloc(
                    &choice.slurm,
                    &names,
                    &format!("fabricplan-{}", plan.name),
                    ALLOCATION_WAIT_S
                ))
            ));
            out.push(
                "  released when the run ends, on error or interrupt too: scancel JOB".to_string(),
            );
        }
    }
    out.push(format!(
        "  each node's session step, started once before discovery (a round starts no step): {}",
        SlurmStyle::new(choice.slurm.allocation, choice.slurm.mpi).session_line("NODE")
    ));
    out.push(
        "  in it: probes, counter snapshots, pings, servers (stopped by the process group their session recorded) and clients (staged, released together); NCCL's ranks are one step of their own"
            .to_string(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launchers::slurm::plan::SlurmConfig;
    use crate::plan::{NoKinds, NodeId};
    use crate::render::launch::{MpiApp, MpiLaunch};
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    /// Values a hostile plan or host could hand over (the same spirit as the hostile templates
    /// test): substitutions, separators, quotes of both kinds, a newline, globs, an option.
    const PAYLOADS: &[&str] = &[
        "$(pwned)",
        "`pwned`",
        "x; pwned",
        "x && pwned",
        "x | pwned",
        "x\npwned",
        "'; pwned; '",
        "\"; pwned; \"",
        "x'\"'\"'$(pwned)",
        "> written-by-redirect",
        "*",
        "${IFS}pwned",
        "$HOME",
        "~root",
        "-o /tmp/fabricplan-hostile-option",
        "\\$(pwned)",
        "",
    ];

    fn plan(env: &BTreeMap<String, String>) -> Plan {
        let env_line: String = env
            .iter()
            .map(|(k, v)| format!("{k} = {}", toml::Value::from(v.clone())))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!(
            r#"format-version = 1
name = "s"
[[node]]
name = "spark-a"
env = {{ {env_line} }}
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = {{ a = "198.51.100.0/30", b = "203.0.113.0/30" }}
"#
        );
        match crate::plan::load_str(Path::new("s.toml"), &text, Path::new("."), &NoKinds) {
            Ok(l) => l.plan,
            // a control character is refused by validate (`x\npwned`); the launcher still
            // quotes it as data when it meets one
            Err(_) if env.values().any(|v| v.chars().any(char::is_control)) => {
                let mut p = plan(&BTreeMap::new());
                p.nodes[0].env = env.clone();
                p
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn words(line: &str) -> Vec<String> {
        shlex::split(line).unwrap_or_else(|| panic!("not one line of words: {line}"))
    }

    #[test]
    fn nodes_run_the_ssh_launchers_scripts_in_one_step_each() {
        let p = plan(&BTreeMap::new());
        let s = SlurmStyle::new(Some(77), SlurmMpi::Pmix);
        let a = NodeId(0);
        // a node's commands are the scripts the SSH launcher writes, run in its session step
        assert_eq!(
            s.server(&p, a, 8, "ib_write_bw -p 18515"),
            SshStyle.server(&p, a, 8, "ib_write_bw -p 18515")
        );
        assert_eq!(
            s.foreground(&p, a, 8, "ib_write_bw 198.51.100.1"),
            SshStyle.foreground(&p, a, 8, "ib_write_bw 198.51.100.1")
        );
        assert_eq!(s.oneshot(p.node(a), "cat x"), "cat x");
        // the step that carries them: one task on the node, in the allocation
        assert_eq!(
            s.task_argv("spark-a"),
            [
                "srun",
                "--overlap",
                "--jobid=77",
                "-w",
                "spark-a",
                "-N1",
                "-n1"
            ]
        );
        assert_eq!(
            s.task_argv("x; pwned")[4],
            "x; pwned",
            "a node's name is one word"
        );
        assert_eq!(
            SlurmStyle::new(None, SlurmMpi::Pmix).session_line("it's"),
            "srun --overlap --jobid=<allocation> -w 'it'\\''s' -N1 -n1 /bin/sh -c LOOP"
        );
    }

    #[test]
    fn step_marks_are_taken_off() {
        let (id, rest) = take_step_mark(
            "@fabricplan-step 12.3\nCouldn't connect\n@fabricplan-step 12.3\n@fabricplan-step 1.x\n",
        );
        assert_eq!(id.as_deref(), Some("12.3"));
        assert_eq!(rest, "Couldn't connect\n");
        assert!(is_step_id("4294967293.4294967293"));
        for bad in ["12", "12.", ".3", "12.3.4", "12.3; rm", "a.b", ""] {
            assert!(!is_step_id(bad), "{bad}");
        }
    }

    #[test]
    fn salloc_allocates_whole_nodes_and_keeps_them_on_a_failure() {
        let cfg = SlurmConfig {
            partition: Some("gpu".into()),
            account: Some("net-ops".into()),
            time_limit: Some("1:30:00".into()),
            ..SlurmConfig::default()
        };
        let argv = salloc(&cfg, &["spark-a", "spark-b"], "fabricplan-s", 60);
        assert_eq!(
            display(&argv),
            "salloc --no-shell --exclusive --no-kill --immediate=60 --job-name=fabricplan-s --nodes=2 -w spark-a,spark-b -p gpu -A net-ops -t 1:30:00"
        );
        assert_eq!(words(&display(&argv)), argv);
    }

    /// A directory with PATH stand-ins: `srun` records its arguments (NUL-separated) to `$ARGS`
    /// and runs the step's script (its last argument) as a task would, with Slurm's variables;
    /// `recorder` records its arguments and `$HOSTILE` to `$SEEN`; `pwned` leaves `$MARK`.
    fn stand_ins(dir: &Path) -> PathBuf {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let write = |name: &str, text: &str| {
            let p = bin.join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        write(
            "srun",
            "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$ARGS\"\nfor last; do :; done\nSLURM_JOB_ID=77 SLURM_STEP_ID=3 SLURMD_NODENAME=\"$NODE\" exec /bin/sh -c \"$last\"\n",
        );
        write(
            "recorder",
            "#!/bin/sh\nprintf '%s\\0' \"$@\" \"$HOSTILE\" > \"$SEEN\"\n",
        );
        write("pwned", "#!/bin/sh\n: > \"$MARK\"\n");
        bin
    }

    /// Run `line` as the launcher would (its words, no shell), with `srun` a stand-in.
    fn run_line(dir: &Path, bin: &Path, line: &str, node: &str) -> (Vec<String>, Vec<String>) {
        let w = words(line);
        let args = dir.join("args");
        let seen = dir.join("seen");
        let _ = std::fs::remove_file(&args);
        let _ = std::fs::remove_file(&seen);
        let mut child = std::process::Command::new(bin.join(&w[0]))
            .args(&w[1..])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("ARGS", &args)
            .env("SEEN", &seen)
            .env("MARK", dir.join("pwned-mark"))
            .env("NODE", node)
            .current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // a client waits for its release: one line
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(b"\n");
        let out = child.wait_with_output().unwrap();
        let split = |p: &Path| -> Vec<String> {
            std::fs::read(p)
                .map(|b| {
                    b.split(|c| *c == 0)
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect::<Vec<_>>()
                })
                .map(|mut v| {
                    v.pop();
                    v
                })
                .unwrap_or_default()
        };
        assert!(
            !dir.join("pwned-mark").exists(),
            "a value ran as a command:\n{line}\n{out:?}"
        );
        assert!(!dir.join("written-by-redirect").exists(), "{line}");
        (split(&args), split(&seen))
    }

    #[test]
    fn hostile_values_in_an_mpi_step_stay_data() {
        let dir = tempfile::tempdir().unwrap();
        let bin = stand_ins(dir.path());
        // a binary under a directory no shell word holds as it is
        let odd = dir.path().join("it's $(pwned) `pwned`; x");
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::copy(bin.join("recorder"), odd.join("all_reduce_perf")).unwrap();
        let binary = odd.join("all_reduce_perf").display().to_string();
        let p = plan(&BTreeMap::new());
        for payload in PAYLOADS {
            let env = Value::from(BTreeMap::from([(
                "HOSTILE".to_string(),
                Value::from(payload.to_string()),
            )]));
            let app = |n: usize| MpiApp {
                nodes: vec![NodeId(n)],
                hosts: vec![std::net::Ipv4Addr::new(198, 51, 100, n as u8 + 1)],
                env: env.clone(),
                binary: binary.clone(),
            };
            // one app for both ranks, and one per rank (told apart by SLURMD_NODENAME)
            for apps in [
                vec![MpiApp {
                    nodes: vec![NodeId(0), NodeId(1)],
                    ..app(0)
                }],
                vec![app(0), app(1)],
            ] {
                let launch = MpiLaunch {
                    first: NodeId(0),
                    apps,
                    subnets: vec!["198.51.100.0/30".into()],
                    args: vec!["-b".into(), payload.to_string()],
                    template: "nccl",
                    vars: Value::from(()),
                    timeout_s: 8,
                };
                let renderer = Renderer::new(&[], &BTreeMap::new());
                let w = SlurmStyle::new(Some(77), SlurmMpi::Pmi2)
                    .mpi(&p, &renderer, &launch)
                    .unwrap();
                let (argv, seen) = run_line(dir.path(), &bin, &w.script, "spark-b");
                assert!(argv.contains(&"--mpi=pmi2".to_string()), "{argv:?}");
                // the step makes nothing on the node: it runs in `/`
                assert!(argv.contains(&"--chdir=/".to_string()), "{argv:?}");
                assert!(!w.script.contains("mkdir"), "{}", w.script);
                let at = argv.iter().position(|a| a == "-w").unwrap();
                assert_eq!(argv[at + 1], "spark-a,spark-b");
                assert_eq!(seen, ["-b", payload, payload], "{}", w.script);
            }
        }
    }
}
