#!/usr/bin/env python3
"""A program started by a relative path (./prog, from its own directory) is symbolized
like one started by its absolute path: the snapshot names the program by its absolute
path, every frame in the program has its function, and the report warns of nothing.

usage: robust_relpath.py PROGRAM (a name in MS_PROGRAMS)
Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT (set by ms_integration_test); MS_RUNNER, a
command the program runs under (qemu-user, tests/platforms.cmake)."""
import json
import os
import shlex
import subprocess
import sys
import tempfile


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def main():
    prog = sys.argv[1]
    progs = os.environ['MS_PROGRAMS']
    out = tempfile.mkdtemp(prefix='ms-relpath-')
    env = dict(os.environ)
    env['LD_PRELOAD'] = os.environ['MS_AGENT']
    env['MEMSIGHT_OPTIONS'] = 'out=' + out
    runner = shlex.split(os.environ.get('MS_RUNNER', ''))
    p = subprocess.run(runner + ['./' + prog], cwd=progs, env=env, capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        fail('./%s: status %d: %s' % (prog, p.returncode, p.stderr))
    snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(snaps) != 1:
        fail('exit snapshots: %r' % os.listdir(out))
    memsight = shlex.split(os.environ.get('MEMSIGHT', 'memsight'))
    r = subprocess.run(memsight + ['report', '-f', 'json', os.path.join(out, snaps[0])],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail('report: %s' % r.stderr)
    rep = json.loads(r.stdout)
    want = os.path.realpath(os.path.join(progs, prog))
    mine = [f for s in rep['stacks'] for f in s['frames']
            if f['module'] and os.path.basename(f['module']) == prog]
    if not mine:
        fail('no frame in the program: %r' % rep['stacks'][:3])
    for f in mine:
        if os.path.realpath(f['module']) != want and not f['module'].endswith(want):
            fail('the program is named %r, not by its absolute path %s' % (f['module'], want))
        if not f['function']:
            fail('frame %s in %s not symbolized; warnings %r'
                 % (f['address'], f['module'], rep['warnings']))
    if rep['warnings']:
        fail('report warnings: %r' % rep['warnings'])
    print('ok: ./%s: %d frames in the program, all symbolized' % (prog, len(mine)))


main()
