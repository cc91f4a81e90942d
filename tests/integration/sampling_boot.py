#!/usr/bin/env python3
"""Blocks of the agent's bootstrap arena freed by the program once the agent runs, in
every mode and so through every variant of free: a shim preloaded before the agent
(libboot_shim.so) allocates a block at each walk of the loaded modules, some of them
while the agent starts (HLTH boot_allocs), and sm_boot frees them all from main, then
allocates on. Such a block is never the C library's: handed to its free, the program
aborts. In the address modes the arena's blocks are found behind the filter's "maybe"
(held there for good), in full mode by the arena's range."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

AGENT = os.environ['MS_AGENT']
PROGRAMS = os.environ['MS_PROGRAMS']
PROG = os.path.join(PROGRAMS, 'sm_boot')
SHIM = os.path.join(PROGRAMS, 'libboot_shim.so')
failures = []


def run(options):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD='%s:%s' % (SHIM, AGENT),
                   MEMSIGHT_OPTIONS='out=%s%s' % (out, options))
        r = subprocess.run([PROG], env=env, capture_output=True, text=True, timeout=120)
        print('%r: rc=%d %s %s' % (options, r.returncode, r.stdout.strip(), r.stderr.strip()[-300:]))
        if r.returncode != 0 or not r.stdout.startswith('released '):
            failures.append('%r: sm_boot failed (rc %d): %s' % (options, r.returncode,
                                                                r.stderr.strip()[-200:]))
            return
        if int(r.stdout.split()[1]) == 0:
            failures.append('%r: the shim kept no block' % options)
        exits = sf.snapshots(out, reason='exit')
        if len(exits) != 1:
            failures.append('%r: expected one exit snapshot, found %r' % (options, exits))
            return
        boot = sf.read(exits[0][3])['health'].get('boot_allocs')
        print('  boot_allocs %r' % boot)
        if not boot:
            failures.append('%r: no block came from the bootstrap arena' % options)


for opts in (',sample=4096,seed=1', ',sample=4096,seed=1,guard=1', ',min_size=1000', '',
             ',guard=1'):
    run(opts)
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
