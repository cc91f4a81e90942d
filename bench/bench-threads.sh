#!/bin/sh
# What the thread-life bookkeeping costs (docs/thread-leaks.md): pthread_create +
# pthread_join of a thread that returns at once, and pthread_create of a detached one
# (bench-threads.c, N of each, timed inside the program), uninstrumented, under memsight
# full mode and under memsight sample=524288, best of REPEATS; prints ns per thread and
# the ratios to the uninstrumented run, in one run. Asserts nothing. BASELINE_AGENT=path
# adds a row for another build of the agent (e.g. one without thread lives), preloaded
# in full mode the same way.
# usage: bench/bench-threads.sh [BUILD_DIR] [N] [REPEATS]
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
N=${2:-20000}
REPS=${3:-5}
MEMSIGHT=$BUILD/bin/memsight
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msthrbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
cc -O2 -g -pthread -o "$WORK/prog" "$SRC/bench/bench-threads.c"

# best (lowest) of REPS runs of: $@; prints "join_ns detached_ns"
best() {
    b=""
    i=0
    while [ $i -lt "$REPS" ]; do
        line=$("$@" 2>"$WORK/err") || { cat "$WORK/err" >&2; exit 1; }
        b="$b
$line"
        i=$((i + 1))
    done
    printf '%s\n' "$b" | python3 -c '
import re, sys
rows = [tuple(float(v) for v in re.findall(r"=([\d.]+)", l)) for l in sys.stdin if "=" in l]
print("%.0f %.0f" % (min(r[0] for r in rows), min(r[1] for r in rows)))'
}

base=$(best "$WORK/prog" "$N")
full=$(best "$MEMSIGHT" run -q -o "$WORK" -- "$WORK/prog" "$N")
samp=$(best "$MEMSIGHT" run -q -o "$WORK" --sample 524288 -- "$WORK/prog" "$N")
other=""
if [ -n "${BASELINE_AGENT:-}" ]; then
    other=$(best env LD_PRELOAD="$BASELINE_AGENT" MEMSIGHT_OPTIONS="out=$WORK" "$WORK/prog" "$N")
fi
python3 - "$N" "$REPS" "$base" "$full" "$samp" "$other" <<'PY'
import sys
n, reps = sys.argv[1], sys.argv[2]
rows = [("uninstrumented", sys.argv[3]), ("memsight full", sys.argv[4]),
        ("memsight sample=524288", sys.argv[5])]
if sys.argv[6]:
    rows.append(("BASELINE_AGENT full", sys.argv[6]))
b = [float(v) for v in sys.argv[3].split()]
print("%s threads of each kind, best of %s; ns per thread (ratio to uninstrumented)" % (n, reps))
print("%-24s %22s %22s" % ("", "create+join", "create detached"))
for name, v in rows:
    j, d = (float(x) for x in v.split())
    print("%-24s %14.0f (%4.2fx) %14.0f (%4.2fx)" % (name, j, j / b[0], d, d / b[1]))
PY
