#!/bin/sh
# The leak scan's mark with and without the interior-pointer heuristics, counted under
# callgrind (instructions of ms_lk_root_range and ms_lk_mark; they do not move with the
# machine's load): bench-leak-mark.c's synthetic heap of N 64-byte blocks, a tree of start
# pointers and in every block an interior pointer 8 bytes into another one, half of them
# found before their block is reached (so that the heuristics run 500 000 times for a
# million blocks: far more often than in real heaps). Prints the counts and their ratios
# to the run without heuristics.
# usage: bench/bench-leak-mark.sh [N]   (default 1000000)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-1000000}
command -v valgrind >/dev/null || { echo "valgrind is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msmarkbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
cc -O2 -g -I"$SRC/src" -I"$SRC/include" -o "$WORK/mark" "$SRC/bench/bench-leak-mark.c" \
  "$SRC/src/agent/leak/leak_mark.c" "$SRC/src/agent/leak/leak_maps.c"
count() {
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$1" --toggle-collect=ms_lk_mark \
    --toggle-collect=ms_lk_root_range "$WORK/mark" "$N" "$2" > "$WORK/out.$1" 2> "$WORK/err.$1" ||
    { cat "$WORK/out.$1" "$WORK/err.$1" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/err.$1"
}
none=$(count none 0)
all=$(count all 0xf)
interior=$(count interior 0x1f)
echo "mark of $N blocks ($(cat "$WORK/out.none")), instructions:"
python3 - "$none" "$all" "$interior" <<'PY'
import sys
none, allh, inter = (int(x) for x in sys.argv[1:4])
print("  heuristics none            %12d  1.000" % none)
print("  all (valgrind's default)   %12d  %.3f" % (allh, allh / none))
print("  all + interior             %12d  %.3f" % (inter, inter / none))
PY
