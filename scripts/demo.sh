#!/usr/bin/env bash
# The main job, end to end: build, trace the bundled workload allocating on the fly, analyse it,
# plan it, run it again under the plan, and compare the two traces.
#
# Leaves in out/demo/: dynamic.db, arena.db and planned.db (the traces), report.md (dynamic
# against planned), arena-report.md (a caching arena against planned), plan.svg (a picture of the
# layouts: blocks over time and offset, one panel per shape key), dynamic.html (the page of
# `wstrace view` of the dynamic trace), and the outputs of each step
# (*.txt).  Uses the GPU when one is present, else the simulated
# device.  Options: WSK_ARGS overrides the workload configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/out/demo
build=${WSTRACE_BUILD:-build}
mkdir -p "$out"

step=0
steps=10
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
# A decoder of 8 layers; batch 1 and 8 and KV lengths 96, 128 and 112 cycle over 12 runs, so six
# shape keys run twice each; Level 1 from the envelope policy.
read -r -a workload <<<"${WSK_ARGS:---layers 8 --hidden 512 --heads 8 --head-dim 64 --intermediate 1408 --vocab 4096 --batch 1,8 --kv-len 96,128,112 --max-kv-len 128 --runs 12 --l1 envelope}"

say "trace the workload, allocating on the fly (dynamic.db)"
rm -f "$out/dynamic.db" "$out/planned.db"
"$wstrace" record -o "$out/dynamic.db" -- "$wsk" "${workload[@]}" --alloc dynamic --dump "$out/dynamic-outputs.txt" |
    tee "$out/dynamic-run.txt"

say "summary"
"$wstrace" summary "$out/dynamic.db" | tee "$out/summary.txt"

say "lifetimes and workspace resolution: max(profile, estimator) per node"
"$wstrace" lifetimes "$out/dynamic.db" >"$out/lifetimes.txt"
"$wstrace" resolve "$out/dynamic.db" >"$out/resolve.txt"
head -n 12 "$out/resolve.txt"
echo "... (all nodes in out/demo/resolve.txt)"
tail -n 2 "$out/resolve.txt"

say "verify Level-2 declarations against Level 1 and observed use"
"$wstrace" verify --strict "$out/dynamic.db" >"$out/verify.txt" || { cat "$out/verify.txt"; exit 1; }
tail -n 2 "$out/verify.txt"

say "plan: one static layout per shape key"
"$wstrace" plan "$out/dynamic.db" --svg "$out/plan.svg" | tee "$out/plan.txt"

say "run the workload again under the plan (planned.db)"
"$wstrace" record -o "$out/planned.db" -- "$wsk" "${workload[@]}" --alloc plan --plan "$out/dynamic.db" \
    --dump "$out/planned-outputs.txt" | tee "$out/planned-run.txt"
"$wstrace" lifetimes "$out/planned.db" >/dev/null

say "trace the workload through a caching arena, as frameworks allocate without a plan (arena.db)"
"$wstrace" record -o "$out/arena.db" -- "$wsk" "${workload[@]}" --alloc arena --dump "$out/arena-outputs.txt" |
    tee "$out/arena-run.txt"

say "check outputs: planned and arena runs against the dynamic run"
for mode in planned arena; do
    if cmp -s "$out/dynamic-outputs.txt" "$out/$mode-outputs.txt"; then
        echo "$mode: outputs identical (tokens and logits of every run, bit for bit)"
    else
        echo "$mode: outputs DIFFER: see out/demo/dynamic-outputs.txt and $mode-outputs.txt" >&2
        exit 1
    fi
done

say "report: dynamic.db (baseline) against planned.db (candidate)"
"$wstrace" report --baseline "$out/dynamic.db" --candidate "$out/planned.db" -o "$out/report.md"
"$wstrace" report --baseline "$out/arena.db" --candidate "$out/planned.db" -o "$out/arena-report.md"
cat "$out/report.md"
echo
echo "## Against a caching arena (arena.db baseline, planned.db candidate; full report in out/demo/arena-report.md)"
echo
awk '/^## Peak live device bytes/ {on = 1; next} /^## / {on = 0} on' "$out/arena-report.md"
"$wstrace" view "$out/dynamic.db" -o "$out/dynamic.html"
echo "Traces: out/demo/dynamic.db, arena.db, planned.db.  Reports: out/demo/report.md, arena-report.md"
echo "Open out/demo/dynamic.html in a browser to explore the dynamic trace's memory (wstrace view)."
