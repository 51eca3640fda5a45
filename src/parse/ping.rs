//! ping output. STUB: replaced by the parser work.
use super::{Status, ToolError};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PingReport {
    pub status: Status,
    pub error: Option<ToolError>,
}
pub fn parse(_text: &str) -> PingReport {
    PingReport {
        status: Status::Unrecognized,
        error: None,
    }
}
impl PingReport {
    pub fn summary(&self) -> String {
        String::new()
    }
}
