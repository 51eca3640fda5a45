//! `fabricplan validate PLAN...`: every plan checked, each invalid one's diagnostics said as it
//! comes; a plan found invalid is the command's result (exit 2), not what kept it from one.

use std::path::PathBuf;

use super::{Outcome, Stdout, load};
use crate::exit;

pub fn run(plans: &[PathBuf]) -> Outcome {
    let mut out = Stdout::new();
    let mut code = exit::OK;
    for p in plans {
        match load(p) {
            Ok(l) => {
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
            Err(e) => {
                out.flush();
                e.report();
                code = e.code();
            }
        }
    }
    Ok(code)
}
