#!/usr/bin/env bash
# Scale figures for BENCHMARKS.md: build the release binary once, generate switched plans of
# 64, 224 and 4096 nodes, and print wall time and peak RSS (GNU time's "maximum resident set
# size") of `fabricplan validate` and `fabricplan plan --format json > /dev/null` for each.
#
#   scripts/bench-scale.sh [SIZES...]          default: 64 224 4096
#   SKIP_BUILD=1 scripts/bench-scale.sh        reuse target/release/fabricplan
#   SKIP_JSON_ABOVE=512 scripts/bench-scale.sh skip plan-json above that size (4096 takes minutes)
#
# Two plan variants per size (scripts/gen-switched.sh): `ap`, rdma-bw all-pairs on half a only
# (sampled above 224 nodes, where all-pairs is past the plan bounds: 50,000 jobs);
# `ap+nccl`, the same plus one all_reduce across every node. Then the phase breakdown of
# load + validate + expand and of building every round (the bench binary's report mode).
# Needs GNU time at /usr/bin/time (Debian: `apt-get install -y time`).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64 224 4096)
skip_json_above=${SKIP_JSON_ABOVE:-0}

if [ ! -x /usr/bin/time ]; then
    echo "GNU time missing: apt-get install -y time" >&2
    exit 1
fi
if [ -z "${SKIP_BUILD:-}" ]; then
    cargo build --release --quiet
    cargo bench --no-run --quiet --bench scale 2>/dev/null || true
fi
bin=target/release/fabricplan
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo

# measure LABEL CMD...: wall seconds and max RSS, stdout to /dev/null
measure() {
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
        echo "$label: failed: $(tail -3 "$work/err")"
        return
    }
    read -r secs kib <"$work/time"
    printf '%-28s %9.2f s %10d KiB\n' "$label" "$secs" "$kib"
}

printf '%-28s %11s %14s\n' "what" "wall" "peak RSS"
for n in "${sizes[@]}"; do
    if [ "$n" -gt 224 ]; then
        scripts/gen-switched.sh "$n" 2 sampled >"$work/full-$n.toml"
    else
        scripts/gen-switched.sh "$n" >"$work/full-$n.toml"
    fi
    sed '/^\[\[tests.nccl\]\]/,$d' "$work/full-$n.toml" >"$work/ap-$n.toml"
    measure "validate ap $n" "$bin" validate "$work/ap-$n.toml"
    measure "validate ap+nccl $n" "$bin" validate "$work/full-$n.toml"
    if [ "$skip_json_above" -gt 0 ] && [ "$n" -gt "$skip_json_above" ]; then
        echo "plan-json $n: skipped (SKIP_JSON_ABOVE=$skip_json_above)"
        continue
    fi
    measure "plan-json ap $n" "$bin" plan "$work/ap-$n.toml" --format json
    measure "plan-json ap+nccl $n" "$bin" plan "$work/full-$n.toml" --format json
    if [ "$n" -le 512 ]; then
        bytes=$("$bin" plan "$work/ap-$n.toml" --format json | wc -c)
        echo "  (plan-json ap $n writes $bytes bytes)"
    fi
done

echo
echo "phases in-process (load+validate+expand, then every round built and every job touched):"
scale=$(ls -t target/release/deps/scale-* 2>/dev/null | grep -v '\.d$' | head -1 || true)
if [ -n "$scale" ]; then
    for n in "${sizes[@]}"; do
        FABRICPLAN_SCALE_REPORT=$n "$scale" | { [ "$n" = "${sizes[0]}" ] && cat || tail -n +2; }
    done
else
    echo "  (bench binary not built: cargo bench --no-run --bench scale)"
fi
