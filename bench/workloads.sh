# Workloads shared by the benchmarks (sourced, POSIX sh): allocation-heavy runs of real
# programs whose inputs are generated here, the same for every tool measured.
#   ms_bench_sqlite_sql FILE [PRAGMAS [QUERY [ROWS]]]   200k (ROWS) single-row INSERTs in
#                              one transaction, two CREATE INDEX and a query
#                              (sqlite3 DB < FILE)
#   ms_bench_xz_input FILE     8 MB of compressible, not trivial text (xz -T2)
#   ms_bench_time WORK WL PREFIX...   runs workload WL (sqlite, python: bench/churn.py
#                              with 8 rounds, xz) on the files above in WORK after the
#                              command words PREFIX (a tool; none for the uninstrumented
#                              run) under /usr/bin/time: "wall user sys maxrss_kib" in
#                              WORK/t.txt, its output in WORK/out.txt and err.txt (sqlite
#                              starts from an empty database). $SRC is the source tree.
ms_bench_sqlite_sql() { # FILE [PRAGMAS [LAST_QUERY [ROWS]]]
    /usr/bin/python3 - "$1" "${2-PRAGMA synchronous=OFF;}" "${3-}" "${4:-200000}" <<'PYEOF'
import sys
with open(sys.argv[1], 'w') as f:
    f.write("PRAGMA journal_mode=OFF;\n%sCREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, k INTEGER);\nBEGIN;\n" % (sys.argv[2] + "\n" if sys.argv[2] else ""))
    for i in range(int(sys.argv[4])):
        f.write("INSERT INTO t(name, v, k) VALUES('name-%d-%s', %d.5, %d);\n" % (i, 'x' * (i % 37), i, (i * 7919) % 100003))
    f.write("COMMIT;\nCREATE INDEX t_name ON t(name);\nCREATE INDEX t_k ON t(k, v);\n")
    f.write("SELECT count(*), sum(length(name)) FROM t;\n%s" % (sys.argv[3] + "\n" if sys.argv[3] else ""))
PYEOF
}

ms_bench_xz_input() {
    /usr/bin/python3 - "$1" <<'PYEOF'
import random, sys
r = random.Random(7)
words = ['%x' % r.getrandbits(24) for _ in range(5000)]
with open(sys.argv[1], 'w') as f:
    n = 0
    while n < 8 << 20:
        line = ' '.join(r.choice(words) for _ in range(12)) + '\n'
        f.write(line)
        n += len(line)
PYEOF
}

ms_bench_time() {
    w=$1; wl=$2; shift 2
    in=/dev/null
    case $wl in
    sqlite) rm -f "$w/db"; in=$w/sqlite.sql; set -- "$@" sqlite3 "$w/db" ;;
    python) set -- "$@" /usr/bin/python3 "$SRC/bench/churn.py" 8 ;;
    xz) set -- "$@" xz -T2 -3 --block-size=1MiB -c "$w/xz.in" ;;
    esac
    PYTHONMALLOC=malloc /usr/bin/time -f "%e %U %S %M" -o "$w/t.txt" "$@" < "$in" \
        > "$w/out.txt" 2> "$w/err.txt" || echo "  ($* : exit status $?)" >&2
}
