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


work = tempfile.mkdtemp(prefix='ms-limits-watch-')
log = os.path.join(work, 'signals')
path = ':'.join(['/n/%x' % i for i in range(14000)] +
                [os.environ['MS_PROGRAMS'], os.environ.get('PATH', '/usr/bin:/bin')])
env = dict(os.environ, PATH=path)
p = subprocess.Popen([MEMSIGHT, 'run', '-q', '-o', work, '--watch', 'rss+1M/10s',
                      '--watch-interval', '50ms', '--', 'lm_wait', log],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
line = p.stdout.readline().split()
if len(line) != 2 or line[0] != 'ready':
    p.kill()
    fail('no ready line: %r' % line)
pid = int(line[1])
series = os.path.join(work, 'memsight-%d-watch.csv' % pid)


def samples():
    """The series (written unnamed, and given its name once complete: read at the end)."""
    try:
        with open(series) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


# a second and a half of a program that does nothing (30 intervals: at least 10 samples
# are asked for below); the series cannot be read before it is complete
time.sleep(1.5)
if p.poll() is not None:
    fail('memsight run ended early: status %r, %s' % (p.returncode, p.stderr.read()))
os.kill(pid, signal.SIGUSR2)
try:
    rc = p.wait(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    fail('the program did not end')
err = p.stderr.read()
rows = samples()
if rc != 0:
    fail('status %d: %s' % (rc, err))
if len(rows) < 10:
    fail('no samples: %r' % rows)
first = rows[0]
if int(first['vmsize_kb']) < 1024 or int(first['threads']) < 1:
    fail('first sample is not of the program: %r' % first)
fired = [f for f in os.listdir(work) if f.startswith('trigger-')]
if fired or 'trigger' in err:
    fail('growth fired on start-up: %r %s; rss_kb %r' % (fired, err,
                                                         [r['rss_kb'] for r in rows[:5]]))
print('ok: %d samples, rss_kb %s..%s' % (len(rows), rows[0]['rss_kb'], rows[-1]['rss_kb']))
