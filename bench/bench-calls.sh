#!/bin/sh
# The agent's cost per allocation call on a malloc/free loop (bench-calls.c), measured
# two ways in one run, without the agent and with each agent library given:
#  - instructions per malloc+free pair, counted by callgrind (exact and repeatable on a
#    busy machine: what a change to the recording path saves, not what it costs in time;
#    cache misses are not in it);
#  - CPU seconds, best of REPEATS runs, and the ratio to the run without the agent.
# Several libraries (e.g. builds of successive commits) are compared side by side.
# usage: bench/bench-calls.sh [BUILD_DIR] [REPEATS] [AGENT.so...]   (env: ITERS, CG_ITERS)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
REPS=${2:-3}
[ $# -ge 2 ] && shift 2 || shift $#
[ $# -gt 0 ] || set -- "$BUILD/lib/libmemsight.so"
for a in "$@"; do [ -f "$a" ] || { echo "no agent library: $a" >&2; exit 1; }; done
ITERS=${ITERS:-3000000}
CG_ITERS=${CG_ITERS:-200000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mscallbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
cc -O2 -g -fno-omit-frame-pointer -o "$WORK/prog" "$SRC/bench/bench-calls.c"

# run AGENT N: the program under AGENT ("" for none); CPU seconds in $WORK/cpu
run() {
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    /usr/bin/time -f "%U %S" -o "$WORK/cpu" env MEMSIGHT_OPTIONS="out=$WORK/snaps" \
        LD_PRELOAD="$1" "$WORK/prog" "$2" > /dev/null
}
# instructions of a whole run under callgrind (follow_exec: valgrind's launcher execs
# the tool, which must keep LD_PRELOAD for the program)
instr1() {
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    env MEMSIGHT_OPTIONS="out=$WORK/snaps,follow_exec=1" LD_PRELOAD="$1" valgrind \
        --tool=callgrind --callgrind-out-file="$WORK/cg.out" "$WORK/prog" "$2" \
        > /dev/null 2> "$WORK/cg.err" || { cat "$WORK/cg.err" >&2; exit 1; }
    sed -n 's/^summary: *//p' "$WORK/cg.out"
}
# instructions per pair: runs of 2N and N pairs, so that start-up and the exit snapshot
# (the same in both) drop out
instr() {
    echo "($(instr1 "$1" $((CG_ITERS * 2))) - $(instr1 "$1" "$CG_ITERS")) / $CG_ITERS" | bc -l
}
best() { # AGENT: best CPU seconds of REPS runs
    b=""
    i=0
    while [ $i -lt "$REPS" ]; do
        run "$1" "$ITERS"
        t=$(awk '{ printf "%.3f", $1 + $2 }' "$WORK/cpu")
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
        i=$((i + 1))
    done
    echo "$b"
}
have_vg=0; command -v valgrind >/dev/null 2>&1 && have_vg=1
base_i=0; [ $have_vg = 1 ] && base_i=$(instr "")
base_t=$(best "")
echo "$ITERS malloc/free pairs (callgrind: $CG_ITERS); CPU seconds best of $REPS"
printf '%-50s %12s %8s %10s %12s\n' agent instr/pair cpu_s cpu_x added_ns/pair
printf '%-50s %12.0f %8.2f %10.2f %12s\n' "(none)" "$base_i" "$base_t" 1 -
for a in "$@"; do
    ai=0; [ $have_vg = 1 ] && ai=$(instr "$a")
    at=$(best "$a")
    printf '%-50s %12.0f %8.2f %10.2f %12.0f\n' "$a" "$(echo "$ai - $base_i" | bc -l)" \
        "$at" "$(echo "$at / $base_t" | bc -l)" "$(echo "($at - $base_t) * 1000000000 / $ITERS" | bc -l)"
done
echo "(instr/pair: the program's own per pair for (none); the agent's added ones for each library)"
