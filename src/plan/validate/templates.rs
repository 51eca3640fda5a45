//! `[templates.<name>]`: overrides of the built-in command templates, checked at load time.

use std::collections::BTreeMap;

use toml::Spanned;

use super::settings::resolve_path;
use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::raw::*;
use crate::plan::section::Catalog;

pub(super) fn templates(
    ctx: &mut Ctx,
    raw: &BTreeMap<Spanned<String>, RawTemplate>,
    catalog: &dyn Catalog,
) -> BTreeMap<String, String> {
    let names = catalog.template_names();
    let mut out = BTreeMap::new();
    for (name_spanned, t) in raw {
        let name = name_spanned.get_ref();
        let at = t
            .inline
            .as_ref()
            .map(span)
            .or_else(|| t.path.as_ref().map(span))
            .unwrap_or_else(|| span(name_spanned));
        if !names.contains(&name.as_str()) {
            let mut p = Problem::error(
                "plan::unknown-template",
                format!("`[templates.{name}]` overrides no built-in template"),
            )
            .at(span(name_spanned), "no such template");
            p = match did_you_mean(name, names.iter().copied()) {
                Some(s) => p.help(format!("did you mean `{s}`?")),
                None => p.help(format!("templates: {}", names.join(", "))),
            };
            ctx.push(p);
            continue;
        }
        let source = match (&t.inline, &t.path) {
            (Some(i), None) => i.get_ref().clone(),
            (None, Some(p)) => {
                let full = resolve_path(&ctx.base_dir, p.get_ref());
                match std::fs::read_to_string(&full) {
                    Ok(s) => s,
                    Err(e) => {
                        ctx.push(
                            Problem::error(
                                "plan::template-path",
                                format!("template file `{}` cannot be read: {e}", p.get_ref()),
                            )
                            .at(span(p), "not found")
                            .help(format!(
                                "paths are relative to the plan file's folder (looked for `{}`)",
                                full.display()
                            )),
                        );
                        continue;
                    }
                }
            }
            _ => {
                ctx.push(
                    Problem::error(
                        "plan::template",
                        format!("`[templates.{name}]` needs exactly one of `inline` and `path`"),
                    )
                    .at(span(name_spanned), "this override")
                    .help("`inline = \"...\"` or `path = \"templates/bw.j2\"`"),
                );
                continue;
            }
        };
        if let Err(msg) = catalog.check_template(name, &source) {
            ctx.push(
                Problem::error(
                    "plan::template-variable",
                    format!("template `{name}`: {msg}"),
                )
                .at(at, "this template")
                .help(format!(
                    "variables available to `{name}`: {}",
                    catalog.template_variables(name).join(", ")
                )),
            );
            continue;
        }
        out.insert(name.clone(), source);
    }
    out
}
