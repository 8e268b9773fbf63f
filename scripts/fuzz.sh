#!/usr/bin/env bash
# Run every libFuzzer harness for a bounded time:  scripts/fuzz.sh [SECONDS] [NAME...]
#
# Builds build-fuzz with clang (-DWSTRACE_SANITIZE=fuzzer: libFuzzer, ASan, UBSan), then runs each
# harness listed in build-fuzz/fuzz/fuzzers.txt (every ws_add_fuzzer call; default: all of them)
# for SECONDS seconds (default 60) on a copy of its committed seed corpus, so the corpus in the
# repository is never changed; new inputs are kept in build-fuzz/corpus/NAME (merge the
# interesting ones into the seed corpus by hand).  Prints one line per harness: runs, executions
# per second, coverage, corpus size, and crashes (saved in build-fuzz/crashes/NAME/).  Crash inputs
# of earlier runs are replayed first: one that still crashes fails the run, fixed ones join the
# working corpus.
# Exit status: 0 when no harness crashed, 1 when one did, 2 when it could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }
cc=${FUZZ_CC:-clang-14}
command -v "$cc" >/dev/null || { echo "fuzz.sh: $cc not found (scripts/bootstrap.sh installs it)" >&2; exit 2; }
dir=build-fuzz
jobs=$(nproc 2>/dev/null || echo 2)
if ! { CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWSTRACE_CUDA=OFF -DWSTRACE_SANITIZE=fuzzer &&
       cmake --build "$dir" -j"$jobs" --target fuzzers; } >"$dir.log" 2>&1; then
    tail -n 40 "$dir.log"
    echo "fuzz.sh: the fuzzing build failed (log: $dir.log)" >&2
    exit 2
fi

crashed=0
printf '%-20s %8s %10s %8s %8s %8s  %s\n' HARNESS SECONDS RUNS EXEC/S COV CORPUS CRASHES
while read -r name corpus max_len; do
    if (($#)) && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    work=$dir/corpus/$name crashes=$dir/crashes/$name
    mkdir -p "$work" "$crashes"
    cp -n "$corpus"/* "$work"/ 2>/dev/null || true
    log=$dir/fuzz-$name.log
    rc=0
    # Crash inputs an earlier run saved: replayed first; one that still crashes fails this run,
    # the others have been fixed and join the working corpus.
    mapfile -t earlier < <(find "$crashes" -maxdepth 1 -type f)
    if ((${#earlier[@]})); then
        for f in "${earlier[@]}"; do
            if ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$dir/fuzz/$name" "$f" >"$log.replay" 2>&1; then
                mv "$f" "$work/"
            else
                rc=1
                echo "fuzz.sh: $name: the earlier crash input $f still crashes" >&2
            fi
        done
        echo "fuzz.sh: $name: ${#earlier[@]} earlier crash input(s) replayed" >&2
    fi
    ((rc == 0)) || { found=$(find "$crashes" -type f | wc -l); printf '%-20s %8s %10s %8s %8s %8s  %s\n' \
        "$name" - - - - - "$found"; crashed=1; continue; }
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        "$dir/fuzz/$name" -max_total_time="$seconds" -max_len="$max_len" -print_final_stats=1 \
        -artifact_prefix="$crashes/" "$work" >"$log" 2>&1 || rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    found=$(find "$crashes" -type f | wc -l)
    printf '%-20s %8s %10s %8s %8s %8s  %s\n' "$name" "$seconds" "${runs:-?}" "${speed:-?}" "${cov:-?}" \
        "$(find "$work" -type f | wc -l)" "$found"
    if ((rc != 0 || found > 0)); then
        crashed=1
        echo "fuzz.sh: $name failed (exit $rc); see $log and $crashes/" >&2
        grep -m 5 -E 'ERROR|SUMMARY|runtime error' "$log" >&2 || true
    fi
done <"$dir/fuzz/fuzzers.txt"
exit $crashed
