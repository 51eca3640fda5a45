//! The flow a verdict measures: its client's and its server's ends.

use serde::{Deserialize, Serialize};

/// A flow's two ends: `spark-b.f0.a -> spark-a.f0.a` is client `spark-b` port `f0` to server
/// `spark-a` port `f0` on half `a`; a both-halves sum (`spark-b.f0 -> spark-a.f0`) has half
/// `both`; an end measured alone (a loopback) is a flow from it to itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Flow {
    /// The client node (it sends).
    pub src: String,
    pub src_port: String,
    /// The server node (it receives).
    pub dst: String,
    pub dst_port: String,
    pub half: String,
}

impl Flow {
    /// `spark-b.f0.a`, or `spark-b.f0` for a sum.
    pub fn src_endpoint(&self) -> String {
        endpoint(&self.src, &self.src_port, &self.half)
    }

    pub fn dst_endpoint(&self) -> String {
        endpoint(&self.dst, &self.dst_port, &self.half)
    }
}

fn endpoint(node: &str, port: &str, half: &str) -> String {
    if half == "both" {
        format!("{node}.{port}")
    } else {
        format!("{node}.{port}.{half}")
    }
}
