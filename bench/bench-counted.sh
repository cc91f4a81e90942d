#!/bin/sh
# The whole-run cost of each mode, counted rather than timed: every workload runs under
# cachegrind (instructions, and misses of a simulated 32 KiB L1 and a 1 MiB last level)
# uninstrumented, under the floor of any preloaded interposer (bench/floor-preload.c),
# and with the agent preloaded in sampled modes (sample=524288, sample=4096) and full
# mode (and, asked for in MODES, g5000: sample=524288 with guard pages, guard=5000). For each it prints the ratio of instructions to the uninstrumented run's and the
# ratio of estimated cycles, Ir + 10 x L1 misses + 100 x last-level misses (the usual
# cachegrind estimate: it knows no prefetcher and no overlap of misses, so it weighs
# misses more than a real core pays for the streaming ones). The counts do not move with
# the machine's load: where CPU time spreads by 20-70% between runs of one configuration
# (bench-overhead.sh), a difference of 1% still shows here. They are not time: the
# program's own work is counted at its instruction count, and a system call is one
# instruction. The workloads are bench-overhead.sh's, smaller (a simulated run is ~50x
# slower): sqlite3 with ROWS single-row INSERTs and two indexes, python3 bench/churn.py
# with PYTHONMALLOC=malloc, and the single-threaded malloc/free loop (sm_scale).
# Address randomisation off, hash and sampler seeds fixed: every run of a configuration
# does the same work.
# usage: bench/bench-counted.sh [BUILD_DIR]
#   env: WORKLOADS="sqlite python loop", MODES="floor s512k s4096 full",
#        ROWS (sqlite, default 40000), ROUNDS (python, default 2), PAIRS (loop, 2000000)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
WORKLOADS=${WORKLOADS:-sqlite python loop}
MODES=${MODES:-floor s512k s4096 full}
ROWS=${ROWS:-40000}
ROUNDS=${ROUNDS:-2}
PAIRS=${PAIRS:-2000000}
AGENT=$BUILD/lib/libmemsight.so
SCALE=$BUILD/tests/programs/sm_scale
PY=/usr/bin/python3
for f in "$AGENT" "$SCALE"; do
    [ -e "$f" ] || { echo "build first: $f is missing" >&2; exit 1; }
done
command -v valgrind >/dev/null 2>&1 || { echo "valgrind (cachegrind) is needed" >&2; exit 1; }
NORAND=""; setarch "$(uname -m)" -R true 2>/dev/null && NORAND="setarch $(uname -m) -R"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mscounted.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

. "$SRC/bench/workloads.sh"
ms_bench_sqlite_sql "$WORK/sqlite.sql" "" "" "$ROWS"
cc -O2 -shared -fPIC -o "$WORK/floor.so" "$SRC/bench/floor-preload.c" -ldl

# sim MODE WORKLOAD: the summary counts (Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw) of one
# simulated run. follow_exec: valgrind's launcher execs the tool, which must keep the
# preload for the program.
sim() {
    in=/dev/null
    case $2 in
    sqlite) rm -f "$WORK/db"; in=$WORK/sqlite.sql; set -- "$1" sqlite3 "$WORK/db" ;;
    python) set -- "$1" $PY "$SRC/bench/churn.py" "$ROUNDS" ;;
    loop) set -- "$1" "$SCALE" 0 "$PAIRS" 4096 ;;
    esac
    mode=$1; shift
    opts="out=$WORK/snaps,follow_exec=1,seed=1"
    case $mode in
    base) pre="" ;;
    floor) pre="LD_PRELOAD=$WORK/floor.so" ;;
    s512k) pre="LD_PRELOAD=$AGENT MEMSIGHT_OPTIONS=$opts,sample=524288" ;;
    s4096) pre="LD_PRELOAD=$AGENT MEMSIGHT_OPTIONS=$opts,sample=4096" ;;
    g5000) pre="LD_PRELOAD=$AGENT MEMSIGHT_OPTIONS=$opts,sample=524288,guard=5000" ;;
    full) pre="LD_PRELOAD=$AGENT MEMSIGHT_OPTIONS=$opts" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    env PYTHONMALLOC=malloc PYTHONHASHSEED=0 $pre $NORAND valgrind --tool=cachegrind \
        --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64 \
        --cachegrind-out-file="$WORK/cg.out" "$@" < "$in" > "$WORK/out.txt" 2> "$WORK/vg.err" ||
        { cat "$WORK/vg.err" >&2; exit 1; }
    sed -n 's/^summary: *//p' "$WORK/cg.out"
}

echo "whole runs under cachegrind: ratios to the uninstrumented run (Ir: instructions;"
echo "cyc_est: Ir + 10 x L1 misses + 100 x last-level misses)"
echo "load average (does not change the counts): $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %-6s %14s %8s %14s %8s\n' work mode Ir Ir_x cyc_est cyc_x
for wl in $WORKLOADS; do
    base=$(sim base "$wl")
    for mode in base $MODES; do
        [ "$mode" = base ] && c=$base || c=$(sim "$mode" "$wl")
        echo "$base $c" | awk -v wl="$wl" -v m="$mode" '{
            b = $1 + 10 * ($2 + $5 + $8) + 100 * ($3 + $6 + $9)
            e = $10 + 10 * ($11 + $14 + $17) + 100 * ($12 + $15 + $18)
            printf "%-7s %-6s %14.0f %8.4f %14.0f %8.4f\n", wl, m, $10, $10 / $1, e, e / b }'
    done
done
