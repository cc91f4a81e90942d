#!/bin/sh
# Paired A/B timing of agent libraries in full mode on one workload of workloads.sh
# (python3's churn by default). Each pair runs every library once, in turn, so that a
# change of a shared machine's load meets them alike; prints each library's CPU seconds
# (user + system; best and median) and the quartiles of its per-pair ratio to the first
# library. Address randomisation is off and the environment's size cycles over four
# paddings from pair to pair (the walk cache's sets follow the stack's addresses, which
# the environment moves; follow_exec=1: setarch execs the program, which keeps the agent).
# A difference inside the ratios' quartiles is not shown by the run. Counts (instructions,
# simulated misses and mispredictions) are bench-cachesim.sh's.
# usage: bench/bench-ab.sh [BUILD_DIR] [PAIRS] AGENT.so AGENT.so...   (env: WL=python|sqlite)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
PAIRS=${2:-20}
WL=${WL:-python}
[ $# -ge 2 ] && shift 2 || shift $#
[ $# -gt 0 ] || set -- "$BUILD/lib/libmemsight.so"
for a in "$@"; do [ -f "$a" ] || { echo "no agent library: $a" >&2; exit 1; }; done
NORAND=""; setarch "$(uname -m)" -R true 2>/dev/null && NORAND="setarch $(uname -m) -R"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msab.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

. "$SRC/bench/workloads.sh"
[ "$WL" = sqlite ] && ms_bench_sqlite_sql "$WORK/sqlite.sql"

echo "$WL: $PAIRS pairs, CPU seconds; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
p=0
while [ $p -lt "$PAIRS" ]; do
    p=$((p + 1))
    pad=$(printf "%$(((p % 4) * 16))s" "" | tr ' ' x)
    j=0
    for a in "$@"; do
        j=$((j + 1))
        rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
        ms_bench_time "$WORK" "$WL" env MSPAD="$pad" PYTHONHASHSEED=0 LD_PRELOAD="$a" \
            MEMSIGHT_OPTIONS="out=$WORK/snaps,follow_exec=1" $NORAND
        awk -v p=$p -v j=$j '{ print p, j, $2 + $3 }' "$WORK/t.txt" >> "$WORK/cpu"
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-44s %8s %8s %28s\n" agent best median "ratio to the first: q1 med q3"
j=0
for a in "$@"; do
    j=$((j + 1))
    awk -v j=$j '$2 == 1 { b[$1] = $3 } $2 == j { v[$1] = $3 }
        END { for (p in v) print v[p], v[p] / b[p] }' "$WORK/cpu" > "$WORK/lib"
    t=$(sort -n "$WORK/lib" | awk '{ t[NR] = $1 } END { printf "%8.3f %8.3f", t[1], t[int((NR + 1) / 2)] }')
    r=$(awk '{ print $2 }' "$WORK/lib" | sort -n |
        awk '{ r[NR] = $1 } END { printf "%8.3f %8.3f %8.3f", r[int((NR + 3) / 4)], r[int((NR + 1) / 2)], r[int((3 * NR + 3) / 4)] }')
    printf "%-44s %s   %s\n" "$a" "$t" "$r"
done
