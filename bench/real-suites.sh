#!/bin/sh
# Real test suites under the agent, against the same suites without it: CPython's own
# test modules (Debian's libpython3.X-testsuite) run uninstrumented, then once per agent
# mode. Prints per run the test modules' result, the tests that failed and the wall time.
# Not part of `make test` (minutes). SIGINT is given back its default action: a script
# started in the background has it ignored, and CPython's tests that interrupt themselves
# with it (test_multiprocessing's test_wait_result...) would fail with and without the agent.
#   [MODES="full sampled ..."] [JOBS=2] [TIMEOUT=900] [IGNORE="PAT..."] bench/real-suites.sh [BUILD_DIR] [MODULE...]
# IGNORE: test name patterns left out of every run (regrtest -i), for tests that fail or
# hang here without the agent (test_socket's VSOCK tests wait forever where /dev/vsock
# exists but no peer answers).
# MODES (default: full sampled leak-exit):
#   full       memsight run --follow-exec, every block recorded
#   sampled    --sample 4096
#   s512k      --sample 524288 (the production rate)
#   leak-exit  --leak-check=exit
#   guard      guard pages on one allocation in 200 (-O guard=200), every block recorded
#   s512kg     guard pages on top of sampled mode (--sample 524288 -O guard=500)
#   attach     the suite run in one process (no workers), `memsight attach` to it once
#              its first test module has started, and left attached to the end
set -uf  # -f: IGNORE patterns are passed on, never matched against files here
BUILD=${1:-build}
[ $# -gt 0 ] && shift
MODULES=${*:-test_threading test_subprocess test_signal test_fork1 test_wait4 test_os}
MODES=${MODES:-full sampled leak-exit}
JOBS=${JOBS:-2}
TIMEOUT=${TIMEOUT:-900}
IGNORE_ARGS=""
for pat in ${IGNORE:-}; do IGNORE_ARGS="$IGNORE_ARGS -i $pat"; done
MEMSIGHT=$BUILD/bin/memsight
PY=/usr/bin/python3
OUT=$(mktemp -d "${TMPDIR:-/tmp}/memsight-real-XXXXXX")
[ -x "$MEMSIGHT" ] || { echo "no $MEMSIGHT (build first)" >&2; exit 2; }
$PY -c 'import test.support' 2>/dev/null || { echo "CPython's test suite is not installed (libpython3-testsuite)" >&2; exit 2; }

report() { # name, status, seconds
    name=$1
    grep -E "^(FAIL|ERROR): " "$OUT/$name.log" | sort -u > "$OUT/$name.failed"
    result=$(grep -E "^(== )?Tests result: " "$OUT/$name.log" | head -1 | sed 's/^== //; s/ ==$//')
    printf '%-10s status %d, %5d s, %s, %d failing test(s)' "$name" "$2" "$3" \
        "${result:-no result}" "$(wc -l < "$OUT/$name.failed")"
    if [ "$name" != none ]; then
        new=$(comm -13 "$OUT/none.failed" "$OUT/$name.failed")
        [ -n "$new" ] && printf ', failing only with the agent:\n%s' "$new" || printf ', none beyond the run without the agent'
    fi
    printf '\n'
    [ "$name" = none ] && [ -s "$OUT/none.failed" ] && sed 's/^/  without the agent: /' "$OUT/none.failed"
    # a test that failed and then passed when run again is not in the list above: named here
    sed -n '/Re-running failed tests/d; s/.*Re-running \(.*\) in verbose mode\(.*\)$/  run again: \1\2/p' "$OUT/$name.log"
    return 0
}

run() { # name, command...
    name=$1; shift
    start=$(date +%s)
    # -w: failed modules again, verbose, so that each failing test is named
    env --default-signal=INT "$@" -m test -j"$JOBS" -w --timeout "$TIMEOUT" $IGNORE_ARGS $MODULES > "$OUT/$name.log" 2>&1
    report "$name" $? $(($(date +%s) - start))
}

# The runner without workers (-j0 would start them), so that the one attached process
# runs every test; attached as soon as the first module has started.
run_attach() {
    start=$(date +%s)
    env --default-signal=INT $PY -m test -w --timeout "$TIMEOUT" $IGNORE_ARGS $MODULES > "$OUT/attach.log" 2>&1 &
    pid=$!
    i=0
    until grep -qE '\[ *1/[0-9]+\]' "$OUT/attach.log" 2>/dev/null || [ $i -ge 600 ]; do
        sleep 0.1; i=$((i + 1))
    done
    "$MEMSIGHT" attach -o "$OUT/attach" "$pid" > "$OUT/attach.attach" 2>&1 ||
        { echo "attach: memsight attach failed:"; cat "$OUT/attach.attach"; }
    wait "$pid"
    report attach $? $(($(date +%s) - start))
}

echo "modules: $MODULES; modes: $MODES${IGNORE:+; ignored: $IGNORE} (logs in $OUT)"
run none $PY
for mode in $MODES; do
    # --follow-exec: the test runner's workers are processes it execs
    case $mode in
    full) run full $MEMSIGHT run -q --follow-exec -o "$OUT/full" -- $PY ;;
    sampled) run sampled $MEMSIGHT run -q --follow-exec --sample 4096 -o "$OUT/sampled" -- $PY ;;
    s512k) run s512k $MEMSIGHT run -q --follow-exec --sample 524288 -o "$OUT/s512k" -- $PY ;;
    leak-exit) run leak-exit $MEMSIGHT run -q --follow-exec --leak-check=exit -o "$OUT/leak" -- $PY ;;
    guard) run guard $MEMSIGHT run -q --follow-exec -O guard=200 -o "$OUT/guard" -- $PY ;;
    s512kg) run s512kg $MEMSIGHT run -q --follow-exec --sample 524288 -O guard=500 -o "$OUT/s512kg" -- $PY ;;
    attach) run_attach ;;
    *) echo "unknown mode $mode" >&2 ;;
    esac
done
