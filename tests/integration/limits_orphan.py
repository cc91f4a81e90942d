#!/usr/bin/env python3
"""`memsight run` killed with SIGKILL must not leave its program running: the program
gets SIGTERM (--orphan-signal, default TERM; 'none' leaves it running), and SIGUSR1 and
SIGUSR2 sent to `memsight run` are passed on to the program like SIGTERM and SIGINT.
The program (lm_wait) writes the name of every signal it receives into a file.

Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import os
import signal
import subprocess
import sys
import tempfile
import time

MEMSIGHT = os.environ['MEMSIGHT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_wait')
LIMIT = 60


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def start(work, extra):
    log = os.path.join(work, 'signals-%d' % len(os.listdir(work)))
    p = subprocess.Popen([MEMSIGHT, 'run', '-q', '-o', work] + extra + ['--', PROG, log],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    if len(line) != 2 or line[0] != 'ready':
        p.kill()
        fail('%r: no ready line (%r)' % (extra, line))
    return p, int(line[1]), log


def signals(log):
    with open(log) as f:
        return f.read().split()


def wait_for(cond, what):
    deadline = time.monotonic() + LIMIT
    while not cond():
        if time.monotonic() > deadline:
            fail(what)
        time.sleep(0.02)


def running(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
    except OSError:
        return False


work = tempfile.mkdtemp(prefix='ms-limits-orphan-')

# default: killing memsight run with SIGKILL ends the program with SIGTERM
p, pid, log = start(work, [])
p.kill()
p.wait()
wait_for(lambda: not running(pid), 'program %d still runs after memsight run was killed' % pid)
if signals(log) != ['TERM']:
    fail('program got %r, expected TERM' % signals(log))

# --orphan-signal KILL
p, pid, log = start(work, ['--orphan-signal', 'KILL'])
p.kill()
p.wait()
wait_for(lambda: not running(pid), 'program %d still runs (--orphan-signal KILL)' % pid)
if signals(log) != []:
    fail('program got %r, expected nothing before SIGKILL' % signals(log))

# --orphan-signal none: the program keeps running (it still answers), until told to stop
p, pid, log = start(work, ['--orphan-signal', 'none'])
p.kill()
p.wait()
os.kill(pid, signal.SIGUSR1)
wait_for(lambda: signals(log) == ['USR1'], 'orphan did not answer: %r' % signals(log))
if not running(pid):
    fail('program ended with --orphan-signal none')
os.kill(pid, signal.SIGUSR2)
wait_for(lambda: not running(pid), 'orphan %d did not end on SIGUSR2' % pid)

# SIGUSR1 and SIGUSR2 sent to memsight run reach the program
p, pid, log = start(work, [])
p.send_signal(signal.SIGUSR1)
wait_for(lambda: signals(log) == ['USR1'], 'SIGUSR1 not passed on: %r' % signals(log))
p.send_signal(signal.SIGUSR2)
try:
    rc = p.wait(timeout=LIMIT)
except subprocess.TimeoutExpired:
    p.kill()
    fail('SIGUSR2 not passed on')
if rc != 0 or signals(log) != ['USR1', 'USR2']:
    fail('memsight run status %d, program got %r' % (rc, signals(log)))

# a bad value is refused before anything runs
r = subprocess.run([MEMSIGHT, 'run', '--orphan-signal', 'SOMETIMES', '--', 'true'],
                   capture_output=True, text=True, timeout=LIMIT)
if r.returncode == 0 or '--orphan-signal' not in r.stderr:
    fail('--orphan-signal SOMETIMES: %d %r' % (r.returncode, r.stderr))
print('ok')
