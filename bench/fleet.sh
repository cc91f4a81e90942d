#!/bin/sh
# Fleet benchmark (docs/fleet.md): makes a fleet of HOSTS x N snapshots from a real
# program's snapshot (sqlite3 building and indexing a table, under the agent with
# interval snapshots; bench/fleet-gen.c varies host, pid, time and labels, and makes
# every 7th stack grow on a third of the hosts), pushes it into a private ClickHouse on
# 127.0.0.1 and prints the ingest rate, the storage per snapshot and the time of each
# fleet query (best of 3), under max_memory_usage 2 GB. Asserts nothing.
# With COPIES > 1 the pushed fleet is then copied inside ClickHouse COPIES - 1 times (INSERT
# SELECT: new host names and snapshot ids, the same rows), to query a fleet of
# HOSTS x N x COPIES snapshots without pushing every one (push's rate is the first part's).
# usage: bench/fleet.sh [BUILD_DIR] [HOSTS] [N] [COPIES]   (defaults: build, 200, 20, 1;
# results: docs/fleet.md)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
HOSTS=${2:-200}
N=${3:-20}
COPIES=${4:-1}
MEMSIGHT=$BUILD/bin/memsight
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
command -v clickhouse-server >/dev/null || { echo "clickhouse-server is not installed" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msfleet.XXXXXX")
CH_PID=
cleanup() {
  [ -n "$CH_PID" ] && kill "$CH_PID" 2>/dev/null && wait "$CH_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

# --- the generator, against the build's libraries ----------------------------------
cc -O2 -I"$SRC/include" -I"$SRC/src" "$SRC/bench/fleet-gen.c" "$BUILD/src/analysis/libms_analysis.a" \
  "$BUILD/src/core/libms_core.a" -ldw -lelf -lz -lzstd -lstdc++ -lm -o "$WORK/fleet-gen"
cc -O2 -o "$WORK/cputime" "$SRC/bench/cputime.c"

# --- one real program's snapshot --------------------------------------------------
python3 - "$WORK/w.sql" <<'PYEOF'
import sys
with open(sys.argv[1], 'w') as f:
    f.write("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);\nBEGIN;\n")
    for i in range(20000):
        f.write("INSERT INTO t(name) VALUES('n-%d-%s');\n" % (i, 'x' * (i % 37)))
    f.write("COMMIT;\nCREATE INDEX t_n ON t(name);\nSELECT count(*) FROM t;\n")
PYEOF
"$MEMSIGHT" run -q --no-blocks -O interval=20 -o "$WORK/base" -- sqlite3 "$WORK/db" < "$WORK/w.sql" > /dev/null
# the interval snapshot with the most stacks
BASE=$(for f in "$WORK"/base/*-interval.msnap; do
  printf '%s %s\n' "$("$MEMSIGHT" report -f json --no-symbols "$f" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["stacks"]))')" "$f"
done | sort -n | tail -1 | cut -d' ' -f2)
t0=$(now)
"$WORK/fleet-gen" "$BASE" "$HOSTS" "$N" "$WORK/fleet"
t1=$(now)
FILES=$(find "$WORK/fleet" -name '*.msnap' | wc -l)
FILE_BYTES=$(du -sb "$WORK/fleet" | cut -f1)
echo "fleet: $FILES snapshots from $(basename "$BASE"), $(echo "$FILE_BYTES / $FILES" | bc) bytes each on disk, generated in $(secs "$t0" "$t1") s"

# --- a private ClickHouse -----------------------------------------------------------
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP=$(port); TCP=$(port)
CHD=$WORK/ch
mkdir -p "$CHD"
cat > "$CHD/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$CHD/server.log</log><errorlog>$CHD/error.log</errorlog></logger>
  <http_port>$HTTP</http_port><tcp_port>$TCP</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>$CHD/data/</path><tmp_path>$CHD/tmp/</tmp_path>
  <user_files_path>$CHD/user_files/</user_files_path><format_schema_path>$CHD/fs/</format_schema_path>
  <users_config>users.xml</users_config><default_profile>default</default_profile>
  <default_database>default</default_database><mark_cache_size>536870912</mark_cache_size>
</yandex>
XML
cat > "$CHD/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
(cd "$CHD" && exec clickhouse-server --config-file="$CHD/config.xml" > "$CHD/stdout" 2>&1) &
CH_PID=$!
URL=http://127.0.0.1:$HTTP
for i in $(seq 1 300); do
  curl -sf "$URL/ping" > /dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "$URL/ping" > /dev/null || { echo "clickhouse-server did not start" >&2; exit 1; }
q() { curl -sf --data-binary "$1" "$URL/"; }

# --- ingest ---------------------------------------------------------------------------
t0=$(now)
"$WORK/cputime" "$WORK/push.txt" "$MEMSIGHT" push -q "$URL" "$WORK"/fleet/*
t1=$(now)
ROWS=$(q "SELECT count() FROM memsight_stacks")
T=$(secs "$t0" "$t1")
echo "push: $FILES snapshots, $ROWS rows in $T s: $(echo "$FILES / $T" | bc) snapshots/s, $(echo "$ROWS / $T" | bc) rows/s, $(echo "$FILE_BYTES / $T / 1048576" | bc) MiB/s of snapshot files, peak RSS $(($(cut -d' ' -f4 "$WORK/push.txt") / 1024)) MiB"
t0=$(now)
"$MEMSIGHT" push -q "$URL" "$WORK"/fleet/*
t1=$(now)
echo "push again (all already there): $(secs "$t0" "$t1") s"
q "OPTIMIZE TABLE memsight_stacks FINAL" ; q "OPTIMIZE TABLE memsight_snapshots FINAL"
STORE=$(q "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = currentDatabase() AND table IN ('memsight_stacks', 'memsight_snapshots')")
RAW=$(q "SELECT sum(data_uncompressed_bytes) FROM system.parts WHERE active AND database = currentDatabase() AND table IN ('memsight_stacks', 'memsight_snapshots')")
echo "storage: $STORE bytes on disk ($(echo "$STORE / $FILES" | bc) per snapshot, $(echo "$STORE / $ROWS" | bc) per row; uncompressed $(echo "$RAW / $FILES" | bc) per snapshot; the snapshot file is $(echo "$FILE_BYTES / $FILES" | bc))"

# --- copies: the same snapshots under other hosts (and so other processes) --------------
if [ "$COPIES" -gt 1 ]; then
  COLS="time, snapshot_ns, program, pid, reason, sampled, label_keys, label_values, stack_hash, kind,
    first_is_pc, live_bytes, live_blocks, alloc_bytes, alloc_blocks, free_bytes, free_blocks,
    definitely_lost_bytes, definitely_lost_blocks, indirectly_lost_bytes, indirectly_lost_blocks,
    possibly_lost_bytes, possibly_lost_blocks, still_reachable_bytes, still_reachable_blocks,
    frame_build_ids, frame_offsets, frame_modules"
  SCOLS="time, snapshot_ns, program, pid, reason, seq, sampled, leak_scan, label_keys, label_values,
    stacks, live_bytes, live_blocks, alloc_bytes, alloc_blocks, file_bytes, pushed"
  t0=$(now)
  for k in $(seq 1 $((COPIES - 1))); do
    # a new id whose first 16 hex digits (the sid) differ: the old sid xor a constant times k
    NEWID="concat(substring(concat('0000000000000000', lower(hex(bitXor(reinterpretAsUInt64(reverse(unhex(substring(snapshot_id, 1, 16)))), $k * 11400714819323198485)))), length(lower(hex(bitXor(reinterpretAsUInt64(reverse(unhex(substring(snapshot_id, 1, 16)))), $k * 11400714819323198485)))) + 1, 16), substring(snapshot_id, 17), 'c$k')"
    q "INSERT INTO memsight_stacks (snapshot_id, host, $COLS) SELECT $NEWID, concat(host, '-c$k'), $COLS FROM memsight_stacks WHERE host NOT LIKE '%-c%'"
    q "INSERT INTO memsight_snapshots (snapshot_id, host, $SCOLS) SELECT $NEWID, concat(host, '-c$k'), $SCOLS FROM memsight_snapshots WHERE host NOT LIKE '%-c%'"
  done
  t1=$(now)
  FILES=$(q "SELECT count() FROM memsight_snapshots")
  ROWS=$(q "SELECT count() FROM memsight_stacks")
  echo "copies: $COPIES x, now $FILES snapshots and $ROWS rows (copied in $(secs "$t0" "$t1") s)"
  q "OPTIMIZE TABLE memsight_stacks FINAL" ; q "OPTIMIZE TABLE memsight_snapshots FINAL"
fi

t0=$(now)
"$MEMSIGHT" symbolize -q --clickhouse "$URL"
t1=$(now)
echo "symbolize: $(q "SELECT count() FROM memsight_symbols") symbol rows in $(secs "$t0" "$t1") s"

best() { # best of 3 wall times of a fleet query
  b=
  for r in 1 2 3; do
    t0=$(now)
    "$MEMSIGHT" fleet "$@" --clickhouse "$URL" > "$WORK/out.txt"
    t1=$(now)
    t=$(secs "$t0" "$t1")
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
  done
  echo "fleet $*: $b s (best of 3)"
}
echo "load average before the queries: $(cut -d' ' -f1-3 /proc/loadavg)"
best top --group-by version
best top --group-by version,model --where page=cart
best top --group-by version --since 2025-12-01T00:10:00Z
best trend --group-by version
best trend --group-by version,model --where page=cart
best leaks --group-by version
best diff --group-by version 3.2.0 3.3.0
echo "load average after the queries: $(cut -d' ' -f1-3 /proc/loadavg)"
"$MEMSIGHT" fleet trend --group-by version -n 1 --clickhouse "$URL" | head -12
