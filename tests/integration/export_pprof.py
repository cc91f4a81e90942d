#!/usr/bin/env python3
"""pprof export read back by `go tool pprof`: its totals for all four sample types and
its top functions match `memsight report`'s JSON for the same snapshot of ex_trend
(which knows its own ground truth: 8 x 16 KiB steady, 1 MiB once, a 4 KiB cache)."""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

if not shutil.which("go"):
    print("go not installed: skipped")
    sys.exit(SKIP)

d = tmpdir("pprof")
snap = [s for s in run_program(d, "ex_trend", "8") if s.endswith("-exit.msnap")]
check(len(snap) == 1, "expected one exit snapshot, got %r" % snap)
snap = snap[0]
rep = report_json(snap)
tot = rep["totals"]
pb = os.path.join(d, "out.pb.gz")
memsight("report", "-f", "pprof", "-o", pb, snap)
with open(pb, "rb") as f:
    check(f.read(2) == b"\x1f\x8b", "pprof output is not gzip'd")
check(oct(os.stat(pb).st_mode & 0o777) == "0o600", "pprof file is not 0600")

# ground truth of the program, as the report sees it
by_leaf = collections.defaultdict(lambda: [0, 0])
for st in rep["stacks"]:
    leaf = st["frames"][0].get("function") if st["frames"] else None
    by_leaf[leaf][0] += st["live_bytes"]
    by_leaf[leaf][1] += st["live_blocks"]
check(by_leaf["leak_steady"][0] == 8 * 16384, "report: leak_steady %r" % by_leaf["leak_steady"])
check(by_leaf["jump_once"][0] == 1 << 20, "report: jump_once %r" % by_leaf["jump_once"])

for index, key in (("inuse_space", "live_bytes"), ("inuse_objects", "live_blocks"),
                   ("alloc_space", "allocated_bytes"), ("alloc_objects", "allocated_blocks")):
    rows, total = pprof_top(pb, index)
    check(total == tot[key], "%s: pprof total %r != report %s %r" % (index, total, key, tot[key]))
    if index.startswith("inuse"):
        col = 0 if index == "inuse_space" else 1
        # the report's top three stacks by this value: same numbers as pprof's flat
        top = sorted(rep["stacks"], key=lambda s: -s[key])[:3]
        for st in top:
            fn = st["frames"][0]["function"]
            check(fn in rows, "%s: %s missing from pprof -top: %r" % (index, fn, sorted(rows)))
            check(rows[fn][0] == by_leaf[fn][col],
                  "%s: %s flat %d != report %d" % (index, fn, rows[fn][0], by_leaf[fn][col]))
        # every live byte of the program is under main
        check(rows["main"][1] >= by_leaf["leak_steady"][col] + by_leaf["jump_once"][col],
              "%s: main's cum %r too small" % (index, rows["main"]))

# file names and lines, mapping with the build-id, thread labels
raw = pprof("-raw", pb)
check("ex_trend.c" in pprof("-list=leak_steady", pb) or "ex_trend.c" in raw,
      "no source file in the profile")
check("thread_id:" in raw, "no thread labels:\n" + raw[:2000])
check("Build ID:" in pprof("-top", pb), "no build-id in the main mapping")

# sampled mode: counters are the agent's estimates; pprof says how they were sampled
ds = tmpdir("pprof-sampled")
memsight("run", "-q", "-o", ds, "-O", "sample=4096", "--", os.path.join(PROGRAMS, "ex_trend"), "8")
ss = [s for s in snapshots(ds) if s.endswith("-exit.msnap")][0]
rs = report_json(ss)
check(rs["sampled"], "snapshot taken with sample=4096 is not marked sampled")
pbs = os.path.join(ds, "s.pb.gz")
memsight("report", "-f", "pprof", "-o", pbs, ss)
raw = pprof("-raw", pbs)
check("PeriodType: space bytes" in raw and "Period: 4096" in raw, "sampled period:\n" + raw[:600])
_, total = pprof_top(pbs, "inuse_space")
check(total == rs["totals"]["live_bytes"], "sampled total %r != %r" % (total, rs["totals"]))
print("ok: pprof totals and top functions match the report")
