#!/usr/bin/env python3
"""The agent serves /metrics for its own process (option metrics_listen=), scraped by
Debian's prometheus on 127.0.0.1 and read back through its HTTP API. Ground truth:
lk_serve under the agent with labels holds 2000 heap bytes in 11 blocks, and a leak scan
finds 1000 B definitely lost in 10 blocks and 1000 B still reachable in 1; its RSS,
threads and fds are read from /proc by this test. Then what the option must not do:
record the server's own allocations (the program's counters do not move over many
scrapes), keep an address it was not given, crash or stop a program whose address is
taken (a line on stderr, HLTH metrics_errors), load anything when the option is off,
serve from a forked child or keep the parent's port there, or keep alive a process
whose main thread leaves through pthread_exit."""
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, PROGRAMS, SKIP, check, fail, report_json, run, snapshots, tmpdir  # noqa: E402
from fleet_common import Prometheus, check_proc_series, free_port, have, http_get, spawn, wait_for  # noqa: E402

if not have("prometheus"):
    print("prometheus not installed: skipped")
    sys.exit(SKIP)

d = tmpdir("agent-metrics")


def clean_env():
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MEMSIGHT_OPTIONS")}


# memsight run refuses an address the agent would not bind, before the program starts
for bad in ("localhost:80", "127.0.0.1", "127.0.0.1:70000", "[::1:9"):
    p = subprocess.run([MEMSIGHT, "run", "-q", "-o", d, "-O", "metrics_listen=" + bad, "--", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and "not ADDR:PORT" in p.stderr and bad in p.stderr,
          "metrics_listen=%s: %d %r" % (bad, p.returncode, p.stderr))

# ---- lk_serve serving its own /metrics -------------------------------------------------
snaps = os.path.join(d, "snaps")
port = free_port()
addr = "127.0.0.1:%d" % port
ready = open(os.path.join(d, "ready"), "w+")
runner = spawn([MEMSIGHT, "run", "-q", "-o", snaps, "--leak-check=signal", "--label", "version=2.1.0",
                "--label", "model=Pixel 7", "-O", "metrics_listen=" + addr, "--",
                os.path.join(PROGRAMS, "lk_serve")], stdout=ready, env=clean_env())
wait_for("lk_serve to start", lambda: "READY" in open(ready.name).read(), timeout=30)
children = open("/proc/%d/task/%d/children" % (runner.pid, runner.pid)).read().split()
check(len(children) == 1, "memsight run has children %r" % children)
pid = int(children[0])
url = "http://%s/metrics" % addr
wait_for("the agent's /metrics", lambda: http_get(url)[0] == 200, timeout=30)
st, body = http_get(url)
check('memsight_heap_live_bytes{host="%s",pid="%d",program="lk_serve",version="2.1.0",model="Pixel 7"} 2000'
      % (os.uname().nodename, pid) in body, "the agent's exposition:\n" + body)
try:
    http_get("http://%s/nothing" % addr)
    fail("/nothing answered 200")
except Exception as e:
    check("404" in str(e), "/nothing: %r" % e)
# bound where told only: 127.0.0.1, not every address
listening = [l.split() for l in open("/proc/net/tcp").read().splitlines()[1:]]
mine = [l[1] for l in listening if l[3] == "0A" and int(l[1].split(":")[1], 16) == port]
check(mine == ["0100007F:%04X" % port], "listening sockets on port %d: %r" % (port, mine))

run([MEMSIGHT, "leaks", "--timeout", "60", str(pid)])  # the agent keeps the scan's totals
before = report_json(run([MEMSIGHT, "dump", str(pid)]).strip())["totals"]

prom = Prometheus([addr])
sel = '{pid="%d"}' % pid

one = prom.one


v = prom.check_labels("memsight_heap_live_bytes" + sel, {
    "pid": str(pid), "program": "lk_serve", "version": "2.1.0", "model": "Pixel 7", "job": "memsight",
    "instance": addr,
    "host": os.uname().nodename})  # the process's own host, memsight's reserved label
check(v == 2000, "heap live bytes %r, want 2000" % v)
check(one("memsight_heap_live_blocks" + sel)[1] == 11, "heap live blocks")
for cls, b, n in (("definitely_lost", 1000, 10), ("still_reachable", 1000, 1), ("possibly_lost", 0, 0),
                  ("indirectly_lost", 0, 0)):
    s = '{pid="%d",class="%s"}' % (pid, cls)
    check(one("memsight_leak_bytes" + s)[1] == b, "leak bytes %s" % cls)
    check(one("memsight_leak_blocks" + s)[1] == n, "leak blocks %s" % cls)
check(one("memsight_agent_dropped_records" + sel)[1] == 0, "dropped records")

check_proc_series(one, pid, 256 * 1024)
comms = sorted(open("/proc/%d/task/%s/comm" % (pid, t)).read().strip()
               for t in os.listdir("/proc/%d/task" % pid))
check(comms.count("memsight-metric") == 1, "the server's thread: %r" % comms)
# the connection being answered is one of the process's descriptors while it is read
fds = one("memsight_fds" + sel)[1]
idle = [len(os.listdir("/proc/%d/fd" % pid)) for _ in range(5)]
check(fds - 1 in idle, "fds %r, want one more than %r" % (fds, idle))

# many scrapes later the program's own counters have not moved: the server's allocations
# (libmicrohttpd's, the text's) are not recorded as the program's
wait_for("three scrapes", lambda: one("memsight_samples_total" + sel)[1] >= 3, timeout=120)
for _ in range(20):
    http_get(url)
after = report_json(run([MEMSIGHT, "dump", str(pid)]).strip())["totals"]
for k in ("live_bytes", "live_blocks", "allocated_bytes", "allocated_blocks"):
    check(after[k] == before[k], "%s moved over the scrapes: %r -> %r" % (k, before[k], after[k]))
prom.stop()
os.kill(pid, 15)
runner.wait(timeout=30)

# ---- the address taken: the program runs as without the option -------------------------
taken = socket.socket()
taken.bind(("127.0.0.1", 0))
taken.listen(1)
tport = taken.getsockname()[1]
od = os.path.join(d, "taken")
p = subprocess.run([MEMSIGHT, "run", "-q", "-o", od, "-O", "metrics_listen=127.0.0.1:%d" % tport, "--",
                    os.path.join(PROGRAMS, "ex_trend"), "4"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, env=clean_env(), timeout=120)
q = subprocess.run([os.path.join(PROGRAMS, "ex_trend"), "4"], stdout=subprocess.PIPE, text=True,
                   env=clean_env(), timeout=120)
check(p.returncode == q.returncode and p.stdout == q.stdout, "with the port taken: %d %r vs %d %r" %
      (p.returncode, p.stdout[-300:], q.returncode, q.stdout[-300:]))
lines = [l for l in p.stderr.splitlines() if "metrics_listen" in l]
check(len(lines) == 1 and "Address already in use" in lines[0] and "not serving /metrics" in lines[0],
      "stderr with the port taken: %r" % p.stderr)
ex = [s for s in snapshots(od) if s.endswith("-exit.msnap")]
check(len(ex) == 1 and report_json(ex[0])["health"].get("metrics_errors") == 1,
      "HLTH metrics_errors: %r" % [report_json(s)["health"] for s in ex])
taken.close()

# ---- off: nothing of it in the process ------------------------------------------------
# (the shell waits, bounded, for the plugin to be mapped: it is loaded by the agent's
# thread, which starts at the first allocation after main())
show = ('x=$(seq 1 2000); for i in $(seq 1 %d); do grep -q libmemsight-metrics /proc/$$/maps && break; '
        'sleep 0.1; done; cat /proc/$$/maps')
for opt, loaded in (("", False), (",metrics_listen=127.0.0.1:0", True)):
    env = dict(clean_env(), LD_PRELOAD=os.environ["MS_AGENT"], MEMSIGHT_OPTIONS="out=%s%s" % (d, opt))
    out = subprocess.run(["sh", "-c", show % (600 if loaded else 1)], stdout=subprocess.PIPE,
                         text=True, env=env, timeout=120).stdout
    has = ("libmicrohttpd" in out, "libmemsight-metrics" in out)
    check(has == (loaded, loaded), "option %r: microhttpd, plugin mapped: %r" % (opt, has))

# ---- fork: the child serves nothing and keeps no copy of the parent's socket ------------
fport = free_port()
code = r'''
import os, sys, time
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
pid = os.fork()
if pid == 0:
    sys.stdout.write("child %d\n" % os.getpid()); sys.stdout.flush()
    time.sleep(120)
    os._exit(0)
sys.stdin.readline()
'''
fo = os.path.join(d, "fork")
os.makedirs(fo)
env = dict(clean_env(), LD_PRELOAD=os.environ["MS_AGENT"],
           MEMSIGHT_OPTIONS="out=%s,metrics_listen=127.0.0.1:%d" % (fo, fport))
par = spawn(["python3", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
check(par.stdout.readline() == "ready\n", "python did not start")
furl = "http://127.0.0.1:%d/metrics" % fport
wait_for("python's /metrics", lambda: http_get(furl)[0] == 200, timeout=30)
par.stdin.write("fork\n")
par.stdin.flush()
m = re.match(r"child (\d+)", par.stdout.readline())
check(m, "no child")
child = int(m.group(1))
try:
    check('pid="%d"' % par.pid in http_get(furl)[1], "the parent no longer serves")
    ccomm = [open("/proc/%d/task/%s/comm" % (child, t)).read().strip()
             for t in os.listdir("/proc/%d/task" % child)]
    check("memsight-metric" not in ccomm, "the child has a server thread: %r" % ccomm)
    par.stdin.close()
    check(par.wait(timeout=60) == 0, "python exited %r" % par.returncode)
    # the parent is gone, the child lives: nothing listens on the port any more (a new
    # listener can bind it; SO_REUSEADDR only passes the closed connections' TIME_WAIT)
    check(os.path.exists("/proc/%d" % child), "the child ended early")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", fport))
        s.listen(1)
    except OSError as e:
        fail("port %d still held after the parent ended (the child's copy?): %s" % (fport, e))
    s.close()
finally:
    os.kill(child, 9)
check(any(f.startswith("memsight-%d-" % par.pid) and f.endswith("-exit.msnap") for f in os.listdir(fo)),
      "the parent's exit snapshot: %r" % os.listdir(fo))

# ---- main() leaves through pthread_exit: the server thread does not keep it alive -------
env = dict(clean_env(), LD_PRELOAD=os.environ["MS_AGENT"],
           MEMSIGHT_OPTIONS="out=%s,metrics_listen=127.0.0.1:0" % d)
try:
    p = subprocess.run([os.path.join(PROGRAMS, "lm_main_exit"), "worker"], stdout=subprocess.PIPE,
                       text=True, env=env, timeout=60)
except subprocess.TimeoutExpired:
    fail("lm_main_exit worker still running after 60 s: the server thread keeps it alive")
check(p.returncode == 0 and sorted(p.stdout.split()) == sorted("main leaves worker done".split()),
      "lm_main_exit worker: %d %r" % (p.returncode, p.stdout))
print("ok: prometheus scraped the agent of lk_serve: heap %d, leaks, rss, threads, fds; its scrapes "
      "unrecorded; port taken, off, fork and pthread_exit as without it" % v)
