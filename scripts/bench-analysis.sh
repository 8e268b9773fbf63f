#!/usr/bin/env bash
# Analysis speed: summary, lifetimes, resolve and verify on a synthetic trace of 10 million
# events (tests/analyzer/gen_trace.c), with wall time, CPU time and peak memory of each command.
# Usage: scripts/bench-analysis.sh [BUILD_DIR] [EVENTS]
set -euo pipefail
build=${1:-build}
events=${2:-10000000}
bin=$build/bin
gen=$build/tests/ws_gen_trace
[ -x "$gen" ] || { echo "bench-analysis: $gen not built" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/trace.db" "$events" >/dev/null
echo "### Analysis speed"
echo
echo "Synthetic trace of $events events ($(du -m "$tmp/trace.db" | cut -f1) MiB): $(sqlite3 "$tmp/trace.db" \
    "SELECT (SELECT COUNT(*) FROM runs) || ' runs, ' || (SELECT COUNT(*) FROM ranges) || ' ranges, ' ||
            (SELECT COUNT(*) FROM allocations) || ' allocations, ' || (SELECT COUNT(*) FROM launches) || ' launches'")."
echo
echo "| command | wall s | CPU s | peak memory MiB |"
echo "|---|---:|---:|---:|"
total_wall=0
total_cpu=0
for cmd in summary lifetimes resolve verify; do
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$bin/wstrace" "$cmd" "$tmp/trace.db" >/dev/null
    read -r wall user sys rss <"$tmp/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    printf '| %s | %.1f | %s | %.0f |\n' "$cmd" "$wall" "$cpu" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')"
    total_wall=$(awk -v a="$total_wall" -v b="$wall" 'BEGIN { print a + b }')
    total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN { print a + b }')
done
printf '| **total** | **%.1f** | **%.1f** | |\n' "$total_wall" "$total_cpu"
echo
