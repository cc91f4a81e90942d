#!/bin/sh
# Benchmark of `memsight report` on a big snapshot: python3 (PYTHONMALLOC=malloc) running
# a broad workload (json, pickle, sqlite3, ast, xml, difflib...) under the agent in full
# mode, which records tens of thousands of distinct stacks. Each report format is timed
# (CPU seconds user+sys and wall seconds, best of N) with its output size, next to
# heaptrack_print on heaptrack's recording of the same workload (its text report, its
# flame-graph stacks and its massif file), and the share of the JSON report's time spent
# in the symbolizer is measured by --no-symbols. Asserts nothing.
# usage: bench/bench-reports.sh [BUILD_DIR] [REPEATS]
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
REPS=${2:-3}
MEMSIGHT=$BUILD/bin/memsight
PY=/usr/bin/python3
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msbench-reports.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

cat > "$WORK/wl.py" <<'PYEOF'
import ast, csv, decimal, difflib, json, pickle, re, sqlite3, statistics, textwrap
import xml.dom.minidom
d = {'k%d' % i: [str(i) * (i % 7), (i, i * 2), {'x': i}] for i in range(3000)}
s = json.dumps(d); json.loads(s)
pickle.loads(pickle.dumps(d))
con = sqlite3.connect(':memory:')
con.execute('create table t(a, b)')
con.executemany('insert into t values(?, ?)', [(i, str(i)) for i in range(5000)])
list(con.execute('select * from t order by b'))
for m in (json, re, csv, textwrap, difflib):
    ast.parse(open(m.__file__).read())
xml.dom.minidom.parseString('<a>' + '<b x="1">t</b>' * 500 + '</a>')
statistics.mean(range(1000)); decimal.Decimal(1) / decimal.Decimal(7)
print(len(list(difflib.unified_diff(s[:5000].split(','), s[100:5100].split(',')))))
PYEOF

PYTHONMALLOC=malloc "$MEMSIGHT" run -q -o "$WORK/snaps" -- $PY "$WORK/wl.py" > /dev/null
SNAP=$(ls "$WORK"/snaps/*-exit.msnap)
HT=""
if command -v heaptrack >/dev/null 2>&1 && command -v heaptrack_print >/dev/null 2>&1; then
    PYTHONMALLOC=malloc heaptrack -o "$WORK/ht" $PY "$WORK/wl.py" > /dev/null 2>&1 || true
    HT=$(ls "$WORK"/ht.* 2>/dev/null | head -n 1)
fi

now() { date +%s.%N; }
# time_best CMD...: the least CPU time (user+sys) and the least wall time of REPS runs of
# CMD into $best and $bestw
time_best() {
    : > "$WORK/times"
    for _ in $(seq "$REPS"); do
        t0=$(now); /usr/bin/time -f "%U %S" -o "$WORK/cpu" "$@" > /dev/null 2>&1; t1=$(now)
        awk -v w="$(echo "$t1 - $t0" | bc -l)" '{ printf "%.3f %.3f\n", $1 + $2, w }' "$WORK/cpu" >> "$WORK/times"
    done
    best=$(sort -n -k1,1 "$WORK/times" | awk 'NR == 1 { print $1 }')
    bestw=$(sort -n -k2,2 "$WORK/times" | awk 'NR == 1 { print $2 }')
}

STACKS=$("$MEMSIGHT" report -f json --json-frames=table "$SNAP" |
         $PY -c 'import json, sys; r = json.load(sys.stdin); print(r["totals"]["stacks"], len(r["frame_table"]), sum(len(s["frames"]) for s in r["stacks"]))')
set -- $STACKS
echo "snapshot: $1 stacks, $3 frames, $2 distinct frames ($(stat -c %s "$SNAP") bytes)"
echo "CPU seconds (user+sys, best of $REPS); wall seconds in brackets; output bytes"
printf '%-26s %8s %10s %12s\n' report cpu_s wall_s bytes
row() {
    name=$1; out=$2; shift 2
    time_best "$@"
    printf '%-26s %8.2f %10.2f %12s\n' "$name" "$best" "$bestw" "$(stat -c %s "$out" 2>/dev/null || echo -)"
}
for f in text json pprof collapsed svg html massif; do
    row "memsight $f" "$WORK/out.$f" "$MEMSIGHT" report -f "$f" --no-series -o "$WORK/out.$f" "$SNAP"
done
row "memsight json table" "$WORK/out.tjson" "$MEMSIGHT" report -f json --json-frames=table -o "$WORK/out.tjson" "$SNAP"
sym=$best
row "memsight json no symbols" "$WORK/out.njson" "$MEMSIGHT" report -f json --json-frames=table --no-symbols -o "$WORK/out.njson" "$SNAP"
echo "symbolization: $(echo "$sym - $best" | bc -l | awk '{ printf "%.2f", $1 }') s of the compact JSON report's $sym s"
if [ -n "$HT" ]; then
    row "heaptrack_print text" "$WORK/ht.txt" sh -c "heaptrack_print -f '$HT' > '$WORK/ht.txt'"
    row "heaptrack_print -F" "$WORK/ht.folded" heaptrack_print --print-peaks=0 --print-allocators=0 --print-temporary=0 -f "$HT" -F "$WORK/ht.folded"
    row "heaptrack_print -M" "$WORK/ht.massif" heaptrack_print --print-peaks=0 --print-allocators=0 --print-temporary=0 -f "$HT" -M "$WORK/ht.massif"
else
    echo "(heaptrack not installed: no peer row)"
fi
