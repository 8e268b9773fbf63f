#!/usr/bin/env bash
# Planner benchmark: quality (planned peak / load bound) and time of `wstrace plan --problem`
# on the shared problem files (default and with --time-limit), on synthetic hard problems of
# 150-500 buffers with a known optimum, and on speed problems of 10k, 100k and 1M buffers.
# Prints a Markdown table, then the median and worst peak/LB of each group.
#
# usage: scripts/bench-planner.sh [BUILD_DIR] [TIME_LIMIT]   (defaults: build, 10)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
limit=${2:-10}
case $build in /*) ;; *) build=$root/$build ;; esac
wstrace=$build/bin/wstrace
gen=$build/tests/planner_gen
problems=$root/../shared/data/allocation-problems
for f in "$wstrace" "$gen"; do
  [[ -x $f ]] || { echo "bench-planner: $f missing; build the wstrace and planner_gen targets" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.tsv # group, ratio

# plan GROUP FILE [OPTIONS...]: one table row.
plan() {
  local group=$1 file=$2
  shift 2
  local json
  json=$("$wstrace" plan --problem "$file" --json "$@")
  python3 - "$group" "$(basename "$file" .csv)" "$*" "$json" "$results" <<'EOF'
import json, sys
group, name, opts, text, results = sys.argv[1:]
j = json.loads(text)
ratio = j["peak_bytes"] / j["load_bound_bytes"] if j["load_bound_bytes"] else 1.0
assert j["valid"], name
print(f"| {name} | {opts or 'default'} | {j['buffers']} | {j['load_bound_bytes']} | {ratio:.5f} | "
      f"{j['seconds']:.2f} | {j['algorithm']} |")
with open(results, "a") as f:
    f.write(f"{group}\t{ratio}\n")
EOF
}

echo "| problem | options | buffers | LB | peak / LB | seconds | algorithm |"
echo "|---|---|---|---|---|---|---|"
if [[ -d $problems ]]; then
  for f in "$problems"/*.csv; do
    plan shared-default "$f"
    plan "shared-search" "$f" --time-limit "$limit"
  done
else
  echo "bench-planner: $problems not found; skipping the shared problems" >&2
fi
for n in 150 250 350 500; do
  "$gen" hard "$n" "$n" > "$work/hard_$n.csv"
  plan hard-default "$work/hard_$n.csv"
  plan hard-search-1s "$work/hard_$n.csv" --time-limit 1
done
for n in 10000 100000 1000000; do
  "$gen" speed "$n" 1000 1 > "$work/speed_$n.csv"
  plan speed "$work/speed_$n.csv"
done

echo
echo "| group | problems | median peak / LB | worst peak / LB |"
echo "|---|---|---|---|"
python3 - "$results" <<'EOF'
import statistics, sys
groups = {}
for line in open(sys.argv[1]):
    g, r = line.split("\t")
    groups.setdefault(g, []).append(float(r))
for g, rs in groups.items():
    print(f"| {g} | {len(rs)} | {statistics.median(rs):.5f} | {max(rs):.5f} |")
EOF
