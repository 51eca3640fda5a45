//! `fabricplan validate PLAN...`

use std::path::PathBuf;

use super::{Stdout, load_or_report};
use crate::exit;

pub fn run(plans: &[PathBuf]) -> i32 {
    let mut out = Stdout::new();
    let mut code = exit::OK;
    for p in plans {
        match load_or_report(p) {
            Some(l) => {
                let s = crate::kinds::schedule(&l.plan);
                out.write(&format!(
                    "{}: ok ({} nodes, {} links, {} rounds{})\n",
                    p.display(),
                    l.plan.nodes.len(),
                    l.plan.segments.len(),
                    s.len(),
                    match l.warnings.warnings() {
                        0 => String::new(),
                        n => format!(", {n} warning(s)"),
                    }
                ));
            }
            None => code = exit::INVALID_PLAN,
        }
    }
    code
}
