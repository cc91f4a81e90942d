#!/usr/bin/env python3
"""`memsight merge` keeps what belongs to each process: two runs of mg_parts (live blocks,
a leak scan at exit, a peak) merged and read back by `memsight report` give every total
as the sum of the inputs', every live block with the call stack and the process it had,
the leak results united per stack and class, and the peak as the sum of the per-process
peaks. Inputs that lack a part, and a process merged twice, are said so on stderr."""
import collections
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, check, json, report_json, tmpdir  # noqa: E402
import merge_common  # noqa: E402

d = tmpdir("merge")


def record(name, *args, **kw):
    return merge_common.record(d, name, *args, **kw)


def merge(out, *files):
    return merge_common.merge(d, out, *files)


def blocks(path):
    """The BLKS records of a snapshot file: (address, size, stack_id, tid, kind, process)."""
    data = open(path, "rb").read()
    off = struct.unpack_from("<I", data, 12)[0]
    while off < len(data):
        typ, _flags, length = struct.unpack_from("<4sIQ", data, off)
        if typ == b"BLKS":
            n = struct.unpack_from("<Q", data, off + 24)[0]
            recs = []
            for i in range(n):
                a, s, _t, sid, tid, kind, _r, proc = struct.unpack_from("<QQQIIBBH", data,
                                                                     off + 32 + 40 * i)
                recs.append((a, s, sid, tid, kind, proc))
            return recs
        off += 24 + length + (-length % 8)
    return None


def frames_of(rep):
    """stack id -> the stack's frames as (function, line) pairs: the same call stack in
    every snapshot of one executable, wherever it was loaded."""
    return {st["id"]: (st["kind"], tuple((f["function"], f["line"]) for f in st["frames"]))
            for st in rep["stacks"]}


def leaf_stack(rep, fn):
    """The stack allocating the most in function fn (its loop, not its pointer array)."""
    got = [st for st in rep["stacks"] if st["frames"] and st["frames"][0]["function"] == fn]
    check(got, f"no stack with leaf {fn}")
    return max(got, key=lambda st: st["allocated_bytes"])


a, ta = record("a", 100, 30, 40)
b, tb = record("b", 200, 50, 60, "shift")  # other stack ids for the same stacks
ra, rb = report_json(a), report_json(b)
check(leaf_stack(ra, "mg_keep")["id"] != leaf_stack(rb, "mg_keep")["id"], "same stack ids in a and b")
m, err = merge("m.msnap", a, b)
rm = report_json(m)

# Every total is the sum of the inputs' (stacks: distinct ones, not a sum).
for k, v in rm["totals"].items():
    if k in ("stacks", "peak_ns"):
        continue
    check(v == ra["totals"].get(k, 0) + rb["totals"].get(k, 0),
          f"merged {k} = {v}, inputs {ra['totals'].get(k)} + {rb['totals'].get(k)}")
check(rm["totals"]["blocks_recorded"] == rm["totals"]["live_blocks"],
      f"blocks {rm['totals']['blocks_recorded']} != live blocks {rm['totals']['live_blocks']}")
keep = leaf_stack(rm, "mg_keep")
check(keep["live_blocks"] == 300 and keep["live_bytes"] == 300 * 1000, f"mg_keep {keep}")

# Processes: one per input, in the metadata; blocks keep theirs and their call stack.
meta = rm["meta"]
check(meta.get("processes") == "2" and meta.get("merged_from") == "2", f"meta {meta}")
pids = [ra["meta"]["pid"], rb["meta"]["pid"]]
check([meta.get("process.1.pid"), meta.get("process.2.pid")] == pids, f"process pids {meta}")


def block_set(path, rep, pid_of):
    fr = frames_of(rep)
    return collections.Counter((pid_of(p), fr[sid], size, tid, addr)
                               for addr, size, sid, tid, _kind, p in blocks(path))


want = block_set(a, ra, lambda p: pids[0]) + block_set(b, rb, lambda p: pids[1])
got = block_set(m, rm, lambda p: meta[f"process.{p}.pid"])
check(sum(want.values()) == rm["totals"]["live_blocks"], "inputs' blocks != live blocks")
check(got == want, f"merged blocks differ from the inputs': missing {list((want - got).items())[:3]} "
      f"extra {list((got - want).items())[:3]}")

# Leaks: the summary summed per class, records united per stack and class.
for cls, v in rm["leaks"].items():
    if isinstance(v, dict):
        for f in ("blocks", "bytes"):
            check(v[f] == ra["leaks"][cls][f] + rb["leaks"][cls][f], f"leaks {cls} {f}")
lost = [r for r in rm["leak_records"] if r["class"] == "definitely_lost"]
check(len(lost) == 1 and lost[0]["frames"][0]["function"] == "mg_leak", f"lost records {lost}")
n_lost = ta["leak_blocks"] + tb["leak_blocks"]
check(lost[0]["blocks"] == n_lost and lost[0]["bytes"] == n_lost * ta["leak_size"], lost[0])
check(lost[0]["sample_hex"].startswith("4c4c4c4c"), f"sample {lost[0]['sample_hex']}")
check(rm["leaks"]["definitely_lost"]["blocks"] == n_lost, rm["leaks"])
check(lost[0]["stack_id"] == leaf_stack(rm, "mg_leak")["id"], "leak record's stack id")


def leak_sums(rep):
    fr, c = frames_of(rep), collections.Counter()
    for r in rep["leak_records"]:
        c[(r["class"], fr[r["stack_id"]], "blocks")] += r["blocks"]
        c[(r["class"], fr[r["stack_id"]], "bytes")] += r["bytes"]
    return c


check(leak_sums(rm) == leak_sums(ra) + leak_sums(rb), "leak records per stack and class")

# Peaks: the sum of the per-process peaks, per stack too.
pk = leaf_stack(rm, "mg_peak")
want_peak = (ta["peak_blocks"] + tb["peak_blocks"]) * ta["peak_size"]
check(pk["peak_live_bytes"] == want_peak, f"mg_peak peak {pk['peak_live_bytes']} != {want_peak}")
check(rm["totals"]["peak_live_bytes"] == sum(st.get("peak_live_bytes", 0) for st in rm["stacks"]),
      "peak total != sum of per-stack peaks")
check("peak: the sum of the 2 per-process peaks" in err and f"blocks: {len(blocks(m))} kept" in err
      and "threads: not kept" in err, f"stderr: {err}")

# A third run without blocks, leak scan or peak: blocks and peak are not kept, and said so;
# the two leak scans are still united.
c, _tc = record("c", 10, 5, 0, opts=("--no-blocks", "-O", "dump_at_peak=0"))
m3, err3 = merge("m3.msnap", a, b, c)
r3 = report_json(m3)
check("blocks_recorded" not in r3["totals"] and "peak_live_bytes" not in r3["totals"], r3["totals"])
check("blocks: not kept" in err3 and "peak: not kept: only 2 of 3" in err3 and
      "leak scans: 2 of 3" in err3, f"stderr: {err3}")
check(r3["leaks"]["definitely_lost"]["blocks"] == n_lost, r3["leaks"])
check(r3["totals"]["live_bytes"] == rm["totals"]["live_bytes"] + report_json(c)["totals"]["live_bytes"],
      "three-way live bytes")

# A merged file merged again: processes renumbered, blocks still with theirs.
e, te = record("e", 20, 7, 3, "shift")
re_ = report_json(e)
mm, _ = merge("mm.msnap", m, e)
rmm = report_json(mm)
pids.append(re_["meta"]["pid"])
check([rmm["meta"].get(f"process.{k}.pid") for k in (1, 2, 3)] == pids, f"meta {rmm['meta']}")
want_e = want + block_set(e, re_, lambda p: pids[2])
check(block_set(mm, rmm, lambda p: rmm["meta"][f"process.{p}.pid"]) == want_e,
      "blocks of a merge of a merge")
lost = [r for r in rmm["leak_records"] if r["class"] == "definitely_lost"]
check(lost[0]["blocks"] == n_lost + te["leak_blocks"], f"{lost}")

# The same process twice: merged, but its counters count twice, and stderr says so.
_, err2 = merge("twice.msnap", m, a)
check("counted twice" in err2, f"stderr: {err2}")
check("warning: 1 processes appear" in err2, f"stderr: {err2}")

# A merged file listing many processes (built byte by byte): the merge takes time linear in
# them, not cubic (2000 processes in 110 KB took 230 s when each key was a linear lookup).
from report_mksnap import chunk, header, s_str  # noqa: E402
kv = [("exe", "/bin/mg_parts")]
for k in range(1, 3001):
    kv += [(f"process.{k}.pid", str(k)), (f"process.{k}.start_ns", "1")]
meta = struct.pack("<I", len(kv)) + b"".join(s_str(x) + s_str(y) for x, y in kv)
many = os.path.join(d, "many.msnap")
with open(many, "wb") as f:
    f.write(header() + chunk("META", meta) + chunk("STKS", struct.pack("<I", 0), 1)
            + chunk("END ", struct.pack("<I", 2)))
p = subprocess.run([MEMSIGHT, "merge", "-o", os.path.join(d, "many2.msnap"), many, many],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
check(p.returncode == 0 and "of 6000 processes" in p.stderr and
      "warning: 3000 processes appear in more than one" in p.stderr, f"many: {p.stderr}")

# Function names an importer stored (sym.<hex>), many of them: carried to the merged pcs in
# time linear in them (20000 names took 3.75 s, 100000 about 90 s, when each pc was a lookup
# by key; now 0.6 s).
n = 100000
kv = [("exe", "/bin/mg_parts")] + [("sym.%x" % (0x401000 + k), "f%d" % k) for k in range(n)]
meta = struct.pack("<I", len(kv)) + b"".join(s_str(x) + s_str(y) for x, y in kv)
mods = (struct.pack("<IQ", 1, 0) + s_str("/bin/mg_parts") + struct.pack("<II", 0, 1)
        + struct.pack("<QQQII", 0x400000, 0x100000, 0, 5, 0))
stks = struct.pack("<I", n) + b"".join(
    struct.pack("<IBBHII6QQ", k + 1, 0, 0, 1, 1, 0, 1, 8, 1, 8, 0, 0, 0x401000 + k)
    for k in range(n))
named = os.path.join(d, "named.msnap")
with open(named, "wb") as f:
    f.write(header() + chunk("META", meta) + chunk("MODS", mods) + chunk("STKS", stks, 1)
            + chunk("END ", struct.pack("<I", 3)))
named2 = os.path.join(d, "named2.msnap")
p = subprocess.run([MEMSIGHT, "merge", "-o", named2, named, named],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
check(p.returncode == 0 and f"{n} stacks" in p.stderr, f"named: {p.stderr}")
data = open(named2, "rb").read()
meta_off = struct.unpack_from("<I", data, 12)[0]
check(data[meta_off:meta_off + 4] == b"META", "named: META first")
pos, names = meta_off + 28, {}
for _ in range(struct.unpack_from("<I", data, meta_off + 24)[0]):
    kv = []
    for _ in range(2):
        ln = struct.unpack_from("<I", data, pos)[0]
        kv.append(data[pos + 4:pos + 4 + ln].decode())
        pos += 4 + ln
    names[kv[0]] = kv[1]
check(sum(k.startswith("sym.") and k != "sym.index" for k in names) == n and
      names.get("sym.401000") == "f0" and names.get("sym.%x" % (0x401000 + n - 1)) == f"f{n - 1}",
      f"named: {len(names)} keys")
print("ok: merge keeps blocks, leaks and peaks")
