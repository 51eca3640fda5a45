//! perftest (ib_*_bw, ib_*_lat) output. STUB: replaced by the parser work.
use super::{Status, ToolError};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BwReport {
    pub status: Status,
    pub error: Option<ToolError>,
}
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatReport {
    pub status: Status,
    pub error: Option<ToolError>,
}
pub fn parse_bw(_text: &str) -> BwReport {
    BwReport {
        status: Status::Unrecognized,
        error: None,
    }
}
pub fn parse_lat(_text: &str) -> LatReport {
    LatReport {
        status: Status::Unrecognized,
        error: None,
    }
}
impl BwReport {
    pub fn summary(&self) -> String {
        String::new()
    }
}
impl LatReport {
    pub fn summary(&self) -> String {
        String::new()
    }
}
