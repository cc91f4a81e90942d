#!/usr/bin/env python3
"""Guardrails: with tables far too small (capacity=50000 live blocks for sm_mix's 310k,
stack_capacity=64 for python3's hundreds of stacks) the program runs to the end with its
own output and exit status, the agent's table stays within its bound, the snapshot counts
what was dropped, and `memsight report` prints a warning line saying how much."""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

MEMSIGHT = os.environ['MEMSIGHT']
AGENT = os.environ['MS_AGENT']
MIX = os.path.join(os.environ['MS_PROGRAMS'], 'sm_mix')
PY = '/usr/bin/python3'
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


def check(cmd, options, counter, bound=None):
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS='out=%s,%s' % (out, options))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != plain.returncode or r.stdout != plain.stdout:
            fail('%s: output or status changed under %s' % (cmd[0], options))
        snap = glob.glob(os.path.join(out, '*-exit.msnap'))
        if len(snap) != 1:
            fail('%s: %d exit snapshots' % (cmd[0], len(snap)))
            return
        h = sf.read(snap[0])['health']
        print('%s %s: %s=%d, live table %d blocks in %d bytes' % (
            os.path.basename(cmd[0]), options, counter, h.get(counter, 0),
            h.get('live_table_blocks', 0), h.get('live_table_bytes', 0)))
        if not h.get(counter):
            fail('%s: %s not counted' % (cmd[0], counter))
        if bound and (h.get('live_table_blocks', 0) > bound or
                      h.get('live_table_bytes', 0) > 64 * bound + (1 << 20)):
            fail('%s: live table beyond its bound: %r' % (cmd[0], h))
        text = subprocess.run([MEMSIGHT, 'report', snap[0]], capture_output=True,
                              text=True).stdout
        warn = [l for l in text.splitlines() if l.startswith('warning:') and counter in l]
        if not warn:
            fail('%s: no warning line naming %s in the report' % (cmd[0], counter))
        else:
            print('  ' + warn[0])


check([MIX], 'capacity=50000', 'dropped_blocks', bound=50000)
check([PY, '-c', 'import json, decimal, fractions\n'
       'print(sum(len(json.dumps({"k": [i, str(i)]})) for i in range(20000)))'],
      'stack_capacity=64', 'dropped_stacks')
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
