#!/bin/sh
# Fleet benchmark (docs/fleet.md): makes a fleet of HOSTS x N snapshots from a real
# program's snapshot (sqlite3 building and indexing a table, under the agent with
# interval snapshots; bench/fleet-gen.c varies host, pid, time and labels, and makes
# every 7th stack grow on a third of the hosts), pushes it into a private ClickHouse on
# 127.0.0.1 and prints the ingest rate, the storage per snapshot and the time of each
# fleet query (best of 3), under max_memory_usage 2 GB, with its slowest statement's time,
# rows read and peak memory from system.query_log and the load average. Asserts nothing.
# With COPIES > 1 the pushed fleet is then multiplied inside ClickHouse (INSERT SELECT,
# below: each copy other hosts, pids, times and snapshot ids, the rows as push writes
# them, the materialized views fed as by a push), to query a fleet of HOSTS x N x COPIES
# snapshots without pushing every one (push's rate is the first part's):
# `bench/fleet.sh build 50 20 40` is the 40,000-snapshot fleet of docs/fleet.md.
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
  <profiles><default><max_memory_usage>2000000000</max_memory_usage><log_queries>1</log_queries></default></profiles>
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
q() { # a statement; ClickHouse's message and a failure when it refuses it
  curl -sS -o "$WORK/q.out" -w '%{http_code}' --data-binary "$1" "$URL/" > "$WORK/q.code" || true
  if [ "$(cat "$WORK/q.code")" != 200 ]; then
    echo "ClickHouse refused: $1" >&2; cat "$WORK/q.out" >&2; return 1
  fi
  cat "$WORK/q.out"
}

# a statement's CPU time in ClickHouse (its threads' user and system time)
CPU="ProfileEvents.Values[indexOf(ProfileEvents.Names, 'UserTimeMicroseconds')] + ProfileEvents.Values[indexOf(ProfileEvents.Names, 'SystemTimeMicroseconds')]"

# --- ingest ---------------------------------------------------------------------------
since=$(q "SELECT now()")
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
q "SYSTEM FLUSH LOGS"
echo "push's time: its own CPU $(cut -d' ' -f2 "$WORK/push.txt") s user, $(cut -d' ' -f3 "$WORK/push.txt") s system; ClickHouse: $(q "SELECT concat(toString(count()), ' statements, ', toString(sum(query_duration_ms) / 1000), ' s, ', toString(round(sum($CPU) / 1e6, 1)), ' s CPU; the INSERTs of stack rows ', toString(sumIf(query_duration_ms, query LIKE 'INSERT INTO memsight_stacks%') / 1000), ' s') FROM system.query_log WHERE type = 2 AND event_time >= '$since' AND event_time <= toDateTime($(echo "$t0" | cut -d. -f1))")"
q "OPTIMIZE TABLE memsight_stacks FINAL" ; q "OPTIMIZE TABLE memsight_snapshots FINAL"
STORE=$(q "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = currentDatabase() AND table IN ('memsight_stacks', 'memsight_snapshots')")
RAW=$(q "SELECT sum(data_uncompressed_bytes) FROM system.parts WHERE active AND database = currentDatabase() AND table IN ('memsight_stacks', 'memsight_snapshots')")
echo "storage: $STORE bytes on disk ($(echo "$STORE / $FILES" | bc) per snapshot, $(echo "$STORE / $ROWS" | bc) per row; uncompressed $(echo "$RAW / $FILES" | bc) per snapshot; the snapshot file is $(echo "$FILE_BYTES / $FILES" | bc))"

# --- copies: the pushed fleet multiplied inside ClickHouse -------------------------------
# Each copy k (1 .. COPIES-1) of every pushed snapshot is another process: host
# host-NNNN numbered on from the pushed ones (k x HOSTS + h), pid + k x 100000, taken k
# seconds later, a new snapshot id (its first 16 hex digits, the sid, xor'ed with k x a
# constant; the rest of the id as it was), its stacks' counters as pushed (so the leaking
# version's stacks grow in every copy as in the original). The rows have the columns and
# values push writes (sid given, as push gives it), the stacks' rows first and the
# snapshot rows after, and go into the same tables, whose materialized view
# (memsight_latest) is fed by the inserts as by a push. The pushed rows are read from a
# staging table, so each copy reads HOSTS x N snapshots, not the whole grown table.
if [ "$COPIES" -gt 1 ]; then
  COLS="program, reason, sampled, label_keys, label_values, stack_hash, kind,
    first_is_pc, live_bytes, live_blocks, alloc_bytes, alloc_blocks, free_bytes, free_blocks,
    definitely_lost_bytes, definitely_lost_blocks, indirectly_lost_bytes, indirectly_lost_blocks,
    possibly_lost_bytes, possibly_lost_blocks, still_reachable_bytes, still_reachable_blocks,
    frame_build_ids, frame_offsets, frame_modules"
  SCOLS="program, reason, seq, sampled, leak_scan, label_keys, label_values,
    stacks, live_bytes, live_blocks, alloc_bytes, alloc_blocks, file_bytes"
  q "CREATE TABLE bench_stacks ENGINE = MergeTree ORDER BY tuple() AS SELECT * FROM memsight_stacks"
  q "CREATE TABLE bench_snapshots ENGINE = MergeTree ORDER BY tuple() AS SELECT *,
    reinterpretAsUInt64(reverse(unhex(substring(snapshot_id, 1, 16)))) AS sid FROM memsight_snapshots"
  t0=$(now)
  for k in $(seq 1 $((COPIES - 1))); do
    NSID="bitXor(sid, $k * 11400714819323198485)"
    H="lower(hex($NSID))"
    NEW="snapshot_id, host, pid, time, snapshot_ns"
    SEL="concat(substring(concat('0000000000000000', $H), length($H) + 1, 16), substring(snapshot_id, 17)),
      concat('host-', substring(toString(10000 + toUInt32(substring(host, 6)) + $k * $HOSTS), 2)),
      pid + $k * 100000, time + $k, snapshot_ns + $k * 1000000000"
    q "INSERT INTO memsight_stacks ($NEW, sid, $COLS) SELECT $SEL, $NSID, $COLS FROM bench_stacks"
    q "INSERT INTO memsight_snapshots ($NEW, $SCOLS, pushed) SELECT $SEL, $SCOLS, now() FROM bench_snapshots"
  done
  t1=$(now)
  q "DROP TABLE bench_stacks" ; q "DROP TABLE bench_snapshots"
  FILES=$(q "SELECT count() FROM memsight_snapshots")
  ROWS=$(q "SELECT count() FROM memsight_stacks")
  echo "copies: $COPIES x, now $FILES snapshots and $ROWS rows (copied in $(secs "$t0" "$t1") s: $(echo "$ROWS / ($(secs "$t0" "$t1"))" | bc) rows/s; load average $(cut -d' ' -f1-3 /proc/loadavg))"
  t0=$(now)
  q "OPTIMIZE TABLE memsight_snapshots FINAL" ; q "OPTIMIZE TABLE memsight_latest FINAL"
  t1=$(now)
  echo "merged memsight_snapshots and memsight_latest in $(secs "$t0" "$t1") s"
fi
echo "parts: $(q "SELECT concat(table, ' ', toString(count()), ' parts, ', toString(sum(rows)), ' rows') FROM system.parts WHERE active AND database = currentDatabase() AND table LIKE 'memsight_%' GROUP BY table ORDER BY table FORMAT TSV" | tr '\n' ';')"

t0=$(now)
"$MEMSIGHT" symbolize -q --clickhouse "$URL"
t1=$(now)
echo "symbolize: $(q "SELECT count() FROM memsight_symbols") symbol rows in $(secs "$t0" "$t1") s"

best() { # best of 3 wall times of a fleet query; its heaviest statement from system.query_log
  b=
  q "SYSTEM FLUSH LOGS" > /dev/null
  since=$(q "SELECT now()")
  for r in 1 2 3; do
    t0=$(now)
    "$MEMSIGHT" fleet "$@" --clickhouse "$URL" > "$WORK/out.txt"
    t1=$(now)
    t=$(secs "$t0" "$t1")
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
  done
  q "SYSTEM FLUSH LOGS" > /dev/null
  st=$(q "SELECT concat('its slowest statement ', toString(max(query_duration_ms)), ' ms, reading ',
    toString(max(read_rows)), ' rows, peak memory ', toString(round(max(memory_usage) / 1048576)), ' MiB; ClickHouse CPU ',
    toString(round(sum($CPU) / 3e6, 2)), ' s a run') FROM system.query_log WHERE type = 2 AND event_time >= '$since'
    AND query NOT LIKE '%system.%'")
  echo "fleet $*: $b s (best of 3; $st; load average $(cut -d' ' -f1 /proc/loadavg))"
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
