//! Every interpolated field of every built-in template, given shell metacharacters, renders
//! to a command that a real shell runs as data: the command is run under a harmless PATH (a
//! folder of stand-ins that record their arguments, and a `pwned` that leaves a mark), and
//! the value must arrive as the very argument it was, with nothing else run or written.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use fabricplan::render::{Renderer, Template};
use minijinja::Value;

/// Values a hostile plan or a hostile host could put into a field: command substitution in
/// both spellings, separators, pipes, redirections, quotes of both kinds, a newline, globs,
/// parameter and arithmetic expansion, tilde, an option, a NUL-free control byte.
const PAYLOADS: &[&str] = &[
    "$(pwned)",
    "`pwned`",
    "x; pwned",
    "x && pwned",
    "x || pwned",
    "x | pwned",
    "x & pwned",
    "x\npwned",
    "'; pwned; '",
    "\"; pwned; \"",
    "x'\"'\"'$(pwned)",
    "> written-by-redirect",
    "< /etc/passwd",
    "*",
    "?",
    "[a-z]*",
    "${IFS}pwned",
    "$((1+1))",
    "$HOME",
    "~root",
    "-o /tmp/fabricplan-hostile-option",
    "\\$(pwned)",
    "{a,b}",
    "x\u{1b}]0;title\u{7}",
    "",
];

/// The stand-ins: every program a template starts records its arguments (NUL-separated) to
/// `$ARGS`; `pwned` leaves `$MARK`. Shell builtins only, so nothing else is needed on PATH.
fn stand_ins(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$ARGS\"\n";
    for tool in [
        "ib_write_bw",
        "ib_read_bw",
        "ib_write_lat",
        "iperf3",
        "ping",
        "mpirun",
        "hostname",
        "all_reduce_perf",
    ] {
        write_exec(&bin.join(tool), record);
    }
    write_exec(&bin.join("pwned"), "#!/bin/sh\n: > \"$MARK\"\n");
    bin
}

fn write_exec(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A benign value for each variable of the built-in templates, by the shape the runner gives.
fn benign(name: &str) -> Value {
    match name {
        "apps" => Value::from(vec![app("np", "1")]),
        "hosts" | "subnets" => Value::from(vec!["198.51.100.1"]),
        "bidirectional" | "jumbo" => Value::from(true),
        "tool" => Value::from("ib_write_bw"),
        "binary" => Value::from("all_reduce_perf"),
        "env" => Value::from(BTreeMap::from([("NCCL_DEBUG", "INFO")])),
        _ => Value::from("1"),
    }
}

/// One application context of the NCCL template, with `field` set to `value` (an env field
/// named `env-key`/`env-value` sets the one variable's name or value).
fn app(field: &str, value: &str) -> Value {
    let pick = |f: &str, d: &str| {
        if f == field {
            value.to_string()
        } else {
            d.to_string()
        }
    };
    let mut env = BTreeMap::new();
    env.insert(pick("env-key", "NCCL_DEBUG"), pick("env-value", "INFO"));
    Value::from(BTreeMap::from([
        ("np", Value::from(pick("np", "1"))),
        ("hosts", Value::from(vec![pick("hosts", "198.51.100.1")])),
        ("env", Value::from(env)),
        ("binary", Value::from(pick("binary", "all_reduce_perf"))),
    ]))
}

/// Every (variable, how to set it to a payload) of a template: scalars directly, lists through
/// their one element, the NCCL apps through each of their fields.
/// Sets one field to a payload: the variable to replace, and its new value.
type Setter = Box<dyn Fn(&str) -> (String, Value)>;

fn fields(t: &Template) -> Vec<(String, Setter)> {
    let mut out: Vec<(String, Setter)> = Vec::new();
    for v in t.variables {
        let name = v.to_string();
        match *v {
            // truth values only steer the template; they are never interpolated
            "bidirectional" | "jumbo" => {}
            "apps" => {
                for f in ["np", "hosts", "env-key", "env-value", "binary"] {
                    out.push((
                        format!("apps[].{f}"),
                        Box::new(move |p| ("apps".into(), Value::from(vec![app(f, p)]))),
                    ));
                }
            }
            "hosts" | "subnets" => {
                let n = name.clone();
                out.push((
                    format!("{name}[]"),
                    Box::new(move |p| (n.clone(), Value::from(vec![p.to_string()]))),
                ));
            }
            "env" => {
                let n = name.clone();
                out.push((
                    name,
                    Box::new(move |p| {
                        (
                            n.clone(),
                            Value::from(BTreeMap::from([("K", p.to_string())])),
                        )
                    }),
                ));
            }
            _ => {
                let n = name.clone();
                out.push((name, Box::new(move |p| (n.clone(), Value::from(p)))));
            }
        }
    }
    out
}

/// The argument the payload must arrive as, for a field set to `p`.
fn expected_arg(field: &str, p: &str) -> String {
    match field {
        "apps[].env-key" => format!("{p}=INFO"),
        "apps[].env-value" => format!("NCCL_DEBUG={p}"),
        "env" => format!("K={p}"),
        _ => p.to_string(),
    }
}

struct Ran {
    args: Option<Vec<String>>,
    marked: bool,
    stray: Vec<String>,
    stderr: String,
}

fn run_harmless(bin: &Path, work: &Path, script: &str) -> Ran {
    let cwd = work.join("cwd");
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    let args = work.join("args");
    let mark = work.join("mark");
    let _ = std::fs::remove_file(&args);
    let _ = std::fs::remove_file(&mark);
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", bin)
        .env("HOME", work.join("home"))
        .env("ARGS", &args)
        .env("MARK", &mark)
        .current_dir(&cwd)
        .output()
        .unwrap();
    let stray = std::fs::read_dir(&cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    Ran {
        // each argument ends in a NUL: split, and drop what follows the last one
        args: std::fs::read(&args).ok().map(|b| {
            let text = String::from_utf8_lossy(&b).into_owned();
            let mut args: Vec<String> = text.split('\0').map(str::to_string).collect();
            args.pop();
            args
        }),
        marked: mark.exists(),
        stray,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn every_field_of_every_template_reaches_the_tool_as_data() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = stand_ins(tmp.path());
    let templates = fabricplan::kinds::templates();
    assert!(templates.len() >= 9, "{templates:?}");
    let builtin = Renderer::new(&templates, &BTreeMap::new());
    let mut checked = 0;
    for t in &templates {
        let used = minijinja::Environment::new()
            .template_from_str(t.source)
            .unwrap()
            .undeclared_variables(false);
        for (field, set) in fields(t) {
            // a variable the built-in leaves out is one an override may use: render it in one
            let var = field.split(['[', '.']).next().unwrap_or("").to_string();
            let overridden;
            let renderer = if used.contains(&var) {
                &builtin
            } else {
                let source = match var.as_str() {
                    "hosts" | "subnets" => format!("ib_write_bw {{{{ {var} | join(\",\") }}}}"),
                    "env" => "ib_write_bw{% for k, v in env | items %} {{ k }}={{ v }}{% endfor %}"
                        .to_string(),
                    _ => format!("ib_write_bw {{{{ {var} }}}}"),
                };
                overridden =
                    Renderer::new(&templates, &BTreeMap::from([(t.name.to_string(), source)]));
                &overridden
            };
            for p in PAYLOADS {
                let mut ctx: BTreeMap<String, Value> = t
                    .variables
                    .iter()
                    .map(|v| (v.to_string(), benign(v)))
                    .collect();
                let (k, v) = set(p);
                ctx.insert(k, v);
                let script = renderer
                    .render(t.name, Value::from(ctx))
                    .unwrap_or_else(|e| panic!("{} {field} = {p:?}: {e}", t.name));
                let ran = run_harmless(&bin, tmp.path(), &script);
                let what = format!("{} {field} = {p:?}\n  {script}\n  {}", t.name, ran.stderr);
                assert!(!ran.marked, "a payload ran: {what}");
                assert!(ran.stray.is_empty(), "wrote {:?}: {what}", ran.stray);
                if field == "tool" && used.contains("tool") {
                    // the tool's own name, quoted: no such program, nothing runs
                    assert!(ran.args.is_none(), "{what}");
                } else {
                    let args = ran
                        .args
                        .unwrap_or_else(|| panic!("the tool did not run: {what}"));
                    let want = expected_arg(&field, p);
                    let arrived = args.contains(&want);
                    assert!(arrived, "`{want}` not one argument of {args:?}: {what}");
                }
                checked += 1;
            }
        }
    }
    assert!(
        !Path::new("/tmp/fabricplan-hostile-option").exists(),
        "an option-shaped value was obeyed"
    );
    eprintln!("{checked} hostile renderings run under a harmless PATH");
    assert!(checked > 500, "{checked}");
}
