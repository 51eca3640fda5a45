//! `fabricplan schema`

use super::{Outcome, Stdout};
use crate::exit;

pub fn run() -> Outcome {
    let mut out = Stdout::new();
    out.write(&crate::kinds::json_schema());
    Ok(exit::OK)
}
