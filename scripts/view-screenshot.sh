#!/usr/bin/env bash
# The README's picture of `wstrace view`: the page of the demo's dynamic trace (out/demo/dynamic.db,
# left by scripts/demo.sh) with one run selected and the planned classes only, as headless
# Chromium draws it.  Usage: scripts/view-screenshot.sh [BUILD_DIR] [OUT.png]
#   (defaults: build, docs/images/demo-view.png).  Also leaves the page in out/demo/dynamic.html.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
png=${2:-docs/images/demo-view.png}
trace=out/demo/dynamic.db
[ -f "$trace" ] || { echo "view-screenshot: $trace is missing: run scripts/demo.sh first" >&2; exit 2; }
browser=$(command -v chromium-headless-shell || command -v chromium || true)
[ -n "$browser" ] || { echo "view-screenshot: no chromium-headless-shell or chromium (scripts/bootstrap.sh)" >&2; exit 2; }
"$build/bin/wstrace" view --quiet "$trace" -o out/demo/dynamic.html
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# Run index 3 (the fourth run: batch 8, the largest activations) of the demo; the page draws
# asynchronously, so the screenshot waits on virtual time.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size=1400,1560 --virtual-time-budget=10000 --screenshot="$PWD/$png" \
    "file://$PWD/out/demo/dynamic.html#run=3&planned=1" >/dev/null 2>&1
echo "view-screenshot: wrote $png"
