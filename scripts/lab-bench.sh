#!/usr/bin/env bash
# lab-bench.sh: run the lab benchmarks of issue #8 (tests/lab_bench.rs) and print a summary.
# Needs root (the lab builds network namespaces with sshd). Takes ~10-15 minutes on 2 cores.
#
# usage: scripts/lab-bench.sh [TEST_FILTER]   e.g. scripts/lab-bench.sh fanout
# env:   FABRICPLAN_BENCH_REPS=N (default 2) repeats each fabricplan run.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp /var/tmp/fabricplan-lab-bench.XXXXXX.log)
echo "# machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "# date:    $(date -u)"
echo "# commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# command: cargo test --release --test lab_bench -- --ignored --nocapture --test-threads=1 ${1:-}"
cargo test --release --test lab_bench -- --ignored --nocapture --test-threads=1 ${1:+"$1"} 2>&1 | tee "$log"
echo
echo "== summary (full log: $log)"
grep -E '^BENCH-SUMMARY' "$log" | sed 's/^BENCH-SUMMARY //'
