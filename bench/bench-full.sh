#!/bin/sh
# Benchmark of the agent in full mode against the uninstrumented program and heaptrack,
# on real allocation-heavy workloads: sqlite3 running 200k single-row INSERTs in one
# transaction plus two CREATE INDEX, and python3 (PYTHONMALLOC=malloc) doing dict/list/
# str churn. Prints the best-of-N wall time, the slowdown ratios and the agent's and
# heaptrack's cost in ns per allocation call (malloc family + free). Asserts nothing.
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
$PY - "$WORK/sqlite.sql" <<'PYEOF'
import sys
with open(sys.argv[1], 'w') as f:
    f.write("PRAGMA journal_mode=OFF;\nCREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, k INTEGER);\nBEGIN;\n")
    for i in range(200000):
        f.write("INSERT INTO t(name, v, k) VALUES('name-%d-%s', %d.5, %d);\n" % (i, 'x' * (i % 37), i, (i * 7919) % 100003))
    f.write("COMMIT;\nCREATE INDEX t_name ON t(name);\nCREATE INDEX t_k ON t(k, v);\n")
    f.write("SELECT count(*), sum(length(name)) FROM t;\nSELECT k FROM t WHERE k < 50 ORDER BY k LIMIT 3;\n")
PYEOF
# $1: a command prefix (words, no spaces inside them): env, the agent, heaptrack
run_sqlite() { rm -f "$WORK/db"; tm $1 sqlite3 "$WORK/db" < "$WORK/sqlite.sql" > "$WORK/out.txt" 2>"$WORK/err.txt"; }
run_python() { PYTHONMALLOC=malloc tm $1 $PY "$SRC/bench/churn.py" > "$WORK/out.txt" 2>"$WORK/err.txt"; }

now() { date +%s.%N; }
# Measured: CPU seconds (user + system) of the whole process tree (heaptrack's
# interpreter process included): robust on a shared, busy machine where wall time
# mostly measures waiting for a core. Wall time is reported too.
# time_best RUNNER [ARGS...]: best CPU time and best wall time of REPS runs
time_best() {
    runner=$1; shift
    best=""; bestw=""
    i=0
    while [ $i -lt "$REPS" ]; do
        rm -rf "$WORK/snaps" "$WORK/ht"; mkdir -p "$WORK/snaps" "$WORK/ht"
        t0=$(now); $runner "$@"; t1=$(now)
        t=$(awk '{ printf "%.3f", $1 + $2 }' "$WORK/cpu")
        wall=$(echo "$t1 - $t0" | bc -l)
        if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
        if [ -z "$bestw" ] || [ "$(echo "$wall < $bestw" | bc -l)" = 1 ]; then bestw=$wall; fi
        i=$((i + 1))
    done
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

echo "CPU seconds (user+sys, best of $REPS); wall seconds in brackets"
printf '%-8s %15s %15s %15s %8s %8s %10s %10s %12s\n' workload base agent heaptrack agent_x htrack_x agent_ns/c htrack_ns/c alloc+free
for w in sqlite python; do
    time_best run_$w "$PLAIN"; base=$best; basew=$bestw
    time_best run_$w "$WITH_AGENT"; agent=$best; agentw=$bestw
    set -- $(count_calls); allocs=$1; frees=$2; fallbacks=$3; misses=$4; tbytes=$5; nstacks=$6
    calls=$((allocs + frees))
    if command -v heaptrack >/dev/null 2>&1; then
        time_best run_$w "$WITH_HEAPTRACK"; ht=$best; htw=$bestw
    else
        ht=0; htw=0
    fi
    printf '%-8s %6.2f [%6.2f] %6.2f [%6.2f] %6.2f [%6.2f] %8.2f %8.2f %10.0f %10.0f %12d\n' "$w" \
        "$base" "$basew" "$agent" "$agentw" "$ht" "$htw" \
        "$(echo "$agent / $base" | bc -l)" "$(echo "$ht / $base" | bc -l)" \
        "$(echo "($agent - $base) * 1000000000 / $calls" | bc -l)" \
        "$(echo "($ht - $base) * 1000000000 / $calls" | bc -l)" "$calls"
    echo "         ($allocs allocations, $frees frees; unwind fallbacks $fallbacks, pc-cache misses $misses, $nstacks stacks, live table $tbytes bytes)"
done
