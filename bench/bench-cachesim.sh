#!/bin/sh
# Where full mode's cost goes on the python3 churn (bench/churn.py, PYTHONMALLOC=malloc),
# counted rather than timed: the run without the agent and under each agent library given
# go through cachegrind (instructions, and misses of a simulated 32 KiB L1 and a 1 MiB
# last level, the size of one core's L2 on the 2-vCPU machines the numbers in docs/ come
# from). The counts do not move with the machine's load, so a change a few percent wide
# shows on a busy machine where CPU time spreads by 20-60% (bench-full.sh). Prints, per
# allocation call (malloc family + free, from the agent's own counters), what each agent
# adds to the uninstrumented run, then the agent functions with the most instructions
# (self, per call). Two reference preloads follow (unless REFS=0): floor-preload.c (an
# interposer that only jumps to the C library) and header-preload.c (every block 16 bytes
# larger, as under full mode, nothing recorded): what the blocks' header costs the
# allocator and the program, apart from the agent's work. Times are not measured:
# memory-level misses cost more than L1 ones and the simulation has no prefetcher.
# The L1 data misses move by about 0.25 per call with the stack's placement alone (the
# environment's size moves it): PADS="0 16 32 48" runs every library once per environment
# padding of that many bytes and prints the means (per-function lines: the first padding).
# BRANCH=1 adds cachegrind's branch predictor (a table of 2-bit counters for conditional
# branches, a last-target buffer for indirect ones; simpler than a real core's, so its
# counts bound rather than measure): mispredictions per call, conditional and indirect,
# columns of their own and per agent function. No hardware counters are needed: a
# misprediction costs a real core 15-20 cycles, which instruction counts do not show.
# usage: bench/bench-cachesim.sh [BUILD_DIR] [ROUNDS] [AGENT.so...]   (ROUNDS default 2)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
ROUNDS=${2:-2}
PADS=${PADS:-0}
BSIM=no; [ "${BRANCH:-0}" = 1 ] && BSIM=yes
[ $# -ge 2 ] && shift 2 || shift $#
[ $# -gt 0 ] || set -- "$BUILD/lib/libmemsight.so"
for a in "$@"; do [ -f "$a" ] || { echo "no agent library: $a" >&2; exit 1; }; done
command -v valgrind >/dev/null 2>&1 || { echo "valgrind (cachegrind) is needed" >&2; exit 1; }
PY=/usr/bin/python3
NORAND=""; setarch "$(uname -m)" -R true 2>/dev/null && NORAND="setarch $(uname -m) -R"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mscachesim.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

# sim AGENT OUT PAD: churn.py under cachegrind ("" for no agent; a fixed hash seed and no
# address randomization, so that every run does the same work at the same addresses: the
# agent hashes addresses); the summary line's counts
# (Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw, then Bc Bcm Bi Bim with BRANCH=1) on stdout. follow_exec: valgrind's launcher
# execs the tool, which must keep LD_PRELOAD for the program.
sim() {
    rm -rf "$WORK/snaps"; mkdir -p "$WORK/snaps"
    env PYTHONMALLOC=malloc PYTHONHASHSEED=0 MSPAD="$(printf "%${3}s" "")" \
        MEMSIGHT_OPTIONS="out=$WORK/snaps,follow_exec=1" ${1:+LD_PRELOAD=$1} \
        $NORAND valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 \
        --LL=1048576,16,64 --branch-sim=$BSIM --cachegrind-out-file="$2" $PY "$SRC/bench/churn.py" "$ROUNDS" \
        > /dev/null 2> "$WORK/vg.err" || { cat "$WORK/vg.err" >&2; exit 1; }
    sed -n 's/^summary: *//p' "$2"
}
# allocation calls of the last run, from its exit snapshot
calls() {
    $PY - "$WORK/snaps" "$SRC/tests/integration" <<'PYEOF'
import glob, os, sys
sys.path.insert(0, sys.argv[2])
import agent_snap
f = sorted(glob.glob(os.path.join(sys.argv[1], '*-exit.msnap')), key=os.path.getsize)[-1]
s = agent_snap.read(f)
print(sum(st['alloc_blocks'] + st['free_blocks'] for st in s['stacks'].values() if st['kind'] == 'heap'))
PYEOF
}

# the reference preloads: their rows are divided by the last agent run's call count
# (the same script with the same hash seed makes the same calls)
REFLIBS=""
if [ "${REFS:-1}" != 0 ]; then
    for r in floor header; do
        cc -O2 -shared -fPIC -o "$WORK/$r-preload.so" "$SRC/bench/$r-preload.c" -ldl
        REFLIBS="$REFLIBS $WORK/$r-preload.so"
    done
fi
set -- "" "$@" $REFLIBS
base=""
n=0
i=0
for a in "$@"; do
    i=$((i + 1))
    # the means over the paddings (the counts are integers; awk keeps the fraction)
    counts=$(for p in $PADS; do sim "$a" "$WORK/cg.$i.$p" "$p"; done |
        awk '{ for (f = 1; f <= NF; f++) s[f] += $f; k++ } END { for (f = 1; f <= NF; f++) printf "%.1f ", s[f] / k; print "" }')
    cg=$WORK/cg.$i.$(echo $PADS | cut -d" " -f1)
    if [ -z "$a" ]; then
        base=$counts
        echo "python3 bench/churn.py $ROUNDS under cachegrind (I1, D1 32 KiB; last level 1 MiB)"
        echo "$counts" | awk '{ printf "%-44s %12s %10s %10s %10s", "per call, added to the run without the agent:", "instr", "I1_miss", "D1_miss", "LL_miss"
                              if (NF >= 13) printf " %10s %10s", "Bc_mispr", "Bi_mispr"
                              printf "\n(none: %d instructions, %d D1 and %d LL misses", $1, $5 + $8, $6 + $9
                              if (NF >= 13) printf ", %d conditional and %d indirect mispredictions", $11, $13
                              print " in all)" }'
        continue
    fi
    case $a in
    "$WORK"/*) a=${a#"$WORK"/} ;; # a reference: no snapshot, the count of the agent's run
    *) n=$(calls) ;;
    esac
    [ "$n" -gt 0 ] || { echo "no agent run to count the calls of $a" >&2; continue; }
    # base's k counts, then this library's k, then the calls
    echo "$base $counts $n" | awk -v a="$a" '{ n = $NF; k = (NF - 1) / 2
        printf "%-44s %12.1f %10.3f %10.3f %10.3f", a, ($(k+1) - $1) / n, ($(k+2) - $2) / n,
               ($(k+5) + $(k+8) - $5 - $8) / n, ($(k+6) + $(k+9) - $6 - $9) / n
        if (k >= 13) printf " %10.3f %10.3f", ($(k+11) - $11) / n, ($(k+13) - $13) / n
        printf "\n" }'
    case $a in *-preload.so) continue ;; esac
    echo "    ($n allocation calls) instructions per call in the agent's functions (self, inlined code included):"
    # lines "COUNT (PCT) FILE:FUNCTION": the agent's sources are under src/agent and src/core
    cg_annotate --show=Ir --sort=Ir "$cg" 2>/dev/null |
        awk -v n="$n" '$1 ~ /^[0-9,]+$/ && $NF ~ /\/src\/(agent|core)\// {
                           gsub(",", "", $1); f = $NF; sub(/.*:/, "", f); ir[f] += $1 }
                       END { for (f in ir) if (ir[f] / n >= 0.5) printf "      %-30s %8.1f\n", f, ir[f] / n }' |
        sort -k2 -rn | head -12
    [ "$BSIM" = yes ] || continue
    echo "    mispredictions per call in the agent's functions (conditional, indirect):"
    cg_annotate --show=Bcm,Bim --sort=Bcm --show-percs=no "$cg" 2>/dev/null |
        awk -v n="$n" '$1 ~ /^[0-9,.]+$/ && $2 ~ /^[0-9,.]+$/ && $NF ~ /\/src\/(agent|core)\// {
                           gsub(",", "", $1); gsub(",", "", $2); gsub(/^\.$/, "0", $1); gsub(/^\.$/, "0", $2)
                           f = $NF; sub(/.*:/, "", f); c[f] += $1; x[f] += $2 }
                       END { for (f in c) if ((c[f] + x[f]) / n >= 0.005) printf "      %-30s %8.3f %8.3f\n", f, c[f] / n, x[f] / n }' |
        sort -k2 -rn | head -8
done
