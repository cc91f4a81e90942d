#!/usr/bin/env python3
"""Collapsed stacks (`memsight report -f collapsed`) as flamegraph.pl, speedscope and
inferno read them: each line parses with their line rules (the value after the last
space, frames split on ';'); frames are function names, the allocation site keeps its
file:line, so ex_sites' two call sites in worker() (the churning line, the keeping line)
are two lines with their own counts, and inlined frames carry flamegraph.pl's "_[i]".
The whole output equals what the JSON report's frames give under those rules (python3
and ex_sites), and the values sum to the totals."""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

# flamegraph.pl: my ($stack, $samples) = (/^(.*)\s+?(\d+(?:\.\d*)?)$/); speedscope's
# folded importer: /^(.*) (\d+)$/
FLAMEGRAPH_PL = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")
SPEEDSCOPE = re.compile(r"^(.*) (\d+)$")


def parse(text):
    out = collections.Counter()
    for line in text.splitlines():
        a, b = FLAMEGRAPH_PL.match(line), SPEEDSCOPE.match(line)
        check(a and b and a.groups() == b.groups(), "line not read alike: %r" % line)
        check(all(f for f in a.group(1).split(";")), "an empty frame: %r" % line)
        out[a.group(1)] += int(a.group(2))
    return out


def expected(rep, metric):
    """The collapsed lines the JSON report's frames give: root first, function names,
    "_[i]" on inlined frames, the innermost with its file:line."""
    roots = {"mmap": ["[mmap]"], "stack": ["[thread stacks]"]}
    out = collections.Counter()
    for st in rep["stacks"]:
        if st["kind"] == "reserved" or not st[metric]:
            continue
        names = []
        for i, f in enumerate(st["frames"]):
            if f["function"]:
                n = f["function"]
                if i == 0 and f["file"]:
                    n += " %s:%d" % (os.path.basename(f["file"]), f["line"] or 0)
                n += "_[i]" if f["inlined"] else ""
            elif f["module"]:
                n = "%s+%s" % (os.path.basename(f["module"]), f["module_offset"])
            else:
                n = f["address"]
            names.append(n.replace(";", "_"))
        names += roots.get(st["kind"], [])
        out[";".join(reversed(names or ["[no stack]"]))] += st[metric]
    return out


d = tmpdir("collapsed")
snap = run_program(os.path.join(d, "sites"), "ex_sites", "4000")[-1]
rep = report_json(snap)
src = open(os.path.join(SOURCE, "tests", "programs", "ex_sites.c")).read().split("\n")
line_of = {tag: i + 1 for i, l in enumerate(src) for tag in ("the churning line", "the keeping line")
           if tag in l}
for metric, flag in (("live_bytes", "live-bytes"), ("allocated_blocks", "alloc-blocks")):
    got = parse(memsight("report", "-f", "collapsed", "-m", flag, snap))
    check(got == expected(rep, metric), "ex_sites %s: %r\n!=\n%r" % (flag, got, expected(rep, metric)))
    check(sum(got.values()) == sum(st[metric] for st in rep["stacks"] if st["kind"] != "reserved"),
          "ex_sites %s: the values do not sum to the total" % flag)
blocks = parse(memsight("report", "-f", "collapsed", "-m", "alloc-blocks", snap))
churn = [v for k, v in blocks.items() if k.endswith(";worker ex_sites.c:%d" % line_of["the churning line"])]
keep = [v for k, v in blocks.items() if k.endswith(";worker ex_sites.c:%d" % line_of["the keeping line"])]
check(churn == [4000] and keep == [100], "worker's two call sites: churn %r keep %r\n%r" % (churn, keep, blocks))
print("ok: ex_sites, the two call sites of worker apart")

py = os.path.join(d, "py")
os.makedirs(py)
memsight("run", "-q", "-O", "max_depth=16", "-o", py, "--", "/usr/bin/python3", "-S", "-c",
         "d = {str(i): [i] for i in range(5000)}")
psnap = snapshots(py)[-1]
prep = report_json(psnap)
got = parse(memsight("report", "-f", "collapsed", psnap))
check(got == expected(prep, "live_bytes"), "python3: collapsed differs from the JSON frames")
check(any("_[i]" in k for k in got) or not any(f["inlined"] for st in prep["stacks"] for f in st["frames"]),
      "python3: inlined frames without _[i]")
print("ok: python3, %d lines" % len(got))
