#!/usr/bin/env python3
"""`memsight watch` on pa_grow (10 MB/s): the RSS-growth tracker fires only once N
consecutive samples exceed (checked by replaying the tracker on the series it wrote), no
sooner than the cooldown after the previous firing, runs its action once per firing
with the evidence beside it, the series is complete, and the loop ends when the process
exits. No timing assertions: everything is checked from the recorded data."""
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_common import MEMSIGHT, Program, check, fail, memsight  # noqa: E402

WINDOW_MS, THRESH_KB, N, COOLDOWN_MS = 1000, 4096, 3, 1000


def replay(rows, col="rss_kb", cooldown_ms=COOLDOWN_MS):
    """The tracker's rule, independently: growth over the window, N in a row, cooldown."""
    streak, last_fire, fires, out = 0, None, 0, []
    for i, r in enumerate(rows):
        t = int(r["t_ms"])
        j = next(k for k in range(i + 1) if int(rows[k]["t_ms"]) >= t - WINDOW_MS)
        value = int(r[col]) - int(rows[j][col])
        exceeded = value > THRESH_KB
        streak = streak + 1 if exceeded else 0
        run = streak
        fired = streak >= N and (last_fire is None or t - last_fire >= cooldown_ms)
        if fired:
            streak, last_fire, fires = 0, t, fires + 1
        out.append((value, exceeded, fired, run))
    return out


with tempfile.TemporaryDirectory() as tmp:
    prog = Program("pa_grow", 10, 100, 4)
    try:
        series = os.path.join(tmp, "series.csv")
        ev = os.path.join(tmp, "evidence")
        log = os.path.join(tmp, "actions.txt")
        res = memsight("watch", prog.pid, "-i", "200ms", "-c", 30, "-o", series,
                     "-t", f"rss+{THRESH_KB}/{WINDOW_MS}ms", "-n", N, "--cooldown", f"{COOLDOWN_MS}ms",
                     "--max-triggers", 10, "-e", ev,
                     "--exec", f'echo "$MEMSIGHT_TRIGGER_INDEX $MEMSIGHT_PID $MEMSIGHT_TRIGGER" >> {log}',
                     timeout=120)
    finally:
        prog.close()
    with open(series) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 30, f"{len(rows)} rows for -c 30")
    for r in rows:
        check(all(v != "" and v is not None for v in r.values()), f"incomplete row {r}")
    ts = [int(r["t_ms"]) for r in rows]
    check(ts == sorted(ts) and len(set(ts)) == len(ts), "t_ms not increasing")
    check(int(rows[-1]["rss_kb"]) - int(rows[0]["rss_kb"]) > 20 * 1024, "the program did not grow")

    expect = replay(rows)
    fired_at = []
    for i, (r, (value, exceeded, fired, run)) in enumerate(zip(rows, expect)):
        check(int(r["t0_streak"]) == run, f"row {i}: streak {r['t0_streak']} != {run}")
        check(int(r["t0_value"]) == value, f"row {i}: growth {r['t0_value']} != {value}")
        check(int(r["t0_exceeded"]) == exceeded, f"row {i}: exceeded flag")
        check(int(r["t0_fired"]) == fired, f"row {i}: fired {r['t0_fired']}, replay says {fired}")
        if fired:
            fired_at.append(i)
    check(fired_at, "the growth tracker never fired")
    # Not before: the first firing is the first row that ends N exceedances in a row.
    first_run = next(i for i in range(N - 1, len(expect))
                     if all(expect[k][1] for k in range(i - N + 1, i + 1)))
    check(fired_at[0] == first_run, f"first firing at row {fired_at[0]}, expected {first_run}")
    for a, b in zip(fired_at, fired_at[1:]):
        check(ts[b] - ts[a] >= COOLDOWN_MS, "fired within the cooldown")

    # One action per firing, with the pid and the tracker in its environment.
    with open(log) as f:
        acts = [line.split() for line in f.read().splitlines()]
    check(len(acts) == len(fired_at), f"{len(acts)} actions for {len(fired_at)} firings")
    check(sorted(int(a[0]) for a in acts) == list(range(1, len(fired_at) + 1)), "trigger indexes")
    check(all(int(a[1]) == prog.pid and a[2].startswith("rss+") for a in acts), "action env")
    # Evidence beside each trigger: what fired, the series up to it, the categories.
    for k, i in enumerate(fired_at, 1):
        with open(os.path.join(ev, f"trigger-{k}.json")) as f:
            tj = json.load(f)
        check(tj["sample_index"] == i and tj["pid"] == prog.pid, f"trigger-{k}.json")
        with open(os.path.join(ev, f"trigger-{k}-series.csv")) as f:
            er = list(csv.DictReader(f))
        check(len(er) == i + 1 and er == rows[:i + 1], f"trigger-{k} series is not the prefix")
        with open(os.path.join(ev, f"trigger-{k}-smaps.json")) as f:
            sj = json.load(f)
        check({c["name"] for c in sj["categories"]} >= {"native_heap", "anon", "stack"}, "categories")
        check(oct(os.stat(os.path.join(ev, f"trigger-{k}.json")).st_mode & 0o777) == "0o600", "mode")
    check("trigger" in res.stderr, "no trigger message")

    # A category tracker: glibc serves pa_grow's 1 MiB mallocs with their own mmap, which
    # /proc alone counts as anonymous mmap; the categories are recorded every sample.
    prog = Program("pa_grow", 10, 100, 3)
    try:
        cats_csv = os.path.join(tmp, "cats.csv")
        memsight("watch", prog.pid, "-i", "200ms", "-c", 20, "-o", cats_csv, "-q",
                 "-t", f"anon+{THRESH_KB}/{WINDOW_MS}ms", "-n", N, "--cooldown", "60s",
                 "-e", os.path.join(tmp, "ev2"), timeout=120)
    finally:
        prog.close()
    with open(cats_csv) as f:
        crow = list(csv.DictReader(f))
    check(len(crow) == 20, f"{len(crow)} rows")
    cats = ["native_heap_kb", "stack_kb", "code_kb", "file_kb", "anon_kb", "shmem_kb",
            "guard_kb", "other_kb"]
    for i, r in enumerate(crow):
        total = sum(int(r[c]) for c in cats)
        # smaps is read right after the rollup while the program grows 2 MiB a step.
        check(abs(total - int(r["rss_kb"])) <= 4096, f"row {i}: categories {total} vs rss {r['rss_kb']}")
    check(int(crow[-1]["anon_kb"]) - int(crow[0]["anon_kb"]) > 20 * 1024, "anon did not grow")
    cexp = replay(crow, "anon_kb", 60000)
    cfired = [i for i, r in enumerate(crow) if int(r["t0_fired"])]
    check(cfired == [i for i, e in enumerate(cexp) if e[2]], f"anon tracker fired at {cfired}")
    check(len(cfired) == 1, f"anon tracker fired {len(cfired)} times within its cooldown")

    # JSON lines, an absolute threshold that never fires, and the end of the process.
    prog = Program("pa_grow", 10, 100, 0.3)
    out = os.path.join(tmp, "s.jsonl")
    w = subprocess.Popen([MEMSIGHT, "watch", str(prog.pid), "-i", "100ms", "-o", out,
                          "-t", "rss>1000G", "-t", "threads>1"],
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    prog.close()
    try:
        _, err = w.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        w.kill()
        fail("watch did not end when the process exited")
    check(w.returncode == 0, f"watch exited {w.returncode}: {err}")
    check("exited" in err, err)
    with open(out) as f:
        lines = [json.loads(x) for x in f]
    check(len(lines) >= 3, f"{len(lines)} samples")
    check(all(len(x["trackers"]) == 2 for x in lines), "tracker states per sample")
    check(not any(x["trackers"][0]["fired"] for x in lines), "rss>1000G fired")
    check(all(x["threads"] == 1 for x in lines), "threads")

# --duration: samples sit on a fixed grid from t=0, so 600 ms at 100 ms is 7 at most.
q = subprocess.Popen(["sleep", "30"])
try:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "d.csv")
        memsight("watch", q.pid, "-i", "100ms", "-d", "600ms", "-o", out, "-q")
        with open(out) as f:
            n = len(list(csv.DictReader(f)))
        check(1 <= n <= 7, f"{n} samples in 600 ms at 100 ms")
finally:
    q.kill()
    q.wait()

r = memsight("watch", 999999999, "-c", 1, check_rc=False)
check(r.returncode == 1 and "999999999" in r.stderr, "missing pid")
r = memsight("watch", 1, "-t", "rss>>5", check_rc=False)
check(r.returncode == 2, "bad tracker accepted")
print("ok")
