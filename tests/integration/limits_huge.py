#!/usr/bin/env python3
"""A program that asks every allocation function for more than the machine has (2^41
bytes, SIZE_MAX/2: test suites such as CPython's do it on purpose) sees each request fail
as it does alone, and the agent counts no dropped block for them: dropped_blocks says
the agent's numbers are incomplete (the report warns, the fleet metric alerts), and a
refused request made no block. The blocks the program then keeps are recorded.

Environment: MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402
from limits_common import fail  # noqa: E402

PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_huge')
AGENT = os.environ['MS_AGENT']

alone = subprocess.run([PROG], capture_output=True, text=True, timeout=60)
if alone.returncode != 0 or alone.stdout != '12 of 12 failed\n':
    fail('alone: status %d, %r' % (alone.returncode, alone.stdout))
# full mode (header), min_size and sample= (recorded by address), over-aligned included
for options in ('', 'min_size=64', 'sample=4096,seed=7', 'sample=1'):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT,
                   MEMSIGHT_OPTIONS='out=%s%s' % (out, ',' + options if options else ''))
        r = subprocess.run([PROG], env=env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or r.stdout != alone.stdout:
            fail('%r: status %d, %r (alone %r): %s' % (options, r.returncode, r.stdout,
                                                       alone.stdout, r.stderr[-1000:]))
        snaps = glob.glob(os.path.join(out, '*-exit.msnap'))
        if len(snaps) != 1:
            fail('%r: exit snapshots %r' % (options, os.listdir(out)))
        snap = sf.read(snaps[0])
        dropped = snap['health'].get('dropped_blocks', 0)
        kept = sf.by_site(snap, ['main'])['main']
        print('%-20s dropped_blocks=%d, live at main: %d bytes in %d blocks' %
              (options or 'full', dropped, kept[0], kept[1]))
        if dropped:
            fail('%r: %d dropped blocks counted for requests that failed' % (options, dropped))
        if options in ('', 'min_size=64', 'sample=1') and kept[1] < 200:
            fail('%r: %d of the 200 kept blocks recorded' % (options, kept[1]))
print('ok')
