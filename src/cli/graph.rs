//! `fabricplan graph PLAN`

use std::path::Path;

use super::{GraphFormat, Stdout, load_or_report};
use crate::{exit, topology};

pub fn run(plan: &Path, format: GraphFormat) -> i32 {
    let Some(l) = load_or_report(plan) else {
        return exit::INVALID_PLAN;
    };
    let mut out = Stdout::new();
    out.write(&match format {
        GraphFormat::Dot => topology::to_dot(&l.plan),
        GraphFormat::Mermaid => topology::to_mermaid(&l.plan),
    });
    exit::OK
}
