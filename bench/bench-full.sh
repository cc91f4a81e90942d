#!/bin/sh
# Benchmark of the agent in full mode against the uninstrumented program and heaptrack,
# on real allocation-heavy workloads: sqlite3 running 200k single-row INSERTs in one
# transaction plus two CREATE INDEX, and python3 (PYTHONMALLOC=malloc) doing dict/list/
# str churn. Prints the best-of-N CPU and wall time, the slowdown ratios, the agent's and
# heaptrack's cost in ns per allocation call (malloc family + free) and the spread of the
# N runs (a shared machine is noisy). Asserts nothing.
# usage: bench/bench-full.sh [BUILD_DIR] [REPEATS]   (env: AGENT_OPTIONS extra agent options)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
REPS=${2:-3}
AGENT=$BUILD/lib/libmemsight.so
MEMSIGHT=$BUILD/bin/memsight
PY=/usr/bin/python3
[ -f "$AGENT" ] || { echo "build first: $AGENT is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

# --- workloads -------------------------------------------------------------------
. "$SRC/bench/workloads.sh"
ms_bench_sqlite_sql "$WORK/sqlite.sql" "" "SELECT k FROM t WHERE k < 50 ORDER BY k LIMIT 3;"
# $1: a command prefix (words, no spaces inside them): env, the agent, heaptrack
run_sqlite() { rm -f "$WORK/db"; tm $1 sqlite3 "$WORK/db" < "$WORK/sqlite.sql" > "$WORK/out.txt" 2>"$WORK/err.txt"; }
run_python() { PYTHONMALLOC=malloc tm $1 $PY "$SRC/bench/churn.py" > "$WORK/out.txt" 2>"$WORK/err.txt"; }

now() { date +%s.%N; }
# Measured: CPU seconds (user + system) of the whole process tree (heaptrack's
# interpreter process included): robust on a shared, busy machine where wall time
# mostly measures waiting for a core. Wall time is reported too.
# One run of each tool in turn, REPS times (interleaved: a change of the machine's load
# meets all three alike). fold NAME: keeps NAME's best and worst CPU time and best wall
# time of the runs so far, from $t and $wall.
measure() {
    runner=$1; shift
    t0=$(now); $runner "$@"; t1=$(now)
    t=$(awk '{ printf "%.3f", $1 + $2 }' "$WORK/cpu")
    wall=$(echo "$t1 - $t0" | bc -l)
}
fold() {
    eval "b=\${${1}_b:-} wst=\${${1}_worst:-} bw=\${${1}_bw:-}"
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
    if [ -z "$wst" ] || [ "$(echo "$t > $wst" | bc -l)" = 1 ]; then wst=$t; fi
    if [ -z "$bw" ] || [ "$(echo "$wall < $bw" | bc -l)" = 1 ]; then bw=$wall; fi
    eval "${1}_b=$b ${1}_worst=$wst ${1}_bw=$bw"
}
tm() { /usr/bin/time -f "%U %S" -o "$WORK/cpu" "$@"; }


if [ -x "$MEMSIGHT" ]; then
    WITH_AGENT="$MEMSIGHT run -q -o $WORK/snaps ${AGENT_OPTIONS:+-O $AGENT_OPTIONS} --"
else
    WITH_AGENT="env LD_PRELOAD=$AGENT MEMSIGHT_OPTIONS=out=$WORK/snaps${AGENT_OPTIONS:+,$AGENT_OPTIONS}"
fi
WITH_HEAPTRACK="heaptrack -o $WORK/ht/ht"
PLAIN="env"

# number of allocation calls (malloc family + free) from the agent's own counters
count_calls() {
    $PY - "$WORK/snaps" "$SRC/tests/integration" <<'PYEOF'
import glob, os, sys
sys.path.insert(0, sys.argv[2])
import agent_snap
f = sorted(glob.glob(os.path.join(sys.argv[1], '*-exit.msnap')), key=os.path.getsize)[-1]
s = agent_snap.read(f)
a = sum(st['alloc_blocks'] for st in s['stacks'].values() if st['kind'] == 'heap')
fr = sum(st['free_blocks'] for st in s['stacks'].values() if st['kind'] == 'heap')
print(a, fr, s['health'].get('unwind_fallbacks', 0), s['health'].get('pc_cache_misses', 0),
      s['health'].get('live_table_bytes', 0), s['health'].get('stack_table_used', 0))
PYEOF
}

echo "CPU seconds (user+sys, best of $REPS, runs interleaved); wall seconds in brackets"
printf '%-8s %15s %15s %15s %8s %8s %10s %10s %12s\n' workload base agent heaptrack agent_x htrack_x agent_ns/c htrack_ns/c alloc+free
have_ht=0; command -v heaptrack >/dev/null 2>&1 && have_ht=1
for w in sqlite python; do
    for v in base agent ht; do eval "${v}_b= ${v}_worst= ${v}_bw="; done
    i=0
    while [ $i -lt "$REPS" ]; do
        measure run_$w "$PLAIN"; fold base
        rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
        measure run_$w "$WITH_AGENT"; fold agent
        if [ $have_ht = 1 ]; then
            rm -rf "$WORK/ht"; mkdir -p "$WORK/ht"
            measure run_$w "$WITH_HEAPTRACK"; fold ht
        fi
        i=$((i + 1))
    done
    base=$base_b; basew=$base_bw; agent=$agent_b; agentw=$agent_bw
    ht=${ht_b:-0}; htw=${ht_bw:-0}; ht_worst=${ht_worst:-0}
    set -- $(count_calls); allocs=$1; frees=$2; fallbacks=$3; misses=$4; tbytes=$5; nstacks=$6
    calls=$((allocs + frees))
    printf '%-8s %6.2f [%6.2f] %6.2f [%6.2f] %6.2f [%6.2f] %8.2f %8.2f %10.0f %10.0f %12d\n' "$w" \
        "$base" "$basew" "$agent" "$agentw" "$ht" "$htw" \
        "$(echo "$agent / $base" | bc -l)" "$(echo "$ht / $base" | bc -l)" \
        "$(echo "($agent - $base) * 1000000000 / $calls" | bc -l)" \
        "$(echo "($ht - $base) * 1000000000 / $calls" | bc -l)" "$calls"
    echo "         ($allocs allocations, $frees frees; unwind fallbacks $fallbacks, pc-cache misses $misses, $nstacks stacks, live table $tbytes bytes)"
    # the spread of the REPS runs: the worst CPU time of each over its best
    printf '         spread (worst/best CPU): base %.2f, agent %.2f, heaptrack %.2f\n' \
        "$(echo "$base_worst / $base" | bc -l)" "$(echo "$agent_worst / $agent" | bc -l)" \
        "$(echo "if ($ht > 0) $ht_worst / $ht else 0" | bc -l)"
done
