//! Command lines from templates: built-in minijinja templates (one `.j2` per command, included
//! at compile time, overridable from the plan) and the fixed wrappers that make remote runs safe
//! (servers, remote timeouts, the marks read back).
//!
//! Every value interpolated into a command is shell-quoted by the environment's formatter;
//! `|safe` (or a value built with [`safe`]) is the explicit opt-out, used only for values this
//! module constructs itself (placeholders). Templates are checked at plan load time against the
//! variables their job provides.

pub mod job;
pub mod launch;
pub(crate) mod quote;
pub mod wrap;

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

/// An argument vector as one line a shell would split back into it: each word quoted.
pub fn display(argv: &[String]) -> String {
    argv.iter()
        .map(|a| quote(a).unwrap_or_else(|| "<NUL>".into()))
        .collect::<Vec<_>>()
        .join(" ")
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
