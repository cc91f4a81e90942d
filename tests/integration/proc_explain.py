#!/usr/bin/env python3
"""`memsight smaps --explain PID` on pa_layout running under the agent: RSS split into
tracked heap, allocator overhead and free space, tracked mmap by call stack, thread
stacks, code and the unexplained rest. The known amounts it holds (heap in the main arena
and a thread's arena, one 24 MiB mmap, three thread stacks touched to 4 MiB) must each
be attributed within 5%, and the parts must add up to RSS."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_common import PROGRAMS, check, fail, memsight  # noqa: E402

agent = os.environ.get("MS_AGENT", "")
if not os.path.exists(agent):
    print(f"skipped: no agent at {agent!r}")
    sys.exit(0)


def within(got, want, what):
    check(abs(got - want) <= 0.05 * want, f"{what}: {got} kB, expected {want} kB within 5%")


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, LD_PRELOAD=agent, MEMSIGHT_OPTIONS=f"out={tmp},exit_snapshot=0,leak_check=signal")
    p = subprocess.Popen([os.path.join(PROGRAMS, "pa_layout"), "--heap-mb", "16", "--arena-mb", "8",
                          "--mmap-mb", "24", "--threads", "3", "--stack-kb", "4096", "--shm-mb", "2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        truth = {}
        for line in p.stdout:
            if line.strip() == "ready":
                break
            truth.update(kv.split("=", 1) for kv in line.split())
        check(truth, "pa_layout printed no truth")
        d = json.loads(memsight("smaps", "--explain", p.pid, "--format", "json").stdout)
        sm = json.loads(memsight("smaps", p.pid, "--format", "json").stdout)
        # The same explanation from the snapshot file it took.
        d2 = json.loads(memsight("smaps", "--explain", p.pid, "--snapshot", d["snapshot"],
                                 "--format", "json").stdout)
        text = memsight("smaps", "--explain", p.pid, "--snapshot", d["snapshot"]).stdout
        # watch's agent actions: one firing runs `memsight dump` and `memsight leaks`.
        ev = os.path.join(tmp, "ev")
        w = memsight("watch", p.pid, "-i", "100ms", "-c", 3, "-t", "threads>1,n=1", "--dump",
                     "--leaks", "-e", ev, timeout=120)
        check("1 trigger(s), 2 action(s) started, 0 failed" in w.stderr, w.stderr)
        with open(os.path.join(ev, "trigger-1-dump.log")) as f:
            snap = f.read().strip()
        check(snap.endswith(".msnap") and os.path.exists(snap), f"dump action wrote {snap!r}")
        with open(os.path.join(ev, "trigger-1-leaks.log")) as f:
            leaks = f.read()
        check("definitely lost" in leaks, f"leaks action: {leaks[:300]}")
    finally:
        p.stdin.close()
        p.wait(timeout=30)

    parts = {x["name"]: x["kb"] for x in d["parts"]}
    check(set(parts) == {"heap_tracked", "heap_overhead", "heap_free", "mmap_tracked", "stacks",
                         "code", "file", "shmem", "other", "unexplained"}, f"parts {parts}")
    check(sum(parts.values()) == d["rss_kb"], f"parts sum to {sum(parts.values())}, RSS {d['rss_kb']}")
    check(abs(d["rss_kb"] - sm["totals"]["rss_kb"]) <= 0.02 * sm["totals"]["rss_kb"], "RSS")

    heap_kb = (int(truth["heap_bytes"]) + int(truth["arena_bytes"])) // 1024
    within(parts["heap_tracked"], heap_kb, "tracked heap")
    within(d["heap"]["tracked_bytes"] // 1024, heap_kb, "tracked heap bytes")
    # 4000-byte blocks are 4016-byte glibc chunks: 16 bytes of overhead each.
    blocks = int(truth["heap_blocks"]) + int(truth["arena_bytes"]) // 4000
    within(parts["heap_overhead"], blocks * 16 // 1024, "heap overhead")

    mmap_kb = int(truth["mmap_bytes"]) // 1024
    big = [m for m in d["mmap_stacks"] if m["bytes"] == int(truth["mmap_bytes"])]
    check(len(big) == 1, f"no tracked mmap stack of {mmap_kb} kB: {d['mmap_stacks']}")
    within(big[0]["rss_kb"], mmap_kb, "the 24 MiB mmap")
    check("pa_layout.c" in big[0]["frame"] or big[0]["frame"].startswith("main"),
          f"mmap frame {big[0]['frame']}")
    # memfd + /dev/shm (2 MiB each) and the 64 kB file are mmap calls too.
    within(parts["mmap_tracked"], mmap_kb + 2 * 2048 + 64, "tracked mmap")

    # The program's three threads touched stack_touch_kb each; the main thread's and the
    # agent's own control thread's stacks are there too, told apart by their tids. The
    # agent's frames on the program's threads are part of their stacks (at 4 MiB touched
    # they stay well inside 5%).
    tids = {int(x) for x in truth["tids"].split(",")}
    others = sum(m["rss_kb"] for m in sm["mappings"]
                 if m["category"] == "stack" and m.get("tid") not in tids)
    within(parts["stacks"] - others, 3 * int(truth["stack_touch_kb"]), "thread stacks")
    check(parts["code"] > 0, "no code")
    # Per thread: each of the program's threads holds at least what it touched.
    per = {t["tid"]: t["stack_kb"] for t in d["threads"]}
    for tid in tids:
        check(tid in per, f"thread {tid} missing from the explanation")
        within(per[tid], int(truth["stack_touch_kb"]), f"stack of thread {tid}")
    check(d2["heap"]["tracked_bytes"] == d["heap"]["tracked_bytes"], "--snapshot gives the same heap")
    check("unexplained" in text and "tracked mmap by call stack" in text, "text output")

# Without the agent: a clear error, not a crash.
q = subprocess.Popen(["sleep", "30"])
try:
    r = memsight("smaps", "--explain", q.pid, check_rc=False, timeout=60)
    check(r.returncode == 1 and "--snapshot" in r.stderr, f"no agent: {r.returncode} {r.stderr}")
finally:
    q.kill()
    q.wait()
print("ok")
