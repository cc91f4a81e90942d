#!/bin/sh
# Overhead budget of production mode: real allocation-heavy workloads (sqlite3 inserting
# and indexing rows, python3 dict/list/str churn with PYTHONMALLOC=malloc, xz -T2
# compressing with two threads, and a single-threaded malloc/free loop: sm_scale on its
# main thread, 4096 blocks allocated then freed, past glibc's per-thread cache) uninstrumented, under memsight full mode, sample=4096, sample=524288,
# heaptrack, valgrind massif and LeakSanitizer (liblsan preloaded, checked to report a
# leak first), and the floor of any preloaded
# interposer (bench/floor-preload.c: malloc/free that only jump to the C library's);
# prints best-of-N wall time, CPU time (to the microsecond: bench/cputime.c) and peak
# RSS, and their ratios to the uninstrumented run, with the spread of the CPU times over
# the N runs; a tool whose run did not do its work (its output differs from the
# uninstrumented run's, or it wrote no snapshot or profile) gets no ratio. Then the agent's
# 2-thread vs 1-thread malloc/free throughput and its memory per tracked block.
# Asserts nothing (the machine is noisy): it prints which of the sampled modes' targets in
# docs/production.md the run meets, beside the floor's ratio on the same workload.
# usage: bench/bench-overhead.sh [BUILD_DIR] [REPEATS]
#   env: SKIP="massif lsan ..." (tools left out), WORKLOADS="sqlite python xz loop"
#        (and "true": /bin/true, the fixed cost of a run: read its cpu_s),
#        PARTS="budget scale memory pairs" (the parts run; pairs: not by default),
#        OLD_AGENT=libmemsight.so of another build for the pairs part
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
REPS=${2:-3}
SKIP=${SKIP:-}
WORKLOADS=${WORKLOADS:-sqlite python xz loop}
PARTS=${PARTS:-budget scale memory}
AGENT=$BUILD/lib/libmemsight.so
MEMSIGHT=$BUILD/bin/memsight
SCALE=$BUILD/tests/programs/sm_scale
MIX=$BUILD/tests/programs/sm_mix
PY=/usr/bin/python3
LSAN=$(ls /usr/lib/x86_64-linux-gnu/liblsan.so.0 2>/dev/null || true)
for f in "$AGENT" "$MEMSIGHT" "$SCALE"; do
    [ -e "$f" ] || { echo "build first: $f is missing" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM

# --- workloads (bench/workloads.sh: the same inputs as the other benchmarks) ---------
. "$SRC/bench/workloads.sh"
ms_bench_sqlite_sql "$WORK/sqlite.sql"
ms_bench_xz_input "$WORK/xz.in"
# the timer, the floor interposer and the pairs loop, built here
cc -O2 -o "$WORK/cputime" "$SRC/bench/cputime.c"
cc -O2 -o "$WORK/pairs" "$SRC/bench/bench-pairs.c" -ldl
cc -O2 -shared -fPIC -o "$WORK/floor.so" "$SRC/bench/floor-preload.c" -ldl
# LeakSanitizer alone: liblsan itself preloaded, first, so that its malloc is the one the
# program calls (a helper linked with liblsan and preloaded alone puts liblsan after
# libc: it intercepts nothing), then a helper whose constructor initialises LSan before
# any program code calls an intercepted function (without it sqlite3 crashes at
# start-up). Checked on a program that drops a 99-byte block: LSan must report it, or
# its row would measure nothing.
if [ -n "$LSAN" ]; then
    printf 'void __lsan_init(void);\n__attribute__((constructor)) static void i(void) { __lsan_init(); }\n' > "$WORK/lsaninit.c"
    cc -shared -fPIC -o "$WORK/lsaninit.so" "$WORK/lsaninit.c" "$LSAN" 2>/dev/null || LSAN=""
fi
LSAN_PRELOAD="$LSAN $WORK/lsaninit.so"
if [ -n "$LSAN" ]; then
    printf '#include <stdio.h>\n#include <stdlib.h>\nint main(void) { char *p = malloc(99); p[0] = 1; p = 0; puts("done"); return 0; }\n' > "$WORK/leak99.c"
    cc -O0 -o "$WORK/leak99" "$WORK/leak99.c"
    if ! env LD_PRELOAD="$LSAN_PRELOAD" LSAN_OPTIONS=exitcode=0 "$WORK/leak99" 2>&1 |
        grep -q 'Direct leak of 99 byte'; then
        echo "lsan: $LSAN preloaded did not report a 99-byte leak: its row is left out" >&2
        LSAN=""
    fi
fi

# run_one TOOL WORKLOAD: one run under bench/cputime.c; leaves "wall user sys maxrss_kib" in
# $WORK/t.txt (the RSS is the largest of the run's processes, as wait4 reports it).
run_one() {
    tool=$1; wl=$2
    in=/dev/null
    case $wl in
    sqlite) rm -f "$WORK/db"; in=$WORK/sqlite.sql; set -- sqlite3 "$WORK/db" ;;
    python) set -- $PY "$SRC/bench/churn.py" 8 ;;
    xz) set -- xz -T2 -3 --block-size=1MiB -c "$WORK/xz.in" ;;
    loop) set -- "$SCALE" 0 20000000 4096 ;; # 20 M pairs in batches of 4096, no thread
    true) set -- /bin/true ;; # no work: what each tool costs a run once (start, exit)
    esac
    case $tool in
    base) ;;
    floor) set -- env LD_PRELOAD="$WORK/floor.so" "$@" ;;
    full) set -- "$MEMSIGHT" run -q -o "$WORK/snaps" -- "$@" ;;
    s4096) set -- "$MEMSIGHT" run -q -o "$WORK/snaps" --sample 4096 -- "$@" ;;
    s512k) set -- "$MEMSIGHT" run -q -o "$WORK/snaps" --sample 524288 -- "$@" ;;
    # the agent preloaded as the floor is, without memsight run (its start and its
    # reading of the snapshots after the exit)
    s512kp) set -- env LD_PRELOAD="$AGENT" MEMSIGHT_OPTIONS="out=$WORK/snaps,sample=524288" "$@" ;;
    # the same with the control thread running from the first allocation (an interval
    # that never comes): what a second thread costs a single-threaded program
    s512kt) set -- "$MEMSIGHT" run -q -o "$WORK/snaps" --sample 524288 --interval 3600000 -- "$@" ;;
    heaptrack) set -- heaptrack -o "$WORK/ht/ht" "$@" ;;
    massif) set -- valgrind -q --tool=massif --massif-out-file="$WORK/massif.out" "$@" ;;
    lsan) set -- env LD_PRELOAD="$LSAN_PRELOAD" LSAN_OPTIONS=exitcode=0 "$@" ;;
    esac
    rm -rf "$WORK/snaps" "$WORK/ht" "$WORK/massif.out"; mkdir -p "$WORK/snaps" "$WORK/ht"
    PYTHONMALLOC=malloc "$WORK/cputime" "$WORK/t.txt" "$@" < "$in" \
        > "$WORK/out.txt" 2> "$WORK/err.txt" || echo "  ($tool $wl: exit status $?)" >&2
    check_peer "$tool" "$wl"
}

# check_peer TOOL WORKLOAD: the run did its work (its output is the uninstrumented run's,
# timings aside) and the tool produced what it exists for (a snapshot, a heaptrack or
# massif file); else BAD_TOOL_WORKLOAD holds why, and no ratio is printed for it.
check_peer() {
    sum=$(sed 's/seconds [0-9.]*//' "$WORK/out.txt" | cksum)
    if [ "$1" = base ]; then
        eval "OUT_$2=\$sum"
        return 0
    fi
    eval "want=\${OUT_$2:-}"
    why=""
    [ "$sum" = "$want" ] || why="its output differs from the uninstrumented run's"
    case $1 in
    full | s4096 | s512k | s512kp | s512kt)
        ls "$WORK/snaps"/*.msnap > /dev/null 2>&1 || why="${why:+$why; }no snapshot written" ;;
    heaptrack) ls "$WORK/ht"/ht* > /dev/null 2>&1 || why="${why:+$why; }no heaptrack file" ;;
    massif) [ -s "$WORK/massif.out" ] || why="${why:+$why; }no massif file" ;;
    esac
    [ -n "$why" ] && eval "BAD_$1_$2=\$why"
    return 0
}

# measure TOOL WORKLOAD: one more run, keeping per tool the best wall and CPU time, the
# worst CPU time and the largest peak RSS (in variables W_tool, C_tool, X_tool, R_tool). The benchmark interleaves the
# tools (base, full, s4096, ... then again) so that load changes on a shared machine
# hit every tool alike instead of one tool's repeats.
measure() {
    run_one "$1" "$2"
    set -- "$1" "$2" $(tail -n 1 "$WORK/t.txt")
    c=$(echo "$4 + $5" | bc -l)
    eval "ow=\${W_$1:-}; oc=\${C_$1:-}; ox=\${X_$1:-}; orss=\${R_$1:-0}"
    if [ -z "$ow" ] || [ "$(echo "$3 < $ow" | bc -l)" = 1 ]; then eval "W_$1=$3"; fi
    if [ -z "$oc" ] || [ "$(echo "$c < $oc" | bc -l)" = 1 ]; then eval "C_$1=$c"; fi
    if [ -z "$ox" ] || [ "$(echo "$c > $ox" | bc -l)" = 1 ]; then eval "X_$1=$c"; fi
    [ "$6" -gt "$orss" ] && eval "R_$1=$6"
    return 0
}

skip() { case " $SKIP " in *" $1 "*) return 0 ;; esac; return 1; }
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
ratio() { echo "scale=3; $1 / $2" | bc -l | sed 's/^\./0./'; }

TOOLS="floor full s4096 s512k s512kp s512kt heaptrack massif lsan"
GOALS=""
command -v heaptrack > /dev/null 2>&1 || SKIP="$SKIP heaptrack"
command -v valgrind > /dev/null 2>&1 || SKIP="$SKIP massif"
[ -n "$LSAN" ] || SKIP="$SKIP lsan"

if part budget; then
echo "wall time, CPU time (user+sys) and peak RSS against the uninstrumented run"
echo "(best of $REPS interleaved runs, massif once; on a loaded machine trust cpu_x more;"
echo " cpu_spread: (worst - best) / best CPU time of the runs)"
echo "tools: floor = a preloaded malloc/free/calloc/realloc that only jump to libc's,"
echo "       full = memsight full mode, s4096 / s512k = sample=4096 / sample=524288,"
echo "       s512kp = sample=524288, the agent preloaded (as floor) instead of memsight run,"
echo "       s512kt = sample=524288 with the control thread (interval=3600000)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %-9s %8s %8s %10s %7s %7s %7s %10s\n' work tool wall_s cpu_s peak_rss_k wall_x cpu_x \
    rss_x cpu_spread
for wl in $WORKLOADS; do
    for tool in base $TOOLS; do unset W_$tool C_$tool X_$tool R_$tool BAD_${tool}_$wl; done
    r=0
    while [ $r -lt "$REPS" ]; do
        for tool in base $TOOLS; do
            skip $tool && continue
            [ $tool = massif ] && [ $r -gt 0 ] && continue # massif once: it is slow
            measure $tool $wl
        done
        r=$((r + 1))
    done
    for tool in base $TOOLS; do
        skip $tool && continue
        eval "w=\$W_$tool; c=\$C_$tool; x=\$X_$tool; m=\$R_$tool; bad=\${BAD_${tool}_$wl:-}"
        if [ -n "$bad" ]; then # a peer that did not do its work measures nothing
            printf '%-7s %-9s no ratio: %s\n' $wl $tool "$bad"
            continue
        fi
        printf '%-7s %-9s %8.3f %8.3f %10d %7s %7s %7s %9s%%\n' $wl $tool "$w" "$c" "$m" \
            "$(ratio "$w" "$W_base")" "$(ratio "$c" "$C_base")" "$(ratio "$m" "$R_base")" \
            "$(echo "scale=1; 100 * ($x - $c) / $c" | bc -l | sed 's/^\./0./')"
    done
    # the sampled modes' targets (docs/production.md), on CPU time, beside the floor
    [ "$wl" = true ] && continue # a fixed cost, not a ratio to meet
    fl=""
    skip floor || fl=", floor $(echo "scale=3; $C_floor / $C_base" | bc -l | sed 's/^\./0./')x"
    for t in "s512k 1.03" "s512kp 1.03" "s4096 1.10"; do
        set -- $t
        skip $1 && continue
        eval "bad=\${BAD_$1_$wl:-}"
        [ -n "$bad" ] && continue
        eval "c=\$C_$1"
        r=$(echo "scale=3; $c / $C_base" | bc -l | sed 's/^\./0./')
        met="not met"
        [ "$(echo "$c / $C_base <= $2" | bc -l)" = 1 ] && met=met
        GOALS="$GOALS$wl $1 cpu ${r}x (target <= ${2}x$fl): $met
"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$GOALS"
fi

# --- nanoseconds per malloc/free pair, the fastest of many rounds inside one process ----
# (bench/bench-pairs.c), interleaved REPEATS times; the agent preloaded as the floor is.
# What the interposer costs per call, without the run's fixed costs and far less moved by
# the machine's load than the budget's CPU times.
if part pairs; then
echo
echo "malloc/free pairs (loop workload), fastest of 200 rounds of 262144 pairs, best of $REPS"
echo "(s512kt: with the control thread; got512k: started by memsight_start, GOT hooks)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
PT="base floor s512k s512kt got512k s4096"
# OLD_AGENT=path/libmemsight.so: another build (e.g. before a change) side by side
[ -n "${OLD_AGENT:-}" ] && PT="$PT old512k old4096"
for t in $PT; do unset P_$t; done
mkdir -p "$WORK/snaps"
r=0
while [ $r -lt "$REPS" ]; do
    for t in $PT; do
        a=$AGENT
        case $t in old*) a=$OLD_AGENT ;; esac
        case $t in
        base) v=$("$WORK/pairs" 200) ;;
        floor) v=$(env LD_PRELOAD="$WORK/floor.so" "$WORK/pairs" 200) ;;
        # GOT hooks: the agent dlopen'ed and started by the program (memsight_start)
        got512k) v=$("$WORK/pairs" 200 "$a" "out=$WORK/snaps,sample=524288") ;;
        *512k) v=$(env LD_PRELOAD="$a" MEMSIGHT_OPTIONS="out=$WORK/snaps,sample=524288" "$WORK/pairs" 200) ;;
        # the control thread running, as s512kt above
        s512kt) v=$(env LD_PRELOAD="$a" MEMSIGHT_OPTIONS="out=$WORK/snaps,sample=524288,interval=3600000" "$WORK/pairs" 200) ;;
        *4096) v=$(env LD_PRELOAD="$a" MEMSIGHT_OPTIONS="out=$WORK/snaps,sample=4096" "$WORK/pairs" 200) ;;
        esac
        eval "o=\${P_$t:-}"
        if [ -z "$o" ] || [ "$(echo "$v < $o" | bc -l)" = 1 ]; then eval "P_$t=$v"; fi
    done
    r=$((r + 1))
done
printf '%-7s %10s %8s %14s\n' tool ns/pair ratio over_floor_ns
for t in $PT; do
    eval "v=\$P_$t"
    printf '%-7s %10.3f %8s %14.3f\n' $t "$v" "$(ratio "$v" "$P_base")" "$(echo "$v - $P_floor" | bc -l)"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi

# --- scalability: 2 threads vs 1 thread of malloc/free pairs under the agent ---------
# Wall-clock speedup needs two idle cores; on a shared machine the CPU time per pair
# tells the same story without them: if two threads need no more CPU per pair than one
# (no contention, no spinning), two free cores give 2x. Both are printed.
if part scale; then
echo
echo "malloc/free throughput, 2 threads vs 1 (target under the agent: >= 1.6x)"
printf '%-7s %10s %10s %8s %12s %12s %10s\n' mode 1thr_Mops 2thr_Mops speedup 1thr_ns/pair 2thr_ns/pair cpu_speedup
PAIRS=4000000
scale_run() { # mode threads -> "$sec $cpu" in $WORK/s.txt
    case $1 in
    base) set -- "$2" ;;
    full) set -- "$2" "out=$WORK/snaps,exit_snapshot=0" ;;
    s4096) set -- "$2" "out=$WORK/snaps,exit_snapshot=0,sample=4096" ;;
    esac
    if [ $# = 1 ]; then
        /usr/bin/time -f "%U %S" -o "$WORK/t.txt" "$SCALE" "$1" $PAIRS > "$WORK/s.txt"
    else
        /usr/bin/time -f "%U %S" -o "$WORK/t.txt" env LD_PRELOAD="$AGENT" MEMSIGHT_OPTIONS="$2" \
            "$SCALE" "$1" $PAIRS > "$WORK/s.txt"
    fi
    echo "$(awk '{print $6}' "$WORK/s.txt") $(tail -n 1 "$WORK/t.txt" | awk '{print $1 + $2}')"
}
for mode in base full s4096; do
    for n in 1 2; do
        bw=""; bc=""; r=0
        while [ $r -lt "$REPS" ]; do
            set -- $(scale_run $mode $n)
            if [ -z "$bw" ] || [ "$(echo "$1 < $bw" | bc -l)" = 1 ]; then bw=$1; fi
            if [ -z "$bc" ] || [ "$(echo "$2 < $bc" | bc -l)" = 1 ]; then bc=$2; fi
            r=$((r + 1))
        done
        eval "w$n=$bw; c$n=$bc"
    done
    m1=$(echo "$PAIRS / $w1 / 1000000" | bc -l)
    m2=$(echo "2 * $PAIRS / $w2 / 1000000" | bc -l)
    n1=$(echo "$c1 * 1000000000 / $PAIRS" | bc -l)
    n2=$(echo "$c2 * 1000000000 / (2 * $PAIRS)" | bc -l)
    printf '%-7s %10.2f %10.2f %8.2f %12.1f %12.1f %10.2f\n' $mode "$m1" "$m2" \
        "$(echo "$m2 / $m1" | bc -l)" "$n1" "$n2" "$(echo "2 * $n1 / $n2" | bc -l)"
    if [ $mode = s4096 ]; then
        met="not met"
        [ "$(echo "$m2 / $m1 >= 1.6" | bc -l)" = 1 ] && met=met
        echo "s4096 2-thread speedup $(echo "scale=3; $m2 / $m1" | bc -l)x (target >= 1.6x, wall clock: needs two idle cores): $met"
    fi
done
fi

# --- agent memory per tracked live block (full mode, sm_mix: ~310k live blocks) -------
# Two views: the live table's own bytes per block (from the snapshot's health counters,
# plus the 16-byte header each block carries), and the whole growth of the peak RSS
# over the uninstrumented run divided by the live blocks (everything the agent costs:
# tables, headers, unwinder caches, the stack table of sm_mix's few stacks).
if part memory && [ -x "$MIX" ]; then
    echo
    /usr/bin/time -f "%M" -o "$WORK/t.txt" "$MIX" > /dev/null
    base_rss=$(tail -n 1 "$WORK/t.txt")
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    /usr/bin/time -f "%M" -o "$WORK/t.txt" env LD_PRELOAD="$AGENT" MEMSIGHT_OPTIONS="out=$WORK/snaps" "$MIX" > /dev/null
    agent_rss=$(tail -n 1 "$WORK/t.txt")
    $PY - "$WORK/snaps" "$SRC/tests/integration" "$base_rss" "$agent_rss" <<'PYEOF'
import glob, os, sys
sys.path.insert(0, sys.argv[2])
import sampling_snapfile as sf
s = sf.read(glob.glob(os.path.join(sys.argv[1], '*-exit.msnap'))[0])
h = s['health']
blocks, tbytes = h.get('live_table_blocks', 0), h.get('live_table_bytes', 0)
base, agent = int(sys.argv[3]) * 1024, int(sys.argv[4]) * 1024
print('agent memory (target <= 64 bytes per tracked live block plus the stack table):')
print('  live table %d bytes for %d live blocks = %.1f B/block, + 16 B header = %.1f B/block'
      % (tbytes, blocks, tbytes / max(blocks, 1), tbytes / max(blocks, 1) + 16))
print('  peak RSS %d -> %d KiB: +%.1f B per live block, all agent costs included (%d stacks)'
      % (base // 1024, agent // 1024, (agent - base) / max(blocks, 1),
         h.get('stack_table_used', 0)))
PYEOF
fi
