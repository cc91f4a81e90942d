#!/usr/bin/env python3
"""A process whose main thread leaves through pthread_exit must end as it does without
the agent (glibc ends it when its last thread is gone), with its exit snapshot; one whose
remaining thread waits must still die of SIGTERM; a child forked from a non-main thread
must end when that thread returns. Each run is bounded: a process the agent keeps alive
fails the test instead of hanging it.

Environment: MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import os
import signal
import subprocess
import sys
import tempfile
import time

PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_main_exit')
LIMIT = 60  # seconds; the program itself needs milliseconds


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def env_for(out, extra):
    env = dict(os.environ)
    env['LD_PRELOAD'] = os.environ['MS_AGENT']
    env['MEMSIGHT_OPTIONS'] = ','.join(['out=' + out] + extra)
    return env


def exit_snaps(out):
    return sorted(f for f in os.listdir(out) if f.endswith('-exit.msnap'))


def run(mode, extra, limit=LIMIT):
    out = tempfile.mkdtemp(prefix='ms-limits-exit-')
    # a session of its own: a process left hanging is killed with its children
    p = subprocess.Popen([PROG, mode], env=env_for(out, extra), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        fail('%s %s: still running after %d s (the agent keeps the process alive)'
             % (mode, extra, limit))
    return subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr), out


def check_alone_and_worker(extra):
    for mode, lines in (('alone', ['main leaves']), ('worker', ['main leaves', 'worker done'])):
        p, out = run(mode, extra)
        if p.returncode != 0:
            fail('%s %s: status %d, stderr %r' % (mode, extra, p.returncode, p.stderr))
        if sorted(p.stdout.split('\n')[:-1]) != sorted(lines):
            fail('%s %s: output %r' % (mode, extra, p.stdout))
        if len(exit_snaps(out)) != 1:
            fail('%s %s: exit snapshots %r' % (mode, extra, os.listdir(out)))


def main_gone(pid):
    """The thread-group leader (main) has left: its task is a zombie."""
    try:
        with open('/proc/%d/task/%d/stat' % (pid, pid)) as f:
            return f.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except OSError:
        return True


def check_sigterm(extra):
    out = tempfile.mkdtemp(prefix='ms-limits-exit-')
    p = subprocess.Popen([PROG, 'pause'], env=env_for(out, extra), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline() != 'waiting\n':
            fail('pause %s: no "waiting" line' % extra)
        deadline = time.monotonic() + LIMIT
        while not main_gone(p.pid):
            if time.monotonic() > deadline:
                fail('pause %s: main() never left' % extra)
            time.sleep(0.01)
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            fail('pause %s: SIGTERM did not end the process' % extra)
        if rc != -signal.SIGTERM:
            fail('pause %s: status %d, expected death by SIGTERM' % (extra, rc))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def check_fork(extra, limit=LIMIT):
    p, out = run('fork', extra, limit)
    if p.returncode != 0:
        fail('fork %s: status %d, stderr %r' % (extra, p.returncode, p.stderr))
    lines = p.stdout.split('\n')
    if 'child status 0' not in lines or lines[-2] != 'parent done':
        fail('fork %s: output %r' % (extra, p.stdout))
    child = [l for l in lines if l.startswith('child ') and l[6:].isdigit()]
    snaps = exit_snaps(out)
    if len(snaps) != 2 or not child or not any('-%s-' % child[0][6:] in s for s in snaps):
        fail('fork %s: exit snapshots %r (child %r)' % (extra, snaps, child))


# default; a busy control thread (interval snapshots); sampled mode
for extra in ([], ['interval=5'], ['sample=4096']):
    check_alone_and_worker(extra)
    check_sigterm(extra)
    check_fork(extra)
# The thread forks while the main thread starts the agent's first thread, whose first
# start walks the loaded modules: a child forked during that walk inherited the loader's
# lock held and hung in its exit snapshot (about one run in five): many short runs.
for k in range(25):
    check_fork(['sample=4096'], 10)
print('ok')
