#!/usr/bin/env python3
"""sync= (docs/agent.md): by default every snapshot file is fsync'ed before it takes its
name; with sync=0 it is not (thousands of short processes under --follow-exec wait on the
disk otherwise), and the file is the same complete snapshot. A shim preloaded before the
agent says each fsync on stderr.

Environment: MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

AGENT = os.environ['MS_AGENT']
SHIM = os.path.join(os.environ['MS_PROGRAMS'], 'libfsync_shim.so')
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_huge')  # keeps 200 blocks of 100 bytes
failures = []


def fail(msg):
    print('FAIL: ' + msg)
    failures.append(msg)


for options, want in (('', 1), ('sync=1', 1), ('sync=0', 0), ('sync=0,leak_check=exit', 0)):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=SHIM + ':' + AGENT,
                   MEMSIGHT_OPTIONS='out=%s%s' % (out, ',' + options if options else ''))
        r = subprocess.run([PROG], env=env, capture_output=True, text=True, timeout=60)
        syncs = r.stderr.count('fsync_shim: fsync')
        snaps = glob.glob(os.path.join(out, '*.msnap'))
        exits = [s for s in snaps if s.endswith('-exit.msnap')]
        print('%-18s status %d, %d snapshot(s), %d fsync(s)' % (options or 'default', r.returncode,
                                                              len(snaps), syncs))
        if r.returncode != 0 or len(exits) != 1:
            fail('%r: status %d, snapshots %r: %s' % (options, r.returncode, snaps, r.stderr[-500:]))
            continue
        if want and syncs < len(snaps):
            fail('%r: %d fsyncs for %d snapshots' % (options, syncs, len(snaps)))
        if not want and syncs:
            fail('%r: %d fsyncs' % (options, syncs))
        kept = sf.by_site(sf.read(exits[0]), ['main'])['main']
        if kept[1] < 200:
            fail('%r: the exit snapshot holds %d of the 200 kept blocks' % (options, kept[1]))
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
