#!/usr/bin/env python3
"""A program the agent must not change: run without the agent, then under each mode
given, and compare. Every run must end within a limit (a process still running is
killed and fails the test), with the status and the standard output of the run
without the agent (or the one --status names), and with an exit snapshot written.

usage: robust_check.py [--status N] [--stdout-has TEXT] [--no-snapshot] [--stderr-clean]
                       MODES PROGRAM [ARGS...]
  MODES: agent options per run, runs separated by spaces ("full": no option), e.g.
         "full leak_check=exit unwind=fp sample=4096"
  PROGRAM: a name in MS_PROGRAMS or a path.
  --stderr-clean: the agent writes nothing on the program's stderr.
Environment: MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import os
import subprocess
import sys
import tempfile

LIMIT = 60  # seconds; the programs need well under one


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(argv, env, what):
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        fail('%s: still running after %d s' % (what, LIMIT))


def main():
    args = sys.argv[1:]
    status, has, snapshot, clean = None, None, True, False
    while args and args[0].startswith('--'):
        opt = args.pop(0)
        if opt == '--status':
            status = int(args.pop(0))
        elif opt == '--stdout-has':
            has = args.pop(0)
        elif opt == '--no-snapshot':
            snapshot = False
        elif opt == '--stderr-clean':
            clean = True
        else:
            fail('unknown option ' + opt)
    modes, prog = args[0].split(), args[1]
    if '/' not in prog:
        prog = os.path.join(os.environ['MS_PROGRAMS'], prog)
    argv = [prog] + args[2:]
    native = run(argv, dict(os.environ), 'without the agent')
    want_status = native.returncode if status is None else status
    if native.returncode != want_status:
        fail('without the agent: status %d, expected %d; stdout %r stderr %r'
             % (native.returncode, want_status, native.stdout, native.stderr))
    for mode in modes:
        out = tempfile.mkdtemp(prefix='ms-robust-')
        env = dict(os.environ)
        env['LD_PRELOAD'] = os.environ['MS_AGENT']
        env['MEMSIGHT_OPTIONS'] = ','.join(['out=' + out] + ([mode] if mode != 'full' else []))
        what = '%s under "%s"' % (' '.join(argv), mode)
        p = run(argv, env, what)
        if p.returncode != want_status:
            fail('%s: status %d, expected %d; stdout %r stderr %r'
                 % (what, p.returncode, want_status, p.stdout, p.stderr))
        if p.stdout != native.stdout and status is None:
            fail('%s: stdout %r, without the agent %r' % (what, p.stdout, native.stdout))
        if has is not None and has not in p.stdout:
            fail('%s: %r not in stdout %r' % (what, has, p.stdout))
        if clean and p.stderr != native.stderr:
            fail('%s: stderr %r, without the agent %r' % (what, p.stderr, native.stderr))
        snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
        if snapshot and len(snaps) != 1:
            fail('%s: exit snapshots %r' % (what, os.listdir(out)))
        print('ok: %s: status %d%s' % (what, p.returncode, ', snapshot' if snaps else ''))


main()
