#!/bin/sh
# The pause of `memsight attach`: how long the one thread that makes the loader call is
# stopped (the others run on), on an idle multi-threaded program (at_target, waiting in
# read) and on a busy python3 building a list, over REPEATS attach/detach cycles each.
# usage: bench/bench-attach.sh BUILD_DIR [REPEATS]
set -eu
B=$(cd "${1:?usage: bench-attach.sh BUILD_DIR [REPEATS]}" && pwd)
N=${2:-10}
M="$B/bin/memsight"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
measure() { # name pid
    i=0
    : > "$T/$1"
    while [ $i -lt "$N" ]; do
        "$M" attach -o "$T/snaps" "$2" 2>/dev/null >> "$T/$1"
        "$M" detach "$2" > /dev/null 2>&1
        i=$((i + 1))
    done
    sort -n -k2 "$T/$1" | awk -v name="$1" '{s[NR]=$2; c[NR]=$3}
        END {printf "%-10s stopped ms: min %.1f median %.1f max %.1f (dlopen+start median %.1f) over %d attaches\n",
             name, s[1], s[int((NR+1)/2)], s[NR], c[int((NR+1)/2)], NR}'
}
mkfifo "$T/in"
"$B/tests/programs/at_target" < "$T/in" > /dev/null &
TP=$!
exec 3> "$T/in"
echo "prep 1000" >&3
python3 -c 'import time
data = []
while True:
    data.append(str(len(data)) * 4)
    if len(data) > 200000: data.clear()' &
PP=$!
sleep 1
measure at_target $TP
measure python3 $PP
kill $PP
echo quit >&3
exec 3>&-
wait $TP || true
