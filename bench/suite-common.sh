# Shared by bench/sqlite-suite.sh and bench/git-suite.sh (sourced, not run): a Debian
# package's source fetched once, then its test files run without the agent and once per
# agent mode, and the tests that fail only with the agent named. The sourcing script sets
# MEMSIGHT, MODES, TESTS and SRC_DIR and defines
#   test_one T LOG CMD...   runs test file T with CMD before the test program, output in LOG
#   test_counts LOG         prints "TESTS ERRORS" of a log, nothing when it has no summary
#   test_failed LOG         prints the failed tests' names, one per line

# suite_fetch SOURCE_PACKAGE BINARY_PACKAGE: SOURCE_PACKAGE's source at the version of
# BINARY_PACKAGE installed here (else the archive's newest), extracted in SRC_DIR once,
# through a private apt state there (deb-src of Debian's archive; the machine's apt
# configuration is not touched). Sets TREE.
suite_fetch() {
    mkdir -p "$SRC_DIR"
    TREE=$(ls -d "$SRC_DIR/$1"-*/ 2>/dev/null | head -1)
    if [ -z "$TREE" ]; then
        version=$(dpkg-query -W -f '${source:Version}' "$2:$(dpkg --print-architecture)" 2>/dev/null)
        apt="-o Dir::Etc::SourceList=$SRC_DIR/sources.list -o Dir::Etc::SourceParts=/dev/null"
        apt="$apt -o Dir::State::Lists=$SRC_DIR/lists -o Dir::Cache=$SRC_DIR/cache"
        mkdir -p "$SRC_DIR/lists/partial" "$SRC_DIR/cache"
        codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
        echo "deb-src http://deb.debian.org/debian $codename main" > "$SRC_DIR/sources.list"
        echo "fetching $1 ${version:-(newest)}'s source into $SRC_DIR"
        # shellcheck disable=SC2086
        (cd "$SRC_DIR" && apt-get $apt update > apt.log 2>&1 &&
            { { [ -n "$version" ] && apt-get $apt source --download-only "$1=$version" >> apt.log 2>&1; } ||
              apt-get $apt source --download-only "$1" >> apt.log 2>&1; }) ||
            { echo "could not fetch the source (see $SRC_DIR/apt.log)" >&2; exit 2; }
        tar -xf "$(ls "$SRC_DIR/$1"_*.orig.tar.* | head -1)" -C "$SRC_DIR" || exit 2
        TREE=$(ls -d "$SRC_DIR/$1"-*/ | head -1)
    fi
    TREE=${TREE%/}
}

# run NAME CMD...: every test file of TESTS with CMD before the test program
run() {
    name=$1; shift
    mkdir -p "$OUT/$name"
    start=$(date +%s)
    total=0 errors=0 status=0
    : > "$OUT/$name.failed"
    for t in $TESTS; do
        test_one "$t" "$OUT/$name/$t.log" "$@" || status=$((status + 1))
        counts=$(test_counts "$OUT/$name/$t.log")
        if [ -z "$counts" ]; then
            echo "$t: no summary" >> "$OUT/$name.failed"
        else
            total=$((total + ${counts% *}))
            errors=$((errors + ${counts#* }))
        fi
        test_failed "$OUT/$name/$t.log" | sed "s/^/$t: /" >> "$OUT/$name.failed"
    done
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

# The run without the agent, then each mode of MODES (--follow-exec: a test's programs
# started by exec are recorded too).
suite_modes() {
    echo "$(basename "$TREE")'s tests: $TESTS; modes: $MODES (logs in $OUT)"
    run none env
    for mode in $MODES; do
        case $mode in
        full) run full "$MEMSIGHT" run -q --follow-exec -o "$OUT/full.snap" -- ;;
        sampled) run sampled "$MEMSIGHT" run -q --follow-exec --sample 4096 -o "$OUT/sampled.snap" -- ;;
        s512k) run s512k "$MEMSIGHT" run -q --follow-exec --sample 524288 -o "$OUT/s512k.snap" -- ;;
        leak-exit) run leak-exit "$MEMSIGHT" run -q --follow-exec --leak-check=exit -o "$OUT/leak.snap" -- ;;
        guard) run guard "$MEMSIGHT" run -q --follow-exec -O guard=200 -o "$OUT/guard.snap" -- ;;
        s512kg) run s512kg "$MEMSIGHT" run -q --follow-exec --sample 524288 -O guard=500 -o "$OUT/s512kg.snap" -- ;;
        *) echo "unknown mode $mode" >&2 ;;
        esac
    done
}
