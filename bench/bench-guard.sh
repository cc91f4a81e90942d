#!/bin/sh
# Cost of guard pages (guard=RATE) on top of sampled mode, sampled mode alone and with
# guard pages side by side in each part:
#  1. sqlite3 and python3 workloads (bench/workloads.sh) uninstrumented, under memsight
#     with sample=BYTES alone, with sample=BYTES plus guard=RATE (5000 unless
#     GUARD_RATE says otherwise: GWP-ASan's default) under the default cost budget
#     (guarded: guard_budget=1), and the same with guard_budget=0 (exact: the rate never
#     stretched). Runs are interleaved (base, sampled, guarded, exact, then again, each
#     round starting one tool later, so that no tool always runs right after the same
#     other one) so load changes hit all four alike; guarded and exact give the blocks guarded, the
#     turns that found the pool full, the budget's stretches and the rate at the end. Per tool: the
#     best wall and CPU time (user+sys) of the runs and the medians of CPU, user and
#     system time and of minor page faults, the ratios of best and median CPU time to the
#     uninstrumented run's, and the spread of its CPU times ((worst - best) / best). Then
#     guarded / sampled: best against best, median against median, user and system time
#     apart, and the medians over the rounds of guarded minus sampled (run back to back),
#     beside sampled mode's own spread: an extra within that spread is no difference this
#     machine can measure in time. And the rounds' ratios guarded / sampled (CPU time,
#     back to back): their median with a distribution-free 95% confidence interval (order
#     statistics of the binomial, no assumption about the noise), and what it says of
#     the 1.02x goal: met when the interval's top is at most 1.02, missed when its bottom
#     is above, else not decided by this run (more rounds narrow it). The system time is where the guard's two mprotect
#     calls per block (and the TLB flush at free) show.
#  pte: bench/bench-pte.c: what one guarded block's page-table changes cost on this
#     machine, call by call (the mprotect that opens a reused slot, the one that closes it
#     at free with its TLB flush, a fresh slot's first page fault), beside a system call
#     that changes nothing; with part 1, those costs times the blocks guarded, as a share
#     of sampled mode's median CPU time.
#  counted: the same workloads, smaller (ROWS INSERTs, ROUNDS rounds), under cachegrind:
#     instructions of sampled mode alone and with guard=RATE (a system call counts one),
#     and their ratio; then the same runs under strace -f -c: the system calls the guard
#     adds (mprotect, madvise, mmap, munmap) per guarded block. Needs valgrind, strace.
#  2. What one guarded block costs: the same workloads, and the malloc/free loop of
#     sm_scale (batches of 4096 blocks, 16-64 bytes) on 1 thread and on 2 (where the
#     mprotect at free must flush the page from the other CPU's TLB), with sampled mode
#     alone and with guard=BLOCK_RATE (250: twenty times the blocks, whose cost then
#     stands out of the noise) and guard_pool=BLOCK_POOL (1024: python keeps many of its
#     guarded blocks, which fill a pool of 64 and leave later turns unguarded): the CPU
#     time the guard adds (the median over the rounds of guarded minus sampled, run
#     back to back) divided by the blocks it guarded (an upper bound: the turns
#     that found the pool full and the first use of each slot are counted in). With it,
#     part 1's blocks times this cost: the share of sampled mode's CPU time the guard is
#     expected to add at guard=RATE.
#  3. What a thread costs more: bench-threads.c with "alloc" (THREADS threads, each
#     allocates one block, created and joined one after the other, then as many
#     detached), sampled mode alone and with guard=RATE: the guard gives each thread an
#     alternate signal stack at its first allocation (mmap, sigaltstack) and takes it
#     back at its exit (sigaltstack, munmap). Wall time per thread, best of the runs.
# Asserts nothing (the machine may be noisy).
# usage: bench/bench-guard.sh [BUILD_DIR] [REPEATS]
#   env: SAMPLE=524288 GUARD_RATE=5000 BLOCK_RATE=250 BLOCK_POOL=1024 LOOP_PAIRS=20000000
#        THREADS=2000 ROWS=40000 ROUNDS=2 PARTS="workloads pte counted block threads"
#        WORKLOADS="sqlite python" (part 1) GUARD_BUDGET= (part 1's guarded row: the
#        agent's default budget unless set) PIN= (a CPU number: every run of parts 1
#        and 2 on that CPU alone, with taskset; on a virtual machine an unpinned run
#        that moves between CPUs now and then takes half as long again, which makes
#        spreads of 60-90% between identical runs; pinned, about 8%)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
REPS=${2:-5}
SAMPLE=${SAMPLE:-524288}
GUARD_RATE=${GUARD_RATE:-5000}
BLOCK_RATE=${BLOCK_RATE:-250}
BLOCK_POOL=${BLOCK_POOL:-1024}
LOOP_PAIRS=${LOOP_PAIRS:-20000000}
THREADS=${THREADS:-2000}
ROWS=${ROWS:-40000}
ROUNDS=${ROUNDS:-2}
PARTS=${PARTS:-workloads pte counted block threads}
WORKLOADS=${WORKLOADS:-sqlite python}
GUARD_BUDGET=${GUARD_BUDGET:-}
PIN=${PIN:-}
MEMSIGHT=$BUILD/bin/memsight
SCALE=$BUILD/tests/programs/sm_scale
PY=/usr/bin/python3
for f in "$MEMSIGHT" "$SCALE"; do
    [ -x "$f" ] || { echo "build first: $f is missing" >&2; exit 1; }
done
command -v sqlite3 > /dev/null || { echo "sqlite3 is needed (Debian package sqlite3)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

. "$SRC/bench/workloads.sh"
ms_bench_sqlite_sql "$WORK/sqlite.sql"
# CPU time to the microsecond (time(1) prints hundredths)
cc -O2 -o "$WORK/cputime" "$SRC/bench/cputime.c"
cc -O2 -pthread -o "$WORK/threads" "$SRC/bench/bench-threads.c"
cc -O2 -o "$WORK/pte" "$SRC/bench/bench-pte.c"

# guarded_blocks: the blocks the pool held in the last run, the turns that found it
# full, the cost budget's stretches and the rate at the end (HLTH guard_allocs,
# guard_pool_full, guard_budget_stretches, guard_rate_now of its exit snapshot), in
# $WORK/g.txt
guarded_blocks() {
    f=$(ls "$WORK"/snaps/memsight-*-exit.msnap 2>/dev/null | head -n 1)
    echo "? ? ? ?" > "$WORK/g.txt"
    [ -n "$f" ] && "$MEMSIGHT" report --format json "$f" | $PY -c \
        'import json,sys; h=json.load(sys.stdin)["health"]; print(h.get("guard_allocs", 0), h.get("guard_pool_full", 0), h.get("guard_budget_stretches", "-"), h.get("guard_rate_now", "-"))' \
        > "$WORK/g.txt"
    return 0
}

# run_one TOOL WORKLOAD: leaves "wall cpu user sys minflt" in $WORK/r.txt (bench/cputime.c). WORKLOAD sqlite, python, or
# loop1 / loop2 (sm_scale on 1 or 2 threads); TOOL base, sampled, guarded, exact
# (guarded with guard_budget=0)
run_one() {
    tool=$1; wl=$2
    rate=$GUARD_RATE pool=64
    budget=""
    [ -n "$GUARD_BUDGET" ] && budget="-O guard_budget=$GUARD_BUDGET"
    # part 2 measures one block's cost: at the exact rate (the budget would stretch it)
    [ -n "${RATE_NOW:-}" ] && rate=$RATE_NOW pool=$BLOCK_POOL budget="-O guard_budget=0"
    TIMED="$WORK/cputime $WORK/c.txt"
    [ -n "$PIN" ] && TIMED="taskset -c $PIN $TIMED"
    case $tool in
    base) set -- $TIMED ;;
    sampled) set -- $TIMED "$MEMSIGHT" run -q -o "$WORK/snaps" --sample "$SAMPLE" -- ;;
    guarded) set -- $TIMED "$MEMSIGHT" run -q -o "$WORK/snaps" --sample "$SAMPLE" \
                 -O guard="$rate" -O guard_pool="$pool" $budget -- ;;
    exact) set -- $TIMED "$MEMSIGHT" run -q -o "$WORK/snaps" --sample "$SAMPLE" \
                 -O guard="$rate" -O guard_pool="$pool" -O guard_budget=0 -- ;;
    esac
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    case $wl in
    loop1) "$@" "$SCALE" 0 "$LOOP_PAIRS" 4096 > /dev/null ;;
    loop2) "$@" "$SCALE" 2 $((LOOP_PAIRS / 2)) 4096 > /dev/null ;;
    *) ms_bench_time "$WORK" "$wl" "$@" ;;
    esac
    awk '{ printf "%s %.6f %s %s %s\n", $1, $2 + $3, $2, $3, $5 }' "$WORK/c.txt" > "$WORK/r.txt"
    if [ "$tool" = guarded ] || [ "$tool" = exact ]; then
        guarded_blocks; cp "$WORK/g.txt" "$WORK/g.$wl.$rate.$tool"
        if [ "$tool" = guarded ]; then cp "$WORK/g.txt" "$WORK/g.$wl.$rate"; fi
    fi
    return 0
}

# keep TOOL: keeps the smallest wall (W_tool), smallest CPU (C_tool) and largest CPU
# (X_tool) of the runs so far, and the run in $WORK/runs.TOOL
keep() {
    cat "$WORK/r.txt" >> "$WORK/runs.$1"
    set -- "$1" $(cat "$WORK/r.txt")
    eval "ow=\${W_$1:-}; oc=\${C_$1:-}; ox=\${X_$1:-}"
    if [ -z "$ow" ] || is "$2 < $ow"; then eval "W_$1=$2"; fi
    if [ -z "$oc" ] || is "$3 < $oc"; then eval "C_$1=$3"; fi
    if [ -z "$ox" ] || is "$3 > $ox"; then eval "X_$1=$3"; fi
    return 0
}
# measure WORKLOAD TOOLS...: REPS interleaved rounds of the tools; PAIRED: the median
# over the rounds of guarded minus sampled CPU time (the two run back to back, so a
# load change between rounds hits both)
measure() {
    wl=$1; shift
    for tool in "$@"; do unset W_$tool C_$tool X_$tool; : > "$WORK/runs.$tool"; done
    r=0
    : > "$WORK/diffs"
    : > "$WORK/ratios"
    while [ $r -lt "$REPS" ]; do
        # this round's order: the tools rotated by the round's number
        order=""
        k=0
        for tool in "$@"; do
            [ $k -ge $((r % $#)) ] && order="$order $tool"
            k=$((k + 1))
        done
        k=0
        for tool in "$@"; do
            [ $k -lt $((r % $#)) ] && order="$order $tool"
            k=$((k + 1))
        done
        for tool in $order; do
            run_one $tool $wl
            keep $tool
            eval "L_$tool=\$(cut -d' ' -f2-4 \"\$WORK/r.txt\")"
        done
        echo "$L_guarded $L_sampled" | awk '{ printf "%.6f %.6f %.6f\n", $1 - $4, $2 - $5, $3 - $6 }' \
            >> "$WORK/diffs"
        echo "$L_guarded $L_sampled" | awk '$4 > 0 { printf "%.6f\n", $1 / $4 }' >> "$WORK/ratios"
        r=$((r + 1))
    done
    PAIRED=$(median "$WORK/diffs" 1)
    PAIRED_U=$(median "$WORK/diffs" 2)
    PAIRED_S=$(median "$WORK/diffs" 3)
}
# median FILE COLUMN: the median of a column of numbers
median() {
    cut -d' ' -f"$2" "$1" | sort -g | awk '{ v[NR] = $1 } END { printf "%.6f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# median_ci FILE: "median low high": the median of the numbers in FILE and a
# distribution-free confidence interval of at least 95% for it, between the k-th smallest
# and the k-th largest, k the largest with P(Binomial(n, 1/2) < k) <= 0.025 (with fewer
# than 6 numbers there is none: low and high are the extremes)
median_ci() {
    sort -g "$1" | awk '{ v[NR] = $1 } END {
        n = NR; if (!n) { print "0 0 0"; exit }
        med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        p = 0.5 ^ n; cum = 0; k = 1
        for (i = 0; i < n; i++) { cum += p; if (cum > 0.025) break; k = i + 2; p = p * (n - i) / (i + 1) }
        printf "%.4f %.4f %.4f\n", med, v[k], v[n + 1 - k] }'
}
calc() { awk "BEGIN { printf \"%.${2:-3}f\", $1 }"; }
is() { awk "BEGIN { exit !($1) }"; }
pct() { calc "100 * ($1)" 1; }
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

echo "guard pages on top of sampled mode: sample=$SAMPLE"
echo "(best of $REPS interleaved runs; on a loaded machine trust cpu_x more than wall_x;"
echo " spread, cpu_spread: (worst - best) / best CPU time of a tool's runs)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$PIN" ] && echo "every run on CPU $PIN (taskset)"
SUMMARY=""
if part workloads; then
    echo
    echo "1. workloads, guard=$GUARD_RATE"
    echo "(best: of the runs; med: their median; minflt: minor page faults, median)"
    echo "(guarded: guard_budget at its default; exact: guard_budget=0; stretch, rate_now: the"
    echo " budget's stretches and the rate at the end, of the last run)"
    printf '%-7s %-8s %7s %7s %7s %7s %7s %7s %6s %6s %7s %8s %9s %7s %8s\n' work tool wall_s cpu_s \
        cpu_med user_med sys_med minflt cpu_x med_x spread guarded pool_full stretch rate_now
    for wl in $WORKLOADS; do
        measure $wl base sampled guarded exact
        for tool in base sampled guarded exact; do
            eval "w=\$W_$tool; c=\$C_$tool; x=\$X_$tool"
            eval "M_$tool=\$(median \"\$WORK/runs.$tool\" 2); U_$tool=\$(median \"\$WORK/runs.$tool\" 3)"
            eval "Y_$tool=\$(median \"\$WORK/runs.$tool\" 4); F_$tool=\$(median \"\$WORK/runs.$tool\" 5)"
            eval "m=\$M_$tool; u=\$U_$tool; y=\$Y_$tool; f=\$F_$tool"
            g="- - - -"
            [ -f "$WORK/g.$wl.$GUARD_RATE.$tool" ] && g=$(cat "$WORK/g.$wl.$GUARD_RATE.$tool")
            printf '%-7s %-8s %7.3f %7.3f %7.3f %7.3f %7.3f %7.0f %6s %6s %6s%% %8s %9s %7s %8s\n' $wl $tool \
                "$w" "$c" "$m" "$u" "$y" "$f" "$(calc "$c / $C_base")" "$(calc "$m / $M_base")" \
                "$(pct "($x - $c) / $c")" $g
        done
        eval "B_$wl=\$(cut -d' ' -f1 \"\$WORK/g.$wl.$GUARD_RATE\"); S_$wl=\$C_sampled; M_sampled_$wl=\$M_sampled"
        set -- $(median_ci "$WORK/ratios")
        verdict="not decided by this run"
        is "$3 <= 1.02" && verdict="met"
        is "$2 > 1.02" && verdict="missed"
        within="beyond it"
        is "$C_guarded - $C_sampled <= $X_sampled - $C_sampled" && within="within it"
        SUMMARY="$SUMMARY$wl: guarded / sampled: CPU best $(calc "$C_guarded / $C_sampled" 4)x, median $(calc "$M_guarded / $M_sampled" 4)x; user median $(calc "$U_guarded / $U_sampled" 4)x, sys median $(calc "$Y_guarded / $Y_sampled" 4)x
  per round, guarded minus sampled (median): CPU $(calc "1000 * $PAIRED" 1) ms ($(pct "$PAIRED / $M_sampled")%), user $(calc "1000 * $PAIRED_U" 1) ms, sys $(calc "1000 * $PAIRED_S" 1) ms; minor faults $(calc "$F_guarded - $F_sampled" 0); sampled mode's own CPU spread $(pct "($X_sampled - $C_sampled) / $C_sampled")%: best against best $within
  per round, guarded / sampled CPU ($REPS rounds): median $1x, 95% interval $2x-$3x: goal <= 1.02x $verdict
  exact (guard_budget=0) / sampled: CPU best $(calc "$C_exact / $C_sampled" 4)x, median $(calc "$M_exact / $M_sampled" 4)x; sys median $(calc "$Y_exact / $Y_sampled" 4)x
"
    done
    echo
    printf '%s' "$SUMMARY"
fi

if part pte; then
    echo
    echo "pte: one guarded block's page-table changes, microseconds per call (bench/bench-pte.c,"
    echo "mean of 4000 rounds; fresh: the first use of 64 slots)"
    "$WORK/pte" 4000 > "$WORK/pte.txt"
    awk '{ printf "  %-12s %8s\n", $1, $2 }' "$WORK/pte.txt"
    per=$(awk '$1 == "open_reused" || $1 == "close" { t += $2 } END { printf "%.2f", t }' "$WORK/pte.txt")
    echo "a reused slot's allocation and free: $per us"
    if part workloads; then
        for wl in sqlite python; do
            eval "b=\$B_$wl; m=\$M_sampled_$wl"
            case $b in ''|*[!0-9]*) continue ;; esac
            echo "$wl: $b blocks x $per us = $(calc "$b * $per / 1000" 1) ms, $(pct "$b * $per / 1000000 / $m")% of sampled mode's median CPU time"
        done
    fi
fi

if part counted; then
    echo
    echo "counted: sqlite3 $ROWS INSERTs, python3 churn $ROUNDS rounds, guard=$GUARD_RATE"
    if command -v valgrind > /dev/null; then
        ms_bench_sqlite_sql "$WORK/small.sql" "" "" "$ROWS"
        NORAND=""; setarch "$(uname -m)" -R true 2>/dev/null && NORAND="setarch $(uname -m) -R"
        printf '%-7s %16s %16s %9s\n' work Ir_sampled Ir_guarded guarded_x
        for wl in sqlite python; do
            for tool in sampled guarded; do
                opts="out=$WORK/snaps,follow_exec=1,seed=1,sample=$SAMPLE"
                [ $tool = guarded ] && opts="$opts,guard=$GUARD_RATE"
                rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"; rm -f "$WORK/db"
                in=/dev/null
                case $wl in
                sqlite) in=$WORK/small.sql; set -- sqlite3 "$WORK/db" ;;
                python) set -- $PY "$SRC/bench/churn.py" "$ROUNDS" ;;
                esac
                env PYTHONMALLOC=malloc PYTHONHASHSEED=0 LD_PRELOAD="$BUILD/lib/libmemsight.so" \
                    MEMSIGHT_OPTIONS="$opts" $NORAND valgrind --tool=cachegrind --cache-sim=no \
                    --cachegrind-out-file="$WORK/cg.out" "$@" < "$in" > /dev/null 2> "$WORK/vg.err" ||
                    { echo "  ($wl $tool under cachegrind failed: $(tail -n 1 "$WORK/vg.err"))" >&2; }
                eval "I_$tool=\$(sed -n 's/^summary: *//p' \"\$WORK/cg.out\" | cut -d' ' -f1)"
            done
            printf '%-7s %16s %16s %9s\n' $wl "$I_sampled" "$I_guarded" "$(calc "$I_guarded / $I_sampled" 4)"
        done
    else
        echo "  (valgrind is not installed: no counted instructions)"
    fi
    if command -v strace > /dev/null; then
        echo "system calls (strace -f -c, one run each; per block: the guard's extra over sampled mode"
        echo "divided by the blocks it guarded)"
        printf '%-7s %-8s %9s %9s %9s %9s %8s %16s\n' work tool mprotect madvise mmap munmap guarded \
            mprot+madv/block
        for wl in sqlite python; do
            for tool in sampled guarded; do
                set -- --sample "$SAMPLE"
                [ $tool = guarded ] && set -- "$@" -O guard="$GUARD_RATE"
                rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"; rm -f "$WORK/db"
                ms_bench_time "$WORK" "$wl" strace -f -c -o "$WORK/st.txt" \
                    -e trace=mprotect,madvise,mmap,munmap "$MEMSIGHT" run -q -o "$WORK/snaps" "$@" --
                for c in mprotect madvise mmap munmap; do
                    eval "$c=\$(awk -v c=$c '\$NF == c { print \$4 }' \"\$WORK/st.txt\")"
                    eval "[ -n \"\$$c\" ] || $c=0"
                done
                g=-; per=-
                if [ $tool = guarded ]; then
                    guarded_blocks; g=$(cut -d' ' -f1 "$WORK/g.txt")
                    case $g in ''|*[!0-9]*|0) ;; *) per=$(calc "($mprotect + $madvise - $SM - $SA) / $g" 2) ;; esac
                else
                    SM=$mprotect SA=$madvise
                fi
                printf '%-7s %-8s %9s %9s %9s %9s %8s %16s\n' $wl $tool $mprotect $madvise $mmap $munmap "$g" "$per"
            done
        done
    else
        echo "  (strace is not installed: no system call counts)"
    fi
fi

if part block; then
    echo
    echo "2. one guarded block: guard=$BLOCK_RATE, guard_pool=$BLOCK_POOL (loop1, loop2: sm_scale, $LOOP_PAIRS malloc/free pairs"
    echo "   on 1 thread, on 2 threads)"
    RATE_NOW=$BLOCK_RATE
    printf '%-7s %-8s %8s %8s %10s %9s %12s\n' work tool wall_s cpu_s cpu_spread guarded \
        us_per_block
    for wl in sqlite python loop1 loop2; do
        measure $wl sampled guarded
        for tool in sampled guarded; do
            eval "w=\$W_$tool; c=\$C_$tool; x=\$X_$tool"
            g=-; per=-
            if [ $tool = guarded ]; then
                g=$(cut -d' ' -f1 "$WORK/g.$wl.$BLOCK_RATE")
                case $g in ''|*[!0-9]*|0) ;; *) per=$(calc "1000000 * $PAIRED / $g" 2) ;; esac
            fi
            printf '%-7s %-8s %8.3f %8.3f %9s%% %9s %12s\n' $wl $tool "$w" "$c" \
                "$(pct "($x - $c) / $c")" "$g" "$per"
        done
        eval "P_$wl=\$per"
    done
    RATE_NOW=
    if part workloads; then
        echo
        echo "expected at guard=$GUARD_RATE: part 1's blocks x part 2's cost per block (a turn"
        echo "that finds the pool full costs a lock, no system call)"
        for wl in sqlite python; do
            eval "b=\$B_$wl; s=\$S_$wl; per=\$P_$wl"
            case $b$per in *[!0-9.]*|'') continue ;; esac
            echo "$wl: $b blocks x $per us = $(calc "$b * $per / 1000" 1) ms, $(pct "$b * $per / 1000000 / $s")% of sampled mode's CPU time"
        done
    fi
fi
if part threads; then
    echo
    echo "3. threads: $THREADS created and joined, $THREADS detached, each allocating one block"
    printf '%-8s %10s %12s\n' tool join_ns detached_ns
    for tool in sampled guarded; do unset J_$tool D_$tool; done
    r=0
    while [ $r -lt "$REPS" ]; do
        for tool in sampled guarded; do
            set -- --sample "$SAMPLE"
            [ $tool = guarded ] && set -- "$@" -O guard="$GUARD_RATE"
            rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
            "$MEMSIGHT" run -q -o "$WORK/snaps" "$@" -- "$WORK/threads" "$THREADS" alloc \
                | sed 's/[a-z_]*=//g' > "$WORK/thr.txt"
            read -r j d < "$WORK/thr.txt"
            eval "oj=\${J_$tool:-}; od=\${D_$tool:-}"
            if [ -z "$oj" ] || is "$j < $oj"; then eval "J_$tool=$j"; fi
            if [ -z "$od" ] || is "$d < $od"; then eval "D_$tool=$d"; fi
        done
        r=$((r + 1))
    done
    for tool in sampled guarded; do
        eval "printf '%-8s %10s %12s\n' $tool \$J_$tool \$D_$tool"
    done
    echo "the guard's extra per thread: $(calc "$J_guarded - $J_sampled" 0) ns joined, $(calc "$D_guarded - $D_sampled" 0) ns detached"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
