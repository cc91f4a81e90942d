#!/usr/bin/env python3
"""Children that a sandbox keeps from writing their exit snapshot (rb_sandbox: seccomp
makes every open fail with EACCES) under `memsight run`: no line per child on the
program's stderr, one line for the run in memsight run's summary naming how many, the
program's own snapshot written, the run's tally file gone afterwards.

Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT (set by ms_integration_test)."""
import os
import subprocess
import sys
import tempfile

CHILDREN = 4


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def main():
    out = tempfile.mkdtemp(prefix='ms-sandbox-')
    env = dict(os.environ)
    env['MEMSIGHT_AGENT'] = os.environ['MS_AGENT']
    prog = os.path.join(os.environ['MS_PROGRAMS'], 'rb_sandbox')
    try:
        p = subprocess.run([os.environ['MEMSIGHT'], 'run', '-o', out, '--', prog, str(CHILDREN)],
                           env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail('memsight run still running after 120 s')
    if p.returncode != 0 or p.stdout != '%d of %d children sandboxed\n' % (CHILDREN, CHILDREN):
        fail('status %d, stdout %r, stderr %r' % (p.returncode, p.stdout, p.stderr))
    per_child = [l for l in p.stderr.splitlines() if 'cannot write the exit snapshot' in l]
    if per_child:
        fail('lines per child on the program\'s stderr: %r' % per_child)
    said = [l for l in p.stderr.splitlines() if 'could not write their exit snapshot' in l]
    want = 'memsight: %d process(es) of this run could not write their exit snapshot' % CHILDREN
    if len(said) != 1 or not said[0].startswith(want):
        fail('the run\'s line: %r (stderr %r)' % (said, p.stderr))
    left = sorted(os.listdir(out))
    if len(left) != 1 or not left[0].endswith('-exit.msnap'):
        fail('files left in the output directory: %r' % left)
    print('ok: %s' % said[0])


main()
