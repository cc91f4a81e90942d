#!/usr/bin/env python3
"""`memsight run --watch`: the program runs with the agent while memsight samples its
memory; pa_grow grows 10 MB/s for 3 s, so the tracker rss+5M/1s fires once it has seen
three growing windows in a row. The firing leaves its evidence and, through the agent, a
snapshot and a leak scan of the program in the output directory. The program's output
and exit status are its own, the series covers the whole run, and memsight's own helpers
(the dump and leaks actions) run without the agent: no snapshot of another pid."""
import csv
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'pa_grow')
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


with tempfile.TemporaryDirectory() as out:
    p = subprocess.run([MEMSIGHT, 'run', '-q', '-o', out, '--watch', 'rss+5M/1s',
                        '--watch-interval', '200ms', '--leak-check=signal', '--',
                        PROG, '10', '100', '3'],
                       input='\n', stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    print(p.stderr)
    m = re.match(r'pid=(\d+) step_bytes=1048576 steps=30\nready\n', p.stdout)
    if p.returncode != 0 or not m:
        fail('program output or status changed: %d %r' % (p.returncode, p.stdout))
        sys.exit(1)
    pid = int(m.group(1))
    names = sorted(os.listdir(out))
    print(names)
    snaps = [n for n in names if n.endswith('.msnap')]
    others = [n for n in snaps if not n.startswith('memsight-%d-' % pid)]
    if others:
        fail('snapshots of other processes (helpers ran under the agent?): %r' % others)
    if not any(n.endswith('-signal.msnap') for n in snaps):
        fail('no snapshot from the dump action')
    if not any(n.endswith('-leakcheck.msnap') for n in snaps):
        fail('no snapshot from the leak-scan action')
    if not any(n.endswith('-exit.msnap') for n in snaps):
        fail('no exit snapshot')
    series = os.path.join(out, 'memsight-%d-watch.csv' % pid)
    rows = list(csv.DictReader(open(series)))
    if len(rows) < 10:
        fail('series has %d rows for a 3 s run sampled every 200 ms' % len(rows))
    fired = [i for i, r in enumerate(rows) if r['t0_fired'] == '1']
    if len(fired) != 1:
        fail('tracker fired %d times in one run (cooldown 60 s): %r' % (len(fired), fired))
    else:
        streak = 0
        for r in rows[:fired[0] + 1]:
            streak = streak + 1 if r['t0_exceeded'] == '1' else 0
        if streak < 3:
            fail('fired after %d exceedances in a row, wants 3' % streak)
    trig = json.load(open(os.path.join(out, 'trigger-1.json')))
    if trig.get('tracker') != 'rss+5M/1s' or trig.get('pid') != pid:
        fail('trigger evidence: %r' % trig)
    for f in ('trigger-1-series.csv', 'trigger-1-smaps.json'):
        if not os.path.exists(os.path.join(out, f)):
            fail('evidence %s missing' % f)
    modes = {n: os.stat(os.path.join(out, n)).st_mode & 0o777 for n in names}
    loose = {n: oct(m) for n, m in modes.items() if m & 0o077}
    if loose:
        fail('files readable by others: %r' % loose)
    rep = subprocess.run([MEMSIGHT, 'report', '--format', 'json',
                          glob.glob(os.path.join(out, '*-leakcheck.msnap'))[0]],
                         stdout=subprocess.PIPE, text=True)
    leaks = json.loads(rep.stdout).get('leaks')
    if not leaks or 'definitely_lost' not in leaks:
        fail('the leak-scan snapshot has no leak result')

if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
