#!/usr/bin/env python3
"""`memsight leaks PID` when the scan's child (the copy-on-write copy of the process the
scan runs in) dies before it sends its result: the command answers at once, non-zero,
naming the cause (killed by signal 9), instead of waiting until its timeout with a guess;
the program runs on and the next scan works. The child is killed from outside while it
scans a heap of a million blocks (found among the agent thread's children in /proc).

Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

MEMSIGHT = os.environ['MEMSIGHT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lk_many')


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def children(pid):
    kids = set()
    for f in glob.glob('/proc/%d/task/*/children' % pid):
        try:
            with open(f) as fh:
                kids.update(int(k) for k in fh.read().split())
        except OSError:
            pass
    return kids


out = tempfile.mkdtemp(prefix='ms-leaks-child-')
run = subprocess.Popen([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, '1000000'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    line = run.stdout.readline().split()
    if len(line) != 2 or line[0] != 'READY':
        fail('lk_many did not start: %r %s' % (line, run.stderr.read() if run.poll() else ''))
    pid = int(line[1])
    before = children(pid)
    killed = None
    for attempt in range(5):
        t0 = time.monotonic()
        q = subprocess.Popen([MEMSIGHT, 'leaks', '--timeout', '60', str(pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while q.poll() is None and killed is None:
            new = children(pid) - before
            if new:
                killed = min(new)
                t_kill = time.monotonic()
                os.kill(killed, signal.SIGKILL)
            else:
                time.sleep(0.002)
        try:
            qout, qerr = q.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            q.kill()
            fail('memsight leaks did not end')
        if killed is not None:
            break
    if killed is None:
        fail('the scan child was never seen in 5 scans')
    took = time.monotonic() - t_kill
    if q.returncode == 0 or took > 20:
        fail('memsight leaks after its scan child was killed: status %d after %.1f s: %s'
             % (q.returncode, took, qerr))
    if 'killed by signal 9' not in qerr:
        fail('memsight leaks does not say the scan child was killed: %r' % qerr)
    if run.poll() is not None:
        fail('the program ended: %s' % run.stderr.read())
    # the program was not disturbed: the next scan works
    r = subprocess.run([MEMSIGHT, 'leaks', '--timeout', '120', str(pid)], capture_output=True,
                       text=True, timeout=180)
    if r.returncode != 0 or 'still reachable' not in r.stdout:
        fail('the scan after: status %d, %s %s' % (r.returncode, r.stdout[-1000:], r.stderr))
    print('ok: answered %.2f s after the child was killed: %s' % (took, qerr.strip()))
finally:
    if run.poll() is None:
        run.kill()
    run.wait()
