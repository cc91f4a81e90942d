#!/usr/bin/env python3
"""What a heaptrack user looks for, on ex_sites and the demo, against their ground truth:
the peak recorded by default (exact for one thread: the 300 000 kept bytes plus the two
pair blocks held together) with the stacks that held it; temporary allocations per call
site (N at the churning line, none at the pairs); the allocation size histogram (N, N/4,
N/4 and 100 in their size classes, summing to every recorded allocation); the churn table
of the text report and -m reordering it; the exit summary's peak, and with
--leak-check=exit the demo's leak verdict and lost stacks as the JSON report has them."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

N = 200000
src = open(os.path.join(SOURCE, "tests", "programs", "ex_sites.c")).read().split("\n")
line_of = {tag: i + 1 for i, l in enumerate(src) for tag in ("the churning line", "the keeping line",
                                                               "malloc(PAIR_A)", "malloc(PAIR_B)") if tag in l}
check(len(line_of) == 4, "source lines: %r" % line_of)


def site(rep, tag):
    fn = "worker" if "line" in tag else "pairs"
    for st in rep["stacks"]:
        f = st["frames"][0] if st["frames"] else {}
        if f.get("function") == fn and f.get("line") == line_of[tag]:
            return st
    fail("no stack at %s:%d" % (fn, line_of[tag]))


d = tmpdir("sites")
p = subprocess.run([MEMSIGHT, "run", "-o", d, "--", os.path.join(PROGRAMS, "ex_sites"), str(N)],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 0, "ex_sites: %s" % p.stderr)
snap = [s for s in snapshots(d) if s.endswith("-exit.msnap")][0]
rep = report_json(snap)
t = rep["totals"]

# 1. the peak, by default, and who held it
churn, keep, pa, pb = (site(rep, k) for k in ("the churning line", "the keeping line",
                                               "malloc(PAIR_A)", "malloc(PAIR_B)"))
check((keep["peak_live_bytes"], keep["peak_live_blocks"]) == (300000, 100), "keep at peak %r" % keep)
check((pa["peak_live_bytes"], pb["peak_live_bytes"]) == (9000, 20000), "pairs at peak %r %r" % (pa, pb))
check(churn["peak_live_bytes"] == 0, "churn at peak %r" % churn)
others = sum(st.get("peak_live_bytes", 0) for st in rep["stacks"]) - 329000
check(t["peak_live_bytes"] == 329000 + others and 0 <= others < 8192,
      "peak %d, other stacks at the peak %d" % (t["peak_live_bytes"], others))

# 2. temporaries per site
check(churn["temporary_blocks"] == N, "churn temporaries %d" % churn["temporary_blocks"])
check(pa["temporary_blocks"] == 0 and pb["temporary_blocks"] == 0 and keep["temporary_blocks"] == 0,
      "temporaries elsewhere")
check(N <= t["temporary_blocks"] < N + 50, "total temporaries %d" % t["temporary_blocks"])

# 3. the size histogram
h = {b["min_size"]: b for b in rep["size_histogram"]}
check(h[32768]["allocations"] == N and h[32768]["max_size"] == 65535, "40000-byte class %r" % h.get(32768))
check(h[8192]["allocations"] == N // 4 and h[16384]["allocations"] == N // 4, "pair classes")
check(100 <= h[2048]["allocations"] < 110, "3000-byte class %r" % h.get(2048))
check(sum(b["allocations"] for b in h.values()) == t["heap_allocated_blocks"],
      "histogram sums to %d, heap allocations %d" % (sum(b["allocations"] for b in h.values()),
                                                      t["heap_allocated_blocks"]))

# 4. the text report: a churn table, the histogram, and -m ordering the tables
txt = memsight("report", snap)
sect = txt.split("stacks by allocations (churn):")[1]
first = sect.split("  #2")[0]
check("%d temporary" % N in first and "ex_sites.c:%d" % line_of["the churning line"] in first,
      "churn table: %s" % first)
check("Temporary: " in txt and "Allocation sizes (" in txt, "totals lack temporaries or histogram")
txt = memsight("report", "-m", "alloc-bytes", snap)
tops = [l for l in txt.split("\n") if l.startswith("Top ")]
check(tops[0].endswith("by allocated bytes:"), "first table with -m alloc-bytes: %s" % tops[0])
first = txt.split(tops[0])[1].split("  #2")[0]
check("ex_sites.c:%d" % line_of["the churning line"] in first, "alloc-bytes #1: %s" % first)

# 5. the exit summary: the peak and who held it
err = p.stderr
check("memsight: peak 321.3 KiB" in err and "#1  293.0 KiB in 100 blocks at the peak" in err,
      "summary peak: %s" % err)
check("%d temporary allocations" % N in err, "summary temporaries")

# 6. --leak-check=exit: the verdict and the lost stacks, as in the JSON report
d2 = tmpdir("sites-leak")
p = subprocess.run([MEMSIGHT, "run", "--leak-check", "exit", "-o", d2, "--",
                    os.path.join(BUILD, "examples", "demo"), "20000"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 0, "demo: %s" % p.stderr)
lrep = report_json([s for s in snapshots(d2) if s.endswith("-exit.msnap")][0])
err = p.stderr
check("memsight: leak check: memory was lost" in err, "verdict: %s" % err)
dl = lrep["leaks"]["definitely_lost"]
check(dl["blocks"] == 535 and ("in %d blocks" % dl["blocks"]) in err.split("definitely lost")[1].split("\n")[0],
      "definitely lost %r vs %s" % (dl, err))
lost = err.split("lost stacks:")[1]
check("definitely lost" in lost.split("#2")[0] and "in 336 blocks" in lost.split("#2")[0]
      and "cache_remember" in lost.split("#2")[0] and "in 199 blocks" in lost and "parse_line" in lost,
      "lost stacks: %s" % lost)
check(err.index("leak check") < err.index("stacks by live bytes"), "verdict before the live stacks")
print("ok: peak, temporaries, histogram, churn table, -m order and the exit summary")
