#!/bin/sh
# Benchmark of the HPROF analysis: builds a dump of about 5.6 million objects from a Java
# program (bench/GtBenchHeap.java, dumped with jcmd), then times reading, the dominator
# tree with retained sizes, the per-class aggregation and one shortest path, and reports
# peak RSS against the file size. Goal: dominators for >= 5 million objects under 10 s on
# 2 cores. Prints numbers and ratios; asserts nothing (machines are noisy).
# usage: bench/bench-hprof-dominators.sh [BUILD_DIR] [N]   (N map entries, default 1000000)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
N=${2:-1000000}
TOOL=${MS_AN_TOOL:-$BUILD/tests/programs/hprof_an_tool}
[ -x "$TOOL" ] || { echo "build first: $TOOL is missing" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
javac -d "$WORK" "$SRC/bench/GtBenchHeap.java"
mkfifo "$WORK/in"
java -Xmx2g -Xms2g -XX:+UseParallelGC -cp "$WORK" GtBenchHeap "$N" < "$WORK/in" > "$WORK/out" &
JPID=$!
exec 3>"$WORK/in"
i=0
until grep -q READY "$WORK/out" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "java did not start" >&2; exit 1; }
    sleep 0.1
done
jcmd "$JPID" GC.heap_dump "$WORK/bench.hprof" >/dev/null
exec 3>&-
wait "$JPID" || true
SIZE=$(stat -c %s "$WORK/bench.hprof")
cat "$WORK/bench.hprof" > /dev/null   # page cache warm for every run below
T0=$(date +%s.%N); cat "$WORK/bench.hprof" > /dev/null; T1=$(date +%s.%N)
"$TOOL" time "$WORK/bench.hprof" > "$WORK/time.txt"
cat "$WORK/time.txt"
awk -v size="$SIZE" -v t0="$T0" -v t1="$T1" -F= '
    { v[$1] = $2 }
    END {
        printf "file_bytes=%d\ncat_s=%.3f\n", size, t1 - t0
        printf "read_mb_per_s=%.0f (cat: %.0f)\n", size / 1e6 / v["read_s"], size / 1e6 / (t1 - t0)
        printf "dominators_per_million_objects_s=%.3f\n", v["dominators_s"] / (v["objects"] / 1e6)
        printf "dominators_goal: %s (%.2f s for %d objects, goal < 10 s)\n",
               v["dominators_s"] < 10 ? "met" : "MISSED", v["dominators_s"], v["objects"]
        printf "peak_rss_over_file=%.2f\n", v["maxrss_kb"] * 1024 / size
    }' "$WORK/time.txt"
