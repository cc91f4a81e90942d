#!/bin/sh
# SQLite's own test suite under the agent, against the same tests without it: the source of
# the sqlite3 Debian ships, its test program (testfixture: the library and its test
# harness in one Tcl interpreter) built once, then each test file run uninstrumented and
# once per agent mode. Prints per mode the tests run, the errors, the tests that failed only
# with the agent and the wall time. Not part of `make test` (minutes).
#   [MODES="full sampled ..."] [SRC_DIR=DIR] bench/sqlite-suite.sh [BUILD_DIR] [TEST...]
# TEST: names of files in SQLite's test/ without .test (default below: queries, DML,
# triggers, WAL, savepoints, SQLite's own out-of-memory and I/O-error simulations, threads).
# MODES (default: full sampled leak-exit guard): as bench/real-suites.sh (full, sampled,
# s512k, leak-exit, guard, s512kg).
# The source comes from Debian's archive (deb-src) through a private apt state under
# SRC_DIR (default ~/.cache/memsight-sqlite-suite): the machine's apt configuration is not
# touched. Needs tcl-dev (scripts/install-deps.sh installs it).
set -u
BUILD=${1:-build}
[ $# -gt 0 ] && shift
TESTS=${*:-select1 select2 select3 select4 select6 insert insert2 update delete trigger1 trigger2 where where2 join index func func2 expr vacuum attach2 wal wal2 savepoint savepoint2 mallocA mallocB mallocC malloc3 memdb1 incrblob btree01 analyze pager1 ioerr ioerr2 thread001 thread002 fkey2 window1 json101 with1 autovacuum}
MODES=${MODES:-full sampled leak-exit guard}
SRC_DIR=${SRC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memsight-sqlite-suite}
MEMSIGHT=$(cd "$BUILD" && pwd)/bin/memsight
[ -x "$MEMSIGHT" ] || { echo "no $MEMSIGHT (build first)" >&2; exit 2; }
[ -f /usr/lib/tcl8.6/tclConfig.sh ] || { echo "tcl-dev is not installed" >&2; exit 2; }
. "$(dirname "$0")/suite-common.sh"

suite_fetch sqlite3 libsqlite3-0
if [ ! -x "$TREE/bld/testfixture" ]; then
    mkdir -p "$TREE/bld"
    echo "building testfixture (a few minutes)"
    (cd "$TREE/bld" && ../configure --with-tcl=/usr/lib/tcl8.6 > configure.log 2>&1 &&
        make -j2 testfixture > make.log 2>&1) ||
        { echo "could not build testfixture (see $TREE/bld/*.log)" >&2; exit 2; }
fi

# testfixture takes its test files relative to the build directory
test_one() {
    t=$1 log=$2; shift 2
    (cd "$TREE/bld" && env --default-signal=INT "$@" ./testfixture "../test/$t.test") > "$log" 2>&1
}
# "0 errors out of 192 tests on ..."; none when a file stopped early (some refuse root)
test_counts() {
    sed -n 's/^\([0-9]*\) errors out of \([0-9]*\) tests.*/\2 \1/p' "$1" | tail -1
}
test_failed() { sed -n 's/^! \([^ ]*\) .*/\1/p' "$1"; }

OUT=$(mktemp -d "${TMPDIR:-/tmp}/memsight-sqlite-XXXXXX")
suite_modes
