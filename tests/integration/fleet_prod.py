#!/usr/bin/env python3
"""The fleet in production (docs/fleet.md), against real servers on 127.0.0.1: Debian's
clickhouse-server (a database per part), debuginfod and go tool pprof.

- symbols are never lost: ex_trend stripped at its recorded path gives no symbols and
  none is stored; a relative path to its debug file (objcopy --only-keep-debug) then
  gives leak_steady with its file and line; --force looks again without duplicating;
- debuginfod: the same stripped run symbolized from `debuginfod -F` serving the debug file;
- time: --since/--until keep only the processes seen then; the trend's onset is the
  time of the snapshot after each series' last low point, computed here from the files;
- pprof: top and diff as profiles go tool pprof reads, labels by version; diff of
  ex_trend 4 steps (version 1.0) against 8 steps (2.0): leak_steady +4 x 16 KiB a process;
- push: a server that accepts and never answers costs --timeout x --tries, every file is
  named; ClickHouse down, then up: every file is sent once;
- forged input: a hostname with a newline is printed escaped; a time outside DateTime and
  counters no address space holds are refused;
- fleet leaks over a sampled process says sampled mode does no leak scans."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import (MEMSIGHT, PROGRAMS, SKIP, browser, check, chromium, memsight, pprof,  # noqa: E402
                           pprof_env, pprof_top, run, snapshots, tmpdir)
from fleet_common import ClickHouse, free_port, have, spawn, wait_for  # noqa: E402
import report_mksnap  # noqa: E402

if not have("clickhouse-server"):
    print("clickhouse-server not installed: skipped")
    sys.exit(SKIP)

d = tmpdir("fleetprod")
ch = ClickHouse()


def sql(q):
    req = urllib.request.Request(ch.url + "/", data=q.encode())
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def db(name):
    sql("CREATE DATABASE IF NOT EXISTS " + name)
    return ch.url + "/?database=" + name


def ms(*args, env=None, cwd=None):
    return subprocess.run([MEMSIGHT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, cwd=cwd)


def fleet(url, *args):
    return json.loads(memsight("fleet", *args, "--clickhouse", url, "-f", "json"))


def leaf(st):
    return st["frames"][0]["function"] if st["frames"] else None


def stack_of(groups, fn):
    for g in groups:
        for s in g["stacks"]:
            if leaf(s) == fn:
                return s
    return None


# ---- 1. symbols never lost: a stripped binary, then its debug file by a relative path ----
os.makedirs(os.path.join(d, "bin"))
os.makedirs(os.path.join(d, "dbg"))
exe = os.path.join(d, "bin", "ex_trend")
run(["cp", os.path.join(PROGRAMS, "ex_trend"), exe])
run(["objcopy", "--only-keep-debug", exe, os.path.join(d, "dbg", "ex_trend.debug")])
run(["strip", "--strip-all", exe])
outs = os.path.join(d, "stripped")
memsight("run", "-q", "-o", outs, "--label", "version=1.0", "--", exe, "3", "snap")
bid = report_mksnap.elf_info(exe)["build_id"].hex()

ua = db("syms")
memsight("push", "-q", ua, outs)
p = ms("symbolize", "--clickhouse", ua)
check(p.returncode == 0 and bid in p.stderr and "unresolved (no symbol covers them" in p.stderr and
      "DEBUGINFOD_URLS is not set" not in p.stderr, "stripped: %s" % p.stderr)
rows = sql("SELECT count() FROM syms.memsight_symbols WHERE build_id = '%s'" % bid).strip()
empty = sql("SELECT count() FROM syms.memsight_symbols WHERE function = ''").strip()
check(rows == "0" and empty == "0", "nothing stored for what was not found: %s rows, %s empty" % (rows, empty))
p = ms("symbolize", "--clickhouse", ua, "dbg/ex_trend.debug", cwd=d)
check(p.returncode == 0 and "with a source line" in p.stderr and "ex_trend.debug" in p.stderr,
      "a relative debug file: %s" % p.stderr)
top = fleet(ua, "top", "--where", "program=ex_trend")
st = stack_of(top["groups"], "leak_steady")
check(st is not None and st["frames"][0]["file"].endswith("ex_trend.c") and st["frames"][0]["line"] > 0,
      "leak_steady with its line after the debug file: %r" % (st or top))
nframes = len(st["frames"])
p = ms("symbolize", "--clickhouse", ua)
check(p.returncode == 0 and "; 0 stored" in p.stderr, "a third run has nothing better: %s" % p.stderr)
p = ms("symbolize", "--force", "--clickhouse", ua, "dbg/ex_trend.debug", cwd=d)
check(p.returncode == 0 and "; 0 stored" not in p.stderr, "--force stores again: %s" % p.stderr)
st2 = stack_of(fleet(ua, "top", "--where", "program=ex_trend")["groups"], "leak_steady")
check(len(st2["frames"]) == nframes and st2["frames"] == st["frames"], "--force duplicates no frame")

# ---- 2. debuginfod serving the debug file; symbolize fetches it by build id --------------
if have("debuginfod"):
    ub = db("dfd")
    memsight("push", "-q", ub, outs)
    port = free_port()
    dlog = open(os.path.join(d, "debuginfod.log"), "w")
    spawn(["debuginfod", "-F", "-p", str(port), "-d", os.path.join(d, "debuginfod.sqlite"), "-t", "0",
           "-g", "0", "-c", "1", os.path.join(d, "dbg")], stdout=dlog, stderr=subprocess.STDOUT)
    durl = "http://127.0.0.1:%d" % port

    def served():
        with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (durl, bid), timeout=5) as r:
            return r.status == 200
    wait_for("debuginfod to serve the debug file", served, timeout=60)
    env = dict(os.environ, DEBUGINFOD_URLS=durl, DEBUGINFOD_CACHE_PATH=os.path.join(d, "dcache"),
               DEBUGINFOD_TIMEOUT="10")
    p = ms("symbolize", "--clickhouse", ub, env=env)
    check(p.returncode == 0 and "fetched from debuginfod" in p.stderr and "with a source line" in p.stderr,
          "symbolize from debuginfod: %s" % p.stderr)
    st = stack_of(fleet(ub, "top", "--where", "program=ex_trend")["groups"], "leak_steady")
    check(st is not None and st["frames"][0]["file"].endswith("ex_trend.c"), "debuginfod's symbols: %r" % st)
    # a server that has not the file: said, nothing stored
    uc = db("dfd_none")
    memsight("push", "-q", uc, outs)
    env["DEBUGINFOD_URLS"] = "http://127.0.0.1:%d" % free_port()
    p = ms("symbolize", "--clickhouse", uc, env=env)
    check(p.returncode == 0 and "debuginfod" in p.stderr and "unresolved" in p.stderr, p.stderr)
else:
    print("debuginfod not installed: part 2 skipped")

# ---- 4, 5. time ranges, onset, pprof, diff --------------------------------------------------
ut = db("times")
runs = []
for i, (version, steps) in enumerate((("1.0", "4"), ("1.0", "4"), ("2.0", "8"))):
    if i == 2:
        time.sleep(1.2)
        t_split = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
        time.sleep(1.2)
    out = os.path.join(d, "t%d" % i)
    memsight("run", "-q", "-o", out, "--label", "version=" + version, "--",
             os.path.join(PROGRAMS, "ex_trend"), steps, "snap")
    runs.append(out)
for r in runs:
    memsight("push", "-q", ut, r)
memsight("symbolize", "-q", "--clickhouse", ut)

late = fleet(ut, "top", "--group-by", "version", "--since", t_split)
check([g["group"] for g in late["groups"]] == [{"version": "2.0"}] and
      all(s["processes"] == 1 for s in late["groups"][0]["stacks"]), "--since: %r" % late["groups"])
early = fleet(ut, "top", "--group-by", "version", "--until", t_split)
check([g["group"] for g in early["groups"]] == [{"version": "1.0"}] and
      stack_of(early["groups"], "leak_steady")["processes"] == 2, "--until: %r" % early["groups"])
text = memsight("fleet", "top", "--clickhouse", ut, "--since", "2020-01-01T00:00:00Z", "--until", "2020-01-02")
check("(nothing)" in text, "a range with no snapshot: %s" % text)
check("leak_steady" in memsight("fleet", "top", "--clickhouse", ut, "--since", "1h"), "--since 1h")
p = ms("fleet", "top", "--clickhouse", ut, "--since", "yesterday")
check(p.returncode == 2 and "duration" in p.stderr, "a bad --since: %r" % p.stderr)

# the onset: per process the first snapshot after the last lowest point of leak_steady's
# live bytes (0 where a snapshot lacks it), earliest over the processes; from the rows
tr = fleet(ut, "trend", "--group-by", "version", "--where", "program=ex_trend")
h = int(stack_of(tr["groups"], "leak_steady")["stack_hash"], 16)
live = {(r[0], int(r[1])): int(r[2]) for r in ch.query(
    "SELECT pid, snapshot_ns, sum(live_bytes) FROM times.memsight_stacks WHERE stack_hash = %d"
    " GROUP BY pid, snapshot_ns" % h)}
onset = {}
for pid, version in ch.query("SELECT DISTINCT pid, label_values[1] FROM times.memsight_snapshots"
                             " WHERE program = 'ex_trend'"):
    ns = sorted(int(r[0]) for r in ch.query(
        "SELECT DISTINCT snapshot_ns FROM times.memsight_snapshots WHERE pid = %s" % pid))
    series = [live.get((pid, t), 0) for t in ns]
    low = max(i for i, b in enumerate(series) if b == min(series))
    if low + 1 < len(series):
        onset[version] = min(onset.get(version, 1 << 64), ns[low + 1])
check(set(onset) == {"1.0", "2.0"}, "leak_steady grows in both versions: %r" % onset)
for g in tr["groups"]:
    st = stack_of([g], "leak_steady")
    check(st is not None and st["onset_ns"] == onset[g["group"]["version"]] and st["onset"].endswith("Z"),
          "onset of %r: %r, want %r" % (g["group"], st and st["onset_ns"], onset))
text = memsight("fleet", "trend", "--clickhouse", ut, "--where", "program=ex_trend")
check("grows since 20" in text, "the onset in text: %s" % text[:800])
# trend's second pass reads the rows of the stacks that grew in every process: the
# processes holding leak_steady, per version, from the rows
for g in tr["groups"]:
    st = stack_of([g], "leak_steady")
    want = ch.query("SELECT uniqExact(pid) FROM times.memsight_stacks WHERE stack_hash = %d AND"
                    " label_values[1] = '%s'" % (h, g["group"]["version"]))
    check(st["processes"] == int(want[0][0]) and st["suspect_in"] == int(want[0][0]),
          "trend processes of %r: %r, want %s" % (g["group"], st["processes"], want))
# no process with two snapshots in range: nothing grew, nothing to rank
text = memsight("fleet", "trend", "--clickhouse", ut, "--since", "2020-01-01T00:00:00Z", "--until", "2020-01-02")
check("(nothing)" in text, "trend over a range with no snapshot: %s" % text)
late = fleet(ut, "trend", "--group-by", "version", "--since", t_split)
check([g["group"] for g in late["groups"]] == [{"version": "2.0"}] and
      stack_of(late["groups"], "leak_steady")["processes"] == 1, "trend --since: %r" % late["groups"])

dd = fleet(ut, "diff", "--group-by", "version", "1.0", "2.0", "--where", "program=ex_trend")
st = [s for s in dd["stacks"] if leaf(s) == "leak_steady"]
check(dd["base"] == {"value": "1.0", "processes": 2} and dd["target"] == {"value": "2.0", "processes": 1} and
      len(st) == 1 and st[0]["delta_bytes_per_process"] == 4 * 16384 and
      st[0]["base_live_bytes"] == 2 * 4 * 16384 and st[0]["target_live_bytes"] == 8 * 16384,
      "diff: %r" % (st or dd))
jo = [s for s in dd["stacks"] if leaf(s) == "jump_once"]
check(not jo or jo[0]["delta_bytes_per_process"] == 0, "jump_once is the same in both: %r" % jo)

def pprof_raw(path):
    """The samples of go tool pprof -raw: [(values, leaf function, {label: value})]."""
    out = pprof("-raw", path)
    if out is None:
        return None
    samples, locs, part = [], {}, None
    for line in out.splitlines():
        if line.startswith("Samples:") or line.startswith("Locations") or line.startswith("Mappings"):
            part = line.split()[0].rstrip(":")
            continue
        if part == "Samples" and ":" in line and "/" not in line and "[" not in line:
            vals, ids = line.split(":", 1)
            samples.append(([int(v) for v in vals.split()], ids.split()[0] if ids.split() else None, {}))
        elif part == "Samples" and ":[" in line and samples:
            k, v = line.strip().split(":[", 1)
            samples[-1][2][k] = v.rstrip("]")
        elif part == "Locations" and line[:6].strip().isdigit():
            f = line.split(":", 1)
            locs[f[0].strip()] = f[1].split()[2]
    return [(v, locs.get(i), lab) for v, i, lab in samples]


prof = os.path.join(d, "top.pb.gz")
memsight("fleet", "top", "--clickhouse", ut, "--group-by", "version", "--where", "program=ex_trend",
         "-n", "50", "--format", "pprof", "-o", prof)
raw = pprof_raw(prof)
if raw is None:
    print("go not installed: reading the profiles skipped")
else:
    # inuse_space is the 4th value; a sample per (version, stack), the version as a label
    ls = {lab["version"]: (v[3], lab["processes"]) for v, fn, lab in raw if fn == "leak_steady"}
    check(ls == {"1.0": (2 * 4 * 16384, "2"), "2.0": (8 * 16384, "1")}, "pprof top: %r" % raw[:6])
    dprof = os.path.join(d, "diff.pb.gz")
    memsight("fleet", "diff", "--clickhouse", ut, "--group-by", "version", "1.0", "2.0", "--where",
             "program=ex_trend", "--format", "pprof", "-o", dprof)
    rows, _ = pprof_top(dprof, "delta_space")
    check(rows.get("leak_steady", (0,))[0] == 4 * 16384, "pprof diff: %r" % rows)
    # the fleet as people look at it: go tool pprof -http, its pages drawn by headless
    # Chromium (the top table's rows and the flame graph's frames exist only once the
    # pages' scripts have run)
    if chromium():
        port = free_port()
        home = tmpdir("gohome-http")
        spawn(["go", "tool", "pprof", "-http=127.0.0.1:%d" % port, "-no_browser", prof],
              env=pprof_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ui = "http://127.0.0.1:%d/ui/" % port
        wait_for("go tool pprof -http", lambda: urllib.request.urlopen(ui + "top", timeout=5).status == 200)
        top = browser(["--virtual-time-budget=3000", "--dump-dom", ui + "top"]) or ""
        rows = [r for r in top.split('<tr id="node')[1:] if "leak_steady" in r.split("</tr>")[0]]
        check(rows, "pprof's top page in Chromium has no row for leak_steady")
        fg = browser(["--virtual-time-budget=3000", "--dump-dom", ui + "flamegraph"]) or ""
        frames = [f for f in fg.split('class="frame"')[1:] if "leak_steady" in f.split("</g>")[0]]
        check(frames, "pprof's flame graph in Chromium has no frame for leak_steady")
    else:
        print("chromium not installed: the pprof web UI check skipped")

# ---- tables an older memsight made: the queries say so; push or symbolize upgrades them ------
OLD_STACKS = """snapshot_id String, time DateTime, snapshot_ns UInt64, host String, program String,
  pid UInt32, reason String, sampled UInt8, label_keys Array(String), label_values Array(String),
  stack_hash UInt64, kind String, first_is_pc UInt8, live_bytes UInt64, live_blocks UInt64,
  alloc_bytes UInt64, alloc_blocks UInt64, free_bytes UInt64, free_blocks UInt64,
  definitely_lost_bytes UInt64, definitely_lost_blocks UInt64, indirectly_lost_bytes UInt64,
  indirectly_lost_blocks UInt64, possibly_lost_bytes UInt64, possibly_lost_blocks UInt64,
  still_reachable_bytes UInt64, still_reachable_blocks UInt64, frame_build_ids Array(String),
  frame_offsets Array(UInt64), frame_modules Array(String)"""
uo = db("old")
sql("CREATE TABLE old.memsight_stacks (%s) ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(time)"
    " ORDER BY (program, snapshot_id, stack_hash)" % OLD_STACKS)
sql("CREATE TABLE old.memsight_snapshots AS times.memsight_snapshots")
sql("CREATE TABLE old.memsight_symbols (build_id String, offset UInt64, idx UInt8, function String,"
    " file String, line UInt32, inlined UInt8) ENGINE = ReplacingMergeTree() ORDER BY (build_id, offset, idx)")
cols = ", ".join(c.split()[0] for c in OLD_STACKS.replace("\n", " ").split(", "))
sql("INSERT INTO old.memsight_stacks SELECT %s FROM times.memsight_stacks" % cols)
sql("INSERT INTO old.memsight_snapshots SELECT * FROM times.memsight_snapshots")
# what an older symbolize stored when it found nothing: an empty function for every offset
sql("INSERT INTO old.memsight_symbols SELECT b, off, 0, '', '', 0, 0 FROM (SELECT DISTINCT b, off"
    " FROM old.memsight_stacks ARRAY JOIN frame_build_ids AS b, frame_offsets AS off)")
p = ms("fleet", "top", "--clickhouse", uo)
check(p.returncode == 1 and "older memsight" in p.stderr and "push" in p.stderr, "old tables: %s" % p.stderr)
p = ms("symbolize", "--clickhouse", uo)
check(p.returncode == 0 and "with a source line" in p.stderr, "symbolize upgrades: %s" % p.stderr)
new_top = fleet(ut, "top", "--group-by", "version", "--where", "program=ex_trend")
old_top = fleet(uo, "top", "--group-by", "version", "--where", "program=ex_trend")
check(old_top["groups"] == new_top["groups"], "upgraded tables answer as new ones: %r" % old_top["groups"][:1])
check(stack_of(old_top["groups"], "leak_steady")["frames"][0]["line"] > 0, "old empty symbols ignored")

# ---- 6. a push that cannot hang, and nothing lost while ClickHouse is down ------------------
files = snapshots(runs[0])
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(16)
held = []


def accept_forever():
    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        held.append(c)  # never read, never answered


threading.Thread(target=accept_forever, daemon=True).start()
t0 = time.monotonic()
p = ms("push", "--timeout", "2", "--tries", "2", "http://127.0.0.1:%d" % lsock.getsockname()[1], *files)
took = time.monotonic() - t0
check(p.returncode == 1 and took < 30 and "timed out" in p.stderr and
      all(("%s: not pushed" % f) in p.stderr for f in files) and "kept" in p.stderr,
      "a server that never answers: %.1f s, %d %s" % (took, p.returncode, p.stderr))
check(len(held) >= 2, "the push tried again: %d connections" % len(held))
lsock.close()
up = db("downup")
p = ms("push", "--tries", "1", "http://127.0.0.1:%d/?database=downup" % free_port(), *files)
check(p.returncode == 1 and all(("%s: not pushed" % f) in p.stderr for f in files), "down: %s" % p.stderr)
check(all(os.path.exists(f) for f in files), "the files stay")
p = ms("push", up, *files)
check(p.returncode == 0 and "%d pushed, 0 already there" % len(files) in p.stderr, "up: %s" % p.stderr)
p = ms("push", up, *files)
check(p.returncode == 0 and "0 pushed, %d already there" % len(files) in p.stderr, "again: %s" % p.stderr)
check(sql("SELECT count() FROM downup.memsight_snapshots").strip() == str(len(files)), "once each")

# ---- 7. forged input ----------------------------------------------------------------------------
uf = db("forged")
fd = os.path.join(d, "forged")
os.makedirs(fd)


def forged(name, host="h1", ns=1790000000000000000, live=1000):
    s = report_mksnap.Snapshot()
    s.meta = [(k, v) for k, v in s.meta if k != "snapshot_ns"] + [
        ("hostname", host), ("snapshot_ns", str(ns)), ("labels", "version=1.0")]
    s.add_stack(1, "heap", [0x1000], 1, live, 1, live)
    path = os.path.join(fd, name)
    with open(path, "wb") as f:
        f.write(s.build())
    return path


evil = forged("evil.msnap", host="evil\n== version=9.9")
p = ms("push", uf, evil)
check(p.returncode == 0, p.stderr)
text = memsight("fleet", "top", "--clickhouse", uf, "--group-by", "host,version")
check("\n== version=9.9" not in text and "== host=evil\\x0a== version=9.9 version=1.0" in text,
      "a hostname with a newline: %r" % text)
for name, kw, why in (("future.msnap", dict(ns=5 * 10**18), "DateTime"),
                      ("zero.msnap", dict(ns=10**8), "DateTime"),
                      ("huge.msnap", dict(live=1 << 60), "address space")):
    p = ms("push", uf, forged(name, **kw))
    check(p.returncode == 1 and ("%s: not pushed" % name) in p.stderr and why in p.stderr,
          "%s: %d %s" % (name, p.returncode, p.stderr))
check(sql("SELECT count() FROM forged.memsight_snapshots").strip() == "1", "only the sane one is in")

# ---- 8. leaks over a sampled process -------------------------------------------------------------
ul = db("sampled")
out = os.path.join(d, "sampled")
memsight("run", "-q", "-o", out, "-O", "sample=4096", "--", os.path.join(PROGRAMS, "ex_trend"), "2", "snap")
memsight("push", "-q", ul, out)
text = memsight("fleet", "leaks", "--clickhouse", ul)
check("(nothing)" in text and "1 process ran in sampled mode, which does no leak scans" in text, text)
check(fleet(ul, "leaks")["sampled_processes_without_scan"] == 1, "JSON says it too")
print("ok: symbols kept for a better file, debuginfod, ranges and onset, pprof and diff, a push that"
      " cannot hang, forged input refused or escaped, sampled leaks said")
