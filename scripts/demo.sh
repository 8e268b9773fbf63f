#!/usr/bin/env bash
# The main job, end to end: build, trace the bundled workload allocating on the fly, analyse it,
# plan it, run it again under the plan, and compare the two traces.
#
# Leaves in out/demo/: dynamic.db, arena.db, planned.db and pattern.db (the traces; pattern.db is
# ONNX Runtime's in-process flow, --alloc pattern), report.md (dynamic against planned),
# arena-report.md (a caching arena against planned), plan.svg (a picture of the layouts: blocks
# over time and offset, one panel per shape key), dynamic.html (the page of `wstrace view` of the
# dynamic trace), drop-max-shape.db and drop-envelope.db (the flash-decoding drop), partition.db,
# partition.svg and node_stats.csv (how many layers of a larger model fit a budget), and the
# outputs of each step (*.txt).  Uses the GPU when one is present, else the simulated device.
# Options: WSK_ARGS overrides the workload configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/out/demo
build=${WSTRACE_BUILD:-build}
mkdir -p "$out"

step=0
steps=12
say() {
    step=$((step + 1))
    printf '\n\033[1m[%d/%d] %s\033[0m\n' "$step" "$steps" "$*"
}

say "install missing packages and build ($build/)"
scripts/bootstrap.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/configure.txt" 2>&1 ||
    { cat "$out/configure.txt"; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$out/build.txt" 2>&1 || { tail -n 40 "$out/build.txt"; exit 1; }
echo "built $build/bin/wstrace, $build/bin/wsk, $build/lib/libwstrace.so"

wstrace=$root/$build/bin/wstrace
wsk=$root/$build/bin/wsk
# A decoder of 8 layers; batch 1 and 8, one new token or a first prompt of 64, and KV lengths 96,
# 128 and 64 cycle over 12 runs, so six shape keys run twice each: four decoding steps and two
# prompts (batch=1,seq=64,kv=64 and batch=8,seq=64,kv=64); Level 1 from the envelope policy.
read -r -a workload <<<"${WSK_ARGS:---layers 8 --hidden 512 --heads 8 --head-dim 64 --intermediate 1408 --vocab 4096 --batch 1,8 --seq-len 1,1,64 --kv-len 96,128,64 --max-kv-len 128 --runs 12 --l1 envelope}"

say "trace the workload, allocating on the fly (dynamic.db)"
rm -f "$out/dynamic.db" "$out/planned.db" "$out/pattern.db"
"$wstrace" record -o "$out/dynamic.db" -- "$wsk" "${workload[@]}" --alloc dynamic --dump "$out/dynamic-outputs.txt" |
    tee "$out/dynamic-run.txt"

say "summary"
"$wstrace" summary "$out/dynamic.db" | tee "$out/summary.txt"

say "lifetimes and resolution: the planner's ledger (max(profile, estimator)) and ONNX Runtime's"
"$wstrace" lifetimes "$out/dynamic.db" >"$out/lifetimes.txt"
"$wstrace" resolve "$out/dynamic.db" >"$out/resolve.txt"
head -n 12 "$out/resolve.txt"
echo "... (all nodes in out/demo/resolve.txt)"
sed -n '/^planner.s ledger/,$p' "$out/resolve.txt"

say "verify Level-2 declarations against Level 1 and observed use"
"$wstrace" verify --strict "$out/dynamic.db" >"$out/verify.txt" || { cat "$out/verify.txt"; exit 1; }
tail -n 2 "$out/verify.txt"

say "flash decoding: one more KV position, less workspace; a Level 1 at the maximum shape only is caught"
# ONNX Runtime's split rule for 2 heads of 64 on 108 SMs: 54 splits at 13,824 positions, 28 at 13,825.
drop=(--layers 1 --heads 2 --head-dim 64 --sm-count 108 --batch 1 --kv-len 13824,13825 --max-kv-len 13825 --runs 2)
for policy in max-shape envelope; do
    rm -f "$out/drop-$policy.db"
    "$wstrace" record -o "$out/drop-$policy.db" -- "$wsk" "${drop[@]}" --l1 "$policy" >"$out/drop-$policy-run.txt"
done
sqlite3 -separator '  ' "$out/drop-max-shape.db" "
    SELECT k.value, t.value, 'Level 2 root ' || d.bytes || ' B',
           'accumulators ' || (SELECT SUM(r.bytes) FROM declaration_regions r WHERE r.declaration_id = d.id
                                AND r.ordinal > 0) || ' B'
    FROM declarations d JOIN strings s ON s.id = d.node_name_id JOIN runs u ON u.id = d.run_id
    JOIN strings k ON k.id = u.shape_key_id JOIN declaration_details x ON x.declaration_id = d.id
    JOIN strings t ON t.id = x.tactic_id
    WHERE d.level = 2 AND s.value LIKE '%GroupQueryAttention' ORDER BY k.value"
for policy in max-shape envelope; do
    printf 'Level 1 (%s): %s B\n' "$policy" "$(sqlite3 "$out/drop-$policy.db" "SELECT MAX(d.bytes) FROM declarations d
        JOIN strings s ON s.id = d.node_name_id WHERE d.level = 1 AND s.value LIKE '%GroupQueryAttention'")"
done
for policy in max-shape envelope; do
    status=0
    "$wstrace" verify --strict "$out/drop-$policy.db" >"$out/drop-$policy-verify.txt" || status=$?
    echo "verify --strict, Level 1 $policy: exit $status"
    grep -E '^NODE|GroupQueryAttention' "$out/drop-$policy-verify.txt" | sed 's/   */  /g'
    tail -n 1 "$out/drop-$policy-verify.txt"
    case $policy:$status in
    max-shape:1 | envelope:0) ;;
    *) echo "unexpected verification result for --l1 $policy (exit $status)" >&2; exit 1 ;;
    esac
done

say "plan: one static layout per shape key"
"$wstrace" plan "$out/dynamic.db" --svg "$out/plan.svg" | tee "$out/plan.txt"

say "run the workload again under the plan (planned.db), and planned in process as ONNX Runtime does (pattern.db)"
"$wstrace" record -o "$out/planned.db" -- "$wsk" "${workload[@]}" --alloc plan --plan "$out/dynamic.db" \
    --dump "$out/planned-outputs.txt" | tee "$out/planned-run.txt"
"$wstrace" lifetimes "$out/planned.db" >/dev/null
# The first run of each shape key allocates on the fly and is planned in process; later runs take
# its pattern.  Each key's pattern is the plan of the step before.
"$wstrace" record -o "$out/pattern.db" -- "$wsk" "${workload[@]}" --alloc pattern \
    --dump "$out/pattern-outputs.txt" >"$out/pattern-run.txt"
grep -E '^pattern' "$out/pattern-run.txt"

say "trace the workload through a caching arena, as frameworks allocate without a plan (arena.db)"
"$wstrace" record -o "$out/arena.db" -- "$wsk" "${workload[@]}" --alloc arena --dump "$out/arena-outputs.txt" |
    tee "$out/arena-run.txt"

say "check outputs: planned, pattern and arena runs against the dynamic run"
for mode in planned pattern arena; do
    if cmp -s "$out/dynamic-outputs.txt" "$out/$mode-outputs.txt"; then
        echo "$mode: outputs identical (tokens and logits of every run, bit for bit)"
    else
        echo "$mode: outputs DIFFER: see out/demo/dynamic-outputs.txt and $mode-outputs.txt" >&2
        exit 1
    fi
done

say "report: the saving against a caching arena (arena.db baseline, planned.db candidate)"
"$wstrace" report --baseline "$out/dynamic.db" --candidate "$out/planned.db" -o "$out/report.md"
"$wstrace" report --baseline "$out/arena.db" --candidate "$out/planned.db" -o "$out/arena-report.md"
# The saving first, then what each shape key needs beside the persistent buffers: a prompt's
# activations and workspace dwarf a decoding step's.
arena_peak=$(sqlite3 "$out/arena.db" "SELECT MAX(live_bytes) FROM live_bytes")
planned_peak=$(sqlite3 "$out/planned.db" "SELECT MAX(live_bytes) FROM live_bytes")
awk -v a="$arena_peak" -v p="$planned_peak" 'BEGIN {
    printf "## Saving against a caching arena: device peak %d B under the arena, %d B under the plan (%+.1f %%)\n", \
        a, p, 100 * (p - a) / a }'
echo
echo "| shape key | planned activations and workspace (one run) | load bound |"
echo "|---|---:|---:|"
sqlite3 -separator ' | ' "$out/dynamic.db" "SELECT '| ' || s.value || CASE WHEN s.value LIKE '%seq=%' THEN ' (prompt)'
    ELSE '' END, p.planned_peak_bytes, p.load_bound_bytes || ' |' FROM plans p JOIN strings s ON s.id = p.shape_key_id
    ORDER BY p.run_id"
echo
cat "$out/arena-report.md"
echo
echo "## Against allocating on the fly (dynamic.db baseline, planned.db candidate; full report in out/demo/report.md)"
echo
awk '/^## Peak live device bytes/ {on = 1; next} /^## / {on = 0} on' "$out/report.md"
"$wstrace" view "$out/dynamic.db" -o "$out/dynamic.html"
echo "Traces: out/demo/dynamic.db, arena.db, planned.db, pattern.db.  Reports: out/demo/arena-report.md, report.md"
echo "Open out/demo/dynamic.html in a browser to explore the dynamic trace's memory (wstrace view)."

say "partition: how many layers of a larger model fit a budget; ONNX Runtime's rules and stats file"
# Eight layers of hidden size 2048 (4-bit weights) and a vocabulary of 8192: 356 MiB of weights, KV
# cache and embedding, more than either budget below.  Two runs are enough: the costs are per layer.
big=(--layers 8 --hidden 2048 --heads 16 --head-dim 128 --intermediate 5632 --vocab 8192 --batch 1 --kv-len 256
    --max-kv-len 256 --runs 2 --l1 envelope)
rm -f "$out/partition.db"
"$wstrace" record -o "$out/partition.db" -- "$wsk" "${big[@]}" >"$out/partition-run.txt"
grep '^persistent bytes' "$out/partition-run.txt"
"$wstrace" partition "$out/partition.db" --budget 96M,192M --svg "$out/partition.svg" | tee "$out/partition.txt"
echo
echo "A rule written for another exporter's names (model.layers.N instead of /model/layers.N/):"
"$wstrace" partition "$out/partition.db" --budget 192M --rules "cpu(embed_tokens);gpu(model.layers.,lm_head)" \
    >"$out/partition-rules.txt"
sed -n '/^rule coverage/,/^warning/p' "$out/partition-rules.txt"
status=0
"$wstrace" partition "$out/partition.db" --budget 192M --strict --rules "cpu(embed_tokens);gpu(model.layers.,lm_head)" \
    >/dev/null 2>&1 || status=$?
echo "partition --strict with that rule: exit $status"
[ "$status" = 1 ] || { echo "a rule that matches no node must fail under --strict" >&2; exit 1; }
echo
echo "ONNX Runtime's node-stats file from the trace, read back as a profile:"
"$wstrace" export "$out/partition.db" --format ort-node-stats -o "$out/node_stats.csv" 2>/dev/null
head -n 4 "$out/node_stats.csv"
echo "... ($(($(wc -l <"$out/node_stats.csv") - 1)) nodes in out/demo/node_stats.csv)"
"$wstrace" resolve "$out/partition.db" >"$out/partition-resolve.txt"
echo "resolve without the file (a trace shows no input tensors):"
grep -A1 "^ORT's ledger" "$out/partition-resolve.txt"
"$wstrace" resolve "$out/partition.db" --estimates "$out/node_stats.csv" >"$out/partition-resolve-stats.txt"
echo "resolve --estimates node_stats.csv (its input_sizes hold each node's weights):"
grep -A1 "^ORT's ledger" "$out/partition-resolve-stats.txt"
echo "Picture of the layers against both budgets: out/demo/partition.svg"
