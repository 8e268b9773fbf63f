#!/usr/bin/env bash
# Mutation testing: each mutation of tests/mutations.txt (one line of code changed: file, exact
# original text, replacement) is applied to one scratch copy of the repository, rebuilt
# incrementally and tested with the tests it names (a ctest -R pattern); then the original text is
# put back.  A mutation is KILLED when a test fails, SURVIVED when every test passes, STALE when its
# original text is no longer in its file exactly once (code moved: update the mutation), and BUILD
# when the mutated code does not compile (a mutation must be a program, so this is an error too).
#
# Usage: scripts/mutate.sh [NAME...]   (default: every mutation; NAME: a mutation's name)
#   WSTRACE_MUTATE_DIR   scratch folder (default build-mutate/ in the repository: src/ and build/,
#                        kept between runs so that rebuilds are incremental)
#   WSTRACE_PROBLEMS     the shared allocation problems (default ../shared/data/allocation-problems)
# Output: a Markdown table on stdout (also out/mutate/table.md), logs in out/mutate/.
# Exit status: 0 when every mutation was killed, 1 when one survived, was stale or did not build,
# 2 for bad usage or when the unmutated copy does not build or pass its tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in -h | --help)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
scratch=${WSTRACE_MUTATE_DIR:-$root/build-mutate}
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
problems=${WSTRACE_PROBLEMS:-$root/../shared/data/allocation-problems}
[ -d "$problems" ] || { echo "mutate.sh: $problems not found (set WSTRACE_PROBLEMS)" >&2; exit 2; }
problems=$(cd "$problems" && pwd)
out=$root/out/mutate
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 2)
export WSTRACE_PROBLEMS=$problems
exec python3 - "$root" "$scratch" "$out" "$jobs" "$problems" "$@" <<'PY'
import os, re, shutil, subprocess, sys, time

root, scratch, out, jobs, problems = sys.argv[1:6]
only = sys.argv[6:]
src, build = os.path.join(scratch, "src"), os.path.join(scratch, "build")
spec = os.path.join(root, "tests", "mutations.txt")

def fail(msg, code=2):
    print(f"mutate.sh: {msg}", file=sys.stderr)
    sys.exit(code)

# ---- the mutations ------------------------------------------------------------------------------
# Blocks of "key: value" lines separated by blank lines; '#' lines are comments.  Keys: name, file,
# from, to, tests (a ctest -R pattern), what (one line for the table).
mutations, block = [], {}
def close_block(lineno):
    global block
    if block:
        missing = [k for k in ("name", "file", "from", "to", "tests", "what") if k not in block]
        if missing:
            fail(f"{spec}:{lineno}: mutation {block.get('name', '?')} lacks {', '.join(missing)}")
        mutations.append(block)
    block = {}
with open(spec, encoding="utf-8") as f:
    lines = f.read().split("\n")
for i, line in enumerate(lines, 1):
    if line.startswith("#"):
        continue
    if not line.strip():
        close_block(i)
        continue
    m = re.match(r"^(name|file|from|to|tests|what):(.*)$", line)
    if not m:
        fail(f"{spec}:{i}: expected 'key: value', got: {line}")
    key, value = m.group(1), m.group(2).strip()
    if key in block:
        fail(f"{spec}:{i}: {key} given twice in mutation {block.get('name', '?')}")
    block[key] = value
close_block(len(lines))
names = [m["name"] for m in mutations]
if len(set(names)) != len(names):
    fail(f"{spec}: mutation names must be unique")
if only:
    unknown = [n for n in only if n not in names]
    if unknown:
        fail(f"unknown mutation(s): {' '.join(unknown)}")
    mutations = [m for m in mutations if m["name"] in only]

# ---- one scratch copy, synchronised file by file (unchanged files keep their times) ----------------
files = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                       capture_output=True).stdout.decode().split("\0")
files = [f for f in files if f and os.path.isfile(os.path.join(root, f))]
wanted = set(files)
for f in files:
    a, b = os.path.join(root, f), os.path.join(src, f)
    with open(a, "rb") as x:
        data = x.read()
    try:
        with open(b, "rb") as y:
            same = y.read() == data
    except OSError:
        same = False
    if not same:  # a fresh time, newer than any object built from the copy's earlier text
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copyfile(a, b)
        shutil.copymode(a, b)
for dirpath, _, fnames in os.walk(src):
    for n in fnames:
        rel = os.path.relpath(os.path.join(dirpath, n), src)
        if rel not in wanted:
            os.unlink(os.path.join(dirpath, n))

log_path = os.path.join(out, "mutate.log")
log = open(log_path, "w")
def run(cmd, timeout=None, **kw):
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                       timeout=timeout, **kw)
    log.write(p.stdout)
    log.flush()
    return p

env = dict(os.environ, WSTRACE_PROBLEMS=problems)
# The build of the tests: no nvcc (the mutated code is C), warnings are not errors (a mutation may
# leave a variable unused), the shared problems given explicitly (the copy has no ../shared).
p = run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DWSTRACE_CUDA=OFF",
         "-DWSTRACE_WERROR=OFF", f"-DWSTRACE_PROBLEMS_DIR={problems}"])
if p.returncode:
    fail(f"configuring the scratch copy failed (log: {log_path})")

def build_all():
    return run(["cmake", "--build", build, f"-j{jobs}"]).returncode == 0

FAILED = re.compile(r"^\s*\d+ - (\S+) \((Failed|Timeout|SEGFAULT|Subprocess aborted|Child aborted|Exception|"
                    r"Not Run|[^)]*)\)", re.M)
def run_tests(pattern):
    """Returns (ok, first failing test with the Criterion test that failed, when known)."""
    p = run(["ctest", "--test-dir", build, "-R", pattern, "--output-on-failure", "--stop-on-failure",
             "--timeout", "300", "-j1"], env=env)
    if "No tests were found" in p.stdout:
        return False, "no test matches " + pattern
    if p.returncode == 0:
        return True, ""
    failed = FAILED.findall(p.stdout)
    which = failed[0][0] if failed else "ctest"
    inner = re.findall(r"\[FAIL\] (\S+?):? ", p.stdout) or re.findall(r"^FAIL: (.*?)(?: \(output|$)", p.stdout, re.M)
    return False, which + (f" ({inner[0]})" if inner else "")

t0 = time.time()
print(f"mutate.sh: {len(mutations)} mutations; scratch copy {scratch}", file=sys.stderr)
if not build_all():
    fail(f"the unmutated scratch copy does not build (log: {log_path})")
# One pattern for every test a mutation names: the alternatives themselves, without groups (CMake's
# regular expressions allow only a few).
alternatives = sorted({a for m in mutations for a in m["tests"].split("|")})
ok, why = run_tests("|".join(alternatives))
if not ok:
    fail(f"the unmutated scratch copy fails its tests: {why} (log: {log_path})")
print(f"mutate.sh: baseline built and passed in {time.time() - t0:.0f} s", file=sys.stderr)

rows, bad = [], 0
for m in mutations:
    path = os.path.join(src, m["file"])
    start = time.time()
    try:
        with open(path, encoding="utf-8") as f:
            original = f.read()
    except OSError:
        original = None
    count = original.count(m["from"]) if original is not None else 0
    if count != 1:
        result = "STALE (" + ("no such file" if original is None else
                              "text not found" if count == 0 else f"text found {count} times") + ")"
        bad += 1
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(original.replace(m["from"], m["to"]))
        try:
            if not build_all():
                result = "BUILD (the mutated code does not compile)"
                bad += 1
            else:
                ok, why = run_tests(m["tests"])
                if ok:
                    result = "SURVIVED"
                    bad += 1
                else:
                    result = "killed by " + why
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
    rows.append((m["name"], m["file"], m["what"], result))
    print(f"mutate.sh: {m['name']}: {result} ({time.time() - start:.0f} s)", file=sys.stderr)
build_all()  # leave the copy built from the unmutated code

table = ["| mutation | file | what it breaks | result |", "|---|---|---|---|"]
for name, file, what, result in rows:
    table.append(f"| `{name}` | `{file}` | {what} | {result} |")
killed = sum(r[3].startswith("killed") for r in rows)
table.append("")
table.append(f"{killed} of {len(rows)} mutations killed in {time.time() - t0:.0f} s.")
text = "\n".join(table) + "\n"
sys.stdout.write(text)
with open(os.path.join(out, "table.md"), "w") as f:
    f.write(text)
sys.exit(1 if bad else 0)
PY
