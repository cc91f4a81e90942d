#!/bin/sh
# `make demo` end to end: the demo's deliberate leaks are found with their exact ground
# truth (20000 lines: 400 cache copies of which the last 64 stay cached, so 336 lost;
# 200 history copies of which the last stays referenced, so 199 lost), and the JSON
# report of the same snapshot agrees. Needs MEMSIGHT, MS_BUILD_DIR, MS_SOURCE_DIR.
set -u
out=$("$MS_SOURCE_DIR/scripts/demo.sh" "$MS_BUILD_DIR" 2>&1) || { echo "$out"; echo "FAIL demo.sh"; exit 1; }
fail=0
for want in "indexed 20000 lines, 900 distinct words" "in 336 blocks" "in 199 blocks" \
    "cache_remember" "parse_line" "(inlined) new_entry"; do
    if printf '%s\n' "$out" | grep -qF "$want"; then echo "ok   $want"; else echo "FAIL missing: $want"; fail=1; fi
done
snap=$(ls "$MS_BUILD_DIR"/demo-snapshots/memsight-*-exit.msnap | head -n 1)
"$MEMSIGHT" report --format json "$snap" | python3 -c '
import json, sys
d = json.load(sys.stdin)
recs = {}
for r in d["leak_records"]:
    fns = [f["function"] for f in r["frames"]]
    key = "cache_remember" if "cache_remember" in fns else "parse_line" if "parse_line" in fns else None
    if r["class"] == "definitely_lost" and key:
        recs[key] = r["blocks"]
assert recs == {"cache_remember": 336, "parse_line": 199}, recs
# 900 distinct words, each one entry block, allocated in the inlined new_entry.
words = [s for s in d["stacks"] if any(f["function"] == "new_entry" and f["inlined"] for f in s["frames"])]
assert len(words) == 1 and words[0]["live_blocks"] == 900, words
assert d["totals"]["mmap_live_bytes"] == 1 << 20, d["totals"]
print("ok   json agrees")
' || fail=1
exit $fail
