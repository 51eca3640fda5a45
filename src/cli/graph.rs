//! `fabricplan graph PLAN`

use std::path::Path;

use super::{GraphFormat, Outcome, Stdout, load};
use crate::{exit, topology};

pub fn run(plan: &Path, format: GraphFormat) -> Outcome {
    let l = load(plan)?;
    let mut out = Stdout::new();
    out.write(&match format {
        GraphFormat::Dot => topology::to_dot(&l.plan),
        GraphFormat::Mermaid => topology::to_mermaid(&l.plan),
        GraphFormat::Text => topology::to_text(&l.plan),
    });
    Ok(exit::OK)
}
