#!/usr/bin/env python3
"""`memsight smaps --explain` with glibc's own figures: pa_free keeps 20000 blocks of 1000
bytes and frees 20000 between them, so glibc keeps about 20 MB of free chunks. The
agent's snapshot must carry the process's mallinfo2() figures (as the program itself
read them), and the free space kept by the allocator must be reported from them, within
5% of what glibc counted as freed. The same snapshot without those figures (as an older
agent wrote it) falls back to the chunk model and says so; an exit through _exit, and an
allocator that is not glibc's, leave them out."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_common import PROGRAMS, check, memsight  # noqa: E402

agent = os.environ.get("MS_AGENT", "")
if not os.path.exists(agent):
    print(f"skipped: no agent at {agent!r}")
    sys.exit(0)
FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "fsmblks", "uordblks", "fordblks",
          "keepcost")


def within(got, want, what, pct=5):
    check(abs(got - want) <= pct / 100 * want, f"{what}: {got}, expected {want} within {pct}%")


def start(tmp, *args, preload=None, opts=""):
    env = dict(os.environ, LD_PRELOAD=preload or agent,
               MEMSIGHT_OPTIONS=f"out={tmp}" + (("," + opts) if opts else ""))
    p = subprocess.Popen([os.path.join(PROGRAMS, "pa_free"), *map(str, args)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    truth = {}
    for line in p.stdout:
        if line.strip() == "ready":
            break
        truth.update((k, int(v)) for k, v in (kv.split("=", 1) for kv in line.split()))
    check(truth, "pa_free printed no truth")
    return p, truth


def finish(p):
    p.stdin.close()
    check(p.wait(timeout=60) == 0, f"pa_free exited {p.returncode}")


def health(path):
    return json.loads(memsight("report", "--format", "json", "--no-symbols", path).stdout)["health"]


def strip_mallinfo(src, dst):
    """Rewrites a snapshot without the HLTH mallinfo2_* counters, as an agent without
    them wrote it (chunk CRC recomputed)."""
    data = open(src, "rb").read()
    out, off = bytearray(data[:32]), struct.unpack_from("<I", data, 12)[0]
    while off < len(data):
        typ, flags, length, _crc, _r = struct.unpack_from("<4sIQII", data, off)
        payload = data[off + 24:off + 24 + length]
        if typ == b"HLTH":
            n, pos, items = struct.unpack_from("<I", payload, 0)[0], 4, []
            for _ in range(n):
                ln = struct.unpack_from("<I", payload, pos)[0]
                name = payload[pos + 4:pos + 4 + ln]
                item = payload[pos:pos + 4 + ln + 8]
                pos += 4 + ln + 8
                if not name.startswith(b"mallinfo2_"):
                    items.append(item)
            payload = struct.pack("<I", len(items)) + b"".join(items)
        out += struct.pack("<4sIQII", typ, flags, len(payload), zlib.crc32(payload), 0)
        out += payload + b"\0" * (-len(payload) % 8)
        off += 24 + length + (-length % 8)
    with open(dst, "wb") as f:
        f.write(out)


with tempfile.TemporaryDirectory() as tmp:
    p, truth = start(tmp, 40000, 1000)
    try:
        d = json.loads(memsight("smaps", "--explain", p.pid, "--format", "json").stdout)
        snap = d["snapshot"]
        text = memsight("smaps", "--explain", p.pid, "--snapshot", snap).stdout
        old = os.path.join(tmp, "old.msnap")
        strip_mallinfo(snap, old)
        dm = json.loads(memsight("smaps", "--explain", p.pid, "--snapshot", old,
                                 "--format", "json").stdout)
        textm = memsight("smaps", "--explain", p.pid, "--snapshot", old).stdout
    finally:
        finish(p)

    # The agent's snapshot carries what the program's own mallinfo2() said (nothing
    # allocated or freed in between), and glibc's invariant holds.
    h = health(snap)
    for f in FIELDS:
        check(f"mallinfo2_{f}" in h, f"no mallinfo2_{f} in the snapshot's health: {sorted(h)}")
    for f in ("arena", "uordblks", "fordblks", "hblkhd", "keepcost"):
        check(h[f"mallinfo2_{f}"] == truth[f], f"mallinfo2_{f}: snapshot {h[f'mallinfo2_{f}']}, "
              f"the program read {truth[f]}")
    check(h["mallinfo2_arena"] == h["mallinfo2_uordblks"] + h["mallinfo2_fordblks"],
          f"arena != uordblks + fordblks: {h}")
    mi = d["heap"]["mallinfo2"]
    check(mi and all(mi[f] == h[f"mallinfo2_{f}"] for f in FIELDS), f"explain mallinfo2 {mi}")

    # Free space kept by the allocator: from mallinfo2, what glibc counted as freed.
    parts = {x["name"]: x["kb"] for x in d["parts"]}
    check(sum(parts.values()) == d["rss_kb"], f"parts sum to {sum(parts.values())}, RSS {d['rss_kb']}")
    check(d["heap"]["split"] == "mallinfo2" and "mallinfo2" in d["heap"]["method"], d["heap"])
    freed_kb = truth["freed_free_bytes"] // 1024
    check(freed_kb > 19000, f"glibc kept only {freed_kb} kB free")
    within(parts["heap_free"], freed_kb, "heap_free from mallinfo2 (kB)")
    check(parts["heap_free"] <= mi["fordblks"] // 1024, "heap_free above fordblks")
    within(parts["heap_tracked"], truth["kept_bytes"] // 1024, "tracked heap (kB)")
    check(d["heap"]["agent_header_bytes"] == 16 * truth["kept_blocks"] + 16,  # + the pointer array
          f"agent headers {d['heap']['agent_header_bytes']}")
    check("fordblks" in text and "mallinfo2" in text, "text output:\n" + text)

    # Without the figures: the chunk model, said in the method, the text and the JSON.
    check(dm["heap"]["split"] == "chunk_layout" and dm["heap"]["mallinfo2"] is None, dm["heap"])
    check("model" in dm["heap"]["method"] and "no mallinfo2" in textm, "fallback text:\n" + textm)
    pm = {x["name"]: x["kb"] for x in dm["parts"]}
    check(pm["heap_tracked"] == parts["heap_tracked"] and
          pm["heap_overhead"] == parts["heap_overhead"], f"model {pm} vs mallinfo2 {parts}")
    # the model's free space is the rest of the heap: the freed chunks and the little
    # the agent never saw (in unexplained with mallinfo2)
    within(pm["heap_free"], freed_kb, "heap_free from the model (kB)")
    check(pm["heap_free"] >= parts["heap_free"], f"model free {pm} < mallinfo2 free {parts}")

    # The exit snapshot: with the figures after exit(), without them after _exit (which
    # a signal handler may call, where mallinfo2 could wait for a lock held below it).
    for how, want in (("exit", True), ("_exit", False)):
        d2 = os.path.join(tmp, how)
        os.mkdir(d2)
        q, _ = start(d2, 1000, 100, how)
        finish(q)
        exits = [f for f in os.listdir(d2) if f.endswith("-exit.msnap")]
        check(len(exits) == 1, f"{how}: exit snapshots {exits}")
        got = "mallinfo2_fordblks" in health(os.path.join(d2, exits[0]))
        check(got == want, f"{how}: mallinfo2 in the exit snapshot: {got}")

    # Another allocator behind the agent: no mallinfo2 figures (glibc's would describe
    # an arena the program does not use), and explain says it used the model.
    gh = os.path.join(PROGRAMS, "libgh_alloc.so")
    if os.path.exists(gh):
        d3 = os.path.join(tmp, "gh")
        os.mkdir(d3)
        q, _ = start(d3, 1000, 100, preload=f"{agent}:{gh}", opts="exit_snapshot=0")
        try:
            e = json.loads(memsight("smaps", "--explain", q.pid, "--format", "json").stdout)
        finally:
            finish(q)
        check(not any(k.startswith("mallinfo2_") for k in health(e["snapshot"])),
              "mallinfo2 figures under another allocator")
        check(e["heap"]["split"] != "mallinfo2", e["heap"])
print("ok")
