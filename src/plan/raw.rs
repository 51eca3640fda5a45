//! The plan exactly as written: serde mirrors of the TOML with spans on every value a
//! diagnostic may point at. Strict: unknown keys are rejected (a misspelled threshold key
//! silently ignored is exactly the plausible-but-wrong verdict fabricplan exists to prevent).
//! Nothing here is checked beyond TOML types; `validate` does that.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::model::LauncherKind;
use crate::launchers::slurm::plan::{RawJobId, RawTimeLimit, SlurmMpiSchema};

/// A fabric plan: nodes, cables, gates and tests of one site. Kept in git; one per site.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawPlan {
    /// Plan format version. This fabricplan reads version 1 (the schema admits 1 to 65535, so
    /// a later version is named as such).
    #[schemars(with = "u32", example = 1, range(min = 1, max = 65535))]
    pub format_version: Spanned<u32>,
    /// Site name, used in run directories and reports. Safe characters only: letters, digits, `-`, `_`, `.`.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// SSH settings that apply to every node.
    #[serde(default)]
    pub ssh: Option<RawSshDefaults>,
    /// How commands reach the nodes: over SSH from this machine (the default) or as Slurm job
    /// steps.
    #[serde(default)]
    pub launcher: Option<RawLauncher>,
    /// Hardware profiles beyond the built-in `gb10`.
    #[serde(default)]
    pub profile: Vec<RawProfile>,
    /// The machines of the fabric.
    #[serde(default)]
    pub node: Vec<RawNode>,
    /// Switches of a switched fabric.
    #[serde(default)]
    pub switch: Vec<RawSwitch>,
    /// Inter-switch links.
    #[serde(default)]
    pub isl: Vec<RawIsl>,
    /// Cables: `direct`, `ring` or `switched`.
    #[serde(default)]
    pub cable: Vec<RawCable>,
    /// Pass and warn thresholds per metric; DOMAIN defaults apply to anything not given.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawGate>")]
    pub gates: BTreeMap<Spanned<String>, RawGate>,
    /// What to measure and how to schedule it.
    #[serde(default)]
    pub tests: RawTests,
    /// Overrides of the built-in command templates, by template name.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawTemplate>")]
    pub templates: BTreeMap<Spanned<String>, RawTemplate>,
    /// The capacity model's knobs (expected values).
    #[serde(default)]
    pub capacity: Option<RawCapacity>,
    /// Faults injected when the plan runs on the simulated fabric (`--sim`).
    #[serde(default)]
    pub sim: Option<RawSim>,
    /// Optional setup stage, only run with `fabricplan run --setup`.
    #[serde(default)]
    pub setup: Option<RawSetup>,
    /// How far a value may move against a baseline run (`run --baseline`, `compare`, `report`)
    /// before it is a regression: `max-drop` for every metric, or per metric name (`rdma-bw`,
    /// `rdma-lat`, `nccl-busbw`, ...). A bandwidth regresses when it drops by more, a latency
    /// or a time when it rises by more. Default 10%.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawPct>")]
    pub regression: BTreeMap<Spanned<String>, Spanned<RawPct>>,
}

/// A percentage, more than 0: `"5%"` or `5`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawPct {
    /// `"5%"`.
    Text(String),
    /// `5`, meaning 5%.
    Number(f64),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawSshDefaults {
    /// Default login user.
    pub user: Option<String>,
    /// known_hosts file to verify host keys against (relative to the plan file). Default: ~/.ssh/known_hosts.
    pub known_hosts: Option<String>,
    /// ssh_config file used to resolve aliases (`ssh -G -F FILE`). Default: the user's.
    pub config: Option<String>,
    /// Connect timeout in seconds, 1 to 300 (default 10).
    #[schemars(range(min = 1, max = 300))]
    pub connect_timeout_s: Option<u32>,
    /// SSH connections being set up at once, all nodes together, 1 to 1024 (default 8): a TCP
    /// connect, key exchange and authentication each; established connections do not count. 8
    /// stays under sshd's `MaxStartups` (10) even with every node behind one gateway; 1024 is
    /// the usual open-file limit.
    #[schemars(range(min = 1, max = 1024))]
    pub max_connections: Option<u32>,
    /// Attempts to connect to a node before it is unreachable, 1 to 10 (default 3); a refused
    /// host key or failed authentication is never retried.
    #[schemars(range(min = 1, max = 10))]
    pub connect_attempts: Option<u32>,
    /// Wait before a node's second connect attempt in milliseconds, 10 to 10000 (default 250);
    /// each further wait doubles, up to 30 s, and is drawn between half and all of that, apart
    /// for each node.
    #[schemars(range(min = 10, max = 10000))]
    pub retry_backoff_ms: Option<u32>,
}

/// `[launcher]`: how every command reaches its node. Every key but `kind` is a setting of the
/// Slurm launcher and needs `kind = "slurm"` (`fabricplan run --launcher ssh` still runs such a
/// plan over SSH).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawLauncher {
    /// `ssh` (default: every command over SSH from this machine) or `slurm` (every command a
    /// job step of one allocation; node names are Slurm node names).
    #[serde(default)]
    #[schemars(with = "Option<LauncherKind>")]
    pub kind: Option<Spanned<String>>,
    /// slurm: the partition to allocate in (`salloc -p`). Default: the cluster's default
    /// partition.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub partition: Option<Spanned<String>>,
    /// slurm: the account the allocation is charged to (`salloc -A`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub account: Option<Spanned<String>>,
    /// slurm: the allocation's time limit, in Slurm's format (`salloc -t`): minutes (`30`),
    /// `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM` or `D-HH:MM:SS`. It also bounds how long the
    /// allocation outlives a fabricplan that was killed outright. Default: the partition's.
    #[serde(default)]
    #[schemars(with = "Option<RawTimeLimit>")]
    pub time_limit: Option<Spanned<RawTimeLimit>>,
    /// slurm: run in this existing allocation (its job id) instead of allocating the plan's
    /// nodes; fabricplan neither allocates nor releases it. Default: fabricplan allocates
    /// exactly the nodes the run needs (`salloc --no-shell -w ...`) and releases them when the
    /// run ends.
    #[serde(default)]
    #[schemars(with = "Option<RawJobId>")]
    pub allocation: Option<Spanned<RawJobId>>,
    /// slurm: how NCCL's ranks are started: `pmix` (default) or `pmi2`, whichever the cluster
    /// offers (`srun --mpi=list`).
    #[serde(default)]
    #[schemars(with = "Option<SlurmMpiSchema>")]
    pub mpi: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawProfile {
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// What one half reaches with ib_write_bw on a healthy direct cable, Gb/s: above 0, at
    /// most 10000.
    #[schemars(range(max = 10000), extend("exclusiveMinimum" = 0))]
    pub half_rate_gbps: Option<f64>,
    /// What both halves of one port reach together, Gb/s: above 0, at most 10000.
    #[schemars(range(max = 10000), extend("exclusiveMinimum" = 0))]
    pub port_rate_gbps: Option<f64>,
    /// The firmware every device of this profile must run (`fw_ver`, e.g. `28.45.1200`): a node
    /// on another is a FAIL whose fix is the update. Unpinned, nodes that differ are a WARN.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub firmware: Option<Spanned<String>>,
    /// The GPUs share the CPU's memory (a GB10's unified memory): NCCL reports GPUDirect RDMA
    /// off (`GDR 0`) by design, which is then expected, not a warning. Default false (the
    /// built-in `gb10` is true).
    pub unified_memory: Option<bool>,
    pub port: Vec<RawProfilePort>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawProfilePort {
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    pub half: Vec<RawProfileHalf>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawProfileHalf {
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Default RDMA device name (e.g. `mlx5_0`).
    #[schemars(with = "String")]
    pub device: Spanned<String>,
    /// Default netdev name.
    #[schemars(with = "String")]
    pub netdev: Spanned<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawNode {
    /// Node name, referenced by cables and tests. Safe characters only.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// How to reach it over SSH. Default: the node name as an ssh_config alias.
    #[serde(default)]
    pub ssh: Option<RawSsh>,
    /// Hardware profile: `gb10` (default) or one declared under `[[profile]]`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub profile: Option<Spanned<String>>,
    /// Environment for every command on this node (e.g. `PATH`, `LD_LIBRARY_PATH`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Directory holding the nccl-tests binaries (`all_reduce_perf` ...). Default: found on PATH.
    #[serde(default)]
    pub nccl_tests_dir: Option<String>,
    /// Device, netdev and GID index pinned per half, keyed `PORT.HALF` (e.g. `f0.a`).
    /// Anything not pinned is discovered at run time.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawPin>")]
    pub pin: BTreeMap<Spanned<String>, RawPin>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawSsh {
    /// An ssh_config alias (resolved with `ssh -G`).
    pub alias: Option<String>,
    /// Host name or address.
    pub host: Option<String>,
    pub user: Option<String>,
    /// SSH port, 1 to 65535 (default: ssh's, 22).
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<u16>,
    /// Private key to offer (only this key is offered).
    pub identity_file: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawPin {
    #[schemars(with = "Option<String>")]
    pub device: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub netdev: Option<Spanned<String>>,
    /// RoCE v2 GID index, 0 to 255: an address handle carries the source GID index in 8 bits
    /// (`ibv_global_route.sgid_index`), so no port's GID table is addressed past 255.
    #[schemars(range(min = 0, max = 255))]
    pub gid_index: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawSwitch {
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Free text (model, location).
    pub description: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawIsl {
    /// The two switches it joins.
    #[schemars(with = "[String; 2]")]
    pub ends: Spanned<Vec<Spanned<String>>>,
    /// Capacity per direction (full duplex), Gb/s: above 0, at most 100000.
    #[schemars(with = "f64", range(max = 100000), extend("exclusiveMinimum" = 0))]
    pub capacity_gbps: Spanned<f64>,
    pub name: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawCable {
    /// `direct`, `ring` or `switched`.
    #[schemars(with = "CableKindSchema")]
    pub kind: Spanned<String>,
    /// Cable name (default: derived from its ends).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// direct: the two node ports, `NODE.PORT`.
    #[serde(default)]
    #[schemars(with = "Option<[String; 2]>")]
    pub ends: Option<Spanned<Vec<Spanned<String>>>>,
    /// ring: the nodes in ring order (3 to 16); node[i].f0 faces node[i+1].f1, wrapping.
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub nodes: Option<Spanned<Vec<Spanned<String>>>>,
    /// ring: ports used (default `["f0", "f1"]`: the outgoing and the incoming port).
    #[serde(default)]
    #[schemars(with = "Option<[String; 2]>")]
    pub ports: Option<Spanned<Vec<Spanned<String>>>>,
    /// switched: which node port lands on which switch: `{ "NODE.PORT" = "SWITCH" }`, or on
    /// which switch port: `{ "NODE.PORT" = { switch = "SWITCH", switch-port = "swp12" } }` (LLDP
    /// then proves it; a breakout's `swp12s0`, `swp12s1` are ports of `swp12`).
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, AttachSchema>>")]
    pub attach: Option<BTreeMap<Spanned<String>, Spanned<RawAttach>>>,
    /// Halves carried (default: every half of the port).
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub halves: Option<Vec<Spanned<String>>>,
    /// Subnet per half: `{ a = "198.51.100.0/30", b = "203.0.113.0/30" }` (direct, switched).
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub subnets: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
    /// ring: one subnet per link and half, in order (link 1 half a, link 1 half b, link 2 ...).
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub link_subnets: Option<Spanned<Vec<Spanned<String>>>>,
    /// ring: carve each link's subnet from this pool instead (`pool-prefix` long, default /24).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub subnet_pool: Option<Spanned<String>>,
    /// ring: prefix length of the subnets carved from `subnet-pool`, 1 to 31 (default 24; a
    /// /31 holds the two ends of a link).
    #[serde(default)]
    #[schemars(range(min = 1, max = 31))]
    pub pool_prefix: Option<u8>,
    /// Addresses per node and half: `{ "NODE" = { a = "198.51.100.1" } }`. Default: derived from
    /// the subnet (first usable host for the first end, and so on).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, BTreeMap<String, String>>")]
    pub addresses: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<String>>>,
}

/// Where a node port of a switched cable lands: a switch, and the switch's port where the plan
/// names it. Read from a string (`"sw-a"`: the switch's span is the value's, see
/// [`RawAttach::switch_at`]) or an inline table.
#[derive(Debug)]
pub struct RawAttach {
    /// The switch; from a bare string its span is empty, the value's span stands for it.
    pub switch: Spanned<String>,
    pub switch_port: Option<Spanned<String>>,
}

impl RawAttach {
    /// The switch with a span a diagnostic can point at: its own, or the whole value's.
    pub fn switch_at(value: &Spanned<RawAttach>) -> Spanned<String> {
        let a = value.get_ref();
        if a.switch.span().is_empty() {
            Spanned::new(value.span(), a.switch.get_ref().clone())
        } else {
            a.switch.clone()
        }
    }
}

impl<'de> Deserialize<'de> for RawAttach {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawAttach;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a switch name, or `{ switch = \"SWITCH\", switch-port = \"PORT\" }`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawAttach, E> {
                Ok(RawAttach {
                    switch: Spanned::new(0..0, v.to_string()),
                    switch_port: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<RawAttach, A::Error> {
                let (mut switch, mut switch_port) = (None, None);
                while let Some(k) = m.next_key::<String>()? {
                    match k.as_str() {
                        "switch" => switch = Some(m.next_value::<Spanned<String>>()?),
                        "switch-port" => switch_port = Some(m.next_value::<Spanned<String>>()?),
                        other => {
                            return Err(serde::de::Error::unknown_field(
                                other,
                                &["switch", "switch-port"],
                            ));
                        }
                    }
                }
                let switch = switch.ok_or_else(|| serde::de::Error::missing_field("switch"))?;
                Ok(RawAttach {
                    switch,
                    switch_port,
                })
            }
        }
        d.deserialize_any(Visit)
    }
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(untagged)]
enum AttachSchema {
    /// The switch the port lands on.
    Switch(String),
    Port(AttachPortSchema),
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct AttachPortSchema {
    /// The switch the port lands on.
    switch: String,
    /// The switch's port (`swp12`, `Ethernet12`): LLDP proves it. Letters, digits and `-_.:/`.
    switch_port: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum CableKindSchema {
    Direct,
    Ring,
    Switched,
}

/// Thresholds of one metric. Values carry their unit: `"90 Gb/s"`, `"3 us"`, `"8 GB/s"`, or a
/// percentage of the capacity model's expected value: `"90%"`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawGate {
    /// Pass threshold (at least, for bandwidths; at most, for times).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub pass: Option<Spanned<String>>,
    /// Warn threshold: between warn and pass is WARN, beyond warn is FAIL. When only `pass` is
    /// given, the default warn threshold stays if it is of the same kind and on the right side,
    /// otherwise there is no WARN band.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub warn: Option<Spanned<String>>,
    /// Pass threshold as a percentage of the expected value (same as `pass = "N%"`): above 0,
    /// at most 200.
    #[serde(default)]
    #[schemars(with = "Option<f64>", range(max = 200), extend("exclusiveMinimum" = 0))]
    pub min_pct_of_expected: Option<Spanned<f64>>,
    /// Warn threshold as a percentage of the expected value: above 0, at most 200.
    #[serde(default)]
    #[schemars(with = "Option<f64>", range(max = 200), extend("exclusiveMinimum" = 0))]
    pub warn_pct_of_expected: Option<Spanned<f64>>,
    /// The trap to name when this gate is not OK.
    pub trap: Option<String>,
    /// The fix to print with it.
    pub fix: Option<String>,
    /// Repeat the measurement this many times, 1 to 100 (default 1).
    #[schemars(range(min = 1, max = 100))]
    pub attempts: Option<u32>,
    /// Pass when at least this many attempts pass, 1 to `attempts` (at most 100; default: all).
    #[serde(default)]
    #[schemars(with = "Option<u32>", range(min = 1, max = 100))]
    pub pass_if: Option<Spanned<u32>>,
    /// `[gates.phy]` only: the effective (after FEC) bit error rate above which a link's
    /// counters are a WARN about its cable: symbol errors FEC did not correct over the bits the
    /// link carried at its rate in the interval (default 1e-12, the BER NVIDIA's tools check a
    /// link against and FEC is to reach). Above 0, at most 0.001.
    #[serde(default)]
    #[schemars(with = "Option<f64>", range(max = 0.001), extend("exclusiveMinimum" = 0))]
    pub max_effective_ber: Option<Spanned<f64>>,
    /// `[gates.phy]` only: link-down events tolerated in one interval (default 0: one is a
    /// flap, a FAIL about the cable). 0 to 1000000.
    #[serde(default)]
    #[schemars(with = "Option<u64>", range(min = 0, max = 1_000_000))]
    pub max_link_down_events: Option<Spanned<u64>>,
    /// `[gates.phy]` only: RDMA retransmissions (out-of-sequence, sequence errors, ACK
    /// timeouts) per second above which a link is a WARN about its cable (default 1). 0 to
    /// 1000000.
    #[serde(default)]
    #[schemars(with = "Option<f64>", range(min = 0, max = 1_000_000))]
    pub max_retransmits_per_s: Option<Spanned<f64>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawTests {
    /// Read-only checks before any measurement (default true).
    pub preflight: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawRound {
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Flows `"CLIENT -> SERVER"`, each end `NODE[.PORT[.HALF]]`, all started together.
    #[schemars(with = "Vec<String>")]
    pub flows: Vec<Spanned<String>>,
}

/// A template override: inline text, or a path relative to the plan file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawTemplate {
    #[schemars(with = "Option<String>")]
    pub inline: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub path: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawCapacity {
    /// Share of an oversubscribed hop that flows really get under congestion control, a
    /// fraction above 0 and at most 1 (default 0.82: 163.8 of 200 Gb/s measured for two flows
    /// on one ISL direction).
    #[schemars(with = "Option<f64>", range(max = 1), extend("exclusiveMinimum" = 0))]
    pub efficiency: Option<Spanned<f64>>,
    /// Cost of crossing a switch, percent, 0 to 100 (default 0.7).
    #[schemars(range(min = 0, max = 100))]
    pub switch_penalty_pct: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawSim {
    /// Seed of the simulated noise, 0 to 9223372036854775807 (TOML's largest integer; default 1).
    #[schemars(range(min = 0, max = 9223372036854775807i64))]
    pub seed: Option<u64>,
    /// Faults, same syntax as `--sim-fault`: `throttle:NODE.PORT.HALF`, `mtu1500:NODE.PORT.HALF`,
    /// `crossed:NODE.PORT`, `dead-host:NODE`, `server-dies:NODE`, `rstp-block:SWITCH-SWITCH`,
    /// `nccl-socket:NODE`.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub faults: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawSetup {
    /// Debian packages to install (default: perftest rdma-core ibverbs-utils openmpi-bin libnccl2 libnccl-dev).
    pub packages: Option<Vec<String>>,
    /// Build nccl-tests with MPI=1 into the node's `nccl-tests-dir`.
    pub build_nccl_tests: Option<bool>,
    /// Where to clone nccl-tests from (a mirror URL of the site's).
    pub nccl_tests_repo: Option<String>,
}
