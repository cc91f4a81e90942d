#!/usr/bin/env python3
"""`memsight smaps PID` against the kernel and a ground-truth program: on a stopped
pa_layout with a few thousand mappings, totals agree with smaps_rollup to the kB (PSS:
within the kernel's per-mapping truncation), categories hold the known amounts, the
three formats agree, and bad input gives clean errors."""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_common import Program, check, fail, memsight, rollup, stable  # noqa: E402

prog = Program("pa_layout", "--maps", 3000, "--heap-mb", 16, "--mmap-mb", 24, "--threads", 3,
               "--stack-kb", 1024, "--arena-mb", 8, "--shm-mb", 4)
try:
    t = prog.truth
    prog.stop()
    # A stopped process's own pages do not change (the rollups before and after our read
    # must agree), but its PSS does when another process mapping the same shared pages
    # starts or exits: PSS is compared within the share such changes can move.
    for attempt in range(10):
        ro = rollup(prog.pid)
        r = memsight("smaps", prog.pid, "--format", "json")
        if stable(rollup(prog.pid), ro):
            break
    else:
        fail("the rollup never held still")
    d = json.loads(r.stdout)
    tot = d["totals"]
    check(tot["mappings"] >= 3000 * 2, f"only {tot['mappings']} mappings")
    for ours, theirs in (("rss_kb", "Rss"), ("swap_kb", "Swap"),
                         ("private_dirty_kb", "Private_Dirty"),
                         ("shared_dirty_kb", "Shared_Dirty")):
        check(tot[ours] == ro[theirs], f"{ours} {tot[ours]} != rollup {theirs} {ro[theirs]}")
    # A clean file page that only the stopped process had mapped (a libc page it alone
    # touched) counts as shared while our own process maps it too: clean pages may move
    # from private to shared during the read, never the other way, and their sum holds.
    clean = tot["private_clean_kb"] + tot["shared_clean_kb"]
    check(clean == ro["Private_Clean"] + ro["Shared_Clean"],
          f"clean {clean} != rollup {ro['Private_Clean'] + ro['Shared_Clean']}")
    check(tot["private_clean_kb"] <= ro["Private_Clean"],
          f"private clean {tot['private_clean_kb']} > rollup {ro['Private_Clean']}")
    check(tot["uss_kb"] == tot["private_clean_kb"] + tot["private_dirty_kb"],
          "uss != private clean+dirty")
    # The kernel truncates each mapping's PSS to kB; the rollup truncates once.
    # Our own process shares libc pages while it reads, which moves the PSS of shared
    # pages by at most half of them.
    shared = ro["Shared_Clean"] + ro["Shared_Dirty"]
    check(-shared // 2 <= ro["Pss"] - tot["pss_kb"] < tot["mappings"] + shared // 2,
          f"pss {tot['pss_kb']} vs rollup {ro['Pss']}")
    check(abs(tot["swap_pss_kb"] - ro.get("SwapPss", 0)) < tot["mappings"], "swap_pss")

    cats = {c["name"]: c for c in d["categories"]}
    for k in ("native_heap", "stack", "code", "file", "anon", "shmem", "guard", "other"):
        check(k in cats, f"category {k} missing")
        for f in ("rss_kb", "pss_kb", "private_dirty_kb", "swap_kb"):
            check(f in cats[k], f"{k}.{f} missing")
    check(sum(c["rss_kb"] for c in cats.values()) == tot["rss_kb"], "categories do not add up")
    heap_kb = (int(t["heap_bytes"]) + int(t["arena_bytes"])) // 1024
    nh = cats["native_heap"]["rss_kb"]
    check(heap_kb <= nh <= heap_kb * 1.03 + 512, f"native_heap {nh} kB for {heap_kb} kB held")
    shm_kb = int(t["shm_bytes"]) // 1024
    check(cats["shmem"]["rss_kb"] == shm_kb, f"shmem {cats['shmem']['rss_kb']} != {shm_kb}")
    # The small maps (4 kB touched each) and the 24 MiB mmap are anonymous mmap.
    mmap_kb = int(t["mmap_bytes"]) // 1024
    anon = cats["anon"]["rss_kb"]
    check(mmap_kb + 3000 * 4 <= anon <= mmap_kb + 3000 * 4 + 1024, f"anon {anon} kB")
    # Every thread has its stack, found by its stack pointer, with the touched depth.
    tids = set(int(x) for x in t["tids"].split(","))
    stacks = [m for m in d["mappings"] if m["category"] == "stack" and m["perms"] == "rw-p"]
    found = {m.get("tid") for m in stacks}
    check(tids <= found, f"threads {tids - found} have no stack mapping")
    for m in stacks:
        if m.get("tid") in tids:
            check(m["rss_kb"] >= int(t["stack_touch_kb"]), f"stack of {m['tid']}: {m['rss_kb']} kB")
            check(m["why"] == "sp", "thread stack not found by its sp")
    exe = os.path.realpath(f"/proc/{prog.pid}/exe")
    check(all(m["category"] == "code" for m in d["mappings"] if m["name"] == exe),
          "the executable is not code")
    spaced = [m for m in d["mappings"] if "pa layout" in m["name"]]
    check(len(spaced) == 1 and spaced[0]["deleted"] and spaced[0]["category"] == "file",
          f"the deleted file with spaces: {spaced}")
    check(spaced[0]["name"].endswith("(x).dat"), spaced[0]["name"])

    # CSV and text agree with JSON.
    c = memsight("smaps", prog.pid, "--format", "csv", "--sort", "rss").stdout
    rows = list(csv.reader(io.StringIO(c)))
    check(rows[0][0] == "kind" and rows[0][-1] == "name", "csv header")
    total = [r for r in rows if r[0] == "total"][0]
    shared = tot["shared_clean_kb"] + tot["shared_dirty_kb"]
    check(int(total[6]) == tot["rss_kb"] and abs(int(total[7]) - tot["pss_kb"]) <= shared,
          f"csv totals {total} vs {tot}")
    maps = [r for r in rows if r[0] == "mapping"]
    check(len(maps) == tot["mappings"], "csv mapping count")
    rss = [int(r[6]) for r in maps]
    check(rss == sorted(rss, reverse=True), "csv not sorted by rss")
    txt = memsight("smaps", prog.pid, "-n", 5).stdout
    line = [x for x in txt.splitlines() if x.startswith("TOTAL")][0].split()
    check(int(line[2]) == tot["rss_kb"] and abs(int(line[3]) - tot["pss_kb"]) <= shared,
          "text totals")
    # showmap's default view: one row per name and category, adding up to the totals.
    bn = json.loads(memsight("smaps", prog.pid, "--by-name", "--format", "json").stdout)
    rows_bn = bn["mappings"]
    check(sum(m["mappings"] for m in rows_bn) == bn["totals"]["mappings"], "--by-name counts")
    check(sum(m["rss_kb"] for m in rows_bn) == bn["totals"]["rss_kb"], "--by-name rss")
    check(len({(m["name"], m["category"]) for m in rows_bn}) == len(rows_bn), "--by-name dups")
    heap = [m for m in rows_bn if m["name"] == "[heap]"]
    check(len(heap) == 1 and heap[0]["mappings"] == 1, "[heap] row")
    small = [m for m in rows_bn if m["name"] == "" and m["category"] == "anon"]
    check(small and small[0]["mappings"] >= 3000, "the 3000 small maps merge into one anon row")
    cat_only = memsight("smaps", prog.pid, "-c", "--format", "json").stdout
    check(json.loads(cat_only)["mappings"] == [], "-c still lists mappings")
finally:
    prog.close()

# Errors: clean messages and exit codes, never a crash.
r = memsight("smaps", 999999999, check_rc=False)
check(r.returncode == 1 and "/proc/999999999/smaps" in r.stderr, f"missing pid: {r.stderr}")
r = memsight("smaps", "12x", check_rc=False)
check(r.returncode == 2, "bad pid accepted")
r = memsight("smaps", "--format", "xml", "1", check_rc=False)
check(r.returncode == 2, "bad format accepted")
r = memsight("smaps", "--file", "/nonexistent/smaps", check_rc=False)
check(r.returncode == 1 and "/nonexistent/smaps" in r.stderr, "missing file")
src = os.environ.get("MS_SOURCE_DIR", ".")
r = memsight("smaps", "--file", os.path.join(src, "tests/data/proc/edge.smaps"), "--format", "json")
check(json.loads(r.stdout)["totals"]["mappings"] == 5, "edge.smaps through the command")
print("ok")
