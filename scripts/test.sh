#!/usr/bin/env bash
# Build and run every test: a normal build (CUDA kernels compiled with nvcc when it is present),
# an ASan+UBSan build and a TSan build (both without nvcc), then a short run of every fuzzing
# harness (WSTRACE_FUZZ_SECONDS each, default 5).  Exit status 0 only when all pass.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

jobs=$(nproc 2>/dev/null || echo 2)
run_build() {
    local dir=$1; shift
    echo "== ${dir}: configure and build"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; return 1; }
    cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; return 1; }
    echo "== ${dir}: test"
    (cd "$dir" && ctest --output-on-failure -j1)
}

mkdir -p build
run_build build
run_build build-asan -DWSTRACE_CUDA=OFF -DWSTRACE_SANITIZE=address
run_build build-tsan -DWSTRACE_CUDA=OFF -DWSTRACE_SANITIZE=thread
# A few seconds of every fuzzing harness (clang, libFuzzer, ASan+UBSan); longer runs: scripts/fuzz.sh.
echo "== build-fuzz: ${WSTRACE_FUZZ_SECONDS:-5} s per harness"
scripts/fuzz.sh "${WSTRACE_FUZZ_SECONDS:-5}"
echo "test.sh: all builds passed"
