#!/bin/sh
# Mid-run leak scan on a program holding ~1 GiB of live heap in 1 million blocks
# (bench-leaks.c): memsight (the program's pause and the child's scan time, from the
# snapshot, and the longest stall a ticker thread of the program saw), beside
# valgrind --leak-check=full (VALGRIND_DO_LEAK_CHECK) and LeakSanitizer preloaded
# (liblsan0, with a tiny preload that calls __lsan_init() first). Prints times and
# ratios; asserts nothing. Goals: pause < 50 ms, scan < 2 s. First, the same program with
# no tool makes one bare fork: the floor of any fork-based pause on this machine now.
# usage: bench/bench-leaks.sh [BUILD_DIR] [BLOCKS]
#   (SKIP_VALGRIND=1, SKIP_LSAN=1 to skip those)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
N=${2:-1000000}
MEMSIGHT=$BUILD/bin/memsight
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msleakbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
cc -O2 -g -pthread -o "$WORK/prog" "$SRC/bench/bench-leaks.c"

field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" "$2" | head -1; }

echo "== no tool: one bare fork of the same program ($N blocks)"
"$WORK/prog" "$N" > "$WORK/fork.txt" 2> "$WORK/fork.err" || { cat "$WORK/fork.err" >&2; exit 1; }
ff=$(field check_s "$WORK/fork.txt")
echo "fork: $(python3 -c "print('%.1f' % ($ff * 1e3))") ms (the program's threads run on meanwhile)"

echo "== memsight ($N blocks)"
"$MEMSIGHT" run -q -o "$WORK" -- "$WORK/prog" "$N" > "$WORK/ms.txt" 2> "$WORK/ms.err" || {
  cat "$WORK/ms.err" >&2; exit 1; }
cat "$WORK/ms.err"
snap=$(field snapshot "$WORK/ms.txt")
"$MEMSIGHT" report --format json "$snap" > "$WORK/ms.json"
python3 - "$WORK/ms.json" "$WORK/ms.txt" "$snap" <<'PY'
import json, re, struct, sys
L = json.load(open(sys.argv[1]))["leaks"]
r = open(sys.argv[2]).read()
# the scan's statistics after the LEAK records (docs/snapshot-format.md 4.10)
d, off, st = open(sys.argv[3], "rb").read(), 32, {}
while off + 24 <= len(d):
    typ, _, ln, _, _ = struct.unpack_from("<IIQII", d, off)
    if typ == struct.unpack("<I", b"LEAK")[0]:
        q = off + 24 + 88
        q += 4 + 72 * struct.unpack_from("<I", d, q)[0]
        cnt = struct.unpack_from("<I", d, q)[0]; q += 4
        for _ in range(cnt):
            k = struct.unpack_from("<I", d, q)[0]
            st[d[q + 4:q + 4 + k].decode()] = struct.unpack_from("<Q", d, q + 4 + k)[0]
            q += 12 + k
    off += 24 + ((ln + 7) & ~7)
print("memsight: pause = stopping %.2f ms + fork %.1f ms; child: collect %.0f ms, sort %.0f ms, "
      "roots %.0f ms, mark %.0f ms, classify %.0f ms" % tuple(
          st.get(k, 0) / 1e6 for k in ("stop_ns", "fork_ns", "collect_ns", "sort_ns", "roots_ns",
                                       "mark_ns", "classify_ns")))
check = float(re.search(r"check_s=([\d.]+)", r).group(1))
stall = float(re.search(r"max_stall_ms=([\d.]+)", r).group(1))
print("memsight: pause %.1f ms (goal < 50), child scan %.3f s (goal < 2), whole call %.3f s, "
      "longest stall seen by a program thread %.1f ms" % (L["pause_ns"] / 1e6, L["scan_ns"] / 1e9, check, stall))
print("memsight: definitely lost %d blocks (%d B), indirectly %d, possibly %d, reachable %d" % (
    L["definitely_lost"]["blocks"], L["definitely_lost"]["bytes"], L["indirectly_lost"]["blocks"],
    L["possibly_lost"]["blocks"], L["still_reachable"]["blocks"]))
open(sys.argv[2] + ".check", "w").write("%f %f\n" % (check, L["pause_ns"] / 1e9))
PY

echo "== memsight, heap on transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)"
# fork copies one entry per 2 MiB instead of one per 4 KiB page: the pause shrinks
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$MEMSIGHT" run -q -o "$WORK" -- "$WORK/prog" "$N" \
  > "$WORK/msh.txt" 2> "$WORK/msh.err" || { cat "$WORK/msh.err" >&2; exit 1; }
snap=$(field snapshot "$WORK/msh.txt")
"$MEMSIGHT" report --format json "$snap" > "$WORK/msh.json"
python3 - "$WORK/msh.json" "$WORK/msh.txt" <<'PY'
import json, re, sys
L = json.load(open(sys.argv[1]))["leaks"]
r = open(sys.argv[2]).read()
stall = float(re.search(r"max_stall_ms=([\d.]+)", r).group(1))
print("memsight (THP heap): pause %.1f ms, child scan %.3f s, longest stall %.1f ms" % (
    L["pause_ns"] / 1e6, L["scan_ns"] / 1e9, stall))
PY

echo "== LeakSanitizer (liblsan0 preloaded)"
LSAN=$(ls /usr/lib/x86_64-linux-gnu/liblsan.so.0 2>/dev/null || true)
if [ "${SKIP_LSAN:-0}" = 1 ]; then
  echo "lsan skipped"
elif [ -n "$LSAN" ]; then
  cat > "$WORK/lsan_first.c" <<'CEOF'
/* preloaded before liblsan: initialises LeakSanitizer before the program's first malloc */
void __lsan_init(void);
__attribute__((constructor(101))) static void first(void) { __lsan_init(); }
CEOF
  cc -O2 -shared -fPIC -o "$WORK/lsan_first.so" "$WORK/lsan_first.c" "$LSAN"
  LD_PRELOAD="$WORK/lsan_first.so $LSAN" LSAN_OPTIONS=detect_leaks=1:exitcode=0 \
    "$WORK/prog" "$N" > "$WORK/lsan.txt" 2> "$WORK/lsan.err" || true
  grep -E '^bench:|SUMMARY' "$WORK/lsan.err" || true
  lc=$(field check_s "$WORK/lsan.txt"); ls_=$(field max_stall_ms "$WORK/lsan.txt")
  echo "lsan: check (all threads stopped throughout) ${lc:-?} s, longest stall ${ls_:-?} ms"
else
  echo "liblsan0 not installed"
fi

echo "== valgrind --leak-check=full"
if [ "${SKIP_VALGRIND:-0}" != 1 ] && command -v valgrind >/dev/null; then
  valgrind --leak-check=full --show-leak-kinds=definite "$WORK/prog" "$N" \
    > "$WORK/vg.txt" 2> "$WORK/vg.err" || true
  grep -E 'bench:|definitely lost:' "$WORK/vg.err" | head -2 | sed 's/==[0-9]*== *//'
  vc=$(field check_s "$WORK/vg.txt")
  echo "valgrind: check ${vc:-?} s (the program runs under valgrind throughout)"
else
  echo "valgrind skipped"
fi

read mc mp < "$WORK/ms.txt.check"
python3 - "$mc" "$mp" "${lc:-0}" "${vc:-0}" "$ff" <<'PY'
import sys
mc, mp, lc, vc, ff = map(float, sys.argv[1:])
if ff > 0:
    print("== memsight's pause %.1f ms = %.2fx a bare fork of the same program without the agent "
          "(%.1f ms)" % (mp * 1e3, mp / ff, ff * 1e3))
print("== ratios against memsight (time the program's threads were stopped; time of the check)")
for name, t in (("lsan", lc), ("valgrind", vc)):
    if t > 0 and mp > 0 and mc > 0:
        print("  %-9s stopped %8.3f s = %7.1fx memsight's pause; check %.3f s = %5.1fx memsight's" % (
            name, t, t / mp, t, t / mc))
PY
