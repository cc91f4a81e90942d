#!/bin/sh
# Benchmark of the HPROF reader and the `memsight hprof` commands on a large dump made by
# a Java program (JDK 17 or later, jcmd GC.heap_dump): by default 10 million linked
# objects in a 1.3 GB file. Each command's wall time is given as a ratio to a plain read
# of every byte of the same file (dd bs=1M), measured in the same run, page cache warm,
# best of RUNS (3); CPU (user+sys) too, and peak RSS over the file size. The goals:
# summary within 8x dd, histogram --no-retained within 10x, dominators within 30x, peak
# RSS at most half the file. Prints numbers, ratios and whether each goal is met; asserts
# nothing (the machine is shared and noisy: the load average is printed with them).
# usage: bench/bench-hprof.sh [BUILD_DIR] [N] [STEP]
#   N: Holder objects (each with a byte[] of 16 + (i % 16) * STEP bytes and a boxed
#      Integer, all in 64 linked chains: 3N objects); default 3340000 and 36, about 10
#      million objects and 1.3 GB (the Java heap needs about 1.2 GB: -Xmx4g is given).
#   HPROF_BENCH_FILE=path reuses an existing dump; HPROF_BENCH_KEEP=path keeps the one made.
#   HPROF_BENCH_GZIP=1 also times summary, histogram --no-retained and dominators on the
#   dump gzipped (gzip -1; HPROF_BENCH_GZIP_FILE=path reuses one), best of RUNS, with
#   files limited to 128 blocks (ulimit -f), so a decompressed copy would fail them.
#   The dump is written in TMPDIR (or /tmp): 1.3 GB must be free there.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
N=${2:-3340000}
STEP=${3:-36}
RUNS=${RUNS:-3}
MEMSIGHT=$BUILD/bin/memsight
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msbench-hprof.XXXXXX")
JPID=
cleanup() {
    [ -n "$JPID" ] && kill "$JPID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

DUMP=${HPROF_BENCH_FILE:-}
if [ -z "$DUMP" ]; then
    javac -d "$WORK" "$SRC/tests/programs/java/HprofBenchHeap.java"
    mkfifo "$WORK/in"
    java -Xmx4g -XX:+UseParallelGC -cp "$WORK" HprofBenchHeap "$N" "$STEP" < "$WORK/in" > "$WORK/out" &
    JPID=$!
    exec 3>"$WORK/in"
    i=0
    until grep -q READY "$WORK/out" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1200 ] || { echo "java did not start" >&2; exit 1; }
        sleep 0.1
    done
    T0=$(date +%s.%N)
    jcmd "$JPID" GC.heap_dump "$WORK/bench.hprof" >/dev/null
    T1=$(date +%s.%N)
    exec 3>&-
    wait "$JPID" || true
    JPID=
    DUMP=$WORK/bench.hprof
    echo "dump: jcmd GC.heap_dump took $(echo "$T1 - $T0" | bc) s"
    if [ -n "${HPROF_BENCH_KEEP:-}" ]; then
        mv "$DUMP" "$HPROF_BENCH_KEEP"
        DUMP=$HPROF_BENCH_KEEP
    fi
fi
SIZE=$(stat -c %s "$DUMP")

# best wall and CPU seconds and peak RSS (KB) of RUNS runs of a command
measure() {
    best_e=999999; best_c=999999; rss=0
    r=0
    while [ $r -lt "$RUNS" ]; do
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/t" "$@" > /dev/null 2> "$WORK/err" || {
            cat "$WORK/err" >&2; exit 1; }
        read -r e u s m < "$WORK/t"
        c=$(echo "$u + $s" | bc)
        best_e=$(echo "if ($e < $best_e) $e else $best_e" | bc)
        best_c=$(echo "if ($c < $best_c) $c else $best_c" | bc)
        [ "$m" -gt "$rss" ] && rss=$m
        r=$((r + 1))
    done
}

cat "$DUMP" > /dev/null   # warm the page cache for every run below
"$MEMSIGHT" hprof summary "$DUMP" --no-progress | sed -n '/^format/p;/^objects/p;/^references/p;/^size model/p'
echo "file_bytes=$SIZE"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
measure dd if="$DUMP" of=/dev/null bs=1M;         DD_E=$best_e; DD_C=$best_c
measure "$MEMSIGHT" hprof summary "$DUMP" --no-progress
SU_E=$best_e; SU_C=$best_c; SU_RSS=$rss
measure "$MEMSIGHT" hprof histogram "$DUMP" --no-progress --no-retained
HI_E=$best_e; HI_C=$best_c; HI_RSS=$rss
measure "$MEMSIGHT" hprof dominators "$DUMP" --no-progress
DO_E=$best_e; DO_C=$best_c; DO_RSS=$rss
measure "$MEMSIGHT" hprof histogram "$DUMP" --no-progress
HR_E=$best_e; HR_C=$best_c; HR_RSS=$rss
GZ_LINES=
if [ -n "${HPROF_BENCH_GZIP:-}" ]; then
    # the same dump gzipped (gzip -1, or HPROF_BENCH_GZIP_FILE), read with files limited
    # to 128 blocks (ulimit -f): no decompressed copy may be written anywhere
    GZ=${HPROF_BENCH_GZIP_FILE:-$WORK/bench.hprof.gz}
    [ -f "$GZ" ] || gzip -1 -c "$DUMP" > "$GZ"
    GZ_LINES="gzip -1 file: $(stat -c %s "$GZ") bytes; commands run under ulimit -f 128 (no temporary file)"
    for cmd in summary "histogram --no-retained" dominators; do
        # shellcheck disable=SC2086
        measure sh -c 'ulimit -f 128 && exec "$@"' sh "$MEMSIGHT" hprof $cmd "$GZ" --no-progress
        GZ_LINES="$GZ_LINES
$(printf "gzip: %-20s wall %7.3f s  cpu %7.3f s  rss %5d MB = %.2f of the data" "$cmd" "$best_e" "$best_c" \
      $((rss / 1024)) "$(echo "$rss * 1024 / $SIZE" | bc -l)")"
    done
    [ -n "${HPROF_BENCH_GZIP_FILE:-}" ] || rm -f "$GZ"
fi
# dd again: the machine's load moves during the run; the best of both is the reference
measure dd if="$DUMP" of=/dev/null bs=1M
DD_E=$(echo "if ($best_e < $DD_E) $best_e else $DD_E" | bc)
DD_C=$(echo "if ($best_c < $DD_C) $best_c else $DD_C" | bc)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

awk -v size="$SIZE" -v dd_e="$DD_E" -v dd_c="$DD_C" \
    -v se="$SU_E" -v sc="$SU_C" -v sr="$SU_RSS" -v he="$HI_E" -v hc="$HI_C" -v hr="$HI_RSS" \
    -v hre="$HR_E" -v hrc="$HR_C" -v hrr="$HR_RSS" -v de="$DO_E" -v dc="$DO_C" -v dr="$DO_RSS" '
function line(name, e, c, r, goal) {
    printf "%-26s wall %7.3f s  cpu %7.3f s  wall/dd %6.1f", name, e, c, e / dd_e
    if (goal) printf " (goal <= %d: %s)", goal, e / dd_e <= goal ? "met" : "MISSED"
    # on a loaded machine wall times follow the load; CPU over dd CPU says what the
    # wall ratio would be on a quiet one
    if (dd_c > 0) printf "  cpu/dd cpu %5.1f", c / dd_c
    printf "  rss %5.0f MB = %.2f of the file\n", r / 1024, r * 1024 / size
}
BEGIN {
    printf "dd bs=1M (reads bytes)     wall %7.3f s  cpu %7.3f s  (%5.0f MB/s)\n", dd_e, dd_c, size / 1e6 / dd_e
    line("summary", se, sc, sr, 8)
    line("histogram --no-retained", he, hc, hr, 10)
    line("dominators", de, dc, dr, 30)
    line("histogram (retained)", hre, hrc, hrr, 0)
    worst = sr
    if (hr > worst) worst = hr
    if (hrr > worst) worst = hrr
    if (dr > worst) worst = dr
    printf "peak RSS over the file: %.2f at most (goal <= 0.5: %s)\n", worst * 1024 / size,
           worst * 1024 <= size / 2 ? "met" : "MISSED"
}'
[ -z "$GZ_LINES" ] || echo "$GZ_LINES"
