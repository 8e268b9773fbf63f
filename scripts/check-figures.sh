#!/usr/bin/env bash
# Check the README's deterministic figures against what the repository's commands measure now, and
# fail when they drift.  Run by scripts/test.sh.  Each check runs the command the README names:
#   hooks     instruction counts added per intercepted call (callgrind; scripts/bench.sh hooks, in
#             the Release build folder build-bench/); skipped, and said so, without valgrind
#   workload  the table of planned execution (scripts/bench-workload.sh): planned peak and its ratio
#             to the load bound, allocation calls per run, peaks arena -> plan and their difference,
#             fallbacks, identical outputs; the prose "reaches the load bound of every run"; and of
#             the prompt table the rows WSTRACE_CHECK_PROMPTS names (TOKENSxBATCH, default "16x1":
#             each prompt row takes about a minute here), every cell
#   planner   the table of planner quality: buffers and load bound of every problem (greedy decoders
#             only); bytes above the LB and "proven" with the README's --work-limit, when it states
#             one (a search bounded by seconds is not reproducible: those columns are then reported
#             as not checked); and the prose "N of the nine are at the load bound" or "All nine are at the load bound"
# Seconds, memory and throughput figures vary with the machine and are not checked.
#
# Usage: scripts/check-figures.sh [BUILD_DIR] [SECTION...]   (default: build; all sections)
#   WSTRACE_PROBLEMS   the shared allocation problems (default ../shared/data/allocation-problems)
# Exit status: 0 when every checked figure holds, 1 when one drifted, 2 for bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in -h | --help)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
build=${1:-build}
shift || true
case $build in /*) ;; *) build=$root/$build ;; esac
[ -x "$build/bin/wstrace" ] && [ -x "$build/bin/wsk" ] ||
    { echo "check-figures.sh: $build/bin/wstrace or wsk missing (build first)" >&2; exit 2; }
problems=${WSTRACE_PROBLEMS:-$root/../shared/data/allocation-problems}
[ -d "$problems" ] || { echo "check-figures.sh: $problems not found (set WSTRACE_PROBLEMS)" >&2; exit 2; }
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(hooks workload planner)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for s in "${sections[@]}"; do
    case $s in
    hooks)
        if command -v valgrind >/dev/null; then
            echo "check-figures: hooks (callgrind, Release build in build-bench/)" >&2
            WSTRACE_BENCH_BUILD=$root/build-bench WSTRACE_BENCH_OUT=$tmp "$root/scripts/bench.sh" hooks \
                >"$tmp/hooks.out" 2>&1 || { cat "$tmp/hooks.out"; exit 1; }
        fi
        ;;
    workload)
        prompts=${WSTRACE_CHECK_PROMPTS-16x1}
        echo "check-figures: workload (scripts/bench-workload.sh, prompt rows: ${prompts:-none})" >&2
        if [ -n "$prompts" ]; then
            export WSTRACE_BENCH_PREFILL_ROWS=$prompts
        else
            export WSTRACE_BENCH_PREFILL=0
        fi
        "$root/scripts/bench-workload.sh" "$build" >"$tmp/workload.md" 2>"$tmp/workload.err" ||
            { cat "$tmp/workload.err"; exit 1; }
        ;;
    planner) ;;
    *) echo "check-figures.sh: unknown section '$s' (hooks workload planner)" >&2; exit 2 ;;
    esac
done

exec python3 - "$root" "$build" "$problems" "$tmp" "${sections[@]}" <<'PY'
import json, os, re, subprocess, sys

root, build, problems, tmp = sys.argv[1:5]
sections = sys.argv[5:]
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
failures, skips, checked = [], [], 0

def num(text):
    """The first number of a README cell: bold, commas and units removed."""
    m = re.search(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", text.replace("−", "-"))
    if not m:
        raise ValueError(f"no number in {text!r}")
    return float(m.group(0).replace(",", ""))

def check(what, readme_value, measured):
    global checked
    checked += 1
    if readme_value != measured:
        failures.append(f"{what}: README {readme_value}, measured {measured}")

def table_after(marker):
    """Rows (lists of cells) of the first Markdown table after the line containing marker."""
    at = readme.find(marker)
    if at < 0:
        failures.append(f"README: no '{marker}'")
        return []
    rows, started = [], False
    for line in readme[at:].split("\n")[1:]:
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif started:
            break
    return rows[1:]  # without the header

def row_of(rows, first):
    for r in rows:
        if r[0].startswith(first):
            return r
    failures.append(f"README: no row '{first}'")
    return None

# ---- hooks ------------------------------------------------------------------------------------------
if "hooks" in sections:
    path = os.path.join(tmp, "hooks.out")
    if not os.path.exists(path):
        skips.append("hooks: valgrind not found, instruction counts not checked")
    else:
        out = open(path).read()
        perf = table_after("## Performance")
        measured = {}
        for label, key in (("| traced |", "traced"), ("| preloaded, tracing disabled", "forwarding"),
                           ("| driver traced |", "driver traced"),
                           ("| driver preloaded, tracing disabled", "driver forwarding")):
            m = re.search(re.escape(label) + r"[^\n]*\| *([0-9.]+) \|", out)
            if not m:
                failures.append(f"hooks: no '{label}' row in the output of bench.sh hooks")
            else:
                measured[key] = m.group(1)
        for first, key in (("hook cost, traced", "traced"), ("hook cost, preloaded", "forwarding"),
                           ("hook cost, driver layer, traced", "driver traced"),
                           ("hook cost, driver layer, preloaded", "driver forwarding")):
            r = row_of(perf, first)
            if r and key in measured:
                check(f"hooks: {first}", f"{num(r[1]):.1f}", measured[key])

# ---- workload -------------------------------------------------------------------------------------
def commas(n):
    return f"{n:,}"

if "workload" in sections:
    bench = {}
    for line in open(os.path.join(tmp, "workload.md")):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 13 and c[0] in ("small", "medium", "large"):
            bench[c[0]] = c
    rows = table_after("### Planned execution")
    for size, r in ((s, row_of(rows, s)) for s in ("small", "medium", "large")):
        if not r or size not in bench:
            if r:
                failures.append(f"workload: no {size} row in the output of bench-workload.sh")
            continue
        b = bench[size]
        dyn, arena, plan, planned, lb = (int(b[i]) for i in (1, 2, 3, 4, 5))
        ratio = b[7]
        check(f"workload {size}: planned peak (ratio to the LB)", r[1], f"{commas(planned)} B ({ratio})")
        check(f"workload {size}: calls per run", [num(x) for x in r[2].split("/")],
              [float(b[8]), float(b[9]), float(b[10])])
        pct = 100.0 * (plan - arena) / arena
        check(f"workload {size}: peaks arena -> plan", r[3],
              f"{commas(arena)} → {commas(plan)} ({pct:.1f} %)".replace("(-", "(−"))
        check(f"workload {size}: fallbacks", r[4], b[11])
        check(f"workload {size}: outputs", r[5], "identical" if b[12].startswith("yes") else "differ")
        check(f"workload {size}: planned peak = load bound", planned, lb)
    if "The plan reaches the load bound of every run" in readme:
        check("workload prose: the plan reaches the load bound of every run",
              sorted(set(bench[s][7] for s in bench)), ["1.000"])

    # The prompt rows that were measured: every cell as the README states it.
    prompt_rows = table_after("#### Prompts: where planning pays")
    for line in open(os.path.join(tmp, "workload.md")):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 12 and c[0].isdigit() and c[1].isdigit():
            r = next((p for p in prompt_rows if p[:2] == c[:2]), None)
            if r is None:
                failures.append(f"workload: the README's prompt table has no row for {c[0]} tokens, batch {c[1]}")
            else:
                check(f"workload prompts {c[0]} tokens batch {c[1]}", r, c)

# ---- planner --------------------------------------------------------------------------------------
def plan(path, options):
    p = subprocess.run([os.path.join(build, "bin", "wstrace"), "plan", "--problem", path, "--json"] + options,
                       capture_output=True, text=True)
    if p.returncode:
        failures.append(f"planner: wstrace plan {path}: {p.stderr.strip()}")
        return None
    return json.loads(p.stdout)

if "planner" in sections:
    at = readme.find("### Planner quality on public problems")
    section = readme[at:readme.find("\n### ", at + 1)] if at >= 0 else ""
    rows = table_after("### Planner quality on public problems")
    header = next((l for l in section.split("\n") if l.startswith("| problem |")), "")
    cols = [c.strip() for c in header.strip().strip("|").split("|")]
    def col(name):
        for i, c in enumerate(cols):
            if name in c:
                return i
        failures.append(f"planner: the README table has no column '{name}'")
        return None
    i_buf, i_lb, i_above, i_proven = col("buffers"), col("LB (bytes)"), col("above LB"), col("proven")
    limit = re.search(r"--work-limit[ =]([0-9][0-9,_]*)", section)
    at_lb = 0
    for r in rows:
        name = r[0].strip("`* ")
        path = os.path.join(problems, name + ".csv")
        if not os.path.exists(path):
            failures.append(f"planner: {path} missing")
            continue
        greedy = plan(path, ["--time-limit", "0", "--work-limit", "0"])
        if greedy is None or None in (i_buf, i_lb, i_above, i_proven):
            continue
        check(f"planner {name}: buffers", int(num(r[i_buf])), greedy["buffers"])
        check(f"planner {name}: load bound", int(num(r[i_lb])), greedy["load_bound_bytes"])
        at_lb += num(r[i_above]) == 0
        if limit:
            w = limit.group(1).replace(",", "").replace("_", "")
            j = plan(path, ["--time-limit", "0", "--work-limit", w])
            if j:
                check(f"planner {name}: bytes above LB (--work-limit {w})", int(num(r[i_above])),
                      j["peak_bytes"] - j["load_bound_bytes"])
                check(f"planner {name}: proven (--work-limit {w})", r[i_proven].split()[0],
                      "yes" if j["optimal"] else "no")
    if rows and not limit:
        skips.append("planner: bytes above LB and 'proven' not checked: the README's table comes from a search "
                     "bounded by seconds (state its --work-limit to have them checked)")
    words = {w: i for i, w in enumerate("zero one two three four five six seven eight nine".split())}
    m = re.search(r"\b(\w+) of the (\w+) are at the load bound", section)
    every = re.search(r"\bAll (\w+) are at the load bound", section)
    if every and every.group(1).lower() in words:
        check("planner prose: all are at the load bound", words[every.group(1).lower()], at_lb)
        check("planner prose: how many problems", words[every.group(1).lower()], len(rows))
    if m and m.group(1).lower() in words:
        check("planner prose: how many are at the load bound", words[m.group(1).lower()], at_lb)
        check("planner prose: how many problems", words.get(m.group(2).lower()), len(rows))

for s in skips:
    print(f"check-figures: SKIPPED {s}")
for f in failures:
    print(f"check-figures: DRIFT {f}")
print(f"check-figures: {checked} figures checked, {len(failures)} drifted, {len(skips)} part(s) not checked")
sys.exit(1 if failures else 0)
PY
