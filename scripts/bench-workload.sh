#!/usr/bin/env bash
# Peak device memory of the wsk workload allocated three ways, for three workload sizes:
#   dynamic  cudaMalloc/cudaFree at exact sizes (its peak is the load bound of the planning problem)
#   arena    a caching BFC arena like ONNX Runtime's default CUDA allocator (what a framework does
#            without a plan)
#   plan     the static plan that `wstrace plan` computed from the dynamic trace
# then, for prompts (prefill) of a 7B-class model at several sequence lengths and batch 1 and 8,
# a fourth way:
#   pattern  ONNX Runtime's in-process flow: the first run allocates on the fly and is planned in
#            process, the later ones take its blocks (--alloc pattern)
# Usage: scripts/bench-workload.sh [BUILD_DIR]   (default: build; needs bin/wstrace, bin/wsk, sqlite3)
# WSTRACE_BENCH_QUICK=1 leaves out the longest prompts (256 tokens); WSTRACE_BENCH_PREFILL=0 leaves
# out the prompts (prefill) altogether; WSTRACE_BENCH_PREFILL_ROWS="16x1 64x8" runs only those
# prompt rows (TOKENSxBATCH; scripts/check-figures.sh checks the first table and one prompt row).
# Output: Markdown tables on stdout; traces are kept in a temporary folder removed at exit.
set -euo pipefail
build=${1:-build}
wstrace=$build/bin/wstrace
wsk=$build/bin/wsk
for f in "$wstrace" "$wsk"; do
    [ -x "$f" ] || { echo "bench-workload.sh: $f not found (build first)" >&2; exit 2; }
done
command -v sqlite3 >/dev/null || { echo "bench-workload.sh: sqlite3 not found" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Two shape keys each (every run is planned under the plan, whose trace holds both keys); small
# KV lengths and, for the large size, one run per key keep the simulated device fast.
small=(--layers 2 --hidden 256 --heads 4 --head-dim 64 --intermediate 512 --vocab 1024
       --batch 1,4 --kv-len 64,96 --max-kv-len 128 --runs 4)
medium=(--layers 8 --hidden 512 --heads 8 --head-dim 64 --intermediate 1408 --vocab 4096
        --batch 1,4 --kv-len 64,96 --max-kv-len 128 --runs 4)
large=(--layers 32 --hidden 1024 --heads 16 --head-dim 64 --intermediate 2816 --vocab 8192
       --batch 1,2 --kv-len 16,32 --max-kv-len 32 --runs 2)

q() { sqlite3 -batch -noheader "$1" "$2"; }
peak() { q "$1" "SELECT MAX(live_bytes) FROM live_bytes"; }
meta() { q "$1" "SELECT COALESCE((SELECT value FROM meta WHERE key = '$2'), '-')"; }
# Successful device allocations made inside runs, per run.
calls_per_run() {
    q "$1" "SELECT printf('%.1f', 1.0 * (SELECT COUNT(*) FROM allocations WHERE status = 0 AND
            memory = 'device' AND run_id IS NOT NULL) / (SELECT COUNT(*) FROM runs))"
}

bench_size() { # bench_size NAME WSK_ARGS...
    local name=$1 dir=$tmp/$1
    shift
    mkdir -p "$dir"
    echo "bench-workload: $name" >&2
    "$wstrace" record -o "$dir/dynamic.db" -- "$wsk" --device sim "$@" --alloc dynamic >/dev/null
    "$wstrace" lifetimes "$dir/dynamic.db" >/dev/null
    "$wstrace" plan "$dir/dynamic.db" >/dev/null
    "$wstrace" record -o "$dir/arena.db" -- "$wsk" --device sim "$@" --alloc arena >/dev/null
    "$wstrace" record -o "$dir/plan.db" -- "$wsk" --device sim "$@" --alloc plan \
        --plan "$dir/dynamic.db" >/dev/null
    local plans
    plans=$(q "$dir/dynamic.db" "SELECT MAX(planned_peak_bytes) || ' | ' || MAX(load_bound_bytes)
        || ' | ' || MAX(dynamic_peak_bytes) || ' | ' ||
        printf('%.3f', MAX(1.0 * planned_peak_bytes / load_bound_bytes)) FROM plans")
    local parity=no
    if [ "$(meta "$dir/dynamic.db" output_checksum)" = "$(meta "$dir/arena.db" output_checksum)" ] &&
        [ "$(meta "$dir/dynamic.db" output_checksum)" = "$(meta "$dir/plan.db" output_checksum)" ]; then
        parity="yes ($(meta "$dir/dynamic.db" output_checksum))"
    fi
    echo "| $name | $(peak "$dir/dynamic.db") | $(peak "$dir/arena.db") | $(peak "$dir/plan.db") |" \
        "$plans | $(calls_per_run "$dir/dynamic.db") | $(calls_per_run "$dir/arena.db") |" \
        "$(calls_per_run "$dir/plan.db") | $(meta "$dir/plan.db" plan_fallbacks) | $parity |"
}

echo "### Workload: dynamic vs caching arena vs static plan (simulated device)"
echo
echo "| size | peak live, dynamic | peak live, arena | peak live, plan | planned peak | load bound | dynamic peak (run) | planned / LB | calls/run, dynamic | calls/run, arena | calls/run, plan | plan fallbacks | identical outputs |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
bench_size small "${small[@]}"
bench_size medium "${medium[@]}"
bench_size large "${large[@]}"
echo
echo "Peak live: \`SELECT MAX(live_bytes) FROM live_bytes\` over the whole trace, persistent buffers"
echo "(weights, KV cache) included; they are the same in all three. Planned peak, load bound and"
echo "dynamic peak (activations and workspace of one run) come from the dynamic trace's \`plans\`"
echo "table, the largest over its shape keys; planned / LB is the largest ratio. Calls/run: successful"
echo "device allocations made inside runs (\`run_id IS NOT NULL\`) divided by the runs; persistent"
echo "buffers and the plan's backing buffer (one for all shape keys, as large as the largest plan,"
echo "allocated before the first planned run) are outside runs and not counted; the arena's regions"
echo "are allocated inside runs and are. Identical outputs: meta \`output_checksum\` equal in the"
echo "three traces."
echo
echo "Workloads: small \`${small[*]}\`; medium \`${medium[*]}\`; large \`${large[*]}\`."

# ---- prefill ----

# 1,234,567: bytes for people.
commas() { sed -e ':a' -e 's/\B\([0-9]\{3\}\)\($\|[^0-9]\)/,\1\2/; ta' <<<"$1"; }
# The device peak once the pattern exists: after the end of the last run that generated one (the
# runs are marked in the trace, schema/README.md).
peak_after_patterns() {
    q "$1" "SELECT MAX(live_bytes) FROM live_bytes WHERE ns >= (SELECT MAX(r.end_ns) FROM runs r
            JOIN marks m ON m.ns BETWEEN r.start_ns AND r.end_ns JOIN strings s ON s.id = m.name_id
            WHERE s.value = 'wsk.pattern=generate')"
}

# One prompt shape, two runs of it, recorded four ways; one Markdown row.
prefill_row() { # prefill_row SEQ BATCH
    local seq=$1 batch=$2 dir=$tmp/prefill-$1-$2
    local args=("${prefill[@]}" --seq-len "$seq" --batch "$batch")
    mkdir -p "$dir"
    echo "bench-workload: prefill seq $seq batch $batch" >&2
    "$wstrace" record -o "$dir/dynamic.db" -- "$wsk" --device sim "${args[@]}" --alloc dynamic >/dev/null
    "$wstrace" plan "$dir/dynamic.db" >/dev/null
    "$wstrace" record -o "$dir/arena.db" -- "$wsk" --device sim "${args[@]}" --alloc arena >/dev/null
    "$wstrace" record -o "$dir/plan.db" -- "$wsk" --device sim "${args[@]}" --alloc plan \
        --plan "$dir/dynamic.db" >/dev/null
    "$wstrace" record -o "$dir/pattern.db" -- "$wsk" --device sim "${args[@]}" --alloc pattern >/dev/null
    local dyn arena plan pattern sum parity=no
    dyn=$(peak "$dir/dynamic.db") arena=$(peak "$dir/arena.db") plan=$(peak "$dir/plan.db")
    pattern=$(peak_after_patterns "$dir/pattern.db")
    sum=$(meta "$dir/dynamic.db" output_checksum)
    if [ "$sum" = "$(meta "$dir/arena.db" output_checksum)" ] && [ "$sum" = "$(meta "$dir/plan.db" output_checksum)" ] &&
        [ "$sum" = "$(meta "$dir/pattern.db" output_checksum)" ]; then
        parity="yes ($sum)"
    fi
    # What the runs hold beyond the persistent buffers: the arena's regions, the plan's buffer.
    local ratio reserved buffer saving run_saving
    ratio=$(q "$dir/dynamic.db" "SELECT printf('%.3f', 1.0 * planned_peak_bytes / load_bound_bytes) FROM plans")
    reserved=$(meta "$dir/arena.db" arena_reserved_bytes)
    buffer=$(q "$dir/dynamic.db" "SELECT planned_peak_bytes FROM plans")
    saving=$(awk -v a="$arena" -v p="$plan" 'BEGIN { printf "%.1f", 100 * (p - a) / a }')
    run_saving=$(awk -v a="$reserved" -v p="$buffer" 'BEGIN { printf "%.1f", 100 * (p - a) / a }')
    echo "| $seq | $batch | $(commas "$dyn") | $(commas "$arena") | $(commas "$plan") | $(commas "$pattern") |" \
        "${saving/-/−} % | $(commas "$reserved") → $(commas "$buffer") (${run_saving/-/−} %) | $ratio |" \
        "$(calls_per_run "$dir/dynamic.db") / $(calls_per_run "$dir/arena.db") /" \
        "$(calls_per_run "$dir/plan.db") / $(calls_per_run "$dir/pattern.db") |" \
        "$(meta "$dir/plan.db" plan_fallbacks) / $(meta "$dir/pattern.db" plan_fallbacks) | $parity |"
}

[ "${WSTRACE_BENCH_PREFILL:-1}" = 0 ] && exit 0

# Mistral 7B's shapes (hidden 4096, 32 heads over 8 KV heads of 128, MLP 14,336, vocabulary 32,000)
# with one layer, so that the simulated device runs a prompt of 2,048 rows in seconds; first prompts
# (the KV length is the prompt's).
prefill=(--model mistral-7b --layers 1 --runs 2)
seqs=(16 64 256)
[ "${WSTRACE_BENCH_QUICK:-0}" = 1 ] && seqs=(16 64)
echo
echo "### Prefill: dynamic vs caching arena vs static plan vs in-process pattern (simulated device)"
echo
echo "| tokens | batch | device peak, dynamic | device peak, arena | device peak, plan | device peak, pattern after its first run | plan vs arena | beyond the persistent buffers: arena regions → planned buffer | planned / LB | calls/run: dynamic / arena / plan / pattern | fallbacks: plan / pattern | identical outputs |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
if [ -n "${WSTRACE_BENCH_PREFILL_ROWS:-}" ]; then
    for shape in $WSTRACE_BENCH_PREFILL_ROWS; do
        [[ $shape =~ ^([0-9]+)x([0-9]+)$ ]] || {
            echo "bench-workload.sh: WSTRACE_BENCH_PREFILL_ROWS: '$shape' is not TOKENSxBATCH" >&2
            exit 2
        }
        prefill_row "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    done
else
    for batch in 1 8; do
        for seq in "${seqs[@]}"; do
            prefill_row "$seq" "$batch"
        done
    done
fi
echo
echo "Device peak: \`SELECT MAX(live_bytes) FROM live_bytes\`, persistent buffers (weights, embedding"
echo "table, KV cache) included; for the pattern trace from the end of the run that generated the"
echo "pattern on. Plan vs arena: the plan's device peak against the arena's. Beyond the persistent"
echo "buffers: what the runs hold on top of weights, embedding table and KV cache (the same in every"
echo "mode), the arena's regions (meta \`arena_reserved_bytes\`) against the plan's one buffer (its"
echo "\`planned_peak_bytes\`): the allocation ONNX Runtime's pilot saves. Planned / LB: the plan of the"
echo "dynamic trace (\`wstrace plan\`) over its load bound. Calls/run: successful device allocations"
echo "inside runs divided by the 2 runs (the pattern's first run allocates on the fly, the second makes"
echo "none). Fallbacks: meta \`plan_fallbacks\`. Identical outputs: meta \`output_checksum\` equal in"
echo "the four traces."
echo
echo "Workload: \`${prefill[*]} --seq-len TOKENS --batch BATCH\`."
