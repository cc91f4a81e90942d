#!/usr/bin/env python3
"""A real program that handles its threads properly shows no leaked thread: python3 starts
8 threading.Thread workers and joins them (CPython detaches every thread it creates and
joins through a lock), under the agent. The exit snapshot must count the 8 threads as
created and detached, none leaked, none untracked, and list no leaked thread.

Environment: MEMSIGHT, MS_AGENT (set by ms_integration_test)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
SCRIPT = r'''
import threading
out = []
def work(i):
    out.append(sum(range(10000 * (i + 1))))
ts = [threading.Thread(target=work, args=(i,), name="worker-%d" % i) for i in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(len(out))
'''


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def main():
    py = shutil.which('python3')
    if not py:
        fail('python3 not found')
    out = tempfile.mkdtemp(prefix='ms-threads-py-')
    env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'], MEMSIGHT_OPTIONS='out=' + out)
    p = subprocess.run([py, '-c', SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or p.stdout.strip() != '8':
        fail('python3: status %d, out %r, err %r' % (p.returncode, p.stdout, p.stderr))
    snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(snaps) != 1:
        fail('exit snapshots: %r' % os.listdir(out))
    r = subprocess.run([MEMSIGHT, 'report', '--format', 'json', os.path.join(out, snaps[0])],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail('report: %s' % r.stderr)
    t = json.loads(r.stdout)['threads']
    counts = {k: t[k] for k in ('created', 'detached', 'leaked', 'untracked')}
    if counts['leaked'] != 0 or t['leaked_threads'] or counts['untracked'] != 0 or \
            counts['created'] < 8 or counts['detached'] < 8:
        fail('python3 threads: %r, leaked %r' % (counts, t['leaked_threads']))
    print('ok: %r' % counts)


main()
