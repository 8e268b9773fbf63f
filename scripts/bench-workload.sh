#!/usr/bin/env bash
# Peak device memory of the wsk workload allocated three ways, for three workload sizes:
#   dynamic  cudaMalloc/cudaFree at exact sizes (its peak is the load bound of the planning problem)
#   arena    a caching BFC arena like ONNX Runtime's default CUDA allocator (what a framework does
#            without a plan)
#   plan     the static plan that `wstrace plan` computed from the dynamic trace
# Usage: scripts/bench-workload.sh [BUILD_DIR]   (default: build; needs bin/wstrace, bin/wsk, sqlite3)
# Output: a Markdown table on stdout; traces are kept in a temporary folder removed at exit.
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
