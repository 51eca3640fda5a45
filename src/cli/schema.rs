//! `fabricplan schema`

use super::Stdout;
use crate::exit;

pub fn run() -> i32 {
    let mut out = Stdout::new();
    out.write(&crate::kinds::json_schema());
    exit::OK
}
