#!/usr/bin/env python3
"""`memsight run --watch` samples the program, not memsight's own copy before exec nor a
program still loading: a growth tracker on a program whose memory stays flat must not
fire. The program is found through a long PATH, so that the child spends a while in
execvp before the program starts (a sample taken then was memsight's copy, whose RSS is
far below the program's under the agent).

Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time

MEMSIGHT = os.environ['MEMSIGHT']


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


path = ':'.join(['/n/%x' % i for i in range(14000)] +
                [os.environ['MS_PROGRAMS'], os.environ.get('PATH', '/usr/bin:/bin')])
env = dict(os.environ, PATH=path)


def watch_run(seconds):
    """Runs lm_wait under --watch for about `seconds`; the rows of its series (written
    unnamed and given its name once complete: read at the end) and the directory."""
    work = tempfile.mkdtemp(prefix='ms-limits-watch-')
    log = os.path.join(work, 'signals')
    p = subprocess.Popen([MEMSIGHT, 'run', '-q', '-o', work, '--watch', 'rss+1M/10s',
                          '--watch-interval', '50ms', '--', 'lm_wait', log],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline().split()
    if len(line) != 2 or line[0] != 'ready':
        p.kill()
        fail('no ready line: %r' % line)
    pid = int(line[1])
    time.sleep(seconds)
    if p.poll() is not None:
        fail('memsight run ended early: status %r, %s' % (p.returncode, p.stderr.read()))
    os.kill(pid, signal.SIGUSR2)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail('the program did not end')
    err = p.stderr.read()
    if rc != 0:
        fail('status %d: %s' % (rc, err))
    try:
        with open(os.path.join(work, 'memsight-%d-watch.csv' % pid)) as f:
            rows = list(csv.DictReader(f))
    except OSError:
        rows = []
    fired = [f for f in os.listdir(work) if f.startswith('trigger-')]
    if fired or 'trigger' in err:
        fail('growth fired on start-up: %r %s; rss_kb %r' % (fired, err,
                                                             [r['rss_kb'] for r in rows[:5]]))
    if rows:
        first = rows[0]
        if int(first['vmsize_kb']) < 1024 or int(first['threads']) < 1:
            fail('first sample is not of the program: %r' % first)
    return rows


# a program that does nothing, watched every 50 ms: at least 10 samples are asked for
# (30 intervals in a second and a half); a loaded machine may take fewer in that time, so
# the run is repeated for longer until it has them (every run is checked for a trigger)
for seconds in (1.5, 4, 10):
    rows = watch_run(seconds)
    if len(rows) >= 10:
        break
if len(rows) < 10:
    fail('%d samples in %s s: %r' % (len(rows), seconds, rows))
print('ok: %d samples, rss_kb %s..%s' % (len(rows), rows[0]['rss_kb'], rows[-1]['rss_kb']))
