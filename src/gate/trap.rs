//! The trap library: every silent failure fabricplan names, with the fix to print.
//! A trap is chosen by the gate engine from a signature of measurements and context.

use serde::Serialize;

/// A known way for a fabric to look fine while it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trap {
    /// 8-25 Gb/s on a half: CX7 firmware throttle.
    FirmwareThrottle,
    /// Below line rate but not throttle-low: cable, PCIe, contention.
    BelowLineRate,
    /// One half of a two-half cable missing from NCCL_IB_HCA: NCCL capped near one half.
    HalfMissingFromHca,
    /// One half of a cable dead or throttled: the both-halves sum is short.
    HalfDeadOrThrottled,
    /// Single-digit cross-switch bandwidth: the ISL is blocked by RSTP.
    IslBlockedRstp,
    /// ~5 Gb/s with packet_seq_err growing: a bridge forwarding in software.
    SoftwareForwarding,
    /// packet_seq_err growing at near line rate: congestion control at work (WARN).
    CongestionControl,
    /// Small ping fine, jumbo ping failing: an MTU 1500 hop.
    MtuMismatch,
    /// "Couldn't connect": server died with its SSH session, or a firewall rule on the source port.
    ServerGoneOrFirewall,
    /// NCCL used NET/Socket: silent TCP fallback.
    TcpFallback,
    /// #wrong or out-of-bounds values: wrong results.
    WrongResults,
    /// QP to RTR failed on RoCE: GID index, MTU mismatch, ring wired port 0 to port 0.
    QpRtrFailed,
    /// "cannot find a corresponding process entry": docker0 subnet picked by Open MPI.
    Docker0Subnet,
    /// RDMA byte counters did not move during NCCL: the management network carried it.
    FabricNotUsed,
    /// GPUDirect RDMA off (reported, not failed).
    GdrOff,
    /// Latency above the hardware floor: wrong device or a software path.
    SlowLatency,
    /// NCCL small-message time high.
    SlowCollective,
    /// NCCL bus bandwidth at large sizes below what the fabric carries.
    SlowBusBandwidth,
    /// The tool could not find the RDMA device named.
    NoDevice,
    /// The port is down.
    PortDown,
    /// A pinned device or netdev name is not the live one on that box.
    PinnedNameWrong,
    /// The planned address is not configured on the box.
    AddressMissing,
    /// No RoCE v2 GID maps the half's address.
    NoGid,
    /// The cable lands on another port than the plan says.
    CrossedCable,
    /// Host could not be reached over SSH.
    Unreachable,
    /// The job did not finish in its time.
    Timeout,
    /// The tool's output could not be read.
    Unparseable,
    /// The tool exited with an error not covered above.
    ToolError,
    /// mpirun could not start its daemons / ranks.
    MpiLaunch,
    /// mpirun refused to start as root.
    MpiRunAsRoot,
    /// The program to launch is not there (nccl-tests not built, wrong nccl-tests-dir).
    ExecutableMissing,
    /// NCCL environment in the node's config disagrees with discovery.
    NcclEnvMismatch,
    /// A default route or a second route goes through a fabric netdev.
    RoutingTrap,
    /// Kernel CMA too small: memory registration fails.
    MemoryRegistration,
    /// Slurm will not run steps on the node: down, drained, not responding, or not in the
    /// allocation.
    SlurmNodeUnavailable,
    /// Slurm could not launch a job step on the node (its slurmd did not answer, or refused).
    SlurmStepLaunch,
    /// The allocation's time limit ended the step.
    SlurmTimeLimit,
    /// Slurm refused the allocation (partition, account, time limit, nodes), or did not grant
    /// it in time.
    SlurmAllocationRefused,
    /// A half's PCIe link trained below its maximum width or speed: it carries less than the
    /// half's rate, whatever the cable does.
    PcieDegraded,
    /// Nodes of one profile run different NIC firmware.
    FirmwareDrift,
    /// A node's NIC firmware is not the one its profile pins.
    FirmwareNotPinned,
    /// fabricplan could not make or use the run's private directory on the host (its temporary
    /// directory missing, full, or not writable).
    HostScratch,
    /// The tool was killed by a signal before its time was up (the kernel's OOM killer sends
    /// SIGKILL): the host or the tool, not the fabric.
    ToolKilled,
    /// The tool wrote more than the output bound on one stream and was stopped there (SIGXFSZ).
    OutputFlood,
    /// The tool left processes running when it ended (fabricplan stopped them).
    LeftRunning,
    /// A link went down and came back while the run measured, or between two checks (its
    /// carrier changed).
    LinkFlapped,
    /// A link's error counters rose past `[gates.phy]`: errors FEC could not correct, or the
    /// fabric retransmitting.
    LinkErrors,
    /// Pause frames and CNPs rose where bandwidth fell: flow control (PFC/ECN, on the switch or
    /// the hosts) holds the traffic back.
    FlowControl,
    /// A site-specific trap named in the plan.
    Site,
}

impl Trap {
    pub fn name(self) -> &'static str {
        match self {
            Trap::FirmwareThrottle => "firmware throttle",
            Trap::BelowLineRate => "below line rate",
            Trap::HalfMissingFromHca => "one half missing from NCCL_IB_HCA",
            Trap::HalfDeadOrThrottled => "one half dead or throttled",
            Trap::IslBlockedRstp => "ISL blocked by RSTP",
            Trap::SoftwareForwarding => "software-forwarding bridge",
            Trap::CongestionControl => "congestion control at work",
            Trap::MtuMismatch => "MTU 1500 on the path",
            Trap::ServerGoneOrFirewall => "server gone or firewall on the wrong port",
            Trap::TcpFallback => "NCCL TCP fallback (NET/Socket)",
            Trap::WrongResults => "wrong results",
            Trap::QpRtrFailed => "QP could not reach RTR",
            Trap::Docker0Subnet => "Open MPI on the docker0 subnet",
            Trap::FabricNotUsed => "the fabric did not carry it",
            Trap::GdrOff => "GPUDirect RDMA off",
            Trap::SlowLatency => "latency above the hardware floor",
            Trap::SlowCollective => "slow small-message collective",
            Trap::SlowBusBandwidth => "NCCL bus bandwidth below the fabric's",
            Trap::NoDevice => "RDMA device not found",
            Trap::PortDown => "port down",
            Trap::PinnedNameWrong => "pinned name is not the live device",
            Trap::AddressMissing => "planned address not configured",
            Trap::NoGid => "no RoCE v2 GID for the address",
            Trap::CrossedCable => "crossed cable",
            Trap::Unreachable => "host unreachable",
            Trap::Timeout => "timeout",
            Trap::Unparseable => "unreadable output",
            Trap::ToolError => "tool error",
            Trap::MpiLaunch => "mpirun could not launch",
            Trap::MpiRunAsRoot => "mpirun refuses to run as root",
            Trap::ExecutableMissing => "program not found on a node",
            Trap::NcclEnvMismatch => "NCCL environment disagrees with discovery",
            Trap::RoutingTrap => "route through the fabric",
            Trap::MemoryRegistration => "memory registration failed",
            Trap::SlurmNodeUnavailable => "Slurm node not available",
            Trap::SlurmStepLaunch => "Slurm could not launch the step",
            Trap::SlurmTimeLimit => "Slurm time limit reached",
            Trap::SlurmAllocationRefused => "Slurm refused the allocation",
            Trap::PcieDegraded => "PCIe link below its maximum",
            Trap::FirmwareDrift => "firmware differs within a profile",
            Trap::FirmwareNotPinned => "firmware is not the pinned version",
            Trap::HostScratch => "the run's directory cannot be made on the host",
            Trap::ToolKilled => "the tool was killed",
            Trap::OutputFlood => "the tool wrote without end",
            Trap::LeftRunning => "the tool left processes running",
            Trap::LinkFlapped => "link flapped",
            Trap::LinkErrors => "link errors",
            Trap::FlowControl => "flow control holds traffic back",
            Trap::Site => "site trap",
        }
    }

    /// What to do about it, in a sentence.
    pub fn fix(self) -> &'static str {
        self.fabric_fix().unwrap_or_else(|| self.host_fix())
    }

    /// The fix of a trap read from what crossed the fabric (bandwidth, latency, the path, the
    /// cabling, NCCL's transport and results); `None` for a trap of a host, its setup or its
    /// launcher.
    fn fabric_fix(self) -> Option<&'static str> {
        Some(match self {
            Trap::FirmwareThrottle => {
                "update the ConnectX-7 firmware, then drain NIC power fully (power off, unplug), not just a reboot"
            }
            Trap::BelowLineRate => {
                "check the cable and its seating, the PCIe link (lspci -vv), and other traffic on the pair"
            }
            Trap::HalfMissingFromHca => {
                "list every half's device of every rank in NCCL_IB_HCA (and its netdev in NCCL_SOCKET_IFNAME)"
            }
            Trap::HalfDeadOrThrottled => {
                "measure each half alone: the short one is throttled or down; fix it before trusting the sum"
            }
            Trap::IslBlockedRstp => {
                "check the spanning-tree state of the ISL's ports on both switches (`bridge -d link show` on a Linux bridge, `show spanning-tree` on a switch OS): a blocking or alternate port forwards almost nothing; make it forwarding (remove the loop, or fix the port's priority)"
            }
            Trap::SoftwareForwarding => {
                "remove the second bridge / software path on the switch so the ASIC forwards; packet_seq_err grows while throughput collapses"
            }
            Trap::CongestionControl => {
                "expected on an oversubscribed hop (DCQCN backing off); consider PFC/ECN on the ISL if routine"
            }
            Trap::MtuMismatch => {
                "set MTU 9000 on every fabric netdev and switch port on the path (ip link set DEV mtu 9000), and persist it"
            }
            Trap::ServerGoneOrFirewall => {
                "read the server's log kept in the run directory (it exited, or never listened); allow the test ports (TCP 18515 and up) in as DESTINATION ports in that node's firewall"
            }
            Trap::TcpFallback => {
                "make the node's RDMA devices visible to NCCL: `ibv_devinfo -l` must list them (rdma-core, the mlx5_ib driver, /dev/infiniband readable by the job's user); the NCCL log kept in the run directory names the rank that fell back"
            }
            Trap::WrongResults => {
                "results are corrupt: check the fabric's error counters, GPU health and the NCCL/driver versions before any workload"
            }
            Trap::QpRtrFailed => {
                "use the RoCE v2 GID index that maps the half's IPv4 on each box, equal MTU on both ends, and cable rings f0 to f1"
            }
            Trap::FabricNotUsed => {
                "NCCL used the management network: check NCCL_IB_HCA, NCCL_SOCKET_IFNAME and NCCL_NET_PLUGIN=none"
            }
            Trap::GdrOff => {
                "load nvidia-peermem (or use the dma-buf path) so the NIC reads GPU memory directly, and check the GPU and the NIC share a PCIe switch (`nvidia-smi topo -m`); expected only on unified-memory boxes such as GB10"
            }
            Trap::SlowLatency => {
                "check that the device is the one carrying the address (not a software RoCE path) and the port is ACTIVE"
            }
            Trap::SlowBusBandwidth => {
                "list every half of every rank in NCCL_IB_HCA, check MTU 9000 on the whole path (a 1500 hop costs ~20%), and that no other job loads the ranks"
            }
            Trap::SlowCollective => {
                "check the transport (NET/IB), the GID index and that no other job loads the nodes"
            }
            Trap::PcieDegraded => {
                "reseat the NIC (and its riser or cable), check the slot's PCIe settings in the firmware setup (link speed, bifurcation), then `sudo lspci -vv -s ADDRESS`: LnkSta must equal LnkCap"
            }
            Trap::CrossedCable => {
                "re-cable to match the plan, or change the plan to match the cabling"
            }
            _ => return None,
        })
    }

    /// The fix of a trap of a host, its setup, its tools or its launcher; a trap without a fix
    /// of its own (a tool error) gets: read the tool's message.
    fn host_fix(self) -> &'static str {
        match self {
            Trap::Docker0Subnet => {
                "pin Open MPI to the fabric: --mca oob_tcp_if_include SUBNET --mca btl_tcp_if_include SUBNET"
            }
            Trap::NoDevice => {
                "check the device name on that box (fabricplan detect): names differ per box; pin or let discovery choose"
            }
            Trap::PortDown => "seat the cable, check the peer port, `ip link set DEV up`",
            Trap::PinnedNameWrong => {
                "names differ per box (f0 on one, f1 on the other): pin each box's own name, or remove the pin and let discovery choose"
            }
            Trap::AddressMissing => {
                "configure the half's planned address on its netdev (the `ip addr add` above), MTU 9000, and persist it"
            }
            Trap::NoGid => {
                "assign the half's IPv4 to its netdev (ip addr add ...) so a RoCE v2 GID maps it"
            }
            Trap::Unreachable => {
                "check SSH to the node (ssh -G ALIAS, keys, known_hosts) and that it is up"
            }
            Trap::Timeout => "the tool hung: check the peer and the path; the job was killed",
            Trap::Unparseable => "read the raw output kept in the run directory",
            Trap::MpiLaunch => {
                "mpirun must reach every rank over SSH from the launching node (keys, PATH, same install on every node)"
            }
            Trap::MpiRunAsRoot => {
                "run as a user, or allow it: OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the launching node's env (or sshd's SetEnv)"
            }
            Trap::ExecutableMissing => {
                "build nccl-tests with MPI=1 on every node at the plan's nccl-tests-dir (fabricplan run --setup), or fix nccl-tests-dir"
            }
            Trap::NcclEnvMismatch => {
                "fix or remove the NCCL_* variables in the node's environment so they match the discovered devices"
            }
            Trap::RoutingTrap => {
                "remove default routes and stale bonds/profiles that route through a fabric netdev"
            }
            Trap::MemoryRegistration => {
                "give the kernel contiguous memory (cma=) so ibv_reg_mr succeeds"
            }
            Trap::SlurmNodeUnavailable => {
                "bring the node back in Slurm: `sinfo -R` says why it is out; start its slurmd, then `scontrol update nodename=NODE state=resume`"
            }
            Trap::SlurmStepLaunch => {
                "check the node's slurmd (running, its log, munge and clock in step with the controller's) and `scontrol show node NODE`"
            }
            Trap::SlurmTimeLimit => {
                "raise `time-limit` under `[launcher]` (at most the partition's, `sinfo -o %l`), or run part of the plan (`--only`)"
            }
            Trap::SlurmAllocationRefused => {
                "check `partition`, `account` and `time-limit` under `[launcher]` against `sinfo -s` and your associations, and that the node names are Slurm's (`sinfo -N`)"
            }
            Trap::FirmwareDrift => {
                "bring every node of the profile to one NIC firmware (`sudo mlxfwmanager --query` shows it), then pin it in the profile (`firmware = \"...\"`)"
            }
            Trap::FirmwareNotPinned => {
                "update the NIC firmware to the pinned version (the command above), then drain power fully: shut down and unplug for 30 s; a reboot keeps the old firmware running"
            }
            Trap::HostScratch => {
                "make the host's temporary directory usable by the run's user: `ls -ld /tmp` (or $TMPDIR) must be a sticky, writable directory with free space (`df -h /tmp`)"
            }
            Trap::ToolKilled => {
                "read the host's kernel log (`sudo dmesg | grep -i -e oom -e killed`): the OOM killer or another process ended the tool; free memory on the host or fix the tool"
            }
            Trap::OutputFlood => {
                "run the tool by hand on the host and read what it prints without end (its output is bounded per stream; the first and last MiB are kept in the run directory)"
            }
            Trap::LeftRunning => {
                "a process the tool started outlived it (fabricplan stopped it): check the tool's wrappers and the node environment for daemons started on its behalf"
            }
            Trap::LinkFlapped => {
                "reseat, clean or replace the cable and its modules: the link went down and came back while the run measured or between two checks (`ip -s link show DEV` counts its carrier changes, the kernel log says when)"
            }
            Trap::LinkErrors => {
                "reseat, clean or replace the cable and its modules: its counters rose past [gates.phy] (`ethtool -S NETDEV | grep -e symbol -e crc` on either end; corrected bits alone are normal)"
            }
            Trap::FlowControl => {
                "check PFC and ECN where the pause frames come from: the switch's lossless priority, buffer headroom and ECN marking thresholds, or, without a switch, the hosts' trust mode, PFC priority and ECN (`mlnx_qos -i NETDEV`)"
            }
            Trap::Site => "see the plan's gate for the fix",
            _ => "read the tool's message kept in the run directory",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every trap, in declaration order.
    const ALL: [Trap; 49] = [
        Trap::FirmwareThrottle,
        Trap::BelowLineRate,
        Trap::HalfMissingFromHca,
        Trap::HalfDeadOrThrottled,
        Trap::IslBlockedRstp,
        Trap::SoftwareForwarding,
        Trap::CongestionControl,
        Trap::MtuMismatch,
        Trap::ServerGoneOrFirewall,
        Trap::TcpFallback,
        Trap::WrongResults,
        Trap::QpRtrFailed,
        Trap::Docker0Subnet,
        Trap::FabricNotUsed,
        Trap::GdrOff,
        Trap::SlowLatency,
        Trap::SlowCollective,
        Trap::SlowBusBandwidth,
        Trap::NoDevice,
        Trap::PortDown,
        Trap::PinnedNameWrong,
        Trap::AddressMissing,
        Trap::NoGid,
        Trap::CrossedCable,
        Trap::Unreachable,
        Trap::Timeout,
        Trap::Unparseable,
        Trap::ToolError,
        Trap::MpiLaunch,
        Trap::MpiRunAsRoot,
        Trap::ExecutableMissing,
        Trap::NcclEnvMismatch,
        Trap::RoutingTrap,
        Trap::MemoryRegistration,
        Trap::SlurmNodeUnavailable,
        Trap::SlurmStepLaunch,
        Trap::SlurmTimeLimit,
        Trap::SlurmAllocationRefused,
        Trap::PcieDegraded,
        Trap::FirmwareDrift,
        Trap::FirmwareNotPinned,
        Trap::HostScratch,
        Trap::ToolKilled,
        Trap::OutputFlood,
        Trap::LeftRunning,
        Trap::LinkFlapped,
        Trap::LinkErrors,
        Trap::FlowControl,
        Trap::Site,
    ];

    #[test]
    fn every_trap_has_a_fix_of_its_own() {
        let generic = Trap::ToolError.fix();
        for t in ALL {
            assert!(!t.fix().is_empty(), "{t:?}");
            assert!(t == Trap::ToolError || t.fix() != generic, "{t:?}");
        }
        let mut fixes: Vec<&str> = ALL.iter().map(|t| t.fix()).collect();
        fixes.sort_unstable();
        fixes.dedup();
        assert_eq!(fixes.len(), ALL.len(), "two traps share a fix");
    }
}
