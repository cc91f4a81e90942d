#!/usr/bin/env python3
"""`memsight merge` keeps the temporary allocations (TEMP) and the allocation size
histogram (HIST) of its inputs: two full-mode runs of mg_parts merged give per-stack
temporaries and a histogram that are the sums of the inputs' (bucket by bucket, still
summing to the heap allocations); an input without them, or with buckets that overlap
others without being equal, drops them and stderr says why."""
import collections
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import check, report_json, tmpdir  # noqa: E402
import merge_common  # noqa: E402
from report_mksnap import chunk, header, s_str  # noqa: E402

d = tmpdir("merge-temp")


def record(name, *args, opts=()):
    return merge_common.record(d, name, *args, opts=opts)[0]


def merge(out, *files):
    return merge_common.merge(d, out, *files)


def temps_by_frames(rep):
    """temporaries per call stack (kind and (function, line) of every frame)"""
    c = collections.Counter()
    for st in rep["stacks"]:
        key = (st["kind"], tuple((f["function"], f["line"]) for f in st["frames"]))
        c[key] += st.get("temporary_blocks", 0)
    return +c


def hist(rep):
    return collections.Counter({(b["min_size"], b["max_size"]): b["allocations"]
                                for b in rep.get("size_histogram", [])})


# "shift" frees three blocks right after allocating them: temporaries in mg_shift.
a = record("a", 100, 30, 40, "shift")
b = record("b", 200, 50, 60, "shift")
ra, rb = report_json(a), report_json(b)
for r in (ra, rb):
    check(r["totals"].get("temporary_blocks", 0) >= 3 and r.get("size_histogram"),
          f"inputs without temporaries or histogram: {r['totals']}")
m, err = merge("m.msnap", a, b)
rm = report_json(m)
check(rm["totals"].get("temporary_blocks") ==
      ra["totals"]["temporary_blocks"] + rb["totals"]["temporary_blocks"],
      f"temporaries {rm['totals'].get('temporary_blocks')} != "
      f"{ra['totals']['temporary_blocks']} + {rb['totals']['temporary_blocks']}")
check(temps_by_frames(rm) == temps_by_frames(ra) + temps_by_frames(rb),
      "temporaries per stack are not the sums of the inputs'")
shift = [st for st in rm["stacks"] if st["frames"] and st["frames"][0]["function"] == "mg_shift"]
check(len(shift) == 3 and all(st["temporary_blocks"] == 2 for st in shift),
      f"mg_shift's three call sites, 2 temporaries each: {shift}")
check(hist(rm) == hist(ra) + hist(rb), f"histogram {hist(rm)} != {hist(ra) + hist(rb)}")
check(sum(hist(rm).values()) == rm["totals"]["heap_allocated_blocks"],
      "merged histogram does not sum to the heap allocations")
check("temporary allocations: summed per stack" in err and
      "size histogram: summed bucket by bucket" in err, f"stderr: {err}")

# A merge of a merge: still the sums.
mm, _ = merge("mm.msnap", m, a)
rmm = report_json(mm)
check(rmm["totals"]["temporary_blocks"] ==
      rm["totals"]["temporary_blocks"] + ra["totals"]["temporary_blocks"], "merge of a merge")
check(hist(rmm) == hist(rm) + hist(ra), "histogram of a merge of a merge")

# A sampled run has neither: both dropped (a lower bound is not a sum), and said so.
c = record("c", 10, 5, 0, opts=("--sample", "4096"))
rc = report_json(c)
check("size_histogram" not in rc, "a sampled snapshot with a histogram")
m3, err3 = merge("m3.msnap", a, b, c)
r3 = report_json(m3)
check("size_histogram" not in r3, f"histogram kept: {r3.get('size_histogram')}")
check("size histogram: not kept: only 2 of 3" in err3, f"stderr: {err3}")
if "temporary_blocks" in rc["totals"]:  # sampled mode counts temporaries of sampled blocks
    check(r3["totals"]["temporary_blocks"] == ra["totals"]["temporary_blocks"] +
          rb["totals"]["temporary_blocks"] + rc["totals"]["temporary_blocks"], f"{r3['totals']}")
    check("temporary allocations: summed" in err3, f"stderr: {err3}")
else:
    check("temporary_blocks" not in r3["totals"], f"{r3['totals']}")
    check("temporary allocations: not kept: only 2 of 3" in err3, f"stderr: {err3}")

# A snapshot written with dump_at_peak=0 has neither: the temporaries are dropped.
e = record("e", 10, 5, 0, opts=("-O", "dump_at_peak=0"))
re_ = report_json(e)
check("temporary_blocks" not in re_["totals"], f"dump_at_peak=0 with temporaries: {re_['totals']}")
m4, err4 = merge("m4.msnap", a, e)
r4 = report_json(m4)
check("temporary_blocks" not in r4["totals"] and "size_histogram" not in r4, f"{r4['totals']}")
check("temporary allocations: not kept: only 1 of 2" in err4 and
      "size histogram: not kept: only 1 of 2" in err4, f"stderr: {err4}")


# Histograms whose buckets overlap without being equal cannot be summed: not kept.
def crafted(name, buckets):
    path = os.path.join(d, name)
    meta = struct.pack("<I", 1) + s_str("exe") + s_str("/bin/mg_parts")
    stks = struct.pack("<I", 1) + struct.pack("<IBBHII6QQ", 1, 0, 0, 1, 1, 0, 1, 8, 5, 40, 4, 32,
                                              0x401000)
    temp = struct.pack("<I", 1) + struct.pack("<IIQ", 1, 0, 4)
    hst = struct.pack("<I", len(buckets)) + b"".join(struct.pack("<QQQ", *x) for x in buckets)
    with open(path, "wb") as f:
        f.write(header() + chunk("META", meta) + chunk("STKS", stks, 1) + chunk("TEMP", temp)
                + chunk("HIST", hst) + chunk("END ", struct.pack("<I", 4)))
    return path


x = crafted("x.msnap", [(0, 0, 1), (8, 15, 4)])
y = crafted("y.msnap", [(8, 15, 2), (16, 31, 3)])
z = crafted("z.msnap", [(8, 11, 5)])
mxy, errxy = merge("xy.msnap", x, y)
rxy = report_json(mxy)
check(hist(rxy) == collections.Counter({(0, 0): 1, (8, 15): 6, (16, 31): 3}), f"{hist(rxy)}")
check(rxy["totals"]["temporary_blocks"] == 8, f"{rxy['totals']}")
mxz, errxz = merge("xz.msnap", x, z)
rxz = report_json(mxz)
check("size_histogram" not in rxz and "overlap without being equal" in errxz,
      f"overlapping buckets: {errxz}")
check(rxz["totals"]["temporary_blocks"] == 8, f"{rxz['totals']}")
print("ok: merge sums temporaries and the size histogram")
