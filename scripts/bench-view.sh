#!/usr/bin/env bash
# The view of a large trace: `wstrace view` on a synthetic trace of 10 million events
# (tests/analyzer/gen_trace.c), the page's size, and the time headless Chromium takes to open it
# and draw it completely (tests/view/open_page.c).  Usage: scripts/bench-view.sh [BUILD_DIR] [EVENTS]
set -euo pipefail
build=${1:-build}
events=${2:-10000000}
gen=$build/tests/ws_gen_trace
open=$build/tests/ws_view_open
for t in "$gen" "$open" "$build/bin/wstrace"; do
    [ -x "$t" ] || { echo "bench-view: $t not built" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/trace.db" "$events" >/dev/null
allocs=$(sqlite3 "$tmp/trace.db" "SELECT COUNT(*) FROM allocations")
/usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$build/bin/wstrace" view --quiet "$tmp/trace.db" -o "$tmp/trace.html"
read -r wall user sys rss <"$tmp/time"
"$open" "$tmp/trace.html" >"$tmp/open.txt"
page_ms=$(awk '$1 == "page_ms" { print $2 }' "$tmp/open.txt")
waited_ms=$(awk '$1 == "waited_ms" { print $2 }' "$tmp/open.txt")
errors=$(awk '$1 == "script_errors" { print $2 }' "$tmp/open.txt")
echo "### The view of a large trace"
echo
echo "Synthetic trace of $events events ($allocs allocations, $(du -m "$tmp/trace.db" | cut -f1) MiB)."
echo
echo "| wstrace view wall s | CPU s | peak memory MiB | page MiB | open and draw in headless Chromium s (page's own clock) | waited s | script errors |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
awk -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v b="$(stat -c %s "$tmp/trace.html")" -v p="$page_ms" \
    -v q="$waited_ms" -v e="$errors" \
    'BEGIN { printf "| %.1f | %.1f | %.0f | %.1f | %.1f | %.1f | %d |\n", w, u + s, r / 1024, b / 1048576, p / 1000, q / 1000, e }'
echo
