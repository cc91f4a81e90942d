#!/usr/bin/env python3
"""`memsight diff` and `memsight merge` on real snapshots of ex_trend from separate runs
(different processes, different load addresses): 4 steps against 6 steps differ by two
16 KiB steady leaks and nothing else that is live at exit; merged, the two runs sum."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

d = tmpdir("diffmerge")
a = [s for s in run_program(os.path.join(d, "a"), "ex_trend", "4") if s.endswith("-exit.msnap")][0]
b = [s for s in run_program(os.path.join(d, "b"), "ex_trend", "6") if s.endswith("-exit.msnap")][0]
ra, rb = report_json(a), report_json(b)


def by_leaf(rep):
    out = {}
    for st in rep["stacks"]:
        if st["frames"]:
            fn = st["frames"][0].get("function")
            out[fn] = out.get(fn, 0) + st["live_bytes"]
    return out


la, lb = by_leaf(ra), by_leaf(rb)
check(la["leak_steady"] == 4 * 16384 and lb["leak_steady"] == 6 * 16384, "%r %r" % (la, lb))

dj = json.loads(memsight("diff", "-f", "json", a, b))
check(dj["totals"]["delta_live_bytes"] == rb["totals"]["live_bytes"] - ra["totals"]["live_bytes"],
      "diff totals %r" % dj["totals"])
rows = {re.sub(r" \S+:\d+$", "", r["frames"][0]): r for r in dj["stacks"] if r["frames"]}
check(re.match(r"leak_steady ex_trend\.c:\d+$", [r["frames"][0] for r in dj["stacks"] if r["frames"] and
                                                 "leak_steady" in r["frames"][0]][0]),
      "diff frames carry file:line: %r" % dj["stacks"][:2])
check(rows["leak_steady"]["delta_live_bytes"] == 2 * 16384, "leak_steady %r" % rows["leak_steady"])
check(rows["jump_once"]["delta_live_bytes"] == 0, "jump_once %r" % rows["jump_once"])
# the same with stacks matched by module offsets
dp = json.loads(memsight("diff", "-f", "json", "--by", "pcs", a, b))
check(any(r["delta_live_bytes"] == 2 * 16384 and "leak_steady" in r["frames"][0]
          for r in dp["stacks"]), "by pcs: %r" % dp["stacks"][:3])
text = memsight("diff", a, b)
check("leak_steady" in text and "+32.0 KiB" in text, text)
col = memsight("diff", "-f", "collapsed", a, b)
check(any(l.endswith(" 65536 98304") and "leak_steady" in l for l in col.splitlines()), col)

out = os.path.join(d, "merged.msnap")
memsight("merge", "-o", out, a, b)
check(oct(os.stat(out).st_mode & 0o777) == "0o600", "merged file is not 0600")
rm = report_json(out)
for k in ("live_bytes", "live_blocks", "allocated_bytes", "allocated_blocks"):
    check(rm["totals"][k] == ra["totals"][k] + rb["totals"][k], "merged %s %r" % (k, rm["totals"]))
lm = by_leaf(rm)
check(lm["leak_steady"] == 10 * 16384 and lm["jump_once"] == 2 << 20, "merged stacks %r" % lm)
# a merged file reports, diffs and exports like any snapshot
memsight("report", "-f", "svg", "-o", os.path.join(d, "m.svg"), out)
# refuses to overwrite through nothing worse than a rename, and refuses other programs
p = subprocess.run([MEMSIGHT, "merge", "-o", os.path.join(d, "x.msnap"), a,
                    os.path.join(SOURCE, "tests", "data", "android", "game_v12.txt")],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode != 0 and "different program" in p.stderr and "--force" in p.stderr,
      "merge of two programs: %r" % p.stderr)
# diff of two programs: compared as asked, with a warning naming both (as trend does)
android = os.path.join(SOURCE, "tests", "data", "android", "game_v12.txt")
p = subprocess.run([MEMSIGHT, "diff", a, android], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True)
check(p.returncode == 0 and "warning:" in p.stderr and "different programs" in p.stderr
      and "game_v12.txt" in p.stderr, "diff of two programs: %r" % p.stderr)
p = subprocess.run([MEMSIGHT, "diff", a, b], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check("warning" not in p.stderr, "diff of one program warns: %r" % p.stderr)
print("ok: diff and merge of separate runs")
