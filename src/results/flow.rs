//! A flow's two ends: as a verdict carries them, or, for results written before verdicts
//! carried them, as its gate names them.

use super::RunResults;
pub use crate::gate::flow::Flow;
use crate::gate::judge::Verdict;

/// The flow a verdict is about: the one it carries, else the one its gate names (results
/// written before verdicts carried their flow).
pub fn flow_of_verdict(v: &Verdict, nodes: &[String]) -> Option<Flow> {
    v.flow.clone().or_else(|| flow_of(&v.gate, nodes))
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

#[cfg(test)]
mod tests {
    use super::{Flow, flow_of, flow_of_verdict};
    use crate::gate::judge::{Outcome, Verdict};

    /// A verdict's own flow comes first; results written before verdicts carried one still
    /// have theirs read from the gate.
    #[test]
    fn a_verdicts_flow_is_its_own_else_its_gates() {
        let n = nodes(&["spark-a", "spark-b"]);
        let own = Flow {
            src: "spark-b".into(),
            src_port: "f1".into(),
            dst: "spark-a".into(),
            dst_port: "f1".into(),
            half: "b".into(),
        };
        let gate = "rdma-bw spark-b.f0.a -> spark-a.f0.a";
        let v = Verdict::check(gate, Outcome::Ok, "", None);
        assert_eq!(flow_of_verdict(&v, &n), flow_of(gate, &n));
        let v = v.on_flow(Some(own.clone()));
        assert_eq!(flow_of_verdict(&v, &n), Some(own));
    }

    fn nodes(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flows_from_gates() {
        let n = nodes(&["spark-a", "spark-b"]);
        let f = flow_of("rdma-bw spark-b.f0.a -> spark-a.f0.a", &n).unwrap();
        assert_eq!(
            (
                f.src.as_str(),
                f.src_port.as_str(),
                f.dst.as_str(),
                f.half.as_str()
            ),
            ("spark-b", "f0", "spark-a", "a")
        );
        assert_eq!(f.src_endpoint(), "spark-b.f0.a");
        let sum = flow_of("rdma-bw-both spark-b.f0 -> spark-a.f0", &n).unwrap();
        assert_eq!(sum.half, "both");
        assert_eq!(sum.dst_endpoint(), "spark-a.f0");
        // a declared round's name sits between the kind and the flow
        let n6 = nodes(&["gb10-01", "gb10-05"]);
        let r = flow_of("rdma-bw R2b gb10-05.f0.a -> gb10-01.f0.a", &n6).unwrap();
        assert_eq!((r.src.as_str(), r.dst.as_str()), ("gb10-05", "gb10-01"));
        // an end measured alone: from it to itself
        let l = flow_of("R6 rdma-bw spark-b.f0.a loopback", &n).unwrap();
        assert_eq!(
            (l.src_endpoint(), l.dst_endpoint()),
            ("spark-b.f0.a".to_string(), "spark-b.f0.a".to_string())
        );
        assert_eq!(flow_of("rdma-bw spark-b.f0.a looped", &n), None);
        // dotted node names: the longest name wins
        let nd = nodes(&["rack1", "rack1.n1", "rack1.n2"]);
        let d = flow_of("x rack1.n1.f0.b -> rack1.n2.f1.b", &nd).unwrap();
        assert_eq!((d.src.as_str(), d.src_port.as_str()), ("rack1.n1", "f0"));
        assert!(flow_of("mtu spark-a.f0.a", &n).is_none());
        assert!(flow_of("ping x.f0.a -> y.f0.a", &n).is_none());
    }
}
