#!/usr/bin/env python3
"""`memsight push`, `symbolize` and `fleet top|trend|leaks` against Debian's
clickhouse-server on 127.0.0.1 (one private instance for the whole file). Ground truth:
ex_trend after 6 steps holds 6 x 16 KiB from leak_steady (a steady leak), 1 MiB from
jump_once (one jump at step 3) and a cache that grows and shrinks; three runs, two
labelled version=1.0 and one version=2.0. lk_cycle, scanned at exit, loses a cycle of
three blocks (24 + 40 + 56 bytes) from run(): one record of 120 B in 3 blocks. Every row
pushed must sum to the local report's totals; the fleet trend's per-process score must
be the score `memsight trend` gives the same series; pushing twice counts once; a failed
push says why and loses nothing."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, PROGRAMS, SKIP, check, memsight, report_json, run, snapshots, tmpdir  # noqa: E402
from fleet_common import ClickHouse, free_port, have  # noqa: E402

if not have("clickhouse-server"):
    print("clickhouse-server not installed: skipped")
    sys.exit(SKIP)

d = tmpdir("fleet")
runs = []
for i, (version, model) in enumerate((("1.0", "a"), ("1.0", "b"), ("2.0", "a"))):
    out = os.path.join(d, "trend%d" % i)
    run([MEMSIGHT, "run", "-q", "-o", out, "--label", "version=" + version, "--label", "model=" + model,
         "--", os.path.join(PROGRAMS, "ex_trend"), "6", "snap"])
    runs.append(out)
for i in range(2):
    out = os.path.join(d, "leak%d" % i)
    run([MEMSIGHT, "run", "-q", "-o", out, "--leak-check=exit", "--label", "version=1.0", "--",
         os.path.join(PROGRAMS, "lk_cycle")])
    runs.append(out)
files = [f for r in runs for f in snapshots(r)]
check(len(files) >= 3 * 7 + 2 * 2, "snapshots written: %d" % len(files))

ch = ClickHouse()

# a failed push says which file and why, and exits non-zero (nothing listens there)
dead = "http://127.0.0.1:%d" % free_port()
p = subprocess.run([MEMSIGHT, "push", dead, files[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True)
check(p.returncode == 1 and "cannot create or check the tables" in p.stderr and os.path.basename(files[0]) in p.stderr and "onnect" in p.stderr,
      "push to nothing: %d %r" % (p.returncode, p.stderr))
p = subprocess.run([MEMSIGHT, "push", "ftp://x", files[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True)
check(p.returncode == 2 and "not a ClickHouse HTTP URL" in p.stderr, "ftp URL: %r" % p.stderr)
bad = os.path.join(d, "bad.msnap")
with open(files[0], "rb") as f:
    data = f.read()
with open(bad, "wb") as f:
    f.write(data[: len(data) // 2])
p = subprocess.run([MEMSIGHT, "push", ch.url, bad, files[0]], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
check(p.returncode == 1 and "bad.msnap: not pushed:" in p.stderr and "1 pushed" in p.stderr,
      "a truncated file among good ones: %d %r" % (p.returncode, p.stderr))

for r in runs:
    memsight("push", "-q", ch.url, r)
nsnap = int(ch.query("SELECT count() FROM memsight_snapshots")[0][0])
nrows = int(ch.query("SELECT count() FROM memsight_stacks")[0][0])
check(nsnap == len(files), "snapshots in ClickHouse %d, files %d" % (nsnap, len(files)))

# every snapshot's rows sum to its report's totals
got = {}
for r in ch.query("SELECT snapshot_id, pid, seq, reason FROM memsight_snapshots"):
    got[(r[1], r[2], r[3])] = r[0]
sums = {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in ch.query(
    "SELECT snapshot_id, sum(live_bytes), sum(live_blocks), sum(alloc_bytes) FROM memsight_stacks"
    " GROUP BY snapshot_id")}
for f in files:
    rep = report_json(f)
    m = rep["meta"]
    sid = got.get((m["pid"], m["seq"], m["reason"]))
    check(sid is not None, "%s not in memsight_snapshots" % f)
    t = rep["totals"]
    check(sums.get(sid) == (t["live_bytes"], t["live_blocks"], t["allocated_bytes"]),
          "%s: ClickHouse %r, report %r" % (f, sums.get(sid), t))
labels = ch.query("SELECT DISTINCT label_keys, label_values FROM memsight_stacks WHERE program = 'ex_trend'"
                  " ORDER BY label_values")
check([l[1] for l in labels] == ["['1.0','a']", "['1.0','b']", "['2.0','a']"], "labels %r" % labels)

# pushing again counts once
p = subprocess.run([MEMSIGHT, "push", ch.url] + runs, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True)
check(p.returncode == 0 and "0 pushed, %d already there" % len(files) in p.stderr, p.stderr)
check(int(ch.query("SELECT count() FROM memsight_stacks")[0][0]) == nrows, "rows after a second push")
# stacks that arrived without their completion mark: the mark is added, the rows not again
sid = ch.query("SELECT any(snapshot_id) FROM memsight_snapshots")[0][0]
ch.query("ALTER TABLE memsight_snapshots DELETE WHERE snapshot_id = '%s'" % sid)
for _ in range(100):  # a mutation applies in the background
    if ch.query("SELECT count() FROM memsight_snapshots WHERE snapshot_id = '%s'" % sid)[0][0] == "0":
        break
    time.sleep(0.1)
p = subprocess.run([MEMSIGHT, "push", ch.url] + runs, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True)
check(p.returncode == 0 and "1 pushed, %d already there" % (len(files) - 1) in p.stderr, p.stderr)
check(int(ch.query("SELECT count() FROM memsight_stacks")[0][0]) == nrows, "rows after a re-marked push")

# symbols once per build id, from the files at the recorded paths
out = subprocess.run([MEMSIGHT, "symbolize", "--clickhouse", ch.url], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
check(out.returncode == 0 and "new offsets with a function" in out.stderr, out.stderr)
fns = {r[0] for r in ch.query("SELECT DISTINCT function FROM memsight_symbols")}
check({"leak_steady", "jump_once", "churn_cache", "main", "run"} <= fns, "symbols: %r" % sorted(fns)[:40])
again = subprocess.run([MEMSIGHT, "symbolize", "--clickhouse", ch.url], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
check(again.returncode == 0 and "; 0 stored" in again.stderr and
      ch.query("SELECT count() FROM memsight_symbols") == ch.query(
          "SELECT count() FROM (SELECT DISTINCT build_id, offset, idx FROM memsight_symbols)"),
      "a second symbolize loads nothing again: %s" % again.stderr)


def fleet(*args):
    return json.loads(memsight("fleet", *args, "--clickhouse", ch.url, "-f", "json"))


def leaf(st):
    return st["frames"][0]["function"] if st["frames"] else None


# top, by version, over the newest snapshot of each ex_trend process
top = fleet("top", "--group-by", "version", "--where", "program=ex_trend")
check(top["format"] == "memsight-fleet-top" and [g["group"] for g in top["groups"]] ==
      [{"version": "1.0"}, {"version": "2.0"}], "top groups: %r" % [g["group"] for g in top["groups"]])
for g, n in zip(top["groups"], (2, 1)):
    by = {leaf(s): s for s in g["stacks"]}
    check(leaf(g["stacks"][0]) == "jump_once", "top of %r: %r" % (g["group"], leaf(g["stacks"][0])))
    check(by["jump_once"]["live_bytes"] == n << 20 and by["jump_once"]["processes"] == n, by["jump_once"])
    check(by["leak_steady"]["live_bytes"] == n * 6 * 16384 and by["leak_steady"]["live_blocks"] == 6 * n,
          by["leak_steady"])
    check(by["churn_cache"]["live_bytes"] == n * 40 * 4096, by["churn_cache"])
    check(by["leak_steady"]["frames"][0]["file"].endswith("ex_trend.c") and
          by["leak_steady"]["frames"][1]["function"] == "main", by["leak_steady"]["frames"][:2])
text = memsight("fleet", "top", "--clickhouse", ch.url, "-g", "version,model", "-w", "program=ex_trend")
check("== version=1.0 model=b" in text and "jump_once  " in text, text[:1500])

# trend: the per-process score is `memsight trend`'s for the same series
local = json.loads(memsight("trend", "-f", "json", "--by", "symbols", runs[0]))  # frames by function
lscore = {st["frames"][0]: st["score"] for st in local["stacks"] if st["suspect"]}
tr = fleet("trend", "--where", "program=ex_trend")
stacks = tr["groups"][0]["stacks"]
check(leaf(stacks[0]) == "leak_steady" and stacks[0]["suspect_in"] == 3 and stacks[0]["processes"] == 3,
      "trend first: %r" % stacks[0])
check(abs(stacks[0]["max_score"] - lscore["leak_steady"]) < 1e-5 and
      abs(stacks[0]["score"] - 3 * lscore["leak_steady"]) < 3e-5,
      "trend score %r vs local %r" % (stacks[0], lscore))
check(stacks[0]["growth"] == 3 * 5 * 16384, "trend growth %r" % stacks[0]["growth"])
check([leaf(s) for s in stacks] == [st["frames"][0] for st in local["stacks"] if st["suspect"]],
      "fleet order %r, local %r" % ([leaf(s) for s in stacks], list(lscore)))
# the second statement's other path (more grown stacks than a statement may name: every
# stack is read) gives the same answer
every = json.loads(run([MEMSIGHT, "fleet", "trend", "--where", "program=ex_trend", "--clickhouse", ch.url,
                        "-f", "json"], env=dict(os.environ, MEMSIGHT_FLEET_GROWN_MAX="0")))
check(every == tr, "trend reading every stack differs: %r\nagainst %r" % (every, tr))

# leaks over the newest leak scan of each process
lk = fleet("leaks")
s0 = lk["groups"][0]["stacks"]
check(len(s0) == 1 and s0[0]["definitely_lost"] == {"bytes": 240, "blocks": 6} and s0[0]["processes"] == 2,
      "fleet leaks %r" % s0)
check("run" in [f["function"] for f in s0[0]["frames"]], "leak frames %r" % s0[0]["frames"])

# bad queries are refused before anything is sent
for args, why in ((["top", "-g", "1x"], "not a label key"), (["top", "-w", "version"], "KEY=VALUE"),
                  (["median"], "unknown query")):
    p = subprocess.run([MEMSIGHT, "fleet"] + args + ["--clickhouse", ch.url], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and why in p.stderr, "%r: %d %r" % (args, p.returncode, p.stderr))
print("ok: %d snapshots pushed once (%d rows), symbolized, fleet top/trend/leaks match the ground truth"
      % (nsnap, nrows))
