#!/usr/bin/env bash
# Fault trials of the tracer and the collector:  scripts/faults.sh [BUILD_DIR] [TRIALS]
#
# Runs tests/trace_prog (BUILD_DIR, default build) under libwstrace.so TRIALS times (default 20) for
# each fault and prints a Markdown table of trials and outcomes:
#   kill        SIGKILL of the traced program at a random moment, then `wstrace collect`
#   collect     SIGKILL of `wstrace collect` at a random moment, then `wstrace collect` again
#   disk full   a 2 MiB tmpfs as the output folder (root), or else a 1 MiB file size limit
#   concurrent  8 processes tracing into one output, all started before any goes on
#   fork storm  every process forks 3 children down to depth 2 (13 processes), half leave by _exit
#   threads     64 threads allocating and freeing as fast as they can (addresses reused at once)
#   waves       16 threads: all allocate, all wait, each frees its neighbour's blocks, all wait
# Outcomes, counted against what the program itself did (it prints its counts):
#   harmed    the program did not end as it does untraced (exit status, output, a signal of ours)
#   lost      a record the program made is neither in the trace nor counted in meta lost_records
#   invented  the trace holds a row the program did not make (wrong size, another process's,
#             a free paired with the wrong allocation or thread, more live bytes than the device)
# The traced peak of live bytes can be below the device's own when frees wait for the device's lock:
# a free counts from its call (so that a reused address is never live twice), the device holds the
# bytes until it gets the lock.  Where the peak is held across a synchronisation point (waves) the
# two must be equal; a lower traced peak there counts as lost.
# Exit status: 0 when every outcome is zero, 1 otherwise, 2 when it cannot run.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
trials=${2:-20}
prog=$build/tests/trace_prog
wstrace=$build/bin/wstrace
lib=$(realpath "$build/lib/libwstrace.so" 2>/dev/null || true)
for f in "$prog" "$wstrace" "$lib"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "faults.sh: $f not found: build first (cmake --build $build)" >&2; exit 2; }
done
command -v sqlite3 >/dev/null || { echo "faults.sh: sqlite3 not found (scripts/bootstrap.sh)" >&2; exit 2; }
[[ "$trials" =~ ^[1-9][0-9]*$ ]] || { echo "faults.sh: TRIALS must be a positive number" >&2; exit 2; }
RANDOM=${FAULTS_SEED:-$$}

work=$(mktemp -d "${TMPDIR:-/tmp}/wstrace-faults-XXXXXX")
mnt=""
cleanup() { [ -n "$mnt" ] && umount -l "$mnt" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# A traced run: the preload and what the trial sets.  A command, not a function, so that a run in
# the background is the program itself ($! is its pid).
traced=(env -u WSTRACE_OWNER LD_PRELOAD="$lib")
q() { sqlite3 -batch -noheader "$1" "$2" 2>/dev/null; }
kv() { sed -n "s/^$2=//p" "$1" | head -1; }
pause() { sleep "$(printf '0.%03d' $((RANDOM % 1000 * $1 / 1000)))"; } # 0 to $1 ms

declare -A harmed lost invented notes
record() { # kind harmed lost invented
    harmed[$1]=$((${harmed[$1]:-0} + $2))
    lost[$1]=$((${lost[$1]:-0} + $3))
    invented[$1]=$((${invented[$1]:-0} + $4))
}

kill_max=0 disk="" peak_equal=0

# ---- SIGKILL of the traced program -------------------------------------------------------------
trial_kill() {
    local d=$work/kill$1 h=0 l=0 i=0
    mkdir -p "$d"
    "${traced[@]}" WSTRACE_OUTPUT=$d/t.db "$prog" count 0 "$d/progress" >"$d/out" 2>"$d/err" &
    local pid=$!
    pause 400
    kill -0 "$pid" 2>/dev/null || h=1 # it must still be running: the program never ends by itself
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ $? -eq 137 ] || h=1
    [ -s "$d/err" ] && h=1
    local done
    done=$(od -An -tu8 "$d/progress" 2>/dev/null | tr -d ' ')
    done=${done:-0}
    # Killed during start-up, there may be no spool (or no header yet): then nothing was done.
    if ! "$wstrace" collect "$d/t.db.spool" >/dev/null 2>"$d/collect.err"; then
        ((done > 0)) && l=1
    else
        local allocs frees bad errors
        allocs=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations")
        frees=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL")
        bad=$(q "$d/t.db" "SELECT COUNT(*) FROM (SELECT bytes, ROW_NUMBER() OVER (ORDER BY id) - 1 AS i FROM allocations) WHERE bytes <> 64 + i % 4096")
        errors=$(q "$d/t.db" "SELECT COUNT(*) FROM api_errors")
        ((allocs < ${done:-0} || frees < ${done:-0})) && l=1
        ((allocs > ${done:-0} + 1 || bad > 0 || errors > 0)) && i=1
        ((${done:-0} > kill_max)) && kill_max=${done:-0}
    fi
    record kill $h $l $i
    rm -rf "$d"
}

# ---- SIGKILL of wstrace collect ------------------------------------------------------------------
collect_spool=""
trial_collect() {
    local d=$work/collect h=0 l=0 i=0 pairs=200000
    if [ -z "$collect_spool" ]; then
        mkdir -p "$d"
        "${traced[@]}" WSTRACE_OUTPUT=$d/src.db WSTRACE_COLLECT=0 "$prog" stress 1 $pairs >/dev/null 2>&1 || h=1
        collect_spool=$d/src.db.spool
    fi
    "$wstrace" collect --keep-spool "$collect_spool" -o "$d/out.db" >/dev/null 2>&1 &
    local pid=$!
    pause 1500
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    # Killed or not, out.db is absent or a complete trace (it is renamed into place only whole).
    if [ -e "$d/out.db" ]; then
        local n
        n=$(q "$d/out.db" "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL")
        ((n < pairs)) && l=1
        ((n > pairs)) && i=1
    fi
    "$wstrace" collect --keep-spool "$collect_spool" -o "$d/out.db" >/dev/null 2>"$d/err" || l=1
    ls "$d" | grep -q 'out\.db\.tmp' && i=1 # a temporary file left behind counts as a file nobody made
    local n e
    n=$(q "$d/out.db" "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL AND bytes = 256")
    e=$(q "$d/out.db" "SELECT COUNT(*) FROM allocations") 
    ((n < pairs)) && l=1
    ((e > pairs)) && i=1
    record collect $h $l $i
}

# ---- disk full -------------------------------------------------------------------------------------
trial_disk() {
    local d=$work/disk$1 h=0 l=0 i=0 pairs=$((20000 + RANDOM % 180000)) out
    mkdir -p "$d"
    if [ -z "$disk" ]; then
        if mkdir -p "$work/mnt" && mount -t tmpfs -o size=2m tmpfs "$work/mnt" 2>/dev/null; then
            disk=tmpfs mnt=$work/mnt
        else
            disk=fsize
        fi
    fi
    if [ "$disk" = tmpfs ]; then
        rm -rf "${mnt:?}"/*
        out=$mnt/t.db
        "${traced[@]}" WSTRACE_OUTPUT=$out "$prog" stress 1 $pairs >"$d/out" 2>"$d/err"
    else
        out=$d/t.db
        "${traced[@]}" WSTRACE_OUTPUT=$out "$prog" fsize 1048576 stress 1 $pairs >"$d/out" 2>"$d/err"
    fi
    [ $? -eq 0 ] || h=1
    [ "$(kv "$d/out" free_calls)" = "$pairs" ] || h=1
    [ "$(grep -c 'records could not be kept' "$d/err")" -eq 1 ] || l=1 # the loss must be said, once
    if [ -e "$out" ]; then
        cp "$out" "$d/kept.db"
    else
        cp "$out.spool" "$d/kept.spool" && "$wstrace" collect "$d/kept.spool" >/dev/null 2>&1 || l=1
        mv "$d/kept" "$d/kept.db" 2>/dev/null
    fi
    local kept frees lostn bad
    kept=$(q "$d/kept.db" "SELECT COUNT(*) FROM allocations")
    frees=$(q "$d/kept.db" "SELECT (SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL) + (SELECT COUNT(*) FROM api_errors)")
    lostn=$(q "$d/kept.db" "SELECT value FROM meta WHERE key = 'lost_records'")
    bad=$(q "$d/kept.db" "SELECT COUNT(*) FROM allocations WHERE bytes <> 256")
    local sum=$((${kept:-0} + ${frees:-0} + ${lostn:-0}))
    ((sum < 2 * pairs)) && l=1
    ((sum > 2 * pairs + 2 || ${bad:-1} > 0)) && i=1
    record disk $h $l $i
    rm -rf "$d"
}

# ---- processes tracing into one output at once ------------------------------------------------------
trial_concurrent() {
    local d=$work/conc$1 h=0 l=0 i=0 n=8 k
    mkdir -p "$d/gate"
    local pids=()
    for ((k = 0; k < n; k++)); do
        "${traced[@]}" WSTRACE_OUTPUT=$d/t.db "$prog" gated "$d/gate" stress 1 $((100 + k)) >"$d/out$k" 2>"$d/err$k" &
        pids+=($!)
    done
    local waited=0
    while (($(ls "$d/gate" | wc -l) < n && waited < 6000)); do sleep 0.01; waited=$((waited + 1)); done
    touch "$d/gate/go"
    local at_trace=0 announced=0
    for ((k = 0; k < n; k++)); do
        wait "${pids[$k]}" || h=1
        [ "$(kv "$d/out$k" free_calls)" = $((100 + k)) ] || h=1
        local t=$d/t.db.${pids[$k]}
        if [ -e "$t" ]; then
            grep -q "this trace goes to $t" "$d/err$k" && announced=$((announced + 1))
        else
            t=$d/t.db
            at_trace=$((at_trace + 1))
        fi
        grep -q 'earlier process' "$d/err$k" && i=1 # a false warning
        [ "$(q "$t" "SELECT value FROM meta WHERE key = 'pid'")" = "${pids[$k]}" ] || i=1
        local a f
        a=$(q "$t" "SELECT COUNT(*) FROM allocations")
        f=$(q "$t" "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL AND bytes = 256")
        ((${a:-0} < 100 + k || ${f:-0} < 100 + k)) && l=1
        ((${a:-0} > 100 + k)) && i=1
    done
    ((at_trace == 1 && announced == n - 1)) || l=1
    ls "$d" | grep -q '\.spool$' && l=1
    record concurrent $h $l $i
    rm -rf "$d"
}

# ---- fork storms -------------------------------------------------------------------------------------
trial_forks() {
    local d=$work/fork$1 h=0 l=0 i=0
    mkdir -p "$d"
    "${traced[@]}" WSTRACE_OUTPUT=$d/t.db "$prog" forkstorm 2 3 >"$d/out" 2>"$d/err" || h=1
    [ -s "$d/err" ] && h=1
    local traces=0 f
    for f in "$d"/t.db*; do
        case "$f" in *.spool) l=1; continue ;; esac
        traces=$((traces + 1))
        [ "$(q "$f" "SELECT COUNT(*) FROM allocations WHERE bytes = 1000 AND free_ns IS NOT NULL")" = 1 ] || l=1
        [ "$(q "$f" "SELECT COUNT(*) FROM allocations WHERE bytes = 2000 AND free_ns IS NULL")" = 1 ] || l=1
        [ "$(q "$f" "SELECT COUNT(*) FROM allocations")" = 2 ] || i=1
    done
    ((traces == 13)) || l=1
    record forks $h $l $i
    rm -rf "$d"
}

# ---- many threads ------------------------------------------------------------------------------------
trial_threads() {
    local d=$work/threads$1 h=0 l=0 i=0 pairs=$((64 * 2000))
    mkdir -p "$d"
    "${traced[@]}" WSTRACE_OUTPUT=$d/t.db "$prog" stress 64 2000 >"$d/out" 2>"$d/err" || h=1
    [ -s "$d/err" ] && h=1
    local n unfreed errors wrong lostn
    n=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations")
    unfreed=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL")
    errors=$(q "$d/t.db" "SELECT COUNT(*) FROM api_errors")
    wrong=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations WHERE free_thread_id <> thread_id")
    lostn=$(q "$d/t.db" "SELECT value FROM meta WHERE key = 'lost_records'")
    ((${n:-0} < pairs || ${unfreed:-1} > 0 || ${lostn:-1} > 0)) && l=1
    ((${n:-0} > pairs || ${errors:-1} > 0 || ${wrong:-1} > 0)) && i=1
    local device trace
    device=$(kv "$d/out" peak_bytes)
    trace=$("$wstrace" summary "$d/t.db" --json | sed -n 's/.*"peak_live_device_bytes": *\([0-9]*\).*/\1/p')
    ((${trace:-0} > ${device:-0})) && i=1
    record threads $h $l $i
    rm -rf "$d"
}

# ---- waves of frees on other threads ------------------------------------------------------------------
trial_waves() {
    local d=$work/waves$1 h=0 l=0 i=0 blocks=$((16 * 40 * 4))
    mkdir -p "$d"
    "${traced[@]}" WSTRACE_OUTPUT=$d/t.db "$prog" waves 16 40 4 >"$d/out" 2>"$d/err" || h=1
    [ -s "$d/err" ] && h=1
    local n unfreed errors same
    n=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations")
    unfreed=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL")
    errors=$(q "$d/t.db" "SELECT COUNT(*) FROM api_errors")
    same=$(q "$d/t.db" "SELECT COUNT(*) FROM allocations WHERE free_thread_id = thread_id")
    ((${n:-0} < blocks || ${unfreed:-1} > 0)) && l=1
    ((${n:-0} > blocks || ${errors:-1} > 0 || ${same:-1} > 0)) && i=1
    local device trace
    device=$(kv "$d/out" peak_bytes)
    trace=$("$wstrace" summary "$d/t.db" --json | sed -n 's/.*"peak_live_device_bytes": *\([0-9]*\).*/\1/p')
    ((${trace:-0} > ${device:-0})) && i=1
    ((${trace:-0} < ${device:-0})) && l=1
    [ "${trace:-x}" = "${device:-y}" ] && peak_equal=$((peak_equal + 1))
    record waves $h $l $i
    rm -rf "$d"
}

kinds=(kill collect disk concurrent forks threads waves)
declare -A label=([kill]="SIGKILL of the traced program at a random moment" [collect]="SIGKILL of wstrace collect at a random moment"
    [disk]="disk full" [concurrent]="concurrent tracers into one output" [forks]="fork storm" [threads]="64 threads reusing addresses"
    [waves]="16 threads freeing each other's blocks")
for kind in "${kinds[@]}"; do
    for ((t = 0; t < trials; t++)); do
        "trial_$kind" "$t"
    done
done

if [ "$disk" = tmpfs ]; then disk_how="a 2 MiB tmpfs"; else disk_how="a 1 MiB file size limit (no tmpfs mount here)"; fi
notes=([kill]="the program counts its pairs; killed after up to $kill_max"
    [collect]="200,000 pairs; the trace is whole or absent, no temporary file is left"
    [disk]="$disk_how, 20,000-200,000 pairs; kept + counted lost = made"
    [concurrent]="8 processes at once: one TRACE, seven TRACE.<pid> each announced in one line"
    [forks]="13 processes, one complete trace each, no spool left"
    [threads]="128,000 pairs, each free on its allocation and thread; traced peak never above the device's"
    [waves]="2,560 blocks, each freed by another thread; traced peak = device peak in $peak_equal of $trials")
status=0
echo "| fault | trials | harmed | lost | invented | what each trial checks |"
echo "|---|---:|---:|---:|---:|---|"
for kind in "${kinds[@]}"; do
    echo "| ${label[$kind]} | $trials | ${harmed[$kind]:-0} | ${lost[$kind]:-0} | ${invented[$kind]:-0} | ${notes[$kind]:-} |"
    ((${harmed[$kind]:-0} + ${lost[$kind]:-0} + ${invented[$kind]:-0} > 0)) && status=1
done
exit $status
