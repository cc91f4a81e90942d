#!/usr/bin/env python3
"""Labels from `memsight run --label` and the agent's `labels=` option reach the snapshot
and every export: the JSON report's `labels` object, every pprof sample (read back by
`go tool pprof -tags`, whose per-label totals must equal the report's live bytes), and
`memsight merge`, which keeps only the labels all its inputs share; `memsight attach
--label` gives a running process its labels the same way. Bad labels are
refused by `run` with the reason, and dropped whole (and counted) by the agent."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

prog = os.path.join(PROGRAMS, "ex_trend")


def run_labeled(d, *opts, env=None):
    os.makedirs(d, exist_ok=True)
    run([MEMSIGHT, "run", "-q", "-o", d] + list(opts) + ["--", prog, "4"], env=env)
    snaps = [s for s in snapshots(d) if s.endswith("-exit.msnap")]
    check(len(snaps) == 1, "expected one exit snapshot in %s, got %r" % (d, snaps))
    return snaps[0]


d = tmpdir("labels")
a = run_labeled(os.path.join(d, "a"), "--label", "version=2.1.0", "--label", "model=Pixel 7",
                "--label", "page=a=b")
ra = report_json(a)
check(ra["labels"] == {"version": "2.1.0", "model": "Pixel 7", "page": "a=b"},
      "JSON labels: %r" % ra["labels"])
check(ra["meta"]["labels"] == "version=2.1.0;model=Pixel 7;page=a=b", "meta.labels %r" % ra["meta"])

# the agent option, as MEMSIGHT_OPTIONS or -O gives it
b = run_labeled(os.path.join(d, "b"), "-O", "labels=version=2.2.0;model=Pixel 7")
rb = report_json(b)
check(rb["labels"] == {"version": "2.2.0", "model": "Pixel 7"}, "agent option labels: %r" % rb)
check(rb["health"]["bad_options"] == 0, "valid labels counted as bad: %r" % rb["health"])

# a bad label text is dropped whole and counted, and the program still runs
env = dict(os.environ, MEMSIGHT_OPTIONS="labels=version=1;version=2")
c = run_labeled(os.path.join(d, "c"), env=env)
rc = report_json(c)
check(rc["labels"] == {} and rc["meta"]["labels"] == "", "duplicate key kept: %r" % rc["labels"])
check(rc["health"]["bad_options"] == 1, "bad labels not counted: %r" % rc["health"]["bad_options"])

# run refuses what the agent would drop, saying why, and runs nothing
for bad, why in (("pid=3", "memsight sets itself"), ("1x=3", "letters, digits"),
                 ("a=b;c", "no control characters, ';' or ','"), ("novalue", "KEY=VALUE")):
    p = subprocess.run([MEMSIGHT, "run", "-q", "-o", d, "--label", bad, "--", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and why in p.stderr and bad in p.stderr,
          "--label %r: rc %d, stderr %r" % (bad, p.returncode, p.stderr))

# merge keeps the labels every input shares
m = os.path.join(d, "m.msnap")
memsight("merge", "-o", m, a, b)
rm = report_json(m)
check(rm["labels"] == {"model": "Pixel 7"}, "merged labels: %r" % rm["labels"])

# memsight attach --label: the labels of a process attached while it runs, through the
# same agent option; a bad one is refused before the process is touched
t = subprocess.Popen([os.path.join(PROGRAMS, "at_target")], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, bufsize=1,
                     env={k: v for k, v in os.environ.items()
                          if k not in ("LD_PRELOAD", "MEMSIGHT_OPTIONS")})


def target(line):
    t.stdin.write(line + "\n")
    t.stdin.flush()
    r = t.stdout.readline()
    check(r.startswith("ok"), "at_target %r: %r" % (line, r))


try:
    target("prep 10")
    ad = os.path.join(d, "attach")
    os.makedirs(ad)
    p = subprocess.run([MEMSIGHT, "attach", "-o", ad, "--label", "version=3.0.0", "--label", "x",
                        str(t.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and "'x'" in p.stderr, "attach --label x: %d %r" % (p.returncode, p.stderr))
    check("libmemsight" not in open("/proc/%d/maps" % t.pid).read(), "refused attach loaded the agent")
    memsight("attach", "-o", ad, "--label", "version=3.0.0", "--label", "page=check out",
             "-O", "labels=version=9", str(t.pid))
    target("work")
    memsight("detach", str(t.pid))
    # attached again: the labels are taken anew
    ad2 = os.path.join(d, "attach2")
    os.makedirs(ad2)
    memsight("attach", "-o", ad2, "--label", "version=3.0.1", str(t.pid))
    memsight("detach", str(t.pid))
finally:
    t.stdin.close()
    t.wait(timeout=120)
at = [s for s in snapshots(ad) if s.endswith("-detach.msnap")]
check(len(at) == 1, "expected one detach snapshot: %r" % snapshots(ad))
rat = report_json(at[0])
check(rat["labels"] == {"version": "3.0.0", "page": "check out"}, "attach labels: %r" % rat["labels"])
at2 = [s for s in snapshots(ad2) if s.endswith("-detach.msnap")]
check(len(at2) == 1 and report_json(at2[0])["labels"] == {"version": "3.0.1"},
      "labels of the second attach: %r" % [report_json(s)["labels"] for s in at2])
check(rat["totals"]["live_bytes"] > 0, "nothing recorded after the attach: %r" % rat["totals"])

# every pprof sample carries the labels: pprof's per-label totals are the report's
tags = None
for snap, rep, want in ((a, ra, (("version", "2.1.0"), ("model", "Pixel 7"), ("page", "a=b"))),
                        (at[0], rat, (("version", "3.0.0"), ("page", "check out")))):
    pb = snap + ".pb.gz"
    memsight("report", "-f", "pprof", "-o", pb, snap)
    tags = pprof("-tags", "-sample_index=inuse_space", "-unit=bytes", pb)
    if tags is None:
        print("ok: labels in snapshots (run and attach), JSON and merge "
              "(go not installed: pprof not read back)")
        sys.exit(0)
    live = rep["totals"]["live_bytes"]
    for key, value in want:
        block = tags.split(" %s: Total " % key)
        check(len(block) == 2, "pprof -tags has no %s:\n%s" % (key, tags))
        total = float(block[1].split()[0].rstrip("B"))
        check(total == live, "%s total %s != report live %d" % (key, total, live))
        check("): %s\n" % value in block[1], "%s=%s missing:\n%s" % (key, value, tags))
print("ok: labels of run and attach in snapshots, JSON, merge and every pprof sample")
