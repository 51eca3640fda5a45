#!/usr/bin/env bash
# The whole fault-at-every-moment matrix on the lab (as root): every fault (sshd, slurmd, the
# node's session loop, an rdma-bw server, a link flap, the MTU) at every moment it applies to
# (discovery, preflight, an rdma-bw round, the NCCL round), over SSH and through Slurm, each on a
# lab of its own. The suite (`cargo test`) runs each fault at one moment; this runs them all
# (34 runs, about 10 minutes on 2 cores) and prints one line per case.
#
#   scripts/lab-fault-matrix.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FABRICPLAN_LAB_MATRIX=all cargo test --release --test lab_fault_moments -- --nocapture 2>&1 |
    grep -E '^(Ssh|Slurm) |cases|^test result' || true
