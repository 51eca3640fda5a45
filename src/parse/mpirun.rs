//! mpirun output. STUB: replaced by the parser work.
use super::{Status, ToolError};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MpirunReport { pub status: Status, pub error: Option<ToolError> }
pub fn parse(_text: &str) -> MpirunReport { MpirunReport { status: Status::Unrecognized, error: None } }
impl MpirunReport { pub fn summary(&self) -> String { String::new() } }
