#!/usr/bin/env python3
"""fork() in production mode: sm_forks forks 80 children from 8 threads at once while two
other threads allocate, under sample=4096 with a control thread and interval=50. It must
finish (no lock of the agent is held across fork), every child exits 0, and each child
keeps a fresh series of its own: its own pid in file names, numbers from 0000, interval
snapshots from its own control thread and an exit snapshot. Then again in full mode, and
with follow_fork=0: the children stop recording (they still free blocks inherited from
the parent, which carry the agent's header, and allocate new plain ones) and write
nothing, while the parent's own series is complete."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

AGENT = os.environ['MS_AGENT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'sm_forks')
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


def run(options, child_ms):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS='out=%s,%s' % (out, options))
        try:
            p = subprocess.Popen([PROG, str(child_ms)], env=env, stdout=subprocess.PIPE,
                                 text=True)
            stdout, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            fail('%s: sm_forks hung (deadlock at fork?)' % options)
            return
        print('%s: %s' % (options, stdout.strip()))
        if p.returncode != 0:
            fail('%s: exit status %d' % (options, p.returncode))
        files = sf.snapshots(out)
        pids = {f[0] for f in files}
        children = pids - {p.pid}
        if len(children) != 80:
            fail('%s: %d children wrote snapshots, expected 80' % (options, len(children)))
        with_interval = 0
        for c in children:
            mine = [f for f in files if f[0] == c]
            if mine[0][1] != 0:
                fail('%s: child %d series starts at %d' % (options, c, mine[0][1]))
            if [f[1] for f in mine] != list(range(len(mine))):
                fail('%s: child %d series has gaps: %r' % (options, c, [f[1] for f in mine]))
            if mine[-1][2] != 'exit':
                fail('%s: child %d has no exit snapshot last' % (options, c))
            with_interval += any(f[2] == 'interval' for f in mine)
            s = sf.read(mine[-1][3])
            if s['meta'].get('pid') != str(c):
                fail('%s: child %d snapshot names pid %s' % (options, c, s['meta'].get('pid')))
        print('  children with their own interval snapshots: %d of %d' % (with_interval,
                                                                          len(children)))
        if child_ms >= 150 and with_interval < len(children) * 3 // 4:
            fail('%s: only %d children ran their own control thread' % (options, with_interval))




def run_no_follow():
    options = 'interval=50,follow_fork=0'
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS='out=%s,%s' % (out, options))
        try:
            p = subprocess.Popen([PROG, '100'], env=env, stdout=subprocess.PIPE, text=True)
            p.stdout_text, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            fail('%s: sm_forks hung' % options)
            return
        print('%s: %s' % (options, p.stdout_text.strip()))
        if p.returncode != 0:
            fail('%s: exit status %d (a child failed)' % (options, p.returncode))
        files = sf.snapshots(out)
        pids = {f[0] for f in files}
        if pids != {p.pid}:
            fail('%s: snapshots from %d other processes' % (options, len(pids - {p.pid})))
        mine = [f for f in files if f[0] == p.pid]
        if not mine or mine[-1][2] != 'exit':
            fail('%s: the parent has no exit snapshot' % options)


run('sample=4096,interval=50', 200)
run('interval=50', 0)
run_no_follow()
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
