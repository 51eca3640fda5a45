//! The Slurm launcher: every command that runs on a node is a job step of one allocation,
//! started from this machine with `srun` ([`crate::launchers::slurm::render::SlurmStyle`] writes the
//! lines).
//!
//! * Opening a run ([`crate::exec::launch::Launcher::open`]) reads the nodes' states (`sinfo`):
//!   a node down, drained or not responding is one FAIL naming Slurm's state of it, and the
//!   rest are allocated, whole, with `salloc --no-shell` (or the given allocation is checked:
//!   running, holding the nodes). An allocation fabricplan made is released (`scancel JOB`)
//!   when the run ends, on error and on interrupt too; one it was given is never released.
//! * A server is a step whose task runs it; it is ready when a second step on its node sees its
//!   port listen (or it failed if its step ended first), and it is stopped by cancelling exactly
//!   its step (`scancel JOB.STEP`, the id its script wrote first), never by name.
//! * Clients are launched as steps that wait on stdin, and released together by one line each.
//! * Slurm's own failures (a node down or drained, a step that could not be launched, the time
//!   limit, an allocation refused) are read from what its clients print and named as traps.
//! * Slurm's clients get `SLURM_CONF` (the environment's, else the standard file, which must
//!   exist): without a configuration they would ask DNS for the controller.

mod allocation;
mod control;
mod launcher;
mod sessions;
mod step;

pub use control::SlurmControl;
pub use launcher::{ALLOCATION_WAIT_S, SlurmLauncher, slurm_conf};
