#!/bin/sh
# The leak scan's interior-pointer heuristics beyond the comparison with valgrind
# (leaks_vs_valgrind_heur*): LeakSanitizer's rule (interior) keeps every block held by
# any interior pointer; the agent option leak_heuristics; memsight leaks
# --leak-check-heuristics on a running program, against the agent's default; bad values
# refused with a message. lv_heur holds one block of each of valgrind's four shapes, a
# block reached from one of them, and 4 blocks (196 bytes) held by other interior pointers.
set -u
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/out.txt" ] && cat "$dir/out.txt"; exit 1; }
prog=$MS_PROGRAMS/lv_heur

# json FILE EXPR: asserts a Python expression over the report's "leaks" object (L)
json() {
  "$MEMSIGHT" report --format json "$1" > "$dir/r.json" || fail "report of $1"
  python3 - "$dir/r.json" "$2" <<'PY' || fail "$2"
import json, sys
d = json.load(open(sys.argv[1]))
L = d["leaks"]
H = d["leak_heuristics"]
V = {k: (v["blocks"], v["bytes"]) for k, v in H["reachable_via_heuristic"].items()}
ok = eval(sys.argv[2])
if not ok:
    print("leaks:", L)
sys.exit(0 if ok else 1)
PY
}

# 1. memsight run --leak-check-heuristics=all,interior: nothing possibly lost
mkdir "$dir/a"
"$MEMSIGHT" run -o "$dir/a" --leak-check=exit --leak-check-heuristics=all,interior -- "$prog" \
  > "$dir/out.txt" 2>&1 || fail "memsight run"
grep -q 'of which reachable via heuristic' "$dir/out.txt" || fail "the summary names no heuristic"
grep -Eq 'interior +196 B in 4 blocks' "$dir/out.txt" || fail "the summary: interior 4 blocks"
snap=$(ls "$dir"/a/*-exit.msnap)
json "$snap" 'H["in_force"] == "stdstring,length64,newarray,multipleinheritance,interior" and L["possibly_lost"]["blocks"] == 0 and V["interior"] == (4, 196) and V["length64"] == (1, 48) and V["stdstring"] == (1, 109)'

# 2. the agent option, directly: newarray alone takes the length64 block for a new[] too
# (40 % 40 == 0), and the block that one holds is reachable with them: 9 - 3 possibly lost
mkdir "$dir/b"
MEMSIGHT_OPTIONS="out=$dir/b,leak_check=exit,leak_heuristics=newarray" LD_PRELOAD="$MS_AGENT" \
  "$prog" > /dev/null 2>&1 || fail "the program under MEMSIGHT_OPTIONS"
snap=$(ls "$dir"/b/*-exit.msnap)
json "$snap" 'H["in_force"] == "newarray" and V == {"newarray": (2, 104)} and (L["possibly_lost"]["blocks"], L["possibly_lost"]["bytes"]) == (6, 337)'

# 3. bad values: refused before anything runs, with the accepted names
if "$MEMSIGHT" run -o "$dir" --leak-check-heuristics=stdstring,bogus -- true > "$dir/out.txt" 2>&1; then
  fail "a bad --leak-check-heuristics was accepted"
fi
grep -q 'leak-check-heuristics' "$dir/out.txt" && grep -q 'multipleinheritance' "$dir/out.txt" ||
  fail "no clear message for a bad --leak-check-heuristics"

# 4. memsight leaks on the running program: its own set per request, else the agent's
. "$(dirname "$0")/start_ready.sh"
start_ready lv_heur -q -o "$dir" --leak-check=signal -- "$prog" wait
"$MEMSIGHT" leaks --timeout 60 --leak-check-heuristics=none "$pid" > "$dir/out.txt" 2>&1 ||
  fail "memsight leaks --leak-check-heuristics=none"
grep -Eq 'possibly lost +465 B in 9 blocks' "$dir/out.txt" || fail "none: 9 possibly lost blocks"
grep -q 'via heuristic' "$dir/out.txt" && fail "none: a heuristic was used"
"$MEMSIGHT" leaks --timeout 60 "$pid" > "$dir/out.txt" 2>&1 || fail "memsight leaks"
grep -Eq 'possibly lost +196 B in 4 blocks' "$dir/out.txt" || fail "default: 4 possibly lost blocks"
grep -Eq 'length64 +48 B in 1 blocks' "$dir/out.txt" || fail "default: length64 not shown"
snap=$(sed -n 's/^snapshot: //p' "$dir/out.txt")
json "$snap" 'sorted(r["reachable_via_heuristic"] for r in d["leak_records"] if "reachable_via_heuristic" in r) == ["length64", "multipleinheritance", "newarray", "stdstring"]'
"$MEMSIGHT" leaks --timeout 60 --leak-check-heuristics=interior "$pid" > "$dir/out.txt" 2>&1 ||
  fail "memsight leaks --leak-check-heuristics=interior"
grep -Eq 'possibly lost +0 B in 0 blocks' "$dir/out.txt" || fail "interior: nothing possibly lost"
grep -Eq 'interior +[0-9]+ B in 8 blocks' "$dir/out.txt" || fail "interior: 8 blocks kept by it"
if "$MEMSIGHT" leaks --leak-check-heuristics=some "$pid" > "$dir/out.txt" 2>&1; then
  fail "memsight leaks took a bad heuristic"
fi
grep -q 'stdstring, length64' "$dir/out.txt" || fail "memsight leaks: no clear message"
kill -0 "$pid" 2>/dev/null || fail "the program died"
echo "ok"
