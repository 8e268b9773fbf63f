#!/usr/bin/env bash
# The main job's loop on a small configuration, as a check (run by ctest as e2e_main_loop):
# record wsk allocating on the fly, verify, plan, record it under the plan and through a caching
# arena, and fail unless
#   - verification of the --l1 envelope trace is clean, and a --l1 max-shape trace at a KV length
#     that needs more attention workspace than the maximum shape (the flash-decoding split rule is
#     not monotonic: 13,824 positions take 54 splits, 13,825 only 28) is flagged over the
#     reservation, with verify --strict's exit status 1 against 0;
#   - the matmuls' declarations are tactic-aware (a tactic-cache miss, then cached GEMVs);
#   - the planned peak equals the load bound and is below the arena's peak;
#   - no planned run falls back and every output is bitwise identical;
#   - with prompts (prefill) beside decoding steps: the in-process pattern (--alloc pattern) plans
#     each shape key as `wstrace plan` does, never falls back, and once planned holds the plan run's
#     device peak, below the arena's; and Level 1 at the maximum shape misses a prompt continuing a
#     cache (verify --strict exits 1) where the envelope is clean (0).
# Usage: scripts/check-loop.sh BUILD_DIR [OUT_DIR]   (report: OUT_DIR/report.md, default out/ci)
set -euo pipefail
build=$(cd "${1:?usage: check-loop.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(dirname "$0")/../out/ci}
mkdir -p "$out"
out=$(cd "$out" && pwd)
wstrace=$build/bin/wstrace
wsk=$build/bin/wsk
failures=0
check() { # check DESCRIPTION COMMAND...   (the command's output goes to OUT_DIR/checks.log)
    if "${@:2}" >>"$out/checks.log" 2>&1; then
        echo "ok: $1"
    else
        echo "FAIL: $1 (output in $out/checks.log)"
        failures=$((failures + 1))
    fi
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
rm -f "$out"/*.db "$out"/*.txt "$out"/report.md "$out"/checks.log

record -o "$out/dynamic.db" -- "$wsk" "${small[@]}" --l1 envelope --alloc dynamic \
    --dump "$out/dynamic-outputs.txt" >"$out/dynamic-run.txt"
# plan computes the lifetimes table itself when the trace has none yet
"$wstrace" plan "$out/dynamic.db" >"$out/plan.txt"
lifetime_rows=$(q "$out/dynamic.db" "SELECT COUNT(*) FROM lifetimes")
device_rows=$(q "$out/dynamic.db" "SELECT COUNT(*) FROM allocations WHERE status = 0 AND memory IN ('device', 'managed')")
check "plan wrote a lifetime for each of the $device_rows device allocations ($lifetime_rows)" \
    test "$lifetime_rows" = "$device_rows" -a "$device_rows" -gt 0

# The workload as traced: one range per node per run (13 nodes per layer, plus embedding, final
# norm, lm_head and argmax), Level 1 for every node, and every workspace allocation exactly the
# size its kernel declared (Level 2) for that run's shape key.
nodes=$((13 * 2 + 4))
runs=$(q "$out/dynamic.db" "SELECT COUNT(*) FROM runs")
bad_runs=$(q "$out/dynamic.db" "SELECT COUNT(*) FROM runs r WHERE (SELECT COUNT(*) FROM ranges g WHERE g.run_id = r.id) <> $nodes
                                OR (SELECT COUNT(DISTINCT name_id) FROM ranges g WHERE g.run_id = r.id) <> $nodes")
l1_nodes=$(q "$out/dynamic.db" "SELECT COUNT(DISTINCT node_name_id) FROM declarations WHERE level = 1")
workspace=$(q "$out/dynamic.db" "SELECT COUNT(*) FROM lifetimes WHERE class = 'workspace'")
undeclared=$(q "$out/dynamic.db" "
    SELECT COUNT(*) FROM lifetimes l JOIN runs r ON r.id = l.run_id
    WHERE l.class = 'workspace' AND l.bytes IS NOT (
        SELECT MAX(d.bytes) FROM declarations d JOIN runs dr ON dr.id = d.run_id
        WHERE d.level = 2 AND d.node_name_id = l.node_name_id AND d.slot = l.slot
          AND dr.shape_key_id = r.shape_key_id)")
check "4 runs with $nodes node ranges each" test "$runs" = 4 -a "$bad_runs" = 0
check "a Level-1 estimate for each of the $nodes nodes ($l1_nodes)" test "$l1_nodes" = "$nodes"
check "$workspace workspace allocations, each of its Level-2 size ($undeclared differ)" \
    test "$workspace" -gt 0 -a "$undeclared" = 0
check "verify --strict is clean on the --l1 envelope trace" "$wstrace" verify --strict "$out/dynamic.db"
tactics=$(q "$out/dynamic.db" "SELECT group_concat(kind, ',') FROM (SELECT DISTINCT x.tactic_kind AS kind
          FROM declaration_details x WHERE x.tactic_kind IS NOT NULL ORDER BY kind)")
check "matmul declarations name their tactic: a cache miss, then cached GEMVs ($tactics)" \
    test "$tactics" = "cached-free,miss"
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
"$wstrace" report --baseline "$out/arena.db" --candidate "$out/planned.db" -o "$out/report.md"
check "report shows identical parity" grep -q "identical" "$out/report.md"

# Level 1 evaluated at the maximum shape only (13,825 positions: 28 splits) under-reserves
# attention at 13,824 (54 splits); the envelope covers every length up to the maximum.
long=(--device sim --layers 2 --heads 2 --head-dim 64 --sm-count 108 --kv-len 13824 --max-kv-len 13825 --runs 1)
record -o "$out/max-shape.db" -- "$wsk" "${long[@]}" --l1 max-shape >/dev/null
record -o "$out/envelope.db" -- "$wsk" "${long[@]}" --l1 envelope >/dev/null
status=0
"$wstrace" verify --strict --json "$out/max-shape.db" >"$out/max-shape-verify.json" || status=$?
check "max-shape: verify --strict exits 1, findings ($status)" test "$status" = 1
over=$(q "$out/max-shape.db" "SELECT COUNT(DISTINCT v.node_name_id) FROM verifications v JOIN strings s ON s.id = v.node_name_id
       WHERE v.verdict = 'over-reservation' AND s.value LIKE '%GroupQueryAttention%'")
other=$(q "$out/max-shape.db" "SELECT COUNT(*) FROM verifications WHERE verdict <> 'ok'")
check "max-shape: the 2 attention nodes are over the reservation ($over), nothing else (findings $other)" \
    test "$over" = 2 -a "$other" = 2
status=0
"$wstrace" verify --strict "$out/envelope.db" >"$out/envelope-verify.txt" || status=$?
check "envelope: verify --strict exits 0, clean ($status)" test "$status" = 0

# Prompts: a first prompt of 32 tokens at batch 2 beside decoding steps, each key twice.
prompt=(--device sim --layers 2 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --intermediate 512 --vocab 1024
        --batch 1,2 --seq-len 1,32 --kv-len 96,32 --runs 4 --l1 envelope)
for mode in dynamic arena pattern; do
    record -o "$out/prompt-$mode.db" -- "$wsk" "${prompt[@]}" --alloc $mode \
        --dump "$out/prompt-$mode-outputs.txt" >"$out/prompt-$mode-run.txt"
done
"$wstrace" plan "$out/prompt-dynamic.db" >"$out/prompt-plan.txt"
record -o "$out/prompt-plan.db" -- "$wsk" "${prompt[@]}" --alloc plan --plan "$out/prompt-dynamic.db" \
    --dump "$out/prompt-plan-outputs.txt" >"$out/prompt-plan-run.txt"
check "prompts: verify --strict is clean on the --l1 envelope trace" "$wstrace" verify --strict "$out/prompt-dynamic.db"
for mode in arena plan pattern; do
    check "prompts: $mode outputs identical to dynamic" cmp -s "$out/prompt-dynamic-outputs.txt" \
        "$out/prompt-$mode-outputs.txt"
done
expected=$(q "$out/prompt-dynamic.db" "SELECT group_concat(line, ' ') FROM (SELECT 'pattern ' || s.value || ': ' ||
           p.blocks || ' blocks in ' || p.planned_peak_bytes || ' bytes' AS line FROM plans p
           JOIN strings s ON s.id = p.shape_key_id ORDER BY p.run_id)")
made=$(grep -E '^pattern batch' "$out/prompt-pattern-run.txt" | sed 's/ (load bound.*//' | paste -sd' ' -)
check "prompts: each key's in-process pattern is its trace plan ($made)" test "$made" = "$expected"
check "prompts: no pattern run fell back" test "$(q "$out/prompt-pattern.db" "SELECT value FROM meta WHERE key = 'plan_fallbacks'")" = 0
after=$(q "$out/prompt-pattern.db" "SELECT MAX(live_bytes) FROM live_bytes WHERE ns >= (SELECT MAX(r.end_ns) FROM runs r
        JOIN marks m ON m.ns BETWEEN r.start_ns AND r.end_ns JOIN strings s ON s.id = m.name_id
        WHERE s.value = 'wsk.pattern=generate')")
planned_prompt=$(q "$out/prompt-plan.db" "SELECT MAX(live_bytes) FROM live_bytes")
arena_prompt=$(q "$out/prompt-arena.db" "SELECT MAX(live_bytes) FROM live_bytes")
check "prompts: pattern's device peak once planned ($after) is the plan run's ($planned_prompt)" \
    test "$after" = "$planned_prompt"
check "prompts: the plan run's device peak is below the arena's ($arena_prompt)" test "$planned_prompt" -lt "$arena_prompt"

# A first prompt of 300 tokens and one of 50 continuing a cache of 250 (8 query heads over 1 KV
# head, 20 SMs): at the maximum shape (the first prompt) attention takes one split, the
# continuation 2 and a far larger root (test_wsk_prefill.c derives both).
cont=(--device sim --layers 1 --heads 8 --kv-heads 1 --head-dim 64 --sm-count 20 --seq-len 300,50 --kv-len 300
      --runs 2)
for policy in max-shape envelope; do
    record -o "$out/prompt-$policy.db" -- "$wsk" "${cont[@]}" --l1 $policy >/dev/null
done
status=0
"$wstrace" verify --strict "$out/prompt-max-shape.db" >"$out/prompt-max-shape-verify.txt" || status=$?
over=$(q "$out/prompt-max-shape.db" "SELECT COUNT(*) FROM verifications v JOIN strings k ON k.id = v.shape_key_id
       WHERE v.verdict = 'over-reservation' AND k.value = 'batch=1,seq=50,kv=300'")
check "prompts, max-shape: verify --strict exits 1 on the continuation's attention ($status, $over)" \
    test "$status" = 1 -a "$over" = 1
status=0
"$wstrace" verify --strict "$out/prompt-envelope.db" >"$out/prompt-envelope-verify.txt" || status=$?
check "prompts, envelope: verify --strict exits 0, clean ($status)" test "$status" = 0

echo "report: $out/report.md"
if [ "$failures" -ne 0 ]; then
    echo "check-loop: $failures check(s) failed"
    exit 1
fi
echo "check-loop: all checks passed"
