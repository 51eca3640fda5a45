//! What Slurm's own failures mean, as traps.

use crate::gate::trap::Trap;
use crate::launchers::slurm::parse::SlurmFailureKind;

/// The trap a failure Slurm reported points at.
pub fn trap_of(kind: SlurmFailureKind) -> Trap {
    use SlurmFailureKind as K;
    match kind {
        K::NodeUnavailable => Trap::SlurmNodeUnavailable,
        K::StepLaunch | K::JobGone | K::Cancelled => Trap::SlurmStepLaunch,
        K::TimeLimit => Trap::SlurmTimeLimit,
        K::AllocationRefused => Trap::SlurmAllocationRefused,
    }
}
