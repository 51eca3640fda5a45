//! iperf3 output. STUB: replaced by the parser work.
use super::{Status, ToolError};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IperfReport {
    pub status: Status,
    pub error: Option<ToolError>,
}
pub fn parse(_text: &str) -> IperfReport {
    IperfReport {
        status: Status::Unrecognized,
        error: None,
    }
}
impl IperfReport {
    pub fn summary(&self) -> String {
        String::new()
    }
}
