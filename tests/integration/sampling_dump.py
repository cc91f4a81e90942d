#!/usr/bin/env python3
"""`memsight dump PID`, memsight_dump() and interval=: a running sm_serve answers a dump request with a
fresh signal snapshot (also when it no longer allocates: idle), whose counters hold its
4 MiB kept by sm_serve_hold; interval=100 writes a numbered series; a process without
the agent, or with control=0, gets a clear refusal and is not killed.
MS_RUNNER (qemu-user, tests/platforms.cmake): the programs run under it with
dump_signal=SIGUSR2, since qemu-user carries the guest's real-time signals on other host
signals (the default SIGRTMIN+13 sent from outside reaches the guest as another one).
The refusals are not checked there: qemu catches every signal on the host, so a process
without a handler cannot be told from outside.
usage: sampling_dump.py [--no-idle]   (--no-idle: not the single-threaded idle server,
which AArch64 under qemu-user and musl do not serve yet: docs/platforms.md)"""
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

MEMSIGHT = os.environ['MEMSIGHT']
AGENT = os.environ['MS_AGENT']
SERVE = os.path.join(os.environ['MS_PROGRAMS'], 'sm_serve')
RUNNER = shlex.split(os.environ.get('MS_RUNNER', ''))
EXTRA = ',dump_signal=%d' % signal.SIGUSR2 if RUNNER else ''
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


def start(out, options, *args, preload=True):
    env = dict(os.environ, MEMSIGHT_OPTIONS=('out=%s,%s' % (out, options) if options else
                                             'out=%s' % out) + EXTRA)
    if preload:
        env['LD_PRELOAD'] = AGENT
    p = subprocess.Popen(RUNNER + [SERVE] + list(args), env=env, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    if len(line) != 2 or line[0] != 'ready':
        p.kill()
        sys.exit('sm_serve did not start: %r' % line)
    return p


def dump(pid, timeout='10'):
    t0 = time.monotonic()
    r = subprocess.run([MEMSIGHT, 'dump', '--timeout', timeout, str(pid)], capture_output=True,
                       text=True, timeout=60)
    return r, time.monotonic() - t0


def check_dump(mode_args, label):
    with tempfile.TemporaryDirectory() as out:
        p = start(out, 'sample=4096', '20000', *mode_args)
        time.sleep(0.2)
        for attempt in range(2):
            r, took = dump(p.pid)
            print('%s dump %d: rc=%d in %.3f s: %s %s' % (label, attempt, r.returncode, took,
                                                           r.stdout.strip(), r.stderr.strip()))
            if r.returncode != 0:
                fail('%s: memsight dump failed: %s' % (label, r.stderr.strip()))
                break
            path = r.stdout.strip()
            if not os.path.isfile(path):
                fail('%s: printed path %r does not exist' % (label, path))
                break
            s = sf.read(path)
            if s['meta'].get('reason') != 'signal' or s['meta'].get('pid') != str(p.pid):
                fail('%s: wrong snapshot metadata %r' % (label, s['meta']))
            held = sf.by_site(s, ['sm_serve_hold'])['sm_serve_hold'][0]
            if held != 64 * 65536:
                fail('%s: sm_serve_hold holds %d bytes, expected %d' % (label, held, 64 * 65536))
        if p.poll() is not None:
            fail('%s: the program died (status %r)' % (label, p.returncode))
        p.terminate()
        p.wait(timeout=30)
        if p.returncode != 0:
            fail('%s: exit status %d' % (label, p.returncode))
        signals = sf.snapshots(out, pid=p.pid, reason='signal')
        if len(signals) != 2:
            fail('%s: expected 2 signal snapshots, found %d' % (label, len(signals)))


def check_interval():
    with tempfile.TemporaryDirectory() as out:
        p = start(out, 'interval=100', '1200')
        p.wait(timeout=60)
        series = sf.snapshots(out, pid=p.pid, reason='interval')
        seqs = [x[1] for x in series]
        print('interval series:', seqs)
        if len(series) < 5:
            fail('interval=100 over 1.2 s wrote %d snapshots' % len(series))
        if seqs != sorted(set(seqs)):
            fail('interval series numbers are not increasing: %r' % seqs)
        for _pid, _seq, _r, path in series:
            s = sf.read(path)  # raises on a truncated or corrupted file
            if s['meta'].get('reason') != 'interval':
                fail('%s: reason %r' % (path, s['meta'].get('reason')))
        # snapshots every millisecond up to exit: the exit snapshot must not race with one
        # cut off by the end of the process (no temporary file left behind)
        for _ in range(5):
            q = start(out, 'interval=1', '40')
            q.wait(timeout=60)
        stray = [n for n in os.listdir(out) if not n.endswith('.msnap')]
        if stray:
            fail('files left behind by snapshots cut off at exit: %r' % stray)
        exits = sf.snapshots(out, pid=p.pid, reason='exit')
        if len(exits) != 1 or (seqs and exits[0][1] <= seqs[-1]):
            fail('the exit snapshot should come last in the series: %r' % exits)


def check_refusals():
    with tempfile.TemporaryDirectory() as out:
        p = start(out, None, '20000', preload=False)
        r, _ = dump(p.pid, '2')
        print('no agent: rc=%d %s' % (r.returncode, r.stderr.strip()))
        if r.returncode == 0 or 'no memsight agent' not in r.stderr:
            fail('a process without the agent was not refused clearly')
        q = start(out, 'control=0', '20000')
        r2, _ = dump(q.pid, '2')
        print('control=0: rc=%d %s' % (r2.returncode, r2.stderr.strip()))
        if r2.returncode == 0 or 'control=0' not in r2.stderr:
            fail('control=0 was not refused clearly')
        for proc, name in ((p, 'no agent'), (q, 'control=0')):
            if proc.poll() is not None:
                fail('%s: the process died' % name)
            proc.terminate()
            proc.wait(timeout=30)
        r3, _ = dump(99999999, '1')
        if r3.returncode == 0 or 'no process' not in r3.stderr:
            fail('a missing pid was not reported: %s' % r3.stderr)


def check_api():
    """memsight_dump() called by the program writes an 'api' snapshot and returns its path."""
    prog = os.path.join(os.environ['MS_PROGRAMS'], 'sm_api')
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS='out=%s' % out)
        r = subprocess.run(RUNNER + [prog], env=env, capture_output=True, text=True, timeout=60)
        path = r.stdout.strip()
        print('memsight_dump():', path)
        if r.returncode != 0 or not os.path.isfile(path):
            fail('memsight_dump() gave %r (status %d)' % (path, r.returncode))
            return
        s = sf.read(path)
        kept = sf.by_site(s, ['sm_api_keep'])['sm_api_keep']
        if s['meta'].get('reason') != 'api' or kept != [300000, 3]:
            fail('api snapshot: reason %r, sm_api_keep %r' % (s['meta'].get('reason'), kept))
    r = subprocess.run(RUNNER + [prog], capture_output=True, text=True, timeout=60)
    if r.stdout.strip() != 'no agent':
        fail('without the agent sm_api printed %r' % r.stdout)


check_api()
check_dump([], 'busy')
if '--no-idle' not in sys.argv[1:]:
    check_dump(['idle'], 'idle')
check_interval()
if not RUNNER:
    check_refusals()
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
