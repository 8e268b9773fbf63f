#!/usr/bin/env bash
# gpu-check.sh - the one command to run on a machine with an NVIDIA GPU.
#
# Builds wstrace with nvcc (WSTRACE_CUDA=ON), runs the wsk workload on the GPU (--device cuda)
# and on the simulated device (--device sim, the host reference kernels), and compares:
#   - generated tokens: identical in every run;
#   - logits: max |gpu - sim| <= 1e-3 * max(1, max |sim|) over all runs (fp32 with different
#     summation orders and exp implementations; 4-bit weights keep values near unit size);
#   - the GPU run is bitwise reproducible across --alloc dynamic and --alloc async;
#   - CUDA graphs with memory nodes (tests/graph/graph_gpu.cu: an explicit graph and a captured one)
#     traced on the GPU and on the simulated device: the same sums, and traces with the same graph
#     launches, allocations made by them, kernels run and captured calls;
#   - cuBLAS and cuBLASLt GEMMs with workspaces (tests/gpu/cublas_gemm.c) traced under libwstrace.so:
#     the program's allocations with their exact sizes, recorded once (never again at the driver
#     layer its runtime reaches), and the libraries' kernels, which only the driver hooks see,
#     with names, and the workspace cuBLAS allocates itself, which must be a driver-layer
#     allocation (cuBLAS carries its own runtime and fetches cuMemAlloc*, cuLaunchKernel* with
#     cuGetProcAddress);
#   - prompts (the prefill kernels: the GEMM tactic with serial split-K, first prompts and a prompt
#     continuing a cache with several splits, the last-position norm): GPU against simulated
#     device as above, and bitwise identical on the GPU under --alloc dynamic and --alloc pattern;
#   - the main job (scripts/demo.sh) runs on the GPU: trace, plan, planned rerun, report.
# Prints one PASS/FAIL line per check and exits 0 only when all pass.
#
# Environment: BUILD_DIR (default <repo>/build-gpu), CUDA_ARCH (default: native),
#              WSK_ARGS (workload flags, default below), TOLERANCE (default 1e-3),
#              PREFILL_ARGS (the prompts' workload flags, default below),
#              DEMO_ARGS (workload flags of the main job on the GPU).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu}
CUDA_ARCH=${CUDA_ARCH:-native}
TOLERANCE=${TOLERANCE:-1e-3}
# Two shape keys and grouped-query attention (4 query heads over 2 KV heads): on a GPU of 132 SMs
# kv 1024 takes 4 flash-decoding splits (the split and combine kernels), kv 96 one.
WSK_ARGS=${WSK_ARGS:---layers 4 --kv-heads 2 --batch 1,4 --kv-len 96,1024 --max-kv-len 1056 --runs 4}
# Four shapes, two runs each (under --alloc pattern the second takes the first one's pattern): a
# decoding step; a first prompt of 80 tokens (80 rows: the GEMM, its K in 7 serial slices under the
# semaphores, on a GPU of 132 SMs); 16 tokens continuing a cache of 1,008 at batch 2 (several
# attention splits and the combine); a first prompt of 200 at batch 2.
PREFILL_ARGS=${PREFILL_ARGS:---layers 2 --kv-heads 2 --batch 1,1,2,2 --seq-len 1,80,16,200 --kv-len 96,80,1024,200 --max-kv-len 1056 --runs 8}
OUT=$BUILD_DIR/gpu-check
failures=0

say() { printf 'gpu-check: %s\n' "$*"; }
pass() { printf 'PASS %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }

need_bootstrap() {
    ! command -v cmake >/dev/null || ! pkg-config --exists sqlite3 jansson 2>/dev/null
}
if need_bootstrap && [ -x "$ROOT/scripts/bootstrap.sh" ]; then
    say "installing build dependencies (scripts/bootstrap.sh)"
    "$ROOT/scripts/bootstrap.sh"
fi
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    fail "a GPU is visible (nvidia-smi -L)"
    exit 1
fi
say "GPU: $(nvidia-smi -L | head -n 1)"

say "building with nvcc in $BUILD_DIR (CUDA architectures: $CUDA_ARCH)"
mkdir -p "$OUT"
cmake -S "$ROOT" -B "$BUILD_DIR" -DWSTRACE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/configure.log" 2>&1 ||
    { tail -n 40 "$OUT/configure.log"; fail "configure"; exit 1; }
cmake --build "$BUILD_DIR" -j"$(nproc)" --target wsk wssim wstrace wstrace_preload graph_gpu >"$OUT/build.log" 2>&1 ||
    { tail -n 40 "$OUT/build.log"; fail "build"; exit 1; }
pass "build with nvcc"
CUBLAS_BUILT=0
if cmake --build "$BUILD_DIR" -j"$(nproc)" --target cublas_gemm >>"$OUT/build.log" 2>&1; then CUBLAS_BUILT=1; fi

WSK=$BUILD_DIR/bin/wsk
# shellcheck disable=SC2086 # WSK_ARGS is a list of flags
run_wsk() { # name, extra flags...
    local name=$1
    shift
    if "$WSK" $WSK_ARGS "$@" --dump "$OUT/$name.txt" >"$OUT/$name.log" 2>&1; then
        return 0
    fi
    cat "$OUT/$name.log"
    return 1
}

# Dump lines: "token RUN SEQ TOKEN" and "logit RUN SEQ INDEX VALUE" in the same order.
compare_dumps() { # gpu-dump sim-dump label
    local gpu=$1 sim=$2 label=$3
    if awk '$1 == "token"' "$gpu" | cmp -s - <(awk '$1 == "token"' "$sim"); then
        pass "$label: tokens identical on GPU and simulated device ($(grep -c '^token' "$gpu") tokens)"
    else
        fail "$label: tokens differ between GPU and simulated device:"
        diff <(awk '$1 == "token"' "$sim") <(awk '$1 == "token"' "$gpu") | head -n 10
    fi
    local verdict
    verdict=$(paste -d' ' <(awk '$1 == "logit"' "$sim") <(awk '$1 == "logit"' "$gpu") |
        awk -v tol="$TOLERANCE" -v label="$label" '
            $2 != $7 || $3 != $8 || $4 != $9 { bad = 1; exit }
            { d = $5 - $10; if (d < 0) d = -d; if (d > diff) diff = d
              r = $5 < 0 ? -$5 : $5; if (r > ref) ref = r; n++ }
            END {
                if (bad || n == 0) { print "FAIL " label ": logits do not line up (" n " compared)"; exit }
                lim = tol * (ref > 1 ? ref : 1)
                ok = diff <= lim
                printf "%s %s: logits: max abs diff %.3g %s %.3g (tolerance %s x max(1, max |logit| %.3g)), %d values\n",
                    (ok ? "PASS" : "FAIL"), label, diff, (ok ? "<=" : ">"), lim, tol, ref, n
            }')
    echo "$verdict"
    case $verdict in FAIL*) failures=$((failures + 1)) ;; esac
}

if run_wsk gpu --device cuda --alloc dynamic; then pass "wsk --device cuda"; else
    fail "wsk --device cuda"; exit 1; fi
# The heuristics depend on the SM count: give the simulated device the GPU's.
SM=$(sed -n 's/.*sm_count=\([0-9]*\).*/\1/p' "$OUT/gpu.log" | head -n 1)
if run_wsk gpu-async --device cuda --alloc async; then pass "wsk --device cuda --alloc async"
else fail "wsk --device cuda --alloc async"; fi
if run_wsk sim --device sim --sm-count "$SM"; then pass "wsk --device sim --sm-count $SM"; else
    fail "wsk --device sim"; exit 1; fi

if cmp -s "$OUT/gpu.txt" "$OUT/gpu-async.txt"; then
    pass "GPU outputs bitwise identical for --alloc dynamic and async"
else
    fail "GPU outputs differ between --alloc dynamic and async"
fi

compare_dumps "$OUT/gpu.txt" "$OUT/sim.txt" decoding

# Prompts: the prefill kernels on the GPU against the host references, and the in-process pattern.
say "prompts: $PREFILL_ARGS"
if WSK_ARGS=$PREFILL_ARGS run_wsk prefill-gpu --device cuda --alloc dynamic &&
    WSK_ARGS=$PREFILL_ARGS run_wsk prefill-gpu-pattern --device cuda --alloc pattern &&
    WSK_ARGS=$PREFILL_ARGS run_wsk prefill-sim --device sim --sm-count "$SM"; then
    pass "wsk prompts on the GPU (dynamic, pattern) and the simulated device"
    if cmp -s "$OUT/prefill-gpu.txt" "$OUT/prefill-gpu-pattern.txt"; then
        pass "GPU prompt outputs bitwise identical for --alloc dynamic and pattern ($(grep -E '^pattern:' \
            "$OUT/prefill-gpu-pattern.log"))"
    else
        fail "GPU prompt outputs differ between --alloc dynamic and pattern"
    fi
    compare_dumps "$OUT/prefill-gpu.txt" "$OUT/prefill-sim.txt" prompts
else
    fail "wsk prompts (logs: $OUT/prefill-*.log)"
fi

# CUDA graphs with memory nodes, traced on the GPU and on the simulated device (through its
# drop-in cudart): the program's sums and the traces' graph figures must agree.
GRAPH_LAUNCHES=(4 3)
graph_figures() { # trace -> "graph allocations|freed by graphs|kernels|graph launches|captured calls|api errors"
    sqlite3 "$1" "SELECT (SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch' AND status = 0),
        (SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch' AND free_api = 'cudaGraphLaunch'),
        (SELECT COUNT(*) FROM launches WHERE id NOT IN (SELECT launch_id FROM graph_launches)),
        (SELECT COUNT(*) FROM graph_launches WHERE status = 0), (SELECT COUNT(*) FROM captured_calls),
        (SELECT COUNT(*) FROM api_errors)"
}
run_graph() { # name, extra environment...
    local name=$1
    shift
    rm -f "$OUT/$name.db"
    env "$@" LD_PRELOAD="$BUILD_DIR/lib/libwstrace.so" WSTRACE_OUTPUT="$OUT/$name.db" \
        "$BUILD_DIR/tests/graph_gpu" "${GRAPH_LAUNCHES[@]}" >"$OUT/$name.txt" 2>"$OUT/$name.err"
}
if run_graph graph-gpu && run_graph graph-sim LD_LIBRARY_PATH="$BUILD_DIR/lib/sim"; then
    gpu_figures=$(graph_figures "$OUT/graph-gpu.db")
    sim_figures=$(graph_figures "$OUT/graph-sim.db")
    launches=$((GRAPH_LAUNCHES[0] + GRAPH_LAUNCHES[1]))
    # each launch: one allocation freed in its graph, two kernels; captured: malloc, 2 kernels, free
    expected="$launches|$launches|$((2 * launches))|$launches|4|0"
    if grep '^sum_' "$OUT/graph-gpu.txt" | cmp -s - <(grep '^sum_' "$OUT/graph-sim.txt") &&
        [ "$(grep -c '^sum_' "$OUT/graph-gpu.txt")" -eq "$launches" ]; then
        pass "graph sums identical on GPU and simulated device ($launches launches)"
    else
        fail "graph sums differ: $(paste -d' ' "$OUT/graph-gpu.txt" "$OUT/graph-sim.txt" | grep sum_ | head -n 3)"
    fi
    if [ "$gpu_figures" = "$expected" ] && [ "$sim_figures" = "$expected" ]; then
        pass "graph traces agree: allocations|freed|kernels|launches|captured|errors = $gpu_figures"
    else
        fail "graph traces: GPU $gpu_figures, simulated $sim_figures, expected $expected"
    fi
    say "graph memory footprint (high): GPU $(sed -n 's/^footprint_high=//p' "$OUT/graph-gpu.txt"), simulated $(
        sed -n 's/^footprint_high=//p' "$OUT/graph-sim.txt") bytes"
else
    cat "$OUT/graph-gpu.err" "$OUT/graph-sim.err" 2>/dev/null | tail -n 20
    fail "graph_gpu traced on the GPU and on the simulated device"
fi

# cuBLAS and cuBLASLt with workspaces: their runtime reaches the driver through cuGetProcAddress,
# so their kernels (and any workspace cuBLAS allocates itself) are in the trace only through the
# driver hooks.  The program prints the size of every cudaMalloc it makes (alloc_bytes=).
if [ "$CUBLAS_BUILT" -eq 1 ]; then
    rm -f "$OUT/cublas.db"
    if LD_PRELOAD="$BUILD_DIR/lib/libwstrace.so" WSTRACE_OUTPUT="$OUT/cublas.db" "$BUILD_DIR/tests/cublas_gemm" \
        >"$OUT/cublas.txt" 2>"$OUT/cublas.err"; then
        pass "cuBLAS and cuBLASLt GEMMs with workspaces on the GPU ($(sed -n 's/^gemms=//p' "$OUT/cublas.txt") GEMMs)"
        q() { sqlite3 "$OUT/cublas.db" "$1"; }
        want=$(sed -n 's/^alloc_bytes=//p' "$OUT/cublas.txt" | sort -n | paste -sd, -)
        got=$(q "SELECT bytes FROM allocations WHERE api = 'cudaMalloc' AND status = 0 ORDER BY bytes" | paste -sd, -)
        if [ -n "$want" ] && [ "$want" = "$got" ]; then
            pass "cuBLAS program: its cudaMalloc calls in the trace with their sizes ($got bytes)"
        else
            fail "cuBLAS program: cudaMalloc sizes in the trace [$got], the program made [$want]"
        fi
        # A runtime allocation reaches the driver inside cudart: it must not be recorded twice.
        twice=$(q "SELECT COUNT(*) FROM allocations d JOIN allocations r ON d.address = r.address
            WHERE r.api = 'cudaMalloc' AND r.status = 0 AND d.id <> r.id AND d.status = 0
            AND d.alloc_ns >= r.alloc_ns AND (r.free_ns IS NULL OR d.alloc_ns < r.free_ns)")
        if [ "$twice" = 0 ]; then pass "cuBLAS program: each allocation recorded once"
        else fail "cuBLAS program: $twice allocation(s) recorded at a second layer"; fi
        driver_layer="api IN (SELECT api FROM api_layers WHERE layer = 'driver')"
        kernels=$(q "SELECT COUNT(*) FROM launches WHERE status = 0 AND $driver_layer")
        named=$(q "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id
            WHERE l.status = 0 AND l.$driver_layer AND LOWER(s.value) LIKE '%gemm%'")
        runtime_launches=$(q "SELECT COUNT(*) FROM launches WHERE api LIKE 'cuda%' OR substr(api, 1, 6) = '__cuda'")
        gemms=$(sed -n 's/^gemms=//p' "$OUT/cublas.txt")
        if [ "$kernels" -ge "$gemms" ] && [ "$named" -ge 1 ] && [ "$runtime_launches" = 0 ]; then
            pass "cuBLAS kernels through the driver: $kernels launches ($named named *gemm*), none at the runtime layer"
        else
            fail "cuBLAS kernels: $kernels driver launches ($named named *gemm*) for $gemms GEMMs, $runtime_launches runtime launches"
        fi
        # The handle given no workspace makes cuBLAS allocate one itself, through its own runtime:
        # a driver-layer allocation the program never made.
        own=$(q "SELECT COUNT(*) FROM allocations WHERE status = 0 AND bytes > 0 AND $driver_layer")
        if [ "$own" -ge 1 ]; then
            pass "cuBLAS's own workspace through the driver layer: $(q "SELECT COUNT(*) || ' allocation(s), ' ||
                SUM(bytes) || ' bytes (' || GROUP_CONCAT(DISTINCT api) || ')' FROM allocations
                WHERE status = 0 AND bytes > 0 AND $driver_layer")"
        else
            fail "cuBLAS's own workspace: no driver-layer allocation in the trace"
        fi
        say "cuBLAS kernels: $(q "SELECT GROUP_CONCAT(name, ', ')
            FROM (SELECT DISTINCT s.value AS name FROM launches l JOIN strings s ON s.id = l.kernel_name_id
            WHERE l.$driver_layer LIMIT 4)")"
    else
        tail -n 20 "$OUT/cublas.err"
        fail "cuBLAS GEMMs traced on the GPU (tests/gpu/cublas_gemm)"
    fi
else
    fail "build tests/gpu/cublas_gemm (cuBLAS and cuBLASLt from the toolkit)"
fi

# The main job on the GPU: trace, analyse, plan, rerun under the plan and through the arena, and
# report, exactly as scripts/demo.sh does on the simulated device (its output lands in out/demo/).
say "the main job on the GPU (scripts/demo.sh with --device cuda)"
if WSTRACE_BUILD=$BUILD_DIR WSK_ARGS="${DEMO_ARGS:---device cuda --layers 8 --hidden 512 --heads 8 --head-dim 64 \
--intermediate 1408 --vocab 4096 --batch 1,8 --seq-len 1,1,64 --kv-len 96,128,64 --max-kv-len 128 --runs 12 --l1 envelope}" \
    bash "$ROOT/scripts/demo.sh" >"$OUT/demo.log" 2>&1; then
    pass "demo loop on the GPU (reports: out/demo/arena-report.md, report.md; log: $OUT/demo.log)"
    sed -n '/^## Saving against a caching arena/,$p' "$OUT/demo.log"
else
    tail -n 40 "$OUT/demo.log"
    fail "demo loop on the GPU"
fi

if [ "$failures" -eq 0 ]; then
    say "all checks passed; outputs in $OUT"
else
    say "$failures check(s) failed; outputs in $OUT"
fi
[ "$failures" -eq 0 ]
