#!/usr/bin/env bash
# Planner benchmark: quality and time of `wstrace plan --problem`, one row per problem, all in one
# run: the shared SOMAS/IOPDDL problems (default options), synthetic hard problems with a known
# optimum (`planner_gen hard`: rectangles cut into 150-600 pieces, optimum = load bound), speed
# problems of 1 and 5 million buffers (1 million also with --time-limit 0), dense inputs (nested lifetimes, identical buffers),
# and a line counting how many of a suite of 24 cut rectangles reach the load bound at 300,000 steps.
# Quality is stated in bytes above the load bound (LB) and above the best proven lower bound;
# "proven" means the layout is proven optimal. Peak memory is the process's maximum RSS.
#
# usage: scripts/bench-planner.sh [BUILD_DIR]
#   WSTRACE_BENCH_BASELINE=/path/to/an/older/wstrace   also run the speed and dense rows with that
#                                                      binary, side by side (same run, same machine)
#   WSTRACE_BENCH_QUICK=1                              leave out the 5-million-buffer rows
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
wstrace=$build/bin/wstrace
gen=$build/tests/planner_gen
problems=${WSTRACE_PROBLEMS:-$root/../shared/data/allocation-problems}
baseline=${WSTRACE_BENCH_BASELINE:-}
for f in "$wstrace" "$gen"; do
  [[ -x $f ]] || { echo "bench-planner: $f missing; build the wstrace and planner_gen targets" >&2; exit 2; }
done
[[ -d $problems ]] || { echo "bench-planner: $problems not found (set WSTRACE_PROBLEMS)" >&2; exit 2; }
[[ -z $baseline || -x $baseline ]] || { echo "bench-planner: $baseline is not executable" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# row BINARY LABEL FILE [OPTIONS...]: one table row.
row() {
  local bin=$1 label=$2 file=$3
  shift 3
  /usr/bin/time -f "%e %M" -o "$work/time" "$bin" plan --problem "$file" --json "$@" >"$work/out.json"
  python3 - "$label" "$(basename "$file" .csv)" "$*" "$work/out.json" "$work/time" <<'PY'
import json, sys
label, name, opts, out, timing = sys.argv[1:]
j = json.load(open(out))
wall, rss = open(timing).read().split()
lb = j["load_bound_bytes"]
lower = j.get("lower_bound_bytes", lb)
peak = j["peak_bytes"]
proven = "yes" if j.get("optimal", peak == lb) else "no"
assert j["valid"], name
print(f"| {name} | {label} | {opts or 'default'} | {j['buffers']:,} | {lb:,} | {lower:,} | {peak:,} | "
      f"{peak - lb:,} | {peak - lower:,} | {proven} | {float(wall):.2f} | {int(rss) // 1024:,} | {j['algorithm']} |")
PY
}

echo "| problem | binary | options | buffers | LB | best lower bound | peak | above LB (bytes) | above lower bound (bytes) | proven optimal | wall s | peak MiB | algorithm |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
for f in "$problems"/*.csv; do
  row "$wstrace" new "$f"
done
for n in 150 250; do
  "$gen" hard "$n" "$n" >"$work/hard_$n.csv"
  row "$wstrace" new "$work/hard_$n.csv"
done
for n in 350 500 600; do
  "$gen" hard "$n" "$n" >"$work/hard_$n.csv"
  row "$wstrace" new "$work/hard_$n.csv" --time-limit 10
done
row "$wstrace" new "$work/hard_500.csv" --time-limit 0 --work-limit 300000
sizes="1000000"
[[ ${WSTRACE_BENCH_QUICK:-0} = 1 ]] || sizes="1000000 5000000"
"$gen" nested 100000 1 >"$work/nested_100k.csv"
"$gen" same 200000 4096 >"$work/same_200k.csv"
for f in "$work/nested_100k.csv" "$work/same_200k.csv"; do
  row "$wstrace" new "$f"
  [[ -z $baseline ]] || row "$baseline" baseline "$f"
done
for n in $sizes; do
  "$gen" speed "$n" 1000 1 >"$work/speed_$n.csv"
  row "$wstrace" new "$work/speed_$n.csv"
  [[ -z $baseline ]] || row "$baseline" baseline "$work/speed_$n.csv"
  # With a time limit the sweep's layout stands when the decoders cannot finish in time; without
  # one (--time-limit 0) they run to their end.
  [[ $n != 1000000 ]] || row "$wstrace" new "$work/speed_$n.csv" --time-limit 0
  rm -f "$work/speed_$n.csv"
done

# A suite of cut rectangles at a step limit (the same on every machine): how many reach the LB.
echo
solved=0 total=0 slowest=0 missed=""
for n in 150 250 350 400 500 600; do
  for s in 1 2 3 "$n"; do
    "$gen" hard "$n" "$s" >"$work/suite.csv"
    /usr/bin/time -f "%e" -o "$work/time" "$wstrace" plan --problem "$work/suite.csv" --json --time-limit 0 \
      --work-limit 300000 >"$work/out.json"
    if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["optimal"] and j["peak_bytes"] == j["load_bound_bytes"] else 1)' "$work/out.json"; then
      solved=$((solved + 1))
    else
      missed="$missed hard_${n}_$s"
    fi
    total=$((total + 1))
    slowest=$(python3 -c 'import sys; print(max(float(sys.argv[1]), float(open(sys.argv[2]).read())))' "$slowest" "$work/time")
  done
done
echo "Cut rectangles \`planner_gen hard N S\`, N = 150 250 350 400 500 600, S = 1 2 3 N, \`--time-limit 0 --work-limit 300000\`: $solved of $total at the load bound, proven; slowest ${slowest} s; not at the LB:${missed:- none}."
