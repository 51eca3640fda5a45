#!/usr/bin/env bash
# Parser figures for BENCHMARKS.md ("Parsers on large inputs"): for every tool, run
# `fabricplan parse TOOL FILE` on three generated inputs of about 50 MB each and print wall time
# (and CPU time, user + system: steadier than wall time on a busy machine) and peak RSS (GNU
# time's "maximum resident set size") as a markdown table.
#
#   scripts/bench-parsers.sh                 build the release binary, 50 MB inputs
#   SIZE_MB=10 scripts/bench-parsers.sh      smaller inputs
#   SKIP_BUILD=1 scripts/bench-parsers.sh    reuse target/release/fabricplan
#   BIN=/path/to/fabricplan scripts/bench-parsers.sh   measure another build (e.g. an older commit)
#
# The inputs, written to a temporary directory that is removed at exit:
#   realistic  a real-format fixture of the tool repeated up to the size (one file, many runs)
#   newlines   SIZE_MB of `\n`
#   long-line  the same repeated fixture with every newline turned into a space: one line
# Needs GNU time at /usr/bin/time (Debian: `apt-get install -y time`).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${SIZE_MB:-50}
bin=${BIN:-target/release/fabricplan}

if [ ! -x /usr/bin/time ]; then
    echo "GNU time missing: apt-get install -y time" >&2
    exit 1
fi
if [ -z "${SKIP_BUILD:-}" ] && [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bytes=$((size_mb * 1024 * 1024))

# label, tool, and the fixture its realistic input repeats
cases=(
    "ib_write_bw ib_write_bw tests/fixtures/parse/ib_write_bw/bw-gbits-a-sweep-client.txt"
    "ib_write_lat ib_write_lat tests/fixtures/parse/ib_write_lat/lat-a-sweep-client.txt"
    "nccl-tests nccl-tests tests/fixtures/parse/nccl-tests/allreduce-2node-ib-2025.txt"
    "mpirun mpirun tests/fixtures/parse/mpirun/tag-output-nonzero-exit.txt"
    "iperf3 iperf3 tests/fixtures/parse/iperf3/text-parallel-sum.txt"
    "iperf3-json iperf3 tests/fixtures/parse/iperf3/json-tcp-client-3.12.json"
    "ping ping tests/fixtures/parse/ping/jumbo-ok.txt"
)

# repeat FILE into OUT until it holds at least $bytes bytes, then cut to exactly $bytes
repeat_to_size() {
    local src=$1 out=$2
    cp "$src" "$out.seed"
    while [ "$(stat -c %s "$out.seed")" -lt "$bytes" ]; do
        cat "$out.seed" "$out.seed" >"$out.tmp"
        mv "$out.tmp" "$out.seed"
    done
    head -c "$bytes" "$out.seed" >"$out"
    rm -f "$out.seed"
}

head -c "$bytes" /dev/zero | tr '\0' '\n' >"$work/newlines"

measure() {
    local tool=$1 file=$2
    local log="$work/time.log"
    /usr/bin/time -v "$bin" parse "$tool" "$file" >/dev/null 2>"$log" || true
    local wall rss cpu
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$log")
    # m:ss.ss -> seconds
    wall=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    printf '%.2f s (cpu %.2f s) | %d MB' "$wall" "$cpu" "$((rss / 1024))"
}

echo "| tool | realistic ${size_mb} MB: wall | peak RSS | ${size_mb} MB of newlines: wall | peak RSS | one ${size_mb} MB line: wall | peak RSS |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for c in "${cases[@]}"; do
    set -- $c
    label=$1 tool=$2 fixture=$3
    repeat_to_size "$fixture" "$work/real"
    tr '\n' ' ' <"$work/real" >"$work/long"
    printf '| %s | %s | %s | %s |\n' "$label" \
        "$(measure "$tool" "$work/real")" \
        "$(measure "$tool" "$work/newlines")" \
        "$(measure "$tool" "$work/long")"
    rm -f "$work/real" "$work/long"
done
