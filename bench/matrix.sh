#!/bin/bash
# The matrix of real programs: programs from Debian's archive, each with a workload and a
# check of its output against ground truth, run without the agent and then under every
# agent mode. A cell passes when the program's output and exit status are those of the
# run without the agent, the check holds, nothing hung (a cell still running at its time
# limit is stopped with SIGKILL and fails), nothing was left running, the agent wrote
# nothing on the program's standard error or logs, and the snapshots were written and
# read back. Prints the table (program x mode), each failing cell with its reason and
# the run time; exits 1 when a cell failed. Not part of `make test` (tens of minutes).
#
#   bench/matrix.sh [BUILD_DIR]
#   PROGRAMS="redis java chromium" MODES="none full s4096" bench/matrix.sh build
#
# Environment:
#   PROGRAMS    programs to run (default: all, bench/matrix/programs.sh lists them)
#   MODES       modes to run (default: all below); the run without the agent always runs
#   LIMIT       seconds a cell may take (default: 10 x the run without the agent + 60,
#               at least 120, at most 900)
#   OUT         where cells, logs and snapshots go (default: a new directory in /tmp);
#               a passing cell's directory is removed unless KEEP=1
#   NO_INSTALL  1: do not install missing Debian packages (a program without its
#               package then fails in every column)
#   FORMAT      md: the table in Markdown
# Modes:
#   none        without the agent (the reference)
#   full        memsight run: every block recorded
#   s4096       --sample 4096
#   s512k       --sample 524288 (the production rate)
#   leak-exit   --leak-check exit: a reachability scan in every process at its exit
#   fp          --unwind fp
#   libunwind   --unwind libunwind
#   guard50     -O guard=50: one allocation in 50 on a guarded page
#   s512kg      --sample 524288 -O guard=500: guard pages on top of sampled mode (the
#               sampled variants with guard pages, as production runs them), at a rate
#               that guards more blocks than production's 5000
#   follow      --follow-exec, for programs that start other programs
#   attach      servers: started without the agent, then memsight attach (with
#               --leak-check signal) -> dump -> leaks -> detach while they serve
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-${BUILD:-build}}
MEMSIGHT=$(realpath "$BUILD/bin/memsight" 2>/dev/null)
[ -x "$MEMSIGHT" ] || { echo "no $BUILD/bin/memsight (build first)" >&2; exit 2; }
ALL_MODES="none full s4096 s512k leak-exit fp libunwind guard50 s512kg follow attach"
# shellcheck source=matrix/programs.sh
. "$HERE/matrix/programs.sh"
PROGRAMS=${PROGRAMS:-$PROGS}
MODES=${MODES:-$ALL_MODES}
case " $MODES " in *" none "*) ;; *) MODES="none $MODES" ;; esac
for p in $PROGRAMS; do
    case " $PROGS " in *" $p "*) ;; *) echo "unknown program $p (known:$PROGS)" >&2; exit 2 ;; esac
done
for m in $MODES; do
    case " $ALL_MODES " in *" $m "*) ;; *) echo "unknown mode $m (known: $ALL_MODES)" >&2; exit 2 ;; esac
done
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/memsight-matrix-XXXXXX")}
mkdir -p "$OUT/cells" "$OUT/data"
# the servers that refuse root (postgres) and the sandboxed browser run as other users
chmod 755 "$OUT" "$OUT/cells" "$OUT/data"
RESULTS=$OUT/results.tsv
: > "$RESULTS"
T0=$(date +%s)

# --- Debian packages: only the missing ones, once
install_missing() {
    local missing="" p
    for p in gdb procps file $(for q in $PROGRAMS; do eval "echo \$PKGS_$q"; done | tr ' ' '\n' | sort -u); do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "${NO_INSTALL:-0}" = 1 ]; then
        echo "missing Debian packages (NO_INSTALL=1):$missing" >&2
        return 0
    fi
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    echo "installing missing Debian packages:$missing"
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
            --no-install-recommends $missing > "$OUT/apt.log" 2>&1 ||
        { echo "apt-get failed (see $OUT/apt.log)" >&2; exit 2; }
}

mode_args() {
    case $1 in
    full) echo "" ;;
    s4096) echo "--sample 4096" ;;
    s512k) echo "--sample 524288" ;;
    leak-exit) echo "--leak-check exit" ;;
    fp) echo "--unwind fp" ;;
    libunwind) echo "--unwind libunwind" ;;
    guard50) echo "-O guard=50" ;;
    s512kg) echo "--sample 524288 -O guard=500" ;;
    follow) echo "--follow-exec" ;;
    esac
}

# applies PROGRAM MODE: whether the cell exists
applies() {
    local flags
    eval "flags=\$FLAGS_$1"
    case $2 in
    follow) case " $flags " in *" exec "*) return 0 ;; esac; return 1 ;;
    attach) case " $flags " in *" server "*) return 0 ;; esac; return 1 ;;
    esac
    return 0
}

# a TCP port nothing listens on, in 20000-29999
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 10000))
        [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return; }
    done
}

# cell_procs SID TOKEN PIDFILE: the cell's processes still there (not zombies): its
# session, its marked environment, the servers it named, and all their descendants
cell_procs() {
    local sid=$1 token=$2 pidfile=$3 d s rest pid
    declare -A parent keep
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        read -r s 2>/dev/null < "$d/stat" || continue
        rest=${s##*) }
        # shellcheck disable=SC2086
        set -- $rest
        [ "$1" = Z ] && continue
        parent[$pid]=$2
        [ "$4" = "$sid" ] && keep[$pid]=1
    done
    for pid in $(grep -lsa "MSM_CELL=$token" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3) \
        $(cat "$pidfile" 2>/dev/null); do
        [ -n "${parent[$pid]:-}" ] && keep[$pid]=1
    done
    local changed=1
    while [ $changed = 1 ]; do
        changed=0
        for pid in "${!parent[@]}"; do
            [ -z "${keep[$pid]:-}" ] && [ -n "${keep[${parent[$pid]}]:-}" ] && { keep[$pid]=1; changed=1; }
        done
    done
    unset "keep[$$]" "keep[$BASHPID]"
    echo "${!keep[@]}"
}

# diagnose FILE PID...: what each process was doing (for a hang): per thread its state,
# blocked signals, wait channel and kernel stack; gdb's backtrace of every thread (of the
# first 6 processes, through a live thread when the main one is a zombie)
diagnose() {
    local f=$1 p t live n=0
    shift
    for p in "$@"; do
        live=""
        {
            echo "=== $p: $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"
            for t in /proc/"$p"/task/*; do
                echo "--- thread ${t##*/} $(cat "$t/comm" 2>/dev/null):" \
                    "$(grep -E '^(State|SigBlk):' "$t/status" 2>/dev/null | tr '\n\t' '  ')" \
                    "wchan $(cat "$t/wchan" 2>/dev/null)"
                cat "$t/stack" 2>/dev/null
                [ -z "$live" ] && ! grep -q '^State:.Z' "$t/status" 2>/dev/null && live=${t##*/}
            done
        } >> "$f"
        n=$((n + 1))
        [ $n -le 6 ] && [ -n "$live" ] &&
            timeout 60 gdb -p "$live" -batch -nx -ex 'info threads' -ex 'thread apply all bt 30' \
                >> "$f" 2>&1 < /dev/null
    done
}

# run_cell PROGRAM MODE LIMIT: runs one cell, leaves in $CELL: out, err, status, and the
# reasons it failed in reasons
run_cell() {
    local name=$1 mode=$2 limit=$3
    CELL=$OUT/cells/$name.$mode
    rm -rf "$CELL"
    mkdir -p "$CELL/work"
    chmod 755 "$CELL" "$CELL/work"
    local snaps=$CELL/snaps m=""
    case $mode in
    none | attach) ;;
    *) m="$MEMSIGHT run -q -o $snaps $(mode_args "$mode") --" ;;
    esac
    local user
    eval "user=\$USER_$name"
    [ -n "$user" ] && chown -R "$user" "$CELL"
    local token="matrix-$$-$name-$mode-$RANDOM" port
    port=$(free_port)
    local start end
    start=$(date +%s.%N)
    env MSM_CELL="$token" CELL="$CELL" WORK="$CELL/work" DATA="$OUT/data/$name" M="$m" \
        MODE="$mode" PORT="$port" MEMSIGHT="$MEMSIGHT" SNAPS="$snaps" HERE="$HERE" \
        OUT_FILE="$CELL/out" NAME="$name" \
        setsid bash -c 'ulimit -c unlimited; . "$HERE/matrix/programs.sh" && cd "$WORK" && "${NAME}_run"' \
        > "$CELL/out" 2> "$CELL/err" < /dev/null &
    local pid=$! sl who status hung=0
    sleep "$limit" &
    sl=$!
    wait -n -p who "$pid" "$sl"
    status=$?
    if [ "$who" = "$sl" ]; then
        hung=1
        # shellcheck disable=SC2046
        diagnose "$CELL/hang.txt" $(cell_procs "$pid" "$token" "$CELL/pids")
        kill -KILL -- "-$pid" 2>/dev/null
        { wait "$pid"; } 2>/dev/null
        status=hang
    else
        kill "$sl" 2>/dev/null
        wait "$sl" 2>/dev/null
    fi
    end=$(date +%s.%N)
    echo "$status" > "$CELL/status"
    CELL_SECONDS=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    : > "$CELL/reasons"
    [ $hung = 1 ] && echo "hang: still running after ${limit} s, killed (stacks in $CELL/hang.txt)" >> "$CELL/reasons"
    # what is left: given 5 s to end by itself, then killed
    local left i=0
    left=$(cell_procs "$pid" "$token" "$CELL/pids")
    while [ -n "$left" ] && [ $i -lt 25 ]; do
        sleep 0.2
        i=$((i + 1))
        left=$(cell_procs "$pid" "$token" "$CELL/pids")
    done
    if [ -n "$left" ]; then
        if [ $hung = 0 ]; then
            local names="" p
            for p in $left; do names="$names $(cat "/proc/$p/comm" 2>/dev/null)($p)"; done
            diagnose "$CELL/left.txt" $left
            echo "left running:$names (stacks in $CELL/left.txt)" >> "$CELL/reasons"
        fi
        # shellcheck disable=SC2086
        kill -KILL $left 2>/dev/null
    fi
    [ -s "$CELL/attach.fail" ] && sed 's/^/attach: /' "$CELL/attach.fail" >> "$CELL/reasons"
    crashes
    sed "s#$CELL#@CELL@#g" "$CELL/out" > "$CELL/out.norm"
}

# crashes: the core files a crash left in the cell (when the kernel writes them to the
# working directory, core_pattern "core"): each one's backtraces in crash.txt and its
# crashing frame among the reasons; the core is removed
crashes() {
    local core exe n=0
    for core in $(find "$CELL/work" -maxdepth 4 -type f -name 'core*' 2>/dev/null); do
        file -b "$core" 2>/dev/null | grep -q 'core file' || continue
        n=$((n + 1))
        if [ $n -le 3 ]; then
            exe=$(file -b "$core" | sed -n "s/.*execfn: '\([^']*\)'.*/\1/p")
            {
                echo "=== $core ($exe)"
                timeout 120 gdb -batch -nx -ex 'bt 25' -ex 'thread apply all bt 25' "$exe" "$core" 2>&1 < /dev/null
            } >> "$CELL/crash.txt"
            echo "crashed: $(basename "$exe"): $(grep -m1 '^Program terminated' "$CELL/crash.txt" |
                sed 's/Program terminated with //; s/\.$//'), at $(grep -m1 '^#0' "$CELL/crash.txt" |
                sed 's/^#0 *\(0x[0-9a-f]* in \)\{0,1\}//' | cut -c1-100) (crash.txt)" >> "$CELL/reasons"
        fi
        rm -f "$core"
    done
}

# judge PROGRAM MODE: the cell's verdict against the run without the agent
judge() {
    local name=$1 mode=$2 base=$OUT/cells/$1.none
    local r
    if [ "$(cat "$CELL/status")" != hang ]; then
        [ "$(cat "$CELL/status")" = "$(cat "$base/status")" ] ||
            echo "exit status $(cat "$CELL/status"), without the agent $(cat "$base/status")" >> "$CELL/reasons"
        if ! cmp -s "$CELL/out.norm" "$base/out.norm"; then
            diff "$base/out.norm" "$CELL/out.norm" > "$CELL/out.diff"
            # the first line the run with the agent has and the reference has not
            echo "output differs: $({ grep -m1 '^>' "$CELL/out.diff" || grep -m1 '^<' "$CELL/out.diff"; } |
                cut -c1-120) (diff in $CELL/out.diff)" >> "$CELL/reasons"
        fi
        r=$(OUT_FILE=$CELL/out DATA=$OUT/data/$name HERE=$HERE "${name}_check" 2>&1) ||
            echo "check: $r" >> "$CELL/reasons"
    fi
    # the agent says nothing on the program's stderr or in its logs, but that an option
    # the cell asked for cannot be served here (a notice, kept in the cell's line)
    local said
    grep -h '^memsight: MEMSIGHT_OPTIONS: .*ignored$' "$CELL/err" "$CELL"/work/*.log 2>/dev/null |
        sort -u > "$CELL/notice"
    # (the matrix's own paths, which name memsight, taken out first: a program that
    # logs a path of its work directory says nothing of the agent)
    said=$(cat "$CELL/err" "$CELL"/work/*.log 2>/dev/null | sed "s|$OUT||g" | grep -i 'memsight' |
        grep -v '^memsight: MEMSIGHT_OPTIONS: .*ignored$' | head -1 | cut -c1-160)
    [ -n "$said" ] && echo "the agent wrote on the program's stderr or log: $said" >> "$CELL/reasons"
    if [ "$mode" != none ]; then
        local snaps
        snaps=$(find "$CELL/snaps" -name '*.msnap' 2>/dev/null | sort)
        if [ -z "$snaps" ]; then
            echo "no snapshot written" >> "$CELL/reasons"
        else
            local f
            for f in $(echo "$snaps" | head -1) $(echo "$snaps" | tail -1); do
                timeout 120 "$MEMSIGHT" report --no-symbols --format json -n 1 "$f" > /dev/null 2> "$CELL/report.err" ||
                    echo "snapshot unreadable: $(basename "$f"): $(head -1 "$CELL/report.err")" >> "$CELL/reasons"
            done
            echo "$snaps" | wc -l > "$CELL/snapshots"
        fi
        [ "$mode" = attach ] && ! echo "$snaps" | grep -q -- '-detach\.msnap$' &&
            echo "no detach snapshot" >> "$CELL/reasons"
    fi
    [ ! -s "$CELL/reasons" ]
}

install_missing
echo "memsight matrix: programs:$(echo " $PROGRAMS" | tr -s ' '); modes: $MODES; cells in $OUT"
declare -A VERDICT
FAILED=0 PASSED=0
for name in $PROGRAMS; do
    mkdir -p "$OUT/data/$name"
    chmod 755 "$OUT/data/$name"
    if declare -F "${name}_setup" > /dev/null &&
        ! (DATA=$OUT/data/$name HERE=$HERE "${name}_setup") > "$OUT/data/$name.setup.log" 2>&1; then
        echo "$name: setup failed (see $OUT/data/$name.setup.log)"
        for mode in $MODES; do VERDICT[$name.$mode]=FAIL; done
        printf '%s\t%s\tFAIL\t0\tsetup failed\n' "$name" all >> "$RESULTS"
        FAILED=$((FAILED + 1))
        continue
    fi
    chmod -R a+rX "$OUT/data/$name"
    base_ok=1
    base_limit=0
    for mode in $MODES; do
        if ! applies "$name" "$mode"; then
            VERDICT[$name.$mode]=-
            continue
        fi
        if [ "$mode" = none ]; then
            limit=${LIMIT:-600}
        elif [ $base_ok = 0 ]; then
            VERDICT[$name.$mode]=skip
            continue
        else
            limit=${LIMIT:-$base_limit}
        fi
        run_cell "$name" "$mode" "$limit"
        if [ "$mode" = none ]; then
            # the reference must pass its own check
            r=$(OUT_FILE=$CELL/out DATA=$OUT/data/$name HERE=$HERE "${name}_check" 2>&1) ||
                echo "check without the agent: $r" >> "$CELL/reasons"
            [ "$(cat "$CELL/status")" = hang ] || [ -s "$CELL/reasons" ] && base_ok=0
            base_limit=$(awk -v s="$CELL_SECONDS" 'BEGIN { l = int(10 * s + 60); if (l < 120) l = 120; if (l > 900) l = 900; print l }')
        else
            judge "$name" "$mode"
        fi
        if [ -s "$CELL/reasons" ]; then
            VERDICT[$name.$mode]=FAIL
            FAILED=$((FAILED + 1))
            printf '%-10s %-10s FAIL %6s s  %s\n' "$name" "$mode" "$CELL_SECONDS" "$(head -1 "$CELL/reasons")"
        else
            VERDICT[$name.$mode]=ok
            PASSED=$((PASSED + 1))
            printf '%-10s %-10s ok   %6s s  %s snapshot(s)%s\n' "$name" "$mode" "$CELL_SECONDS" \
                "$(cat "$CELL/snapshots" 2>/dev/null || echo 0)" \
                "$([ -s "$CELL/notice" ] && printf '; notice: %s' "$(head -1 "$CELL/notice")")"
            [ -s "$CELL/notice" ] && printf '%s\t%s\t%s\n' "$name" "$mode" "$(head -1 "$CELL/notice")" >> "$OUT/notices.tsv"
        fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "${VERDICT[$name.$mode]}" "$CELL_SECONDS" \
            "$(tr '\n' ';' < "$CELL/reasons")" >> "$RESULTS"
    done
    # the reference stays for the others' diffs until the program is done; passing
    # cells go unless KEEP=1
    if [ "${KEEP:-0}" != 1 ]; then
        for mode in $MODES; do
            [ "${VERDICT[$name.$mode]:-}" = ok ] && rm -rf "$OUT/cells/$name.$mode"
        done
    fi
done

# --- the table
echo
if [ "${FORMAT:-}" = md ]; then
    printf '| program |'; for m in $MODES; do printf ' %s |' "$m"; done; echo
    printf '|---|'; for m in $MODES; do printf -- '---|'; done; echo
    for name in $PROGRAMS; do
        printf '| %s |' "$name"
        for m in $MODES; do printf ' %s |' "${VERDICT[$name.$m]:-}"; done
        echo
    done
else
    printf '%-10s' program; for m in $MODES; do printf ' %-9s' "$m"; done; echo
    for name in $PROGRAMS; do
        printf '%-10s' "$name"
        for m in $MODES; do printf ' %-9s' "${VERDICT[$name.$m]:-}"; done
        echo
    done
fi
if [ -s "$OUT/notices.tsv" ]; then
    echo
    echo "cells that passed with a notice of the agent (an option it cannot serve there):"
    awk -F'\t' '{ printf "  %s/%s: %s\n", $1, $2, $3 }' "$OUT/notices.tsv"
fi
if [ $FAILED -gt 0 ]; then
    echo
    echo "failing cells:"
    awk -F'\t' '$3 == "FAIL" { printf "  %s/%s: %s\n", $1, $2, $5 }' "$RESULTS"
fi
echo
echo "$PASSED cells ok, $FAILED failing; $(($(date +%s) - T0)) s (load average $(cut -d' ' -f1-3 /proc/loadavg)); cells in $OUT"
[ $FAILED -eq 0 ]
