#!/usr/bin/env python3
"""A program the agent must not change: run without the agent, then under each mode
given, and compare. Every run must end within a limit (a process still running is
killed and fails the test), with the status and the standard output of the run
without the agent (or the one --status names), and with an exit snapshot written.

usage: robust_check.py [--status N] [--stdout-has TEXT] [--no-snapshot] [--stderr-clean]
                       [--frames-known] [--env NAME=VALUE] [--max-pause-ms N]
                       MODES PROGRAM [ARGS...]
  MODES: agent options per run, runs separated by spaces ("full": no option), e.g.
         "full leak_check=exit unwind=fp sample=4096"
  PROGRAM: a name in MS_PROGRAMS or a path.
  --stderr-clean: the agent writes nothing on the program's stderr.
  --frames-known: every frame of every stack in the snapshot lies in a loaded module
                  (no address a walk made up), and at least one stack has a frame.
  --env NAME=VALUE: set for every run.
  --max-pause-ms N: the exit leak scan stopped the threads for less than N ms.
Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT (set by ms_integration_test); MS_RUNNER, a
command the program runs under (qemu-user for another architecture, tests/platforms.cmake)."""
import json
import os
import shlex
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


def check_report(snap, what, known, max_pause):
    memsight = os.environ.get('MEMSIGHT', 'memsight').split()
    r = run(memsight + ['report', '-f', 'json', snap], dict(os.environ), 'report')
    if r.returncode != 0:
        fail('%s: report: %s' % (what, r.stderr))
    rep = json.loads(r.stdout)
    if max_pause is not None:
        pause = rep.get('leaks', {}).get('pause_ns')
        if pause is None or pause >= max_pause * 1000000:
            fail('%s: the exit scan paused the threads %s ns (limit %d ms)'
                 % (what, pause, max_pause))
    if not known:
        return
    stacks = rep['stacks']
    if not any(s['frames'] for s in stacks):
        fail('%s: no stack has a frame' % what)
    for s in stacks:
        for f in s['frames']:
            if not f['module']:
                fail('%s: stack %s has a frame in no module: %s (frames %s)'
                     % (what, s['id'], f['address'], [g['address'] for g in s['frames']]))


def main():
    args = sys.argv[1:]
    status, has, snapshot, clean, known, extra_env = None, None, True, False, False, {}
    max_pause = None
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
        elif opt == '--frames-known':
            known = True
        elif opt == '--max-pause-ms':
            max_pause = int(args.pop(0))
        elif opt == '--env':
            k, v = args.pop(0).split('=', 1)
            extra_env[k] = v
        else:
            fail('unknown option ' + opt)
    modes, prog = args[0].split(), args[1]
    if '/' not in prog:
        prog = os.path.join(os.environ['MS_PROGRAMS'], prog)
    argv = shlex.split(os.environ.get('MS_RUNNER', '')) + [prog] + args[2:]
    base_env = dict(os.environ)
    base_env.update(extra_env)
    native = run(argv, base_env, 'without the agent')
    want_status = native.returncode if status is None else status
    if native.returncode != want_status:
        fail('without the agent: status %d, expected %d; stdout %r stderr %r'
             % (native.returncode, want_status, native.stdout, native.stderr))
    for mode in modes:
        out = tempfile.mkdtemp(prefix='ms-robust-')
        env = dict(base_env)
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
        if (known or max_pause is not None) and snaps:
            check_report(os.path.join(out, snaps[0]), what, known, max_pause)
        print('ok: %s: status %d%s' % (what, p.returncode, ', snapshot' if snaps else ''))


main()
