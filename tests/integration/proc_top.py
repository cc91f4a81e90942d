#!/usr/bin/env python3
"""`memsight top`: a stopped pa_layout appears with the PSS/USS/RSS/swap of its own
smaps_rollup, rows are ordered by the chosen key, and the formats agree."""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_common import Program, check, fail, memsight, rollup, stable  # noqa: E402

prog = Program("pa_layout", "--heap-mb", 64, "--mmap-mb", 8, "--threads", 1)
try:
    prog.stop()
    for key, field in (("pss", "pss_kb"), ("uss", "uss_kb"), ("rss", "rss_kb"), ("swap", "swap_kb")):
        for attempt in range(10):
            ro = rollup(prog.pid)
            d = json.loads(memsight("top", "--sort", key, "--format", "json").stdout)
            if stable(rollup(prog.pid), ro):
                break
        else:
            fail("the rollup never held still")
        rows = d["processes"]
        vals = [r[field] for r in rows]
        check(vals == sorted(vals, reverse=True), f"not sorted by {key}")
        mine = [r for r in rows if r["pid"] == prog.pid]
        check(len(mine) == 1, f"pid {prog.pid} missing from top --sort {key}")
        m = mine[0]
        check(m["rss_kb"] == ro["Rss"], f"rss {m['rss_kb']} != {ro['Rss']}")
        # Our own process maps the same libc pages while it reads, which moves the
        # stopped process's PSS of shared pages by at most half of them.
        shared = ro["Shared_Clean"] + ro["Shared_Dirty"]
        check(abs(m["pss_kb"] - ro["Pss"]) <= shared // 2 + 1, f"pss {m['pss_kb']} != {ro['Pss']}")
        # The same holds for USS: a clean file page only the stopped process had mapped
        # (a libc page it alone touched) counts as shared while top maps it too. Its
        # private dirty pages (the 64 MiB heap) stay its own.
        # A page may still move while top reads even though the rollups before and
        # after agree (seen once under load: one page off): two pages of slack.
        uss = ro["Private_Clean"] + ro["Private_Dirty"]
        check(ro["Private_Dirty"] - 8 <= m["uss_kb"] <= uss + 8, f"uss {m['uss_kb']} not in "
              f"[{ro['Private_Dirty']}, {uss}] (+-8 KiB)")
        check(m["swap_kb"] == ro["Swap"], "swap")
        check("pa_layout" in m["cmdline"], m["cmdline"])
        check(d["read"] >= 2, "top read fewer than two processes")
    # The 64 MiB heap makes it the largest USS here only if nothing else is larger, so
    # check the limit and the text/CSV forms instead.
    d = json.loads(memsight("top", "-n", "1", "--format", "json").stdout)
    check(len(d["processes"]) == 1, "-n 1")
    c = list(csv.reader(io.StringIO(memsight("top", "--format", "csv").stdout)))
    check(c[0][:4] == ["pid", "vss_kb", "rss_kb", "pss_kb"], "csv header")
    check(any(int(r[0]) == prog.pid for r in c[1:]), "csv lacks the pid")
    t = memsight("top").stdout
    check("TOTAL" in t and str(prog.pid) in t, "text output")
finally:
    prog.close()
# Processes that exit while top reads them, and processes it may not read: counted,
# never fatal.
import shutil  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402

stop = threading.Event()


def churn():
    while not stop.is_set():
        subprocess.run(["true"])


th = threading.Thread(target=churn)
th.start()
try:
    for _ in range(5):
        d = json.loads(memsight("top", "--format", "json").stdout)
        check(d["read"] >= 1, "top read nothing while processes churned")
finally:
    stop.set()
    th.join()
setpriv = shutil.which("setpriv")
if os.geteuid() == 0 and setpriv:
    r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                        os.environ["MEMSIGHT"], "top", "--format", "json"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"top as an unprivileged user exited {r.returncode}: {r.stderr}")
    d = json.loads(r.stdout)
    check(d["denied"] > 0, "an unprivileged top was denied nothing")

r = memsight("top", "--sort", "vss", check_rc=False)
check(r.returncode == 2, "bad sort key accepted")
print("ok")
