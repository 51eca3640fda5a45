//! A flow's two ends as a gate names them.

use serde::Serialize;

use super::RunResults;

/// A flow's two ends, read from a gate: `spark-b.f0.a -> spark-a.f0.a` is client `spark-b`
/// port `f0` to server `spark-a` port `f0` on half `a`; a both-halves sum (`spark-b.f0 ->
/// spark-a.f0`) has half `both`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
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

/// The flow a gate names (`... CLIENT -> SERVER`, or `... END loopback`: from the end to
/// itself), with node names taken from `nodes` (a node name may hold dots). `None` when the
/// gate names no flow of those nodes.
pub fn flow_of(gate: &str, nodes: &[String]) -> Option<Flow> {
    let (src, dst) = match gate.split_once(" -> ") {
        Some((left, right)) => (
            left.split_whitespace().last()?,
            right.split_whitespace().next()?,
        ),
        // an end measured alone against its own NIC: the flow from it to itself
        None => {
            let end = gate.strip_suffix(" loopback")?.split_whitespace().last()?;
            (end, end)
        }
    };
    let end = |e: &str| -> Option<(String, String, String)> {
        // the longest node name that prefixes the endpoint
        let node = nodes
            .iter()
            .filter(|n| e.len() > n.len() + 1 && e.starts_with(n.as_str()))
            .filter(|n| e.as_bytes()[n.len()] == b'.')
            .max_by_key(|n| n.len())?;
        let rest = &e[node.len() + 1..];
        let (port, half) = match rest.split_once('.') {
            Some((p, h)) => (p.to_string(), h.to_string()),
            None => (rest.to_string(), "both".to_string()),
        };
        Some((node.clone(), port, half))
    };
    let (s, sp, sh) = end(src)?;
    let (d, dp, dh) = end(dst)?;
    if sh != dh {
        return None;
    }
    Some(Flow {
        src: s,
        src_port: sp,
        dst: d,
        dst_port: dp,
        half: sh,
    })
}

/// Every node name a run knows: discovery's, and every job's hosts.
pub fn node_names(r: &RunResults) -> Vec<String> {
    let mut v: Vec<String> = r.discovery.iter().map(|d| d.node.clone()).collect();
    let mut seen: std::collections::HashSet<String> = v.iter().cloned().collect();
    for j in &r.jobs {
        for h in &j.hosts {
            if seen.insert(h.clone()) {
                v.push(h.clone());
            }
        }
    }
    v
}
