#!/usr/bin/env python3
"""The control thread only when something needs it: a single-threaded sm_single under the
agent stays single-threaded (/proc/PID/task holds one entry, no memsight-ctl) without
requests and after them, and still answers `memsight dump` (a signal snapshot whose
sm_single_hold holds its 4 MiB) and, in full mode, `memsight leaks` (the 48 KiB block
sm_single_lost dropped is definitely lost, the held ones are not), whether it waits in
nanosleep, poll or read, or allocates without pause. With interval= the thread runs from
the start (it has periodic work). The same for a program that dlopens the agent and starts
it with memsight_start() (GOT hooks): no thread for a single-threaded program, answered in
its waits and allocations; one at once for a program already running a thread of its own
(a request may land on that thread, which may never allocate). Options given only in
memsight_start's argument: `memsight dump` and `leaks` find the snapshot directory in the
agent's memsight_attach_info."""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

MEMSIGHT = os.environ['MEMSIGHT']
AGENT = os.environ['MS_AGENT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'sm_single')
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


def tasks(pid):
    names = []
    for t in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/comm' % (pid, t)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def start(out, options, mode, run_ms, started=False, thread=False):
    opts = ','.join(['out=%s' % out] + ([options] if options else []))
    env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
    if started == 'string':
        # only in memsight_start's argument: `memsight dump` must learn out= from the agent
        env.update(SM_START_AGENT=AGENT, SM_START_OPTIONS=opts)
    elif started:
        env.update(SM_START_AGENT=AGENT, MEMSIGHT_OPTIONS=opts)  # memsight_start(NULL)
    else:
        env.update(LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS=opts)
    if thread:
        env['SM_THREAD'] = '1'
    p = subprocess.Popen([PROG, mode, str(run_ms)], env=env, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    if len(line) != 2 or line[0] != 'ready':
        p.kill()
        sys.exit('sm_single did not start: %r' % line)
    return p


def ask(cmd, pid):
    t0 = time.monotonic()
    r = subprocess.run([MEMSIGHT, cmd, '--timeout', '30', str(pid)], capture_output=True,
                       text=True, timeout=120)
    return r, time.monotonic() - t0


def check(mode, options, label, started=False):
    full = 'sample=' not in options
    with tempfile.TemporaryDirectory() as out:
        p = start(out, options, mode, 60000, started)
        try:
            time.sleep(0.3)  # past start-up: the thread would have started by now
            names = tasks(p.pid)
            if names != ['sm_single']:
                fail('%s: before any request the process has threads %r' % (label, names))
            r, took = ask('dump', p.pid)
            print('%s: dump rc=%d in %.3f s %s' % (label, r.returncode, took,
                                                     r.stderr.strip()))
            if r.returncode != 0:
                fail('%s: memsight dump failed: %s' % (label, r.stderr.strip()))
            else:
                s = sf.read(r.stdout.strip())
                if s['meta'].get('reason') != 'signal' or s['meta'].get('pid') != str(p.pid):
                    fail('%s: wrong snapshot metadata %r' % (label, s['meta']))
                held = sf.by_site(s, ['sm_single_hold'])['sm_single_hold']
                if held != [64 * 65536, 64]:
                    fail('%s: sm_single_hold holds %r, expected [%d, 64]'
                         % (label, held, 64 * 65536))
            if full:
                r, took = ask('leaks', p.pid)
                print('%s: leaks rc=%d in %.3f s' % (label, r.returncode, took))
                m = re.search(r'definitely lost\s+(\S+ \S+) in (\d+) blocks', r.stdout)
                if r.returncode != 0 or not m:
                    fail('%s: memsight leaks failed: %s %s' % (label, r.stdout, r.stderr))
                elif m.group(1) != '48.0 KiB' or m.group(2) != '1':
                    fail('%s: expected 48.0 KiB in 1 block definitely lost, got %s in %s:\n%s'
                         % (label, m.group(1), m.group(2), r.stdout))
            names = tasks(p.pid)
            if names != ['sm_single']:
                fail('%s: after the requests the process has threads %r' % (label, names))
            if p.poll() is not None:
                fail('%s: the program died (status %r)' % (label, p.returncode))
        finally:
            p.terminate()
            p.wait(timeout=60)
        if p.returncode != 0:
            fail('%s: exit status %d' % (label, p.returncode))
        n = len(sf.snapshots(out, pid=p.pid, reason='signal'))
        if n != 1:
            fail('%s: expected 1 signal snapshot (copies of a request served once), found %d'
                 % (label, n))


def check_interval():
    with tempfile.TemporaryDirectory() as out:
        p = start(out, 'sample=4096,interval=100', 'sleep', 60000)
        try:
            deadline = time.monotonic() + 30
            while 'memsight-ctl' not in tasks(p.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if 'memsight-ctl' not in tasks(p.pid):
                fail('interval=100: no control thread within 30 s')
        finally:
            p.terminate()
            p.wait(timeout=60)


def check_started_threaded():
    """memsight_start() in a program with a thread of its own: the control thread at once."""
    with tempfile.TemporaryDirectory() as out:
        p = start(out, 'sample=4096', 'sleep', 60000, started=True, thread=True)
        try:
            deadline = time.monotonic() + 30
            while 'memsight-ctl' not in tasks(p.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if 'memsight-ctl' not in tasks(p.pid):
                fail('memsight_start with a program thread: no control thread within 30 s '
                     '(threads %r)' % tasks(p.pid))
            r, took = ask('dump', p.pid)
            print('started, threaded: dump rc=%d in %.3f s' % (r.returncode, took))
            if r.returncode != 0:
                fail('started, threaded: memsight dump failed: %s' % r.stderr.strip())
        finally:
            p.terminate()
            p.wait(timeout=60)


def main():
    for mode in ('sleep', 'poll', 'read', 'alloc'):
        check(mode, '', 'full %s' % mode)
        check(mode, 'sample=4096', 'sample=4096 %s' % mode)
    for mode in ('sleep', 'alloc'):
        check(mode, '', 'memsight_start full %s' % mode, started=True)
        check(mode, 'sample=4096', 'memsight_start sample=4096 %s' % mode, started=True)
    check('sleep', '', 'memsight_start("out=...") full sleep', started='string')
    check_started_threaded()
    check_interval()
    if failures:
        sys.exit(1)
    print('ok')


if __name__ == '__main__':
    main()
