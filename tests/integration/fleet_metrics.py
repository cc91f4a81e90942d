#!/usr/bin/env python3
"""`memsight watch --metrics-listen/--metrics-file`, scraped by Debian's prometheus on
127.0.0.1 and read back through its HTTP API. Ground truth: lk_serve, under the agent
with labels, holds 2000 heap bytes (a 1000-byte global block, ten 100-byte buffers it
leaks) and a leak scan finds 1000 B definitely lost in 10 blocks and 1000 B still
reachable in 1; its RSS, threads and fds are read from /proc by this test; the tracker
`rss>1k,n=1` fires on every sample until --max-triggers 2 stops it."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, PROGRAMS, SKIP, check, fail, run, tmpdir  # noqa: E402
from fleet_common import Prometheus, check_proc_series, have, http_get, spawn, wait_for  # noqa: E402

if not have("prometheus"):
    print("prometheus not installed: skipped")
    sys.exit(SKIP)

d = tmpdir("metrics")
snaps = os.path.join(d, "snaps")
ready = open(os.path.join(d, "ready"), "w+")
runner = spawn([MEMSIGHT, "run", "-q", "-o", snaps, "--leak-check=signal", "--label", "version=2.1.0",
                "--label", "model=Pixel 7", "--", os.path.join(PROGRAMS, "lk_serve")], stdout=ready)
wait_for("lk_serve to start", lambda: "READY" in open(ready.name).read(), timeout=30)
children = open("/proc/%d/task/%d/children" % (runner.pid, runner.pid)).read().split()
check(len(children) == 1, "memsight run has children %r" % children)
pid = int(children[0])
run([MEMSIGHT, "leaks", "--timeout", "60", str(pid)])  # a snapshot with a leak scan

# bad addresses are refused with the reason, before anything is watched
for bad in ("localhost:80", "127.0.0.1", "127.0.0.1:70000", "[::1:9"):
    p = subprocess.run([MEMSIGHT, "watch", "-c", "1", "--metrics-listen", bad, str(pid)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 1 and "is not ADDR:PORT" in p.stderr, "--metrics-listen %s: %d %r" %
          (bad, p.returncode, p.stderr))

mfile = os.path.join(d, "memsight.prom")
werr = open(os.path.join(d, "watch.err"), "w+")
watch = spawn([MEMSIGHT, "watch", "-i", "200ms", "--metrics-listen", "127.0.0.1:0", "--metrics-file",
               mfile, "--label", "team=core", "--agent-dir", snaps, "-t", "rss>1k,n=1",
               "--cooldown", "100ms", "--max-triggers", "2", "-e", os.path.join(d, "ev"), str(pid)],
              stderr=werr)
port = int(wait_for("the metrics port", lambda: re.search(r"metrics on port (\d+)",
                                                          open(werr.name).read()).group(1), 30))

# the same address again: in use, said so
p = subprocess.run([MEMSIGHT, "watch", "-c", "1", "--metrics-listen", "127.0.0.1:%d" % port, str(pid)],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 1 and "Address already in use" in p.stderr, "port in use: %r" % p.stderr)
try:
    http_get("http://127.0.0.1:%d/nothing" % port)
    fail("/nothing answered 200")
except Exception as e:
    check("404" in str(e), "/nothing: %r" % e)

prom = Prometheus(["127.0.0.1:%d" % port])
sel = '{pid="%d"}' % pid

one = prom.one


# the heap and leak numbers come from the agent's newest snapshot: the leak scan's
v = prom.check_labels("memsight_heap_live_bytes" + sel, {
    "pid": str(pid), "program": "lk_serve", "version": "2.1.0", "model": "Pixel 7", "team": "core",
    "job": "memsight",
    "host": os.uname().nodename})  # the process's own host, memsight's reserved label
check(v == 2000, "heap live bytes %r, want 2000" % v)
check(one("memsight_heap_live_blocks" + sel)[1] == 11, "heap live blocks")
for cls, b, n in (("definitely_lost", 1000, 10), ("still_reachable", 1000, 1), ("possibly_lost", 0, 0)):
    s = '{pid="%d",class="%s"}' % (pid, cls)
    check(one("memsight_leak_bytes" + s)[1] == b, "leak bytes %s" % cls)
    check(one("memsight_leak_blocks" + s)[1] == n, "leak blocks %s" % cls)

# the kernel's numbers: what /proc says now (the process is idle; one scrape is <1 s old)
check_proc_series(one, pid, 64 * 1024)
check(one("memsight_fds" + sel)[1] == len(os.listdir("/proc/%d/fd" % pid)), "fds")
fired = wait_for("two firings", lambda: one('memsight_trigger_firings_total{pid="%d",tracker="rss>1k,n=1"}'
                                            % pid)[1] == 2)

# the textfile: same series, 0600, complete
text = open(mfile).read()
check(oct(os.stat(mfile).st_mode & 0o777) == "0o600", "metrics file mode")
check(re.search(r'^memsight_heap_live_bytes\{host="%s",pid="%d",program="lk_serve",team="core",version="2.1.0",'
                r'model="Pixel 7"\} 2000$' % (re.escape(os.uname().nodename), pid), text, re.M), "textfile heap line:\n" + text)
check("# TYPE memsight_trigger_firings_total counter" in text, "textfile TYPE lines")

# the process ends: watch ends, and its series leave the file
prom.stop()
os.kill(pid, 15)
runner.wait(timeout=30)
watch.wait(timeout=30)
check(watch.returncode == 0, "watch exited %r: %s" % (watch.returncode, open(werr.name).read()))
check("memsight_rss_bytes{" not in open(mfile).read(), "a gone process still in the file")
print("ok: prometheus scraped memsight watch: heap %d, leaks, rss, threads, fds, firings" % v)
