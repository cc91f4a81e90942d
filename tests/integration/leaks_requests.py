#!/usr/bin/env python3
"""Requests must not disturb the program: rq_sleep sleeps in nanosleep while `memsight
dump`, `memsight leaks` and a plain signal to the process (the request signal, which
the kernel may deliver to the sleeping thread) reach the agent; each request gives its
snapshot, and the sleep ends whole: nanosleep returns 0 after the full time. The program
has one thread and keeps one: the requests are served on it, without a control thread."""
import os
import re
import signal
import subprocess
import sys
import tempfile

SECS = 6


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    memsight = os.environ["MEMSIGHT"]
    prog = os.path.join(os.environ["MS_PROGRAMS"], "rq_sleep")
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.Popen([memsight, "run", "-q", "-o", d, "--leak-check=signal", "--",
                              prog, str(SECS)], stdout=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline()
            if not line.startswith("READY"):
                fail("rq_sleep did not start: %r" % line)
            # memsight run's own child (other rq_sleep processes may run on the machine)
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                pid = int(f.read().split()[0])
            for cmd in (["dump", str(pid)], ["leaks", "--timeout", "60", str(pid)]):
                r = subprocess.run([memsight] + cmd, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, timeout=120)
                if r.returncode != 0:
                    fail("memsight %s: %s" % (" ".join(cmd), r.stdout))
            # a request sent to the process, as `kill -SIG PID` would: it may land on
            # the sleeping main thread
            os.kill(pid, signal.SIGRTMIN + 13)
            tasks = os.listdir("/proc/%d/task" % pid)
            if tasks != [str(pid)]:
                fail("the program has threads %r after the requests (one expected)" % tasks)
            out = p.stdout.read()
            p.wait(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        m = re.search(r"SLEPT rc=(-?\d+) errno=(\d+) ms=(\d+)", out)
        if not m:
            fail("no SLEPT line: %r" % out)
        rc, err, ms = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if rc != 0 or err != 0 or ms < SECS * 1000:
            fail("the sleep was cut short: nanosleep returned %d (errno %d) after %d ms of %d"
                 % (rc, err, ms, SECS * 1000))
        names = sorted(os.listdir(d))
        for reason, n in (("signal", 2), ("leakcheck", 1)):
            got = [x for x in names if x.endswith("-%s.msnap" % reason)]
            if len(got) != n:
                fail("expected %d %s snapshot(s), found %s" % (n, reason, names))
        print("ok: slept %d ms whole through dump, leaks and a process-directed request; %s"
              % (ms, names))


if __name__ == "__main__":
    main()
