#!/usr/bin/env bash
# Generate a switched fabricplan plan of N nodes (default 64) on stdout.
#
#   scripts/gen-switched.sh N [SWITCHES] [SCHEDULE]
#
# SWITCHES (default 2) switches in a chain joined by 400G ISLs; node i lands on switch
# i*SWITCHES/N; every node's f0 is attached; both halves are cabled with subnets sized to
# fit N members (198.18.0.0 for a, 198.19.0.0 for b; /19 for 4096); rdma-bw on half a with
# SCHEDULE (default all-pairs; `sampled` for 8 seeded random pairings); one all_reduce across
# every node on half a. Same shape as `benches/support/plangen.rs`.
set -euo pipefail
n=${1:-64}
sw=${2:-2}
schedule=${3:-all-pairs}
# smallest prefix whose host count (2^(32-p) - 2) holds n
p=30
while (( (1 << (32 - p)) - 2 < n )); do p=$((p - 1)); done
awk -v n="$n" -v sw="$sw" -v p="$p" -v schedule="$schedule" 'BEGIN {
  printf "format-version = 1\nname = \"gen-switched-%d\"\ndescription = \"generated: %d nodes, %d switches\"\n\n", n, n, sw
  for (i = 1; i <= n; i++) printf "[[node]]\nname = \"n%05d\"\n", i
  for (s = 0; s < sw; s++) printf "\n[[switch]]\nname = \"sw-%02d\"\n", s
  for (s = 1; s < sw; s++) printf "\n[[isl]]\nends = [\"sw-%02d\", \"sw-%02d\"]\ncapacity-gbps = 400\n", s - 1, s
  printf "\n[[cable]]\nkind = \"switched\"\nname = \"fabric\"\nsubnets = { a = \"198.18.0.0/%d\", b = \"198.20.0.0/%d\" }\n", p, p
  printf "[cable.attach]\n"
  for (i = 1; i <= n; i++) printf "\"n%05d.f0\" = \"sw-%02d\"\n", i, int((i - 1) * sw / n)
  printf "\n[tests.rdma-bw]\nschedule = \"%s\"\nhalves = [\"a\"]\n", schedule
  printf "\n[[tests.nccl]]\ncollective = \"all_reduce\"\nhalves = [\"a\"]\n"
}'
