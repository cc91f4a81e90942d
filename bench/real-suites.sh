#!/bin/sh
# Real test suites under the agent, against the same suites without it: CPython's own
# test modules (Debian's libpython3.X-testsuite) run uninstrumented, under `memsight run
# --follow-exec` in full mode, sampled (--sample 4096) and with --leak-check=exit. Prints per run the
# tests that passed and failed and the wall time. Not part of `make test` (minutes).
#   bench/real-suites.sh [BUILD_DIR] [MODULE...]
set -u
BUILD=${1:-build}
[ $# -gt 0 ] && shift
MODULES=${*:-test_threading test_subprocess test_signal test_fork1 test_wait4 test_os}
MEMSIGHT=$BUILD/bin/memsight
PY=/usr/bin/python3
OUT=$(mktemp -d "${TMPDIR:-/tmp}/memsight-real-XXXXXX")
[ -x "$MEMSIGHT" ] || { echo "no $MEMSIGHT (build first)" >&2; exit 2; }
$PY -c 'import test.support' 2>/dev/null || { echo "CPython's test suite is not installed (libpython3-testsuite)" >&2; exit 2; }

run() { # name, command...
    name=$1; shift
    start=$(date +%s%N)
    # -w: failed modules again, verbose, so that each failing test is named
    "$@" -m test -j2 -w --timeout 900 $MODULES > "$OUT/$name.log" 2>&1
    rc=$?
    end=$(date +%s%N)
    grep -E "^(FAIL|ERROR): " "$OUT/$name.log" | sort -u > "$OUT/$name.failed"
    printf '%-10s status %d, %5d s, %d failing test(s)' "$name" "$rc" \
        $(((end - start) / 1000000000)) "$(wc -l < "$OUT/$name.failed")"
    if [ "$name" != none ]; then
        new=$(comm -13 "$OUT/none.failed" "$OUT/$name.failed")
        [ -n "$new" ] && printf ', failing only with the agent:\n%s' "$new" || printf ', none beyond the run without the agent'
    fi
    printf '\n'
    [ "$name" = none ] && [ -s "$OUT/none.failed" ] && sed 's/^/  without the agent: /' "$OUT/none.failed"
    return 0
}
echo "modules: $MODULES (logs in $OUT)"
run none $PY
# --follow-exec: the test runner's workers are processes it execs
run full $MEMSIGHT run -q --follow-exec -o "$OUT/full" -- $PY
run sampled $MEMSIGHT run -q --follow-exec --sample 4096 -o "$OUT/sampled" -- $PY
run leak-exit $MEMSIGHT run -q --follow-exec --leak-check=exit -o "$OUT/leak" -- $PY
