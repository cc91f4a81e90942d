#!/bin/sh
# `memsight leaks PID` on a running program (lk_serve): the scan's classes and its
# folded record with the allocating function and the sample text; then the same command
# on an agent in sampled mode (sample= or min_size=) must refuse with a clear message
# and touch nothing.
set -u
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/out.txt" ] && cat "$dir/out.txt"; exit 1; }

. "$(dirname "$0")/start_ready.sh"
start() { # start [run options...]: runs lk_serve under memsight, sets $pid
  start_ready lk_serve -q -o "$dir" "$@" -- "$MS_PROGRAMS/lk_serve"
}

start --leak-check=signal
"$MEMSIGHT" leaks --timeout 60 "$pid" > "$dir/out.txt" 2>&1 || fail "memsight leaks failed"
grep -Eq 'definitely lost +1000 B in 10 blocks' "$dir/out.txt" || fail "summary: 10 lost blocks"
grep -Eq 'still reachable +1000 B in 1 blocks' "$dir/out.txt" || fail "summary: 1 reachable block"
grep -q 'lk_serve_leak' "$dir/out.txt" || fail "the leaking function is not shown"
grep -q '|request 0: GET /index.html' "$dir/out.txt" || fail "the sample text is not shown"
snap=$(sed -n 's/^snapshot: //p' "$dir/out.txt")
[ -f "$snap" ] || fail "no snapshot file $snap"
"$MEMSIGHT" report --format json "$snap" > "$dir/report.json" || fail "report failed"
python3 - "$dir/report.json" <<'PY' || fail "JSON leaks/leak_records"
import json, sys
d = json.load(open(sys.argv[1]))
L = d["leaks"]
assert L["definitely_lost"] == {"blocks": 10, "bytes": 1000} or \
    (L["definitely_lost"]["blocks"], L["definitely_lost"]["bytes"]) == (10, 1000), L
recs = [r for r in d["leak_records"] if r["class"] == "definitely_lost"]
assert len(recs) == 1 and recs[0]["blocks"] == 10 and recs[0]["bytes"] == 1000, recs
assert any(f.get("function") == "lk_serve_leak" for f in recs[0]["frames"]), recs[0]["frames"]
assert bytes.fromhex(recs[0]["sample_hex"]).startswith(b"request "), recs[0]["sample_hex"]
PY
# a second scan of the same process works too (the program was not disturbed)
"$MEMSIGHT" leaks --timeout 60 "$pid" > "$dir/out.txt" 2>&1 || fail "second scan failed"
grep -Eq 'definitely lost +1000 B in 10 blocks' "$dir/out.txt" || fail "second scan summary"
kill "$pid"; wait 2>/dev/null; pid=

for opt in sample=4096 min_size=64; do
  start -O "$opt"
  if "$MEMSIGHT" leaks --timeout 5 "$pid" > "$dir/out.txt" 2>&1; then
    fail "an agent with $opt was scanned"
  fi
  grep -q "sampled mode ($opt)" "$dir/out.txt" || fail "no clear message for $opt"
  kill -0 "$pid" 2>/dev/null || fail "the program with $opt died"
  kill "$pid"; wait 2>/dev/null; pid=
done
echo "ok"
