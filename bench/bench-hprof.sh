#!/bin/sh
# Benchmark of the HPROF reader and the `memsight hprof` commands on a large dump made by
# a Java program (at least 5 million objects, a few hundred MB): read throughput against
# `cat FILE > /dev/null` and against a plain read of every byte (dd), time to histogram
# (with and without retained sizes), time to dominators, peak RSS over the file size.
# Prints numbers and ratios; asserts nothing (the machine is shared and noisy): both wall
# and CPU (user+sys) times are given, best of RUNS.
# usage: bench/bench-hprof.sh [BUILD_DIR] [N]
#   N: Holder objects (each with a byte[] and a boxed Integer; default 2000000, about
#      6 million objects and 330 MB). HPROF_BENCH_FILE=path reuses an existing dump.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
N=${2:-2000000}
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
    java -Xmx3g -XX:+UseParallelGC -cp "$WORK" HprofBenchHeap "$N" < "$WORK/in" > "$WORK/out" &
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
measure cat "$DUMP";                              CAT_E=$best_e; CAT_C=$best_c
measure dd if="$DUMP" of=/dev/null bs=1M;         DD_E=$best_e; DD_C=$best_c
measure "$MEMSIGHT" hprof summary "$DUMP" --no-progress
READ_E=$best_e; READ_C=$best_c; READ_RSS=$rss
measure "$MEMSIGHT" hprof histogram "$DUMP" --no-progress --no-retained
HI_E=$best_e; HI_C=$best_c; HI_RSS=$rss
measure "$MEMSIGHT" hprof histogram "$DUMP" --no-progress
HR_E=$best_e; HR_C=$best_c; HR_RSS=$rss
measure "$MEMSIGHT" hprof dominators "$DUMP" --no-progress
DO_E=$best_e; DO_C=$best_c; DO_RSS=$rss

awk -v size="$SIZE" -v cat_e="$CAT_E" -v cat_c="$CAT_C" -v dd_e="$DD_E" -v dd_c="$DD_C" \
    -v re="$READ_E" -v rc="$READ_C" -v rr="$READ_RSS" -v he="$HI_E" -v hc="$HI_C" -v hr="$HI_RSS" \
    -v hre="$HR_E" -v hrc="$HR_C" -v hrr="$HR_RSS" -v de="$DO_E" -v dc="$DO_C" -v dr="$DO_RSS" '
function mbs(t) { return t > 0 ? size / 1e6 / t : 0 }
BEGIN {
    printf "cat > /dev/null           wall %6.3f s  (%7.0f MB/s)\n", cat_e, mbs(cat_e)
    printf "dd bs=1M (reads bytes)    wall %6.3f s  (%7.0f MB/s)\n", dd_e, mbs(dd_e)
    printf "read (hprof summary)      wall %6.3f s  (%7.0f MB/s)  cpu %6.3f s (%5.0f MB/s)  rss %4.0f MB\n", re, mbs(re), rc, mbs(rc), rr / 1024
    printf "histogram --no-retained   wall %6.3f s  cpu %6.3f s  rss %4.0f MB\n", he, hc, hr / 1024
    printf "histogram (retained)      wall %6.3f s  cpu %6.3f s  rss %4.0f MB\n", hre, hrc, hrr / 1024
    printf "dominators                wall %6.3f s  cpu %6.3f s  rss %4.0f MB\n", de, dc, dr / 1024
    printf "read_speed_over_cat=%.3f (goal >= 0.5)  read_speed_over_dd=%.3f\n", cat_e / re, dd_e / re
    printf "peak_rss_over_file: read %.2f, histogram --no-retained %.2f, histogram %.2f, dominators %.2f (goal < 1)\n",
           rr * 1024 / size, hr * 1024 / size, hrr * 1024 / size, dr * 1024 / size
    worst = rr
    if (hr > worst) worst = hr
    if (hrr > worst) worst = hrr
    if (dr > worst) worst = dr
    g_read = (cat_e / re >= 0.5) ? "met" : "MISSED"
    g_dom = (de < 10) ? "met" : "MISSED"
    g_rss = (worst * 1024 < size) ? "met" : "MISSED"
    printf "goals: read %s, dominators under 10 s %s, peak RSS under the file %s\n", g_read, g_dom, g_rss
}'
