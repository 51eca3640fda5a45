#!/usr/bin/env bash
# lab-bench.sh: run the lab benchmarks (tests/lab_bench.rs: orchestration overhead, launch skew,
# fan-out, stand-in delays, and one session per host across login-shell costs and under Slurm)
# and print a summary. Needs root (the lab builds network namespaces with sshd and Slurm). Takes
# ~30 minutes on 2 cores; `bench_sessions` alone ~7.
#
# usage: scripts/lab-bench.sh [TEST_FILTER]   e.g. scripts/lab-bench.sh fanout
#        scripts/lab-bench.sh bench_sessions  (issue #24: login shells of 0, 150 and 500 ms, Slurm)
# env:   FABRICPLAN_BENCH_REPS=N (default 2) repeats each fabricplan run.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp /var/tmp/fabricplan-lab-bench.XXXXXX.log)
echo "# machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "# date:    $(date -u)"
echo "# load:    $(cut -d' ' -f1-3 /proc/loadavg) (load average at the start)"
echo "# commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# command: cargo test --release --test lab_bench -- --ignored --nocapture --test-threads=1 ${1:-}"
cargo test --release --test lab_bench -- --ignored --nocapture --test-threads=1 ${1:+"$1"} 2>&1 | tee "$log"
echo
echo "== summary (full log: $log)"
grep -E '^BENCH-SUMMARY' "$log" | sed 's/^BENCH-SUMMARY //'
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
