#!/bin/sh
# What the agent's own /metrics (option metrics_listen=, docs/fleet.md) adds to the process
# it lives in, measured in one run beside the same process without it: the memory of an
# idle program (lk_serve: RSS, PSS, threads, descriptors), the time of a scrape (curl,
# SCRAPES of them), and the run time of a busy program (python3 allocating) without the
# option and with it while scraped every 100 ms (5 pairs back to back: the median ratio).
# Asserts nothing.
# usage: bench/agent-metrics.sh BUILD_DIR [SCRAPES]
set -eu
B=$(cd "${1:?usage: agent-metrics.sh BUILD_DIR [SCRAPES]}" && pwd)
N=${2:-50}
A="$B/lib/libmemsight.so"
T=$(mktemp -d)
PIDS=
trap 'for p in $PIDS; do kill "$p" 2>/dev/null || true; done; rm -rf "$T"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { # url
    i=0
    until curl -sf -o /dev/null "$1"; do
        i=$((i + 1)); [ $i -lt 300 ] || { echo "no answer from $1" >&2; exit 1; }
        sleep 0.1
    done
}
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/smaps_rollup"; }

# ---- an idle program: what the server adds to it
for mode in without with; do
    opts="out=$T"
    P=$(port)
    [ $mode = with ] && opts="$opts,metrics_listen=127.0.0.1:$P"
    LD_PRELOAD=$A MEMSIGHT_OPTIONS=$opts "$B/tests/programs/lk_serve" > "$T/ready.$mode" &
    pid=$!
    PIDS="$PIDS $pid"
    until grep -q READY "$T/ready.$mode"; do sleep 0.1; done
    [ $mode = with ] && wait_up "http://127.0.0.1:$P/metrics" && URL="http://127.0.0.1:$P/metrics"
    sleep 0.5
    printf '%-8s idle lk_serve: rss %6d kB  pss %6d kB  threads %d  fds %d\n' $mode "$(kb $pid Rss)" \
        "$(kb $pid Pss)" "$(awk '$1 == "Threads:" {print $2}' /proc/$pid/status)" "$(ls /proc/$pid/fd | wc -l)"
    [ $mode = with ] || kill $pid
done

# ---- the time of a scrape
i=0
: > "$T/times"
while [ $i -lt "$N" ]; do
    curl -s -o /dev/null -w '%{time_total}\n' "$URL" >> "$T/times"
    i=$((i + 1))
done
sort -n "$T/times" | awk '{t[NR]=$1 * 1000} END {printf "scrape (curl, %d): median %.2f ms, max %.2f ms, %d bytes of text\n",
    NR, t[int((NR+1)/2)], t[NR], 0}' | sed "s/, 0 bytes/, $(curl -s "$URL" | wc -c) bytes/"

# ---- a busy program, scraped every 100 ms
busy='import time
t = time.monotonic(); d = []
for i in range(1000000):
    d.append(str(i) * 3)
    if len(d) > 100000: d.clear()
print("%.3f" % (time.monotonic() - t))'
once() { # opts scrape(0|1): the run time of one busy run
    P=$(port)
    opts="out=$T,$1"
    scraper=
    if [ "$2" = 1 ]; then
        opts="$opts,metrics_listen=127.0.0.1:$P"
        (while :; do curl -s -o /dev/null "http://127.0.0.1:$P/metrics" || true; sleep 0.1; done) &
        scraper=$!
    fi
    LD_PRELOAD=$A MEMSIGHT_OPTIONS=$opts python3 -c "$busy"
    [ -z "$scraper" ] || kill $scraper
}
# pairs run back to back, so that the machine's load falls on both alike; the median ratio
for mode in "sample=65536" "dump_at_peak=1"; do
    : > "$T/pairs"
    for r in 1 2 3 4 5; do
        echo "$(once "$mode" 0) $(once "$mode" 1)" >> "$T/pairs"
    done
    awk '{print $2 / $1, $1, $2}' "$T/pairs" | sort -n | awk -v m="$mode" '{r[NR]=$0}
        END {split(r[3], x, " "); printf "busy python3 under the agent (%s), 5 pairs: median ratio x%.3f (%.2f s without, %.2f s served and scraped every 100 ms); all ratios %s\n",
             m, x[1], x[2], x[3], r[1] " | " r[2] " | " r[3] " | " r[4] " | " r[5]}'
done
