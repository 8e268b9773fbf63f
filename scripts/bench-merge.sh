#!/usr/bin/env bash
# Merge speed: 64 synthetic per-process traces of 100,000 events each (tests/analyzer/gen_trace.c,
# one seed per process) merged into one with `wstrace merge`; wall time, CPU time, peak memory,
# and a check that the merged trace holds the sum of its parts.
# Usage: scripts/bench-merge.sh [BUILD_DIR] [TRACES] [EVENTS]
set -euo pipefail
build=${1:-build}
traces=${2:-64}
events=${3:-100000}
bin=$build/bin
gen=$build/tests/ws_gen_trace
[ -x "$gen" ] || { echo "bench-merge: $gen not built" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inputs=()
for ((i = 0; i < traces; i++)); do
    "$gen" "$tmp/rank$i.db" "$events" "$((i + 1))" >/dev/null
    inputs+=("$tmp/rank$i.db")
done
rows() { sqlite3 "$1" "SELECT (SELECT COUNT(*) FROM allocations) + (SELECT COUNT(*) FROM launches) + (SELECT COUNT(*) FROM ranges)"; }
sum=0
for f in "${inputs[@]}"; do sum=$((sum + $(rows "$f"))); done
/usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$bin/wstrace" merge -o "$tmp/merged.db" "${inputs[@]}" >/dev/null
read -r wall user sys rss <"$tmp/time"
merged=$(rows "$tmp/merged.db")
[ "$merged" = "$sum" ] || { echo "bench-merge: merged trace holds $merged rows, its parts $sum" >&2; exit 1; }
echo "### Merge speed"
echo
echo "$traces synthetic traces of $events events each ($(du -cm "${inputs[@]}" | tail -1 | cut -f1) MiB in all), merged with \`wstrace merge\`;"
echo "the merged trace holds the sum of its parts ($sum allocation, launch and range rows)."
echo
echo "| traces | events | wall s | CPU s | events/s (wall) | peak memory MiB | merged MiB |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
awk -v t="$traces" -v n="$((traces * events))" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
    -v d="$(du -m "$tmp/merged.db" | cut -f1)" \
    'BEGIN { printf "| %d | %d | %.2f | %.2f | %.0f | %.0f | %d |\n", t, n, w, u + s, n / w, r / 1024, d }'
echo
