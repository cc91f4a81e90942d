#!/usr/bin/env python3
"""The agent leaves no descriptor the program can see. libunwind validates the addresses
it is unsure of by writing them into a pipe it opens at its first use and keeps (two
descriptors in every process that unwound through a signal frame, or that ran with
unwind=libunwind); the agent answers those checks without a pipe. The list of a
program's open descriptors (lm_fds, after allocating from main, a thread and a signal
handler) is the same with and without the agent, with every unwinder, sampled, under
memsight run with --watch and with --follow-exec; the walk from the signal handler still
goes through the signal frame to main; CPython's test_pass_fds_redirected (which fails
when a child inherits an unexpected descriptor) passes under memsight run --follow-exec.

Environment: MEMSIGHT, MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from limits_common import MEMSIGHT, exit_report, fail  # noqa: E402

PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_fds')
PYTHON = '/usr/bin/python3.11'
CPYTHON_TEST = '/usr/lib/python3.11/test/test_subprocess.py'


def listing(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != 0:
        fail('%r: status %d, %s' % (cmd, p.returncode, p.stderr))
    return sorted(p.stdout.splitlines())


def handler_stack(out):
    """Functions of the stack of the block on_usr1 allocates (48 bytes, in the handler)."""
    for s in exit_report(out)['stacks']:
        names = [f.get('function') or '' for f in s['frames']]
        if 'on_usr1' in names:
            return names
    fail('no stack from the signal handler in %s' % out)


base = listing([PROG])
if not any(l.startswith('0 ') for l in base):
    fail('no descriptor 0 in %r' % base)
for opts in ([], ['unwind=libunwind'], ['unwind=fp'], ['sample=4096'], ['leak_check=exit']):
    out = tempfile.mkdtemp(prefix='ms-limits-fds-')
    env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'],
               MEMSIGHT_OPTIONS=','.join(['out=' + out] + opts))
    got = listing([PROG], env)
    if got != base:
        fail('agent %r: descriptors %r, without the agent %r' % (opts, got, base))
    if opts in ([], ['unwind=libunwind']):
        names = handler_stack(out)
        if 'main' not in names[names.index('on_usr1'):]:
            fail('agent %r: the walk from the handler stops before main: %r' % (opts, names))
out = tempfile.mkdtemp(prefix='ms-limits-fds-')
for args in (['--unwind', 'libunwind'], ['--watch', 'rss>100G', '--watch-interval', '50ms'],
             ['--follow-exec']):
    cmd = [MEMSIGHT, 'run', '-q', '-o', out] + args + ['--']
    if '--follow-exec' in args:
        cmd += ['sh', '-c', 'exec "$0"', PROG]
    else:
        cmd += [PROG]
    got = listing(cmd)
    if got != base:
        fail('memsight run %r: descriptors %r, without the agent %r' % (args, got, base))

if not os.path.exists(CPYTHON_TEST):
    fail('%s is missing (Debian package libpython3.11-testsuite)' % CPYTHON_TEST)
p = subprocess.run([MEMSIGHT, 'run', '-q', '-o', out, '--follow-exec', '--', PYTHON, '-m',
                    'unittest', 'test.test_subprocess.POSIXProcessTestCase.'
                    'test_pass_fds_redirected'], capture_output=True, text=True, timeout=300)
if p.returncode != 0:
    fail('test_pass_fds_redirected under memsight run --follow-exec: status %d, %s'
         % (p.returncode, p.stderr[-3000:]))
print('ok: %d descriptors, with and without the agent; test_pass_fds_redirected passes'
      % len(base))
