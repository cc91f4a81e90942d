#!/usr/bin/env python3
"""Valgrind massif's format: `memsight trend -f massif` of ex_trend's series (one
snapshot written after every step) gives one massif snapshot per memsight snapshot whose
heap total is that snapshot's live heap and mmap bytes, plus the recorded peak as the
peak snapshot; the allocation trees name leak_steady and jump_once with file:line and
their bytes; valgrind's own ms_print reads the file; `report -f massif` of the exit
snapshot alone gives the same last snapshot; pprof refuses a terminal."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

d = tmpdir("massif")
snaps = run_program(d, "ex_trend", "6", "snap")
reps = sorted((report_json(s) for s in snaps),
              key=lambda r: (int(r["meta"]["snapshot_ns"]), int(r["meta"]["seq"])))
out = os.path.join(d, "massif.out")
memsight("trend", "-f", "massif", "-o", out, d)
text = open(out).read()
check(text.startswith("desc: ") and "\ntime_unit: ms\n" in text, text[:200])
blocks = re.split(r"#-----------\nsnapshot=\d+\n#-----------\n", text)[1:]
check(len(blocks) == len(reps) + 1, "%d massif snapshots for %d memsight ones" % (len(blocks), len(reps)))
heap = [int(re.search(r"mem_heap_B=(\d+)", b).group(1)) for b in blocks]
kinds = [re.search(r"heap_tree=(\w+)", b).group(1) for b in blocks]
check(kinds.count("peak") == 1, "peak snapshots: %r" % kinds)
# the peak comes before the snapshot that recorded it, even when its time (a coarse
# clock's) reads a few ms after that snapshot's
check(kinds[-1] != "peak", "the peak is placed after the exit snapshot: %r" % kinds)
detailed = [h for h, k in zip(heap, kinds) if k != "peak"]
want = [r["totals"]["heap_live_bytes"] + r["totals"]["mmap_live_bytes"] for r in reps]
check(detailed == want, "massif heap %r != live heap+mmap %r" % (detailed, want))
pk = heap[kinds.index("peak")]
check(pk == reps[-1]["totals"]["peak_live_bytes"], "massif peak %d" % pk)
times = [int(re.search(r"time=(\d+)", b).group(1)) for b in blocks]
check(times == sorted(times), "times not in order: %r" % times)
last = blocks[-1]
m = re.search(r"^ n\d+: (\d+) 0x[0-9a-f]+: leak_steady \(ex_trend\.c:\d+\)$", last, re.M)
check(m and int(m.group(1)) == 6 * 16384, "leak_steady node: %s" % last[:800])
m = re.search(r"^ n\d+: (\d+) 0x[0-9a-f]+: jump_once \(ex_trend\.c:\d+\)$", last, re.M)
check(m and int(m.group(1)) == 1 << 20, "jump_once node")
# each node's bytes are the sum of its children's (massif's invariant)
lines = [l for l in last.split("\n") if re.match(r"\s*n\d+: ", l)]
for i, l in enumerate(lines):
    ind = len(l) - len(l.lstrip())
    nk, b = re.match(r"\s*n(\d+): (\d+)", l).groups()
    kids = []
    for l2 in lines[i + 1:]:
        i2 = len(l2) - len(l2.lstrip())
        if i2 <= ind:
            break
        if i2 == ind + 1:
            kids.append(int(re.match(r"\s*n\d+: (\d+)", l2).group(1)))
    check(len(kids) == int(nk), "node %r has %d children listed" % (l, len(kids)))
    check(not kids or sum(kids) == int(b), "node %r: children sum %d" % (l, sum(kids)))
if shutil.which("ms_print"):
    p = subprocess.run(["ms_print", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0 and "leak_steady" in p.stdout, "ms_print: %s" % p.stderr[-500:])
exit_snap = [s for s in snaps if s.endswith("-exit.msnap")][0]
one = memsight("report", "-f", "massif", "--no-series", exit_snap)
check(re.split(r"#-----------\nsnapshot=\d+\n#-----------\n", one)[-1].split("heap_tree")[0]
      .replace("time=", "") .split("\n")[1:] == last.split("heap_tree")[0].split("\n")[1:],
      "report -f massif of the exit snapshot differs from the series' last")
# pprof is gzip data: not onto a terminal (script(1) gives the command one)
if shutil.which("script"):
    p = subprocess.run(["script", "-qec", "%s report -f pprof %s" % (MEMSIGHT, exit_snap), "/dev/null"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check("not for a terminal" in p.stdout and "\x1f\x8b" not in p.stdout, "pprof on a tty: %r" % p.stdout[:300])
print("ok: massif export of a series and of one snapshot; ms_print reads it")
