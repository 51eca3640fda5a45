#!/usr/bin/env bash
# Blame only on evidence, at scale (BENCHMARKS.md, "Blame only on evidence"): for each seed, the
# sampled plan of N nodes on four switches (`scripts/gen-switched.sh N 4 sampled` with `seed =
# SEED` in its rdma-bw table), one to three throttled halves chosen at random by the seed, and
# one `fabricplan run --sim`. Checks that the run's findings are exactly the throttled halves,
# all FAIL, and that it ran at most log2(N) + 2 rounds beyond the planned ones; prints each
# run's wall time and peak RSS (GNU time) and the totals. Exit 1 when a run is wrong.
#
#   scripts/bench-blame.sh [N] [SEEDS]      default: 1024 20
#   SKIP_BUILD=1 scripts/bench-blame.sh      reuse the release binary
#   BIN=path/to/fabricplan scripts/bench-blame.sh
#
# Needs GNU time at /usr/bin/time (Debian: `apt-get install -y time`) and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1024}
seeds=${2:-20}
target=${CARGO_TARGET_DIR:-target}
bin=${BIN:-$target/release/fabricplan}

if [ ! -x /usr/bin/time ]; then
    echo "GNU time missing: apt-get install -y time" >&2
    exit 1
fi
if [ -z "${SKIP_BUILD:-}" ] && [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# log2(N) + 2, the extra rounds allowed
budget=$(awk -v n="$n" 'BEGIN { l = 0; while (2 ^ (l + 1) <= n) l++; print l + 2 }')
# 8 pairings each way, then the one all_reduce
planned=17

echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "nodes: $n, seeds: 1-$seeds, extra rounds allowed: $budget"
printf '%-5s %-40s %-6s %-6s %9s %10s  %s\n' seed throttled extra found wall_s peak_MiB verdict

wrong=0 halves_total=0 missed_total=0 most=0
for seed in $(seq 1 "$seeds"); do
    plan=$work/g.toml
    scripts/gen-switched.sh "$n" 4 sampled |
        sed "s/^schedule = \"sampled\"$/schedule = \"sampled\"\nseed = $seed/" > "$plan"
    # one to three distinct halves, chosen by the seed
    mapfile -t halves < <(awk -v n="$n" -v s="$seed" 'BEGIN {
        srand(s); k = 1 + int(rand() * 3)
        while (c < k) { i = 1 + int(rand() * n); if (!(i in seen)) { seen[i] = 1; c++; printf "n%05d.f0.a\n", i } }
    }' | sort)
    args=()
    for h in "${halves[@]}"; do args+=(--sim-fault "throttle:$h"); done
    out=$work/run
    rm -rf "$out"
    set +e
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" run "$plan" --sim --out "$out" "${args[@]}" > /dev/null 2> "$work/stderr"
    rc=$?
    set -e
    # GNU time says "Command exited with non-zero status 1" first when the run is red
    read -r wall kb < <(tail -n 1 "$work/time")
    found=$(jq -r '[.findings[] | select(.outcome == "FAIL") | .name] | sort | join(",")' "$out/results.json")
    others=$(jq -r '[.findings[] | select(.outcome != "FAIL")] | length' "$out/results.json")
    extra=$(jq -r '[.rounds[] | .name | select(test("full-rate|re-test"))] | length' "$out/results.json")
    rounds=$(jq -r '.rounds | length' "$out/results.json")
    want=$(IFS=,; echo "${halves[*]}")
    verdict=ok
    if [ "$rc" != 1 ] || [ "$found" != "$want" ] || [ "$others" != 0 ] ||
        [ "$extra" -gt "$budget" ] || [ $((rounds - planned)) != "$extra" ]; then
        verdict="WRONG (exit $rc, findings $found, $others not FAIL, $rounds rounds)"
        wrong=$((wrong + 1))
    fi
    for h in "${halves[@]}"; do
        case ",$found," in *",$h,"*) ;; *) missed_total=$((missed_total + 1)) ;; esac
    done
    halves_total=$((halves_total + ${#halves[@]}))
    [ "$extra" -gt "$most" ] && most=$extra
    printf '%-5s %-40s %-6s %-6s %9s %10.0f  %s\n' "$seed" "$want" "$extra" \
        "$(jq -r '.findings | length' "$out/results.json")" "$wall" "$((kb / 1024))" "$verdict"
done
echo "$n nodes, $seeds seeds: $halves_total throttled halves, $missed_total missed, $wrong runs wrong; at most $most extra rounds (allowed $budget)"
[ "$wrong" = 0 ]
