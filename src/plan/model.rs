//! The validated plan: no spans, no raw strings where a type fits, nothing left for later
//! stages to re-check. IDs are indices into the plan's vectors.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::gate::GateSpec;
use crate::gate::threshold::{Metric, MetricSpec};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub struct NodeId(pub usize);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct SwitchId(pub usize);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct SegmentId(pub usize);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct IslId(pub usize);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ProfileId(pub usize);

/// A validated plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub description: Option<String>,
    /// The plan file, and its text (copied into run directories).
    pub path: PathBuf,
    pub text: String,
    pub ssh: SshDefaults,
    /// How commands reach the nodes (`[launcher]`).
    pub launcher: LauncherConfig,
    pub profiles: Vec<Profile>,
    pub nodes: Vec<Node>,
    pub switches: Vec<Switch>,
    pub isls: Vec<Isl>,
    pub cables: Vec<Cable>,
    /// Layer-2 segments, one subnet each: a direct or ring link half, or one half of a switched fabric.
    pub segments: Vec<Segment>,
    pub gates: BTreeMap<Metric, GateSpec>,
    pub tests: Tests,
    /// Template overrides by name (text already loaded).
    pub templates: BTreeMap<String, String>,
    pub capacity: CapacityConfig,
    pub sim: SimConfig,
    pub setup: Option<Setup>,
    /// The `[regression]` table: how far a value may move against a baseline.
    pub regression: Regression,
    /// `[gates.phy]`: port error counters.
    pub phy: PhyGates,
}

/// `[gates.phy]`: how far a port's error counters may rise over an interval (a run, the time
/// between two checks) before they are evidence against its cable.
///
/// Defaults from public vendor guidance: NVIDIA's fabric tools (ibdiagnet `--get_phy_info`,
/// its BER test's default threshold 10^-12) judge a link by its effective BER, the errors left
/// after forward error correction; links at 50G per lane and above use PAM4 with RS-FEC, which
/// corrects a raw BER of 2.4e-4 to 1e-12 or better (IEEE 802.3, as Dell's ConnectX KB 000286734
/// explains), so corrected bits are normal and never judged; mlx5's `link_down_events_phy`
/// counts the link going down, which the driver describes as port flapping to fix by replacing
/// the cable or transceiver. `max-retransmits-per-s` (1) is fabricplan's own choice, not a
/// vendor's figure (none publishes a health threshold for these counters): on a lossless RoCE
/// fabric they should not move between runs at all, one a second leaves room for the odd
/// retransmission of a busy node, far below where a driver gives up on a connection (WinOF-2's
/// `EXT_QP_MAX_RETRY_LIMIT`, default 50 within its period).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhyGates {
    pub max_effective_ber: f64,
    pub max_link_down_events: u64,
    pub max_retransmits_per_s: f64,
}

impl Default for PhyGates {
    fn default() -> Self {
        PhyGates {
            max_effective_ber: 1e-12,
            max_link_down_events: 0,
            max_retransmits_per_s: 1.0,
        }
    }
}

/// How far a value may move against its baseline before it is a regression, percent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Regression {
    /// `max-drop`: every metric not named (None: the default, 10%).
    pub max_drop_pct: Option<f64>,
    pub per_metric: BTreeMap<Metric, f64>,
}

/// The plan's `[ssh]` table, defaults filled in.
#[derive(Debug, Clone)]
pub struct SshDefaults {
    pub user: Option<String>,
    pub known_hosts: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub connect_timeout_s: u32,
    /// `max-connections`: connections being set up at once.
    pub max_connections: u32,
    /// `connect-attempts`: tries per node before it is unreachable.
    pub connect_attempts: u32,
    /// `retry-backoff-ms`: the wait before a node's second attempt, doubling after.
    pub retry_backoff_ms: u32,
}

impl SshDefaults {
    pub const CONNECT_TIMEOUT_S: u32 = 10;
    pub const MAX_CONNECTIONS: u32 = 8;
    pub const CONNECT_ATTEMPTS: u32 = 3;
    pub const RETRY_BACKOFF_MS: u32 = 250;
}

impl Default for SshDefaults {
    fn default() -> Self {
        SshDefaults {
            user: None,
            known_hosts: None,
            config: None,
            connect_timeout_s: Self::CONNECT_TIMEOUT_S,
            max_connections: Self::MAX_CONNECTIONS,
            connect_attempts: Self::CONNECT_ATTEMPTS,
            retry_backoff_ms: Self::RETRY_BACKOFF_MS,
        }
    }
}

/// `[launcher]`: which launcher a run uses unless the command line says otherwise, and the
/// Slurm launcher's settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LauncherConfig {
    pub kind: LauncherKind,
    pub slurm: crate::launchers::slurm::plan::SlurmConfig,
}

/// How commands reach the nodes: over SSH from this machine, as job steps of one Slurm
/// allocation, or on this machine itself.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum LauncherKind {
    // each value's words are clap's (the plan schema keeps a plain list of names, which the
    // plan's shape check reads)
    #[default]
    #[value(help = "Every command over SSH from this machine")]
    Ssh,
    #[value(
        help = "Every command a job step of one Slurm allocation (node names are Slurm node names)"
    )]
    Slurm,
    #[value(
        help = "Every node's commands on this machine, each node in a session of its own (a one-box plan)"
    )]
    Local,
}

impl LauncherKind {
    pub fn name(self) -> &'static str {
        match self {
            LauncherKind::Ssh => "ssh",
            LauncherKind::Slurm => "slurm",
            LauncherKind::Local => "local",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub half_rate_gbps: Option<f64>,
    pub port_rate_gbps: Option<f64>,
    /// The firmware its devices must run, when the plan pins one.
    pub firmware: Option<String>,
    /// GPUs on the CPU's memory: GDR 0 is expected of NCCL.
    pub unified_memory: bool,
    pub ports: Vec<ProfilePort>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProfilePort {
    pub name: String,
    pub halves: Vec<ProfileHalf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProfileHalf {
    pub name: String,
    pub device: String,
    pub netdev: String,
}

impl Profile {
    /// The built-in GB10 / DGX Spark profile (DOMAIN: hardware model).
    pub fn gb10() -> Profile {
        let half = |name: &str, device: &str, netdev: &str| ProfileHalf {
            name: name.into(),
            device: device.into(),
            netdev: netdev.into(),
        };
        Profile {
            name: "gb10".into(),
            half_rate_gbps: Some(111.9),
            port_rate_gbps: Some(196.0),
            firmware: None,
            unified_memory: true,
            ports: vec![
                ProfilePort {
                    name: "f0".into(),
                    halves: vec![
                        half("a", "rocep1s0f0", "enp1s0f0np0"),
                        half("b", "roceP2p1s0f0", "enP2p1s0f0np0"),
                    ],
                },
                ProfilePort {
                    name: "f1".into(),
                    halves: vec![
                        half("a", "rocep1s0f1", "enp1s0f1np1"),
                        half("b", "roceP2p1s0f1", "enP2p1s0f1np1"),
                    ],
                },
            ],
        }
    }

    pub fn port(&self, name: &str) -> Option<&ProfilePort> {
        self.ports.iter().find(|p| p.name == name)
    }

    pub fn half(&self, port: &str, half: &str) -> Option<&ProfileHalf> {
        self.port(port)?.halves.iter().find(|h| h.name == half)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SshTarget {
    /// An ssh_config alias, resolved at run time with `ssh -G`.
    Alias(String),
    /// An explicit host.
    Host {
        host: String,
        user: Option<String>,
        port: Option<u16>,
        identity_file: Option<PathBuf>,
    },
}

impl SshTarget {
    pub fn display(&self) -> String {
        match self {
            SshTarget::Alias(a) => a.clone(),
            SshTarget::Host {
                host, user, port, ..
            } => {
                let mut s = String::new();
                if let Some(u) = user {
                    s.push_str(u);
                    s.push('@');
                }
                s.push_str(host);
                if let Some(p) = port {
                    s.push_str(&format!(":{p}"));
                }
                s
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub name: String,
    pub ssh: SshTarget,
    pub profile: ProfileId,
    pub env: BTreeMap<String, String>,
    pub nccl_tests_dir: Option<String>,
    /// Pinned values per (port, half).
    pub pins: BTreeMap<(String, String), Pin>,
}

impl Node {
    /// A host outside any plan, reached by its ssh_config alias (`detect --host`): the first
    /// profile, no environment, nothing pinned.
    pub fn alias(id: NodeId, alias: &str) -> Node {
        Node {
            id,
            name: alias.to_string(),
            ssh: SshTarget::Alias(alias.to_string()),
            profile: ProfileId(0),
            env: BTreeMap::new(),
            nccl_tests_dir: None,
            pins: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Pin {
    pub device: Option<String>,
    pub netdev: Option<String>,
    pub gid_index: Option<u32>,
}

/// One half of one port of one node: the unit a cable lands on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub node: NodeId,
    pub port: String,
    pub half: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Switch {
    pub id: SwitchId,
    pub name: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Isl {
    pub id: IslId,
    pub name: String,
    pub a: SwitchId,
    pub b: SwitchId,
    pub capacity_gbps: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CableKind {
    Direct,
    Ring,
    Switched,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cable {
    pub name: String,
    pub kind: CableKind,
    pub segments: Vec<SegmentId>,
}

/// A layer-2 segment with its subnet.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub id: SegmentId,
    /// e.g. `stack.a`, `ring.l1.b`, `fabric.a`.
    pub name: String,
    pub cable: usize,
    pub half: String,
    pub subnet: Ipv4Net,
    pub members: Vec<Member>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub endpoint: Endpoint,
    pub address: Ipv4Addr,
    /// The switch this endpoint lands on (switched segments).
    pub switch: Option<SwitchId>,
    /// The switch's port it lands on, where the plan names it (`swp12`).
    pub switch_port: Option<String>,
}

/// Which way a pair's bandwidth is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// One way: the second end sends to the first (the declared flows, for declared rounds).
    One,
    /// Each way in turn, each alone: a transmit fault on either end shows.
    Both,
    /// Both ways at once (perftest's `-b`): the full-duplex sum.
    Bidirectional,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScheduleKind {
    PerLink,
    Rounds,
    AllPairs,
    /// `rounds` seeded random pairings of each switched segment (see [`Sampling`]).
    Sampled(Sampling),
}

/// `schedule = "sampled"`: how many random pairings, from which seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sampling {
    /// Pairings (each a round; each followed by its reverse with `direction = "both"`).
    pub rounds: u32,
    /// The pairings are a function of this seed and the plan: the same seed, the same rounds.
    pub seed: u64,
}

impl Sampling {
    /// Pairings when the plan gives no `rounds`.
    pub const DEFAULT_ROUNDS: u32 = 8;
    /// The seed when the plan gives none.
    pub const DEFAULT_SEED: u64 = 1;
}

/// A flow in a declared round: client sends to server.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub client: Endpoint,
    pub server: Endpoint,
    pub segment: SegmentId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredRound {
    pub name: String,
    pub flows: Vec<Flow>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tests {
    pub preflight: bool,
    /// Each test kind's validated sections, in plan order.
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CapacityConfig {
    pub efficiency: f64,
    pub switch_penalty_pct: f64,
}

impl Default for CapacityConfig {
    fn default() -> Self {
        CapacityConfig {
            efficiency: 0.82,
            switch_penalty_pct: 0.7,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimConfig {
    pub seed: u64,
    pub faults: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub packages: Vec<String>,
    pub build_nccl_tests: bool,
    pub nccl_tests_repo: Option<String>,
}

impl Plan {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }

    pub fn node_by_name(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    pub fn profile_of(&self, node: NodeId) -> &Profile {
        &self.profiles[self.nodes[node.0].profile.0]
    }

    pub fn segment(&self, id: SegmentId) -> &Segment {
        &self.segments[id.0]
    }

    /// `spark-a.f0.a`
    pub fn endpoint_name(&self, e: &Endpoint) -> String {
        format!("{}.{}.{}", self.node(e.node).name, e.port, e.half)
    }

    /// The flow from half `from` to half `to` (its half is the sender's), as a verdict
    /// carries it.
    pub fn flow_between(&self, from: &Endpoint, to: &Endpoint) -> crate::gate::flow::Flow {
        crate::gate::flow::Flow {
            src: self.node(from.node).name.clone(),
            src_port: from.port.clone(),
            dst: self.node(to.node).name.clone(),
            dst_port: to.port.clone(),
            half: from.half.clone(),
        }
    }

    /// The segment an endpoint is cabled into, and its member entry.
    pub fn member_of(&self, e: &Endpoint) -> Option<(&Segment, &Member)> {
        self.segments
            .iter()
            .find_map(|s| s.members.iter().find(|m| &m.endpoint == e).map(|m| (s, m)))
    }

    /// The device name for an endpoint: pinned, else `None` (discovered at run time).
    pub fn pinned(&self, e: &Endpoint) -> Pin {
        self.node(e.node)
            .pins
            .get(&(e.port.clone(), e.half.clone()))
            .cloned()
            .unwrap_or_default()
    }

    /// The profile's default device/netdev for an endpoint (what discovery expects first).
    pub fn profile_half(&self, e: &Endpoint) -> Option<&ProfileHalf> {
        self.profile_of(e.node).half(&e.port, &e.half)
    }
}

impl Plan {
    /// The sections of kind `key`, as the kind's type `T` (in plan order).
    pub fn sections<T: std::any::Any>(&self, key: &str) -> Vec<&T> {
        self.tests
            .sections
            .iter()
            .filter(|s| s.key == key)
            .filter_map(|s| s.data.downcast_ref::<T>())
            .collect()
    }

    /// The section of kind `key` (the first), as `T`.
    pub fn section<T: std::any::Any>(&self, key: &str) -> Option<&T> {
        self.sections(key).into_iter().next()
    }

    /// The gate of `metric`: the plan's, with every default validation filled in, or the
    /// metric's own default for a metric the plan was not validated with.
    pub fn gate(&self, metric: &MetricSpec) -> GateSpec {
        self.gates
            .get(&metric.metric)
            .cloned()
            .unwrap_or_else(|| GateSpec::default_for(metric))
    }
}

/// A kind's validated section: its own type, behind `Any`.
pub type SectionData = Arc<dyn Any + Send + Sync>;

/// One validated `[tests.<key>]` table.
#[derive(Clone)]
pub struct Section {
    pub key: &'static str,
    pub data: SectionData,
    /// Where it is in the plan.
    pub at: Range<usize>,
}

impl Debug for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Section({} at {:?})", self.key, self.at)
    }
}

impl PartialEq for Section {
    fn eq(&self, other: &Section) -> bool {
        self.key == other.key && self.at == other.at && Arc::ptr_eq(&self.data, &other.data)
    }
}
