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
# s512k, leak-exit, guard).
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
SQ_VERSION=$(dpkg-query -W -f '${source:Version}' "libsqlite3-0:$(dpkg --print-architecture)" 2>/dev/null)
[ -n "$SQ_VERSION" ] || { echo "libsqlite3-0 is not installed: no version to fetch" >&2; exit 2; }

# --- the source and testfixture, once ----------------------------------------------
mkdir -p "$SRC_DIR"
TREE=$(ls -d "$SRC_DIR"/sqlite3-*/ 2>/dev/null | head -1)
TREE=${TREE%/}
FIXTURE=$TREE/bld/testfixture
if [ ! -x "$FIXTURE" ]; then
    APT="-o Dir::Etc::SourceList=$SRC_DIR/sources.list -o Dir::Etc::SourceParts=/dev/null"
    APT="$APT -o Dir::State::Lists=$SRC_DIR/lists -o Dir::Cache=$SRC_DIR/cache"
    mkdir -p "$SRC_DIR/lists/partial" "$SRC_DIR/cache"
    CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "deb-src http://deb.debian.org/debian $CODENAME main" > "$SRC_DIR/sources.list"
    echo "fetching sqlite3 $SQ_VERSION's source into $SRC_DIR"
    # shellcheck disable=SC2086
    (cd "$SRC_DIR" && apt-get $APT update > apt.log 2>&1 &&
        { apt-get $APT source --download-only "sqlite3=$SQ_VERSION" >> apt.log 2>&1 ||
          apt-get $APT source --download-only sqlite3 >> apt.log 2>&1; }) ||
        { echo "could not fetch the source (see $SRC_DIR/apt.log)" >&2; exit 2; }
    ORIG=$(ls "$SRC_DIR"/sqlite3_*.orig.tar.xz | head -1)
    tar -xf "$ORIG" -C "$SRC_DIR" || exit 2
    TREE=$(ls -d "$SRC_DIR"/sqlite3-*/ | head -1)
    TREE=${TREE%/}
    FIXTURE=$TREE/bld/testfixture
    mkdir -p "$TREE/bld"
    echo "building testfixture (a few minutes)"
    (cd "$TREE/bld" && ../configure --with-tcl=/usr/lib/tcl8.6 > configure.log 2>&1 &&
        make -j2 testfixture > make.log 2>&1) ||
        { echo "could not build testfixture (see $TREE/bld/*.log)" >&2; exit 2; }
fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/memsight-sqlite-XXXXXX")
# run NAME COMMAND...: every test file with COMMAND before testfixture; one log per file
run() {
    name=$1; shift
    mkdir -p "$OUT/$name"
    start=$(date +%s)
    total=0 errors=0 status=0
    for t in $TESTS; do
        # testfixture takes its test files relative to the build directory
        (cd "$TREE/bld" && env --default-signal=INT "$@" ./testfixture "../test/$t.test") \
            > "$OUT/$name/$t.log" 2>&1 || status=$((status + 1))
        line=$(grep -E '^[0-9]+ errors out of [0-9]+ tests' "$OUT/$name/$t.log" | tail -1)
        if [ -z "$line" ]; then
            # a file that stopped without its summary (testfixture refuses some as root)
            echo "$t: no summary" >> "$OUT/$name.failed"
        else
            total=$((total + $(echo "$line" | cut -d' ' -f5)))
            errors=$((errors + $(echo "$line" | cut -d' ' -f1)))
        fi
        sed -n "s/^! \([^ ]*\) .*/$t: \1/p" "$OUT/$name/$t.log" >> "$OUT/$name.failed"
    done
    touch "$OUT/$name.failed"
    sort -u -o "$OUT/$name.failed" "$OUT/$name.failed"
    printf '%-10s %5d s, %d tests, %d errors, %d file(s) with a non-zero status' "$name" \
        $(($(date +%s) - start)) "$total" "$errors" "$status"
    if [ "$name" != none ]; then
        new=$(comm -13 "$OUT/none.failed" "$OUT/$name.failed")
        [ -n "$new" ] && printf ', failing only with the agent:\n%s' "$new" ||
            printf ', none failing beyond the run without the agent'
    fi
    printf '\n'
    [ "$name" = none ] && [ -s "$OUT/none.failed" ] &&
        printf '  without the agent: %s\n' "$(tr '\n' ' ' < "$OUT/none.failed")"
    return 0
}

echo "$(basename "$TREE")'s tests: $TESTS; modes: $MODES (logs in $OUT)"
run none env
for mode in $MODES; do
    case $mode in
    full) run full "$MEMSIGHT" run -q -o "$OUT/full.snap" -- ;;
    sampled) run sampled "$MEMSIGHT" run -q --sample 4096 -o "$OUT/sampled.snap" -- ;;
    s512k) run s512k "$MEMSIGHT" run -q --sample 524288 -o "$OUT/s512k.snap" -- ;;
    leak-exit) run leak-exit "$MEMSIGHT" run -q --leak-check=exit -o "$OUT/leak.snap" -- ;;
    guard) run guard "$MEMSIGHT" run -q -O guard=200 -o "$OUT/guard.snap" -- ;;
    *) echo "unknown mode $mode" >&2 ;;
    esac
done
