#!/usr/bin/env bash
# Build and run every test: a normal build (CUDA kernels compiled with nvcc when it is present),
# an ASan+UBSan build and a TSan build (both without nvcc), then a short run of every fuzzing
# harness (WSTRACE_FUZZ_SECONDS each, default 5) and the check of the README's figures
# (scripts/check-figures.sh, normal build).  The README's "Testing" section says what each build
# runs.  Tests that cannot run here are reported by ctest as skipped, and counted below.
# Exit status 0 only when all pass.
#   WSTRACE_PROBLEMS   the shared allocation problems the planner tests read
#                      (default ../shared/data/allocation-problems); missing, the tests fail
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

problems=${WSTRACE_PROBLEMS:-$PWD/../shared/data/allocation-problems}
if [ ! -d "$problems" ]; then
    echo "test.sh: the shared allocation problems are not in $problems (set WSTRACE_PROBLEMS)" >&2
    exit 1
fi
WSTRACE_PROBLEMS=$(cd "$problems" && pwd)
export WSTRACE_PROBLEMS

jobs=$(nproc 2>/dev/null || echo 2)
skipped=()
run_build() {
    local dir=$1; shift
    echo "== ${dir}: configure and build"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DWSTRACE_PROBLEMS_DIR=$WSTRACE_PROBLEMS" "$@" \
        >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
    cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; return 1; }
    echo "== ${dir}: test"
    (cd "$dir" && ctest --output-on-failure -j1) | tee "$dir.ctest.log"
    local name
    while read -r name; do
        skipped+=("$dir/$name")
    done < <(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*/\1/p' "$dir.ctest.log")
}

mkdir -p build
run_build build
run_build build-asan -DWSTRACE_CUDA=OFF -DWSTRACE_SANITIZE=address
run_build build-tsan -DWSTRACE_CUDA=OFF -DWSTRACE_SANITIZE=thread
# A few seconds of every fuzzing harness (clang, libFuzzer, ASan+UBSan); longer runs: scripts/fuzz.sh.
echo "== build-fuzz: ${WSTRACE_FUZZ_SECONDS:-5} s per harness"
scripts/fuzz.sh "${WSTRACE_FUZZ_SECONDS:-5}"
echo "== README figures"
scripts/check-figures.sh build
echo "test.sh: ${#skipped[@]} test(s) skipped${skipped[*]:+: ${skipped[*]}}"
echo "test.sh: all builds passed"
