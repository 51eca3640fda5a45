//! Parts: the things a finding names. A gate is evidence; a part is what a person fixes.
//!
//! Every verdict says which parts its evidence implicates (a FAIL or WARN: one of them is
//! broken) and which it clears (an OK: each of them worked, up to what was measured). The
//! diagnosis chooses the fewest parts that explain every failing verdict; each becomes one
//! finding with the command that fixes it on its host.
//!
//! Parts name plan entities by their plan names (`spark-b`, `f0`, `b`, `sw-a-sw-b`); the
//! netdev and device behind a half are added to its label from discovery, not kept in its
//! identity (a crossed cable moves them).

use serde::{Deserialize, Serialize};

/// Software on a node that a finding can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Software {
    /// NCCL's set-up on the node: its libraries, plugin, environment and devices as NCCL sees
    /// them.
    Nccl,
    /// Open MPI on the node (orted, its network selection).
    Mpi,
    /// Slurm's node daemon.
    Slurmd,
    /// The node's sshd, as fabricplan or mpirun reach it.
    Sshd,
    /// The test tools on the node (perftest, nccl-tests, iperf3): missing, or refusing an option.
    Tools,
}

impl Software {
    pub fn name(self) -> &'static str {
        match self {
            Software::Nccl => "NCCL",
            Software::Mpi => "Open MPI",
            Software::Slurmd => "slurmd",
            Software::Sshd => "sshd",
            Software::Tools => "test tools",
        }
    }
}

/// What fabricplan itself reaches the nodes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reach {
    /// The Slurm controller (allocation, step launch as a whole).
    SlurmController,
    /// SSH from where fabricplan runs (its configuration, keys, known_hosts).
    Ssh,
}

/// One part of the fabric, of a node, or of the machinery around them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "kebab-case")]
pub enum Part {
    /// One half of a port: its own PCIe function, RDMA device and netdev (`spark-b.f0.b`).
    Half {
        node: String,
        port: String,
        half: String,
    },
    /// A port (QSFP cage) as a whole (`spark-b.f0`).
    Port { node: String, port: String },
    /// A planned cable, by its two ends as planned: `NODE.PORT` or a switch name.
    Cable { a: String, b: String },
    /// An inter-switch link, by its plan name (`sw-a-sw-b`).
    Isl { name: String },
    /// A switch.
    Switch { name: String },
    /// A node as a whole: its kernel, memory, power (`spark-b`).
    Node { node: String },
    /// Software on a node (`slurmd on spark-2`).
    Software { node: String, software: Software },
    /// fabricplan's own reach: the Slurm controller, SSH from the controller.
    Reach { reach: Reach },
    /// The plan itself: a gate, a template or a setting that cannot be met as written.
    Plan { what: String },
}

impl Part {
    pub fn half(node: &str, port: &str, half: &str) -> Part {
        Part::Half {
            node: node.to_string(),
            port: port.to_string(),
            half: half.to_string(),
        }
    }

    pub fn port(node: &str, port: &str) -> Part {
        Part::Port {
            node: node.to_string(),
            port: port.to_string(),
        }
    }

    pub fn node(node: &str) -> Part {
        Part::Node {
            node: node.to_string(),
        }
    }

    pub fn isl(name: &str) -> Part {
        Part::Isl {
            name: name.to_string(),
        }
    }

    pub fn software(node: &str, software: Software) -> Part {
        Part::Software {
            node: node.to_string(),
            software,
        }
    }

    /// What a failure to run anything on `node` implicates, by its trap: the node's slurmd when
    /// Slurm cannot use it, the Slurm controller when it refused the allocation, else the node's
    /// sshd (down, refused, or the node itself off).
    pub fn reach_of(node: &str, trap: crate::gate::trap::Trap) -> Part {
        use crate::gate::trap::Trap;
        match trap {
            Trap::SlurmNodeUnavailable | Trap::SlurmStepLaunch => {
                Part::software(node, Software::Slurmd)
            }
            Trap::SlurmAllocationRefused | Trap::SlurmTimeLimit => Part::Reach {
                reach: Reach::SlurmController,
            },
            _ => Part::software(node, Software::Sshd),
        }
    }

    /// A cable by its two planned ends, in a canonical order (so either end's view is equal).
    pub fn cable(a: &str, b: &str) -> Part {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        Part::Cable {
            a: a.to_string(),
            b: b.to_string(),
        }
    }

    /// The node whose host a fix for this part runs on, where there is one.
    pub fn node_name(&self) -> Option<&str> {
        match self {
            Part::Half { node, .. }
            | Part::Port { node, .. }
            | Part::Node { node }
            | Part::Software { node, .. } => Some(node),
            Part::Cable { .. }
            | Part::Isl { .. }
            | Part::Switch { .. }
            | Part::Reach { .. }
            | Part::Plan { .. } => None,
        }
    }

    /// Whether this part lies within `other` (a half within its port and node, a port within
    /// its node, a node's software within the node). A part is within itself.
    pub fn within(&self, other: &Part) -> bool {
        if self == other {
            return true;
        }
        match (self, other) {
            (Part::Half { node, port, .. }, Part::Port { node: n2, port: p2 }) => {
                node == n2 && port == p2
            }
            (Part::Half { node, .. } | Part::Port { node, .. }, Part::Node { node: n2 }) => {
                node == n2
            }
            (Part::Software { node, .. }, Part::Node { node: n2 }) => node == n2,
            _ => false,
        }
    }

    /// The part's short name: `spark-b.f0.b`, `spark-b.f0`, `spark-a.f0 -- spark-b.f1`,
    /// `ISL sw-a-sw-b`, `switch sw-a`, `spark-b`, `slurmd on spark-2`, `the Slurm controller`,
    /// `SSH from this machine`, `the plan: ...`.
    pub fn name(&self) -> String {
        match self {
            Part::Half { node, port, half } => format!("{node}.{port}.{half}"),
            Part::Port { node, port } => format!("{node}.{port}"),
            Part::Cable { a, b } => format!("cable {a} -- {b}"),
            Part::Isl { name } => format!("ISL {name}"),
            Part::Switch { name } => format!("switch {name}"),
            Part::Node { node } => node.clone(),
            Part::Software { node, software } => format!("{} on {node}", software.name()),
            Part::Reach {
                reach: Reach::SlurmController,
            } => "the Slurm controller".to_string(),
            Part::Reach { reach: Reach::Ssh } => "SSH from this machine".to_string(),
            Part::Plan { what } => format!("the plan: {what}"),
        }
    }
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_a_person_says_them() {
        assert_eq!(Part::half("spark-b", "f0", "b").name(), "spark-b.f0.b");
        assert_eq!(Part::isl("sw-a-sw-b").name(), "ISL sw-a-sw-b");
        assert_eq!(
            Part::software("spark-2", Software::Slurmd).name(),
            "slurmd on spark-2"
        );
        assert_eq!(
            Part::cable("spark-b.f0", "spark-a.f1"),
            Part::cable("spark-a.f1", "spark-b.f0")
        );
    }

    #[test]
    fn a_half_lies_within_its_port_and_node_only() {
        let h = Part::half("a", "f0", "b");
        assert!(h.within(&Part::port("a", "f0")));
        assert!(h.within(&Part::node("a")));
        assert!(!h.within(&Part::port("a", "f1")));
        assert!(!h.within(&Part::node("b")));
        assert!(!Part::node("a").within(&h));
    }

    #[test]
    fn serialises_tagged_by_part() {
        let j = serde_json::to_string(&Part::half("a", "f0", "b")).unwrap();
        assert_eq!(j, r#"{"part":"half","node":"a","port":"f0","half":"b"}"#);
        let back: Part = serde_json::from_str(&j).unwrap();
        assert_eq!(back, Part::half("a", "f0", "b"));
    }
}
