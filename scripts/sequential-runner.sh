#!/usr/bin/env bash
# sequential-runner.sh: the baseline fabricplan is measured against (issue #8). It does what the
# seed script (spark2_nccl_check.sh) does, over any list of jobs: one `ssh` per step, nothing
# concurrent. Per host first: `ssh HOST true`, then the seed's sysfs detection snippet. Per job,
# in order: start its server(s) detached (`nohup ... &`, PID recorded), a fixed `sleep 2`, run
# its client (or mpirun launcher) in the foreground, then kill the server by the PID it recorded
# (never `pkill -f`).
#
# usage: sequential-runner.sh SSH_CONFIG JOBS_TSV [OUT_DIR]
#   JOBS_TSV: one step a line, `job<TAB>role<TAB>host<TAB>command`, role server|client|launcher,
#   steps of one job on consecutive lines, jobs in run order (tests/lab_bench.rs writes it from
#   a fabricplan run's results.json: the same jobs with the same commands and tool durations).
#   OUT_DIR: where client outputs go (default: a temp dir).
# Prints one line per job and `sequential: N jobs in S s` at the end.
set -uo pipefail

cfg=${1:?usage: sequential-runner.sh SSH_CONFIG JOBS_TSV [OUT_DIR]}
jobs_file=${2:?usage: sequential-runner.sh SSH_CONFIG JOBS_TSV [OUT_DIR]}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
SSH=(ssh -F "$cfg" -o BatchMode=yes)

# the seed's detection: every IB device's state, netdev and IPv4, straight from sysfs
DETECT_SNIPPET='
for p in /sys/class/infiniband/*/ports/1/state; do
  [ -e "$p" ] || continue
  dev=$(basename "$(dirname "$(dirname "$(dirname "$p")")")")
  st=$(cat "$p" 2>/dev/null | sed "s/.*: //")
  net=$(ls "/sys/class/infiniband/$dev/device/net" 2>/dev/null | head -1)
  ip4=$(ip -4 -o addr show dev "$net" 2>/dev/null | awk "{print \$4}" | head -1)
  printf "%-14s %-8s %-16s %s\n" "$dev" "$st" "${net:--}" "${ip4:--}"
done
'

start=$(date +%s%N)
declare -a J R H C
while IFS=$'\t' read -r j r h c; do
  [ -n "$j" ] || continue
  J+=("$j"); R+=("$r"); H+=("$h"); C+=("$c")
done <"$jobs_file"

# detection, host by host
declare -A seen=()
for h in "${H[@]}"; do
  [ -n "${seen[$h]:-}" ] && continue
  seen[$h]=1
  "${SSH[@]}" "$h" true || { echo "ssh to $h failed" >&2; exit 1; }
  printf '%s' "$DETECT_SNIPPET" | "${SSH[@]}" "$h" bash >"$out/detect.$h.txt" 2>&1
done

n=${#J[@]}
i=0
jobs_run=0
while [ "$i" -lt "$n" ]; do
  job=${J[$i]}
  k=$i
  while [ "$k" -lt "$n" ] && [ "${J[$k]}" = "$job" ]; do k=$((k + 1)); done
  t0=$(date +%s%N)
  servers=()
  for ((s = i; s < k; s++)); do
    [ "${R[$s]}" = server ] || continue
    pid=$("${SSH[@]}" "${H[$s]}" "mkdir -p /tmp/seqrun && cd /tmp/seqrun && { nohup ${C[$s]} >$job.server.log 2>&1 </dev/null & echo \$!; }")
    servers+=("${H[$s]}:$pid")
  done
  [ "${#servers[@]}" -gt 0 ] && sleep 2
  for ((s = i; s < k; s++)); do
    [ "${R[$s]}" = server ] && continue
    "${SSH[@]}" "${H[$s]}" "${C[$s]}" >"$out/$job.${H[$s]}.${R[$s]}.out" 2>&1
  done
  for hp in "${servers[@]}"; do
    "${SSH[@]}" "${hp%%:*}" "kill ${hp#*:} 2>/dev/null; true"
  done
  t1=$(date +%s%N)
  printf '%s %d.%03d s\n' "$job" $(((t1 - t0) / 1000000000)) $((((t1 - t0) / 1000000) % 1000))
  jobs_run=$((jobs_run + 1))
  i=$k
done
end=$(date +%s%N)
printf 'sequential: %d jobs in %d.%03d s\n' "$jobs_run" $(((end - start) / 1000000000)) $((((end - start) / 1000000) % 1000))
