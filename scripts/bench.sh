#!/usr/bin/env bash
# Benchmarks behind every figure in the README.  Usage: scripts/bench.sh [SECTION...]
# Sections: hooks collector planner analysis view workload merge (default: all).  Output: Markdown on stdout,
# also saved to out/bench/<section>.md.  Figures are instruction counts (callgrind) or ratios
# measured side by side in one run, so they can be compared across machines.
#   WSTRACE_BENCH_BUILD    build folder, absolute or relative to the repository (default build-bench;
#                          configured Release without nvcc, and brought up to date first)
#   WSTRACE_BENCH_REBUILD  0: use the build folder as it is when it has bin/wstrace
#   WSTRACE_BENCH_OUT      where the section tables are saved (default out/bench)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${WSTRACE_BENCH_BUILD:-build-bench}
case $build in /*) ;; *) build=$root/$build ;; esac
out=${WSTRACE_BENCH_OUT:-$root/out/bench}
mkdir -p "$out"
scripts/bootstrap.sh
if [ ! -x "$build/bin/wstrace" ] || [ "${WSTRACE_BENCH_REBUILD:-1}" = 1 ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DWSTRACE_CUDA=OFF >/dev/null
    cmake --build "$build" -j"$(nproc)" >/dev/null
fi
bin=$build/bin
lib=$build/lib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions executed inside bench_loop (bench_loop_driver when loop=driver), as callgrind counts them.
loop_instructions() {
    local cg=$tmp/cg.out
    rm -f "$cg"
    env "$@" valgrind --tool=callgrind --callgrind-out-file="$cg" --toggle-collect="bench_loop${loop:+_$loop}" \
        "$bin/ws_hookbench" "$iterations" ${loop:+"$loop"} >/dev/null 2>&1
    callgrind_annotate "$cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}'
}

bench_hooks() {
    iterations=100000
    local loop= # the runtime loop first
    local calls=$((3 * iterations))
    local base traced
    base=$(loop_instructions WSTRACE_DISABLE=1)
    traced=$(loop_instructions LD_PRELOAD="$lib/libwstrace.so" WSTRACE_OUTPUT="$tmp/hooks.db" WSTRACE_COLLECT=0)
    local forwarding
    forwarding=$(loop_instructions LD_PRELOAD="$lib/libwstrace.so" WSTRACE_OUTPUT="$tmp/hooks2.db" WSTRACE_DISABLE=1)
    echo "### Hook cost (callgrind, instructions per intercepted call)"
    echo
    echo "Workload: ws_hookbench, $iterations x (cudaMalloc, cudaLaunchKernel, cudaFree) = $calls calls on the simulated device."
    echo
    echo "| configuration | instructions in loop | added per call |"
    echo "|---|---:|---:|"
    echo "| untraced | $base | - |"
    awk -v b="$base" -v t="$forwarding" -v c="$calls" 'BEGIN { printf "| preloaded, tracing disabled (forwarding only) | %d | %.1f |\n", t, (t-b)/c }'
    awk -v b="$base" -v t="$traced" -v c="$calls" 'BEGIN { printf "| traced | %d | %.1f |\n", t, (t-b)/c }'
    echo
    loop=driver
    base=$(loop_instructions WSTRACE_DISABLE=1)
    traced=$(loop_instructions LD_PRELOAD="$lib/libwstrace.so" WSTRACE_OUTPUT="$tmp/hooks3.db" WSTRACE_COLLECT=0)
    forwarding=$(loop_instructions LD_PRELOAD="$lib/libwstrace.so" WSTRACE_OUTPUT="$tmp/hooks4.db" WSTRACE_DISABLE=1)
    loop=
    echo "### Driver-layer hook cost (callgrind, instructions per intercepted call)"
    echo
    echo "Workload: ws_hookbench $iterations driver, $iterations x (cuMemAlloc_v2, cuLaunchKernel, cuMemFree_v2) = $calls calls on the simulated device."
    echo
    echo "| configuration | instructions in loop | added per call |"
    echo "|---|---:|---:|"
    echo "| driver untraced | $base | - |"
    awk -v b="$base" -v t="$forwarding" -v c="$calls" 'BEGIN { printf "| driver preloaded, tracing disabled (forwarding only) | %d | %.1f |\n", t, (t-b)/c }'
    awk -v b="$base" -v t="$traced" -v c="$calls" 'BEGIN { printf "| driver traced | %d | %.1f |\n", t, (t-b)/c }'
    echo
}

bench_collector() {
    local iterations=3400000 # 10.2 million intercepted calls
    local spool=$tmp/collect.db.spool
    LD_PRELOAD="$lib/libwstrace.so" WSTRACE_OUTPUT="$tmp/collect.db" WSTRACE_COLLECT=0 \
        "$bin/ws_hookbench" "$iterations" >/dev/null
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/collect.time" \
        "$bin/wstrace" collect --keep-spool -o "$tmp/collect.db" "$spool" >"$tmp/collect.txt"
    local wall user sys rss records
    read -r wall user sys rss <"$tmp/collect.time"
    records=$(sqlite3 "$tmp/collect.db" "SELECT value FROM meta WHERE key='records'")
    echo "### Collector throughput"
    echo
    echo "Spool of ws_hookbench $iterations (cudaMalloc, cudaLaunchKernel, cudaFree) to SQLite with \`wstrace collect\`."
    echo
    echo "| events | spool MiB | trace MiB | wall s | CPU s | events/s (wall) | events/s (CPU) | peak memory MiB |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -v n="$records" -v w="$wall" -v u="$user" -v y="$sys" -v r="$rss" -v s="$(stat -c %s "$spool")" \
        -v d="$(stat -c %s "$tmp/collect.db")" \
        'BEGIN { printf "| %d | %.0f | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f |\n", n, s/1048576, d/1048576, w, u+y, n/w, n/(u+y), r/1024 }'
    echo
    rm -f "$spool" "$tmp/collect.db"
}

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(hooks collector planner analysis view workload merge)
for s in "${sections[@]}"; do
    case $s in
    hooks) bench_hooks | tee "$out/hooks.md" ;;
    collector) bench_collector | tee "$out/collector.md" ;;
    planner) # WSTRACE_BENCH_BASELINE=/path/to/an/older/wstrace adds its speed and dense rows side by side
        { echo "### Planner quality and speed"; echo; scripts/bench-planner.sh "$build"; echo; } | tee "$out/planner.md" ;;
    analysis) scripts/bench-analysis.sh "$build" | tee "$out/analysis.md" ;;
    view) scripts/bench-view.sh "$build" | tee "$out/view.md" ;;
    workload) scripts/bench-workload.sh "$build" | tee "$out/workload.md" ;;
    merge) scripts/bench-merge.sh "$build" | tee "$out/merge.md" ;;
    *) echo "bench.sh: unknown section '$s' (hooks collector planner analysis view workload merge)" >&2; exit 2 ;;
    esac
done
