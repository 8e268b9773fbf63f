#!/usr/bin/env bash
# How ctest runs a Criterion suite: BINARY [OPTIONS...] with --verbose, so that a skipped test
# (cr_skip_test) shows in the output, and exit status 77 (the tests' SKIP_RETURN_CODE) when every
# test that ran passed but one or more were skipped: ctest then reports the test as skipped, and
# scripts/test.sh counts it.  A suite whose tests fail exits with the suite's own status.
set -uo pipefail
bin=${1:?usage: run_suite.sh BINARY [OPTIONS...]}
shift
# Leaks inside Criterion's own runner are not ours (tests/lsan.supp); wstrace's are still reported.
LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$bin" --verbose "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || exit "$rc"
# Tests left out by --filter say "Test is disabled": they are run by another ctest entry.
skipped=$(grep -E '^\[SKIP\] ' "$log" | grep -v ': Test is disabled$')
if [ -n "$skipped" ]; then
    echo "run_suite: $(printf '%s\n' "$skipped" | wc -l) test(s) skipped:"
    printf '%s\n' "$skipped"
    exit 77
fi
exit 0
