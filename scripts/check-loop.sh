#!/usr/bin/env bash
# The main job's loop on a small configuration, as a check (run by ctest as e2e_main_loop):
# record wsk allocating on the fly, verify, plan, record it under the plan and through a caching
# arena, and fail unless
#   - verification of the --l1 envelope trace is clean, and a --l1 max-shape trace at a KV length
#     that needs more attention workspace than the maximum shape is flagged over the reservation;
#   - the planned peak equals the load bound and is below the arena's peak;
#   - no planned run falls back and every output is bitwise identical.
# Usage: scripts/check-loop.sh BUILD_DIR [OUT_DIR]   (report: OUT_DIR/report.md, default out/ci)
set -euo pipefail
build=$(cd "${1:?usage: check-loop.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(dirname "$0")/../out/ci}
mkdir -p "$out"
out=$(cd "$out" && pwd)
wstrace=$build/bin/wstrace
wsk=$build/bin/wsk
failures=0
check() { # check DESCRIPTION COMMAND...
    if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}
q() { sqlite3 "$1" "$2"; }
# In sanitizer builds the traced program and libwstrace.so are instrumented: the sanitizer
# runtime (WS_SANITIZER_RUNTIME) must come first in LD_PRELOAD, before the tracer.
record() {
    if [ -n "${WS_SANITIZER_RUNTIME:-}" ]; then
        LD_PRELOAD=$WS_SANITIZER_RUNTIME "$wstrace" record "$@"
    else
        "$wstrace" record "$@"
    fi
}

small=(--device sim --layers 2 --hidden 256 --heads 4 --head-dim 64 --intermediate 512 --vocab 1024
       --kv-len 96,128 --max-kv-len 128 --runs 4)
rm -f "$out"/*.db "$out"/*.txt "$out"/report.md

record -o "$out/dynamic.db" -- "$wsk" "${small[@]}" --l1 envelope --alloc dynamic \
    --dump "$out/dynamic-outputs.txt" >"$out/dynamic-run.txt"
"$wstrace" lifetimes "$out/dynamic.db" >/dev/null
check "verify --strict is clean on the --l1 envelope trace" "$wstrace" verify --strict "$out/dynamic.db"
"$wstrace" plan "$out/dynamic.db" >"$out/plan.txt"
record -o "$out/planned.db" -- "$wsk" "${small[@]}" --l1 envelope --alloc plan \
    --plan "$out/dynamic.db" --dump "$out/planned-outputs.txt" >"$out/planned-run.txt"
record -o "$out/arena.db" -- "$wsk" "${small[@]}" --l1 envelope --alloc arena \
    --dump "$out/arena-outputs.txt" >"$out/arena-run.txt"

planned=$(q "$out/dynamic.db" "SELECT MAX(planned_peak_bytes) FROM plans")
bound=$(q "$out/dynamic.db" "SELECT MAX(load_bound_bytes) FROM plans")
plans=$(q "$out/dynamic.db" "SELECT COUNT(*) FROM plans")
peak_planned=$(q "$out/planned.db" "SELECT MAX(live_bytes) FROM live_bytes")
peak_arena=$(q "$out/arena.db" "SELECT MAX(live_bytes) FROM live_bytes")
fallbacks=$(q "$out/planned.db" "SELECT value FROM meta WHERE key = 'plan_fallbacks'")
echo "plans $plans, planned peak $planned, load bound $bound; device peak: planned run $peak_planned, arena run $peak_arena"
check "one plan per shape key (2)" test "$plans" = 2
check "planned peak equals the load bound" test "$planned" = "$bound"
check "planned run's device peak is below the arena run's" test "$peak_planned" -lt "$peak_arena"
check "no planned run fell back" test "$fallbacks" = 0
check "planned outputs identical to dynamic" cmp -s "$out/dynamic-outputs.txt" "$out/planned-outputs.txt"
check "arena outputs identical to dynamic" cmp -s "$out/dynamic-outputs.txt" "$out/arena-outputs.txt"
"$wstrace" report --baseline "$out/arena.db" --candidate "$out/planned.db" --max-regression 0 \
    -o "$out/report.md" && report_status=0 || report_status=$?
check "report against the arena finds no regression (exit 0)" test "$report_status" = 0
check "report shows identical parity" grep -q "identical" "$out/report.md"

# Level 1 evaluated at the maximum shape only under-reserves attention at KV 1024 of 1056.
long=(--device sim --layers 2 --kv-len 1024 --max-kv-len 1056 --runs 1)
record -o "$out/max-shape.db" -- "$wsk" "${long[@]}" --l1 max-shape >/dev/null
record -o "$out/envelope.db" -- "$wsk" "${long[@]}" --l1 envelope >/dev/null
"$wstrace" verify --json "$out/max-shape.db" >/dev/null || true
over=$(q "$out/max-shape.db" "SELECT COUNT(*) FROM verifications v JOIN strings s ON s.id = v.node_name_id
       WHERE v.verdict = 'over-reservation' AND s.value LIKE '%GroupQueryAttention%'")
other=$(q "$out/max-shape.db" "SELECT COUNT(*) FROM verifications v JOIN strings s ON s.id = v.node_name_id
       WHERE v.verdict = 'over-reservation' AND s.value NOT LIKE '%GroupQueryAttention%'")
check "max-shape: the 2 attention nodes are over the reservation ($over), nothing else ($other)" \
    test "$over" = 2 -a "$other" = 0
check "envelope: verify --strict is clean" "$wstrace" verify --strict "$out/envelope.db"

echo "report: $out/report.md"
if [ "$failures" -ne 0 ]; then
    echo "check-loop: $failures check(s) failed"
    exit 1
fi
echo "check-loop: all checks passed"
