#!/bin/sh
# Real programs under `memsight run`: python3 (dict/list/str churn), sqlite3 (a script
# that inserts and indexes rows), git --version. Output, errors and exit status must be
# those of the plain run; each must leave an exit snapshot whose JSON report holds
# symbolized stacks. Needs MEMSIGHT (set by CTest).
set -u
fail=0
T=$(mktemp -d /tmp/ms-real-XXXXXX)
trap 'rm -rf "$T"' EXIT

cat > "$T/churn.py" <<'EOF'
import sys
d = {}
for i in range(200000):
    d["k%d" % i] = [i, str(i) * 3]
    if i % 3 == 0:
        del d["k%d" % (i // 2)]
print(len(d), sum(len(v[1]) for v in d.values()))
print("to stderr", file=sys.stderr)
sys.exit(3)
EOF
{
    echo "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);"
    echo "BEGIN;"
    i=0
    while [ $i -lt 5000 ]; do echo "INSERT INTO t(name, v) VALUES ('row$i', $i.5);"; i=$((i + 1)); done
    echo "COMMIT;"
    echo "CREATE INDEX t_name ON t(name);"
    echo "SELECT count(*), sum(v) FROM t WHERE name LIKE 'row1%';"
} > "$T/script.sql"

# name | command (run in sh) | whether its exit snapshot is required
check() {
    name=$1 cmd=$2
    sh -c "$cmd" >"$T/ref.out" 2>"$T/ref.err" </dev/null; ref=$?
    rm -rf "$T/snaps"
    MS="$MEMSIGHT run -q -o $T/snaps --"
    sh -c "$MS $cmd" >"$T/run.out" 2>"$T/run.err" </dev/null; got=$?
    if [ "$got" = "$ref" ] && cmp -s "$T/ref.out" "$T/run.out" && cmp -s "$T/ref.err" "$T/run.err"; then
        echo "ok   $name: same output, errors and exit status ($ref)"
    else
        echo "FAIL $name: status $got (plain $ref); stdout/stderr:"; diff "$T/ref.out" "$T/run.out" | head -5
        diff "$T/ref.err" "$T/run.err" | head -5; fail=1
    fi
    snap=$(ls "$T"/snaps/memsight-*-exit.msnap 2>/dev/null | head -n 1)
    if [ -z "$snap" ]; then
        echo "FAIL $name: no exit snapshot"; fail=1; return
    fi
    if "$MEMSIGHT" report --format json --top 20 "$snap" | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["totals"]
assert t["allocated_blocks"] >= t["live_blocks"] > 0, t
assert t["live_bytes"] == t["heap_live_bytes"] + t["mmap_live_bytes"] + t["stack_live_bytes"], t
assert d["stacks"] and all(s["kind"] in ("heap", "mmap", "stack") for s in d["stacks"])
named = sum(1 for s in d["stacks"] for f in s["frames"] if f["function"])
assert named > 0, "no symbolized frame"
'; then echo "ok   $name: JSON report of its snapshot"; else echo "FAIL $name: report"; fail=1; fi
}

# The interpreter itself, not a wrapper script that would exec it (pyenv shims do).
PY=$(python3 -c 'import sys; print(sys.executable)')
check python3 "$PY $T/churn.py"
check sqlite3 "sqlite3 :memory: < $T/script.sql"
check git "git --version"
exit $fail
