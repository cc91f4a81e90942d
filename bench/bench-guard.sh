#!/bin/sh
# Cost of guard pages (guard=RATE) on top of sampled mode: sqlite3 and python3 workloads
# (bench/workloads.sh) uninstrumented, under memsight with sample=BYTES alone, and with
# sample=BYTES plus guard=RATE (5000 unless GUARD_RATE says otherwise: GWP-ASan's
# default). Runs are interleaved (base, sampled, guarded, then again) so load changes
# hit all three alike; prints the best-of-N CPU time (user+sys) and wall time, their
# ratios to the uninstrumented run, the guarded run's ratio to sampled mode alone, and
# how many blocks were guarded (HLTH guard_allocs of the exit snapshot). Asserts nothing.
# usage: bench/bench-guard.sh [BUILD_DIR] [REPEATS]   (env: SAMPLE=524288 GUARD_RATE=5000)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
REPS=${2:-5}
SAMPLE=${SAMPLE:-524288}
GUARD_RATE=${GUARD_RATE:-5000}
MEMSIGHT=$BUILD/bin/memsight
PY=/usr/bin/python3
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
command -v sqlite3 > /dev/null || { echo "sqlite3 is needed (Debian package sqlite3)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

. "$SRC/bench/workloads.sh"
ms_bench_sqlite_sql "$WORK/sqlite.sql"

# run_one TOOL WORKLOAD: leaves "wall cpu" in $WORK/r.txt
run_one() {
    tool=$1; wl=$2
    case $tool in
    base) set -- ;;
    sampled) set -- "$MEMSIGHT" run -q -o "$WORK/snaps" --sample "$SAMPLE" -- ;;
    guarded) set -- "$MEMSIGHT" run -q -o "$WORK/snaps" --sample "$SAMPLE" \
                 -O guard="$GUARD_RATE" -- ;;
    esac
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    ms_bench_time "$WORK" "$wl" "$@"
    awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$WORK/t.txt" | tail -n 1 > "$WORK/r.txt"
    if [ "$tool" = guarded ]; then # blocks the pool held in this run
        f=$(ls "$WORK"/snaps/memsight-*-exit.msnap 2>/dev/null | head -n 1)
        [ -n "$f" ] && "$MEMSIGHT" report --format json "$f" | $PY -c \
            'import json,sys; h=json.load(sys.stdin)["health"]; print(h.get("guard_allocs", 0), h.get("guard_pool_full", 0))' \
            > "$WORK/g.txt"
    fi
}

# best TOOL: keeps the smallest wall (W_tool) and CPU (C_tool) of the runs so far
best() {
    set -- "$1" $(cat "$WORK/r.txt")
    eval "ow=\${W_$1:-}; oc=\${C_$1:-}"
    if [ -z "$ow" ] || [ "$(echo "$2 < $ow" | bc -l)" = 1 ]; then eval "W_$1=$2"; fi
    if [ -z "$oc" ] || [ "$(echo "$3 < $oc" | bc -l)" = 1 ]; then eval "C_$1=$3"; fi
    return 0
}
ratio() { echo "scale=3; $1 / $2" | bc -l | sed 's/^\./0./'; }

echo "guard pages on top of sampled mode: sample=$SAMPLE, guard=$GUARD_RATE"
echo "(best of $REPS interleaved runs; on a loaded machine trust cpu_x more than wall_x)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %-8s %8s %8s %7s %7s %13s %9s\n' work tool wall_s cpu_s wall_x cpu_x cpu_vs_sampled guarded
for wl in sqlite python; do
    for tool in base sampled guarded; do unset W_$tool C_$tool; done
    r=0
    while [ $r -lt "$REPS" ]; do
        for tool in base sampled guarded; do
            run_one $tool $wl
            best $tool
        done
        r=$((r + 1))
    done
    for tool in base sampled guarded; do
        eval "w=\$W_$tool; c=\$C_$tool"
        vs=-; g=-
        if [ $tool = guarded ]; then
            vs="$(ratio "$c" "$C_sampled")"
            g=$(cut -d' ' -f1 "$WORK/g.txt" 2>/dev/null || echo "?")
        fi
        printf '%-7s %-8s %8.2f %8.2f %7s %7s %13s %9s\n' $wl $tool "$w" "$c" \
            "$(ratio "$w" "$W_base")" "$(ratio "$c" "$C_base")" "$vs" "$g"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
