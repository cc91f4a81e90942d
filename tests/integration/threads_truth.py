#!/usr/bin/env python3
"""Thread lives against a program that knows its ground truth (tests/programs/th_leaks.c):
5 joinable threads never joined, 1 gone through pthread_exit and 1 cancelled, neither
joined (7 leaked); 3 detached (2 by attribute, 1 by pthread_detach); 4 joined (join,
tryjoin, timedjoin, clockjoin); 2 running at the snapshot. The snapshot's THRL chunk, read
through `memsight report` in JSON, text and HTML, must give exactly these counts, the
start routines, how each ended, the stack sizes and the creation stacks (spawn_*
functions). A fork from a thread: the child's table holds that thread alone.

Environment: MEMSIGHT, MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import collections
import json
import os
import subprocess
import sys
import tempfile

PROG = os.path.join(os.environ['MS_PROGRAMS'], 'th_leaks')
MEMSIGHT = os.environ['MEMSIGHT']
STACK = 256 * 1024


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(mode):
    out = tempfile.mkdtemp(prefix='ms-threads-')
    env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'], MEMSIGHT_OPTIONS='out=' + out)
    p = subprocess.run([PROG, mode], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail('%s: status %d, stderr %r' % (mode, p.returncode, p.stderr))
    snaps = [l.split(' ', 1)[1] for l in p.stdout.splitlines() if l.startswith('snapshot ')]
    return out, snaps


def report(path, fmt):
    p = subprocess.run([MEMSIGHT, 'report', '--format', fmt, path], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        fail('report %s %s: %s' % (fmt, path, p.stderr))
    return p.stdout


def functions(th, stacks):
    return [f['function'] for f in stacks[th['creation_stack_id']]['frames']]


def check_mix():
    out, snaps = run('mix')
    if len(snaps) != 1:
        fail('mix: snapshots %r' % snaps)
    doc = json.loads(report(snaps[0], 'json'))
    t = doc.get('threads')
    if t is None:
        fail('no threads section in the JSON report')
    want = {'created': 16, 'joined': 4, 'detached': 3, 'exited': 14, 'untracked': 0,
            'alive': 3, 'leaked': 7}
    got = {k: t.get(k) for k in want}
    if got != want:
        fail('counters %r, expected %r' % (got, want))
    stacks = {s['id']: s for s in t['creation_stacks']}
    leaked = t['leaked_threads']
    if len(leaked) != 7:
        fail('%d leaked threads listed' % len(leaked))
    by_start = collections.Counter((x['start_function'], x['ended_by']) for x in leaked)
    if by_start != {('th_leak_return', 'returned'): 5, ('th_leak_exit', 'pthread_exit'): 1,
                    ('th_leak_cancel', 'cancelled'): 1}:
        fail('leaked threads by start routine and end: %r' % by_start)
    for x in leaked:
        where = 'spawn_canceller' if x['start_function'] == 'th_leak_cancel' else 'spawn_leakers'
        fs = functions(x, stacks)
        if where not in fs or 'make' not in fs:
            fail('leaked %s created at %r, expected make in %s' % (x['start_function'], fs, where))
        if x['stack_size'] != STACK or x['main'] or x['created_detached']:
            fail('leaked thread %r' % x)
        if not (0 <= x['exited_ago_s'] < 120):
            fail('exited_ago_s %r' % x['exited_ago_s'])
        if x['start_function'] == 'th_leak_cancel' and x['name'] != 'th-cancelled':
            fail('the cancelled thread is named %r' % x['name'])
    if t['leaked_stack_bytes'] != sum(x['stack_size'] + x['guard_size'] for x in leaked):
        fail('leaked_stack_bytes %r' % t['leaked_stack_bytes'])
    alive = t['alive_threads']
    mains = [x for x in alive if x['main']]
    running = [x for x in alive if not x['main']]
    if len(mains) != 1 or len(running) != 2:
        fail('alive threads %r' % alive)
    for x in running:
        if x['start_function'] != 'th_running' or 'spawn_running' not in functions(x, stacks) \
                or x['ended_by'] is not None:
            fail('running thread %r' % x)
    everyone = {x['start_function'] for x in leaked + alive}
    if everyone & {'th_detached', 'th_joined'}:
        fail('a detached or joined thread is listed: %r' % everyone)

    text = report(snaps[0], 'text')
    for needle in ('Threads: 16 created, 4 joined, 3 detached, 14 ended; now 3 alive, 7 leaked',
                   'Leaked threads: 7 ended', 'spawn_leakers', 'spawn_canceller',
                   'start th_leak_cancel', 'cancelled', 'Alive threads: 3', 'spawn_running'):
        if needle not in text:
            fail('text report lacks %r:\n%s' % (needle, text))
    html = report(snaps[0], 'html')
    for needle in ('<section id="threads">', '<b>7 leaked</b>', 'spawn_leakers', 'th_leak_exit'):
        if needle not in html:
            fail('HTML report lacks %r' % needle)

    # at exit the two running threads have been joined; the leaks are still there
    ex = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(ex) != 1:
        fail('exit snapshots %r' % os.listdir(out))
    t = json.loads(report(os.path.join(out, ex[0]), 'json'))['threads']
    if (t['joined'], t['leaked'], t['alive']) != (6, 7, 1):
        fail('exit snapshot: joined %r leaked %r alive %r' % (t['joined'], t['leaked'], t['alive']))


def check_fork():
    out, snaps = run('fork')
    if len(snaps) != 2:
        fail('fork: snapshots %r' % snaps)
    child, parent = snaps  # the child writes first: the parent waits for it
    t = json.loads(report(child, 'json'))['threads']
    if (t['created'], t['leaked'], t['alive'], len(t['alive_threads'])) != (0, 0, 1, 1):
        fail('fork child: %r' % {k: v for k, v in t.items() if not isinstance(v, list)})
    if t['alive_threads'][0]['start_function'] != 'th_forker':
        fail('fork child: its thread %r' % t['alive_threads'][0])
    t = json.loads(report(parent, 'json'))['threads']
    if (t['created'], t['leaked'], t['joined']) != (3, 2, 1):
        fail('fork parent: %r' % {k: v for k, v in t.items() if not isinstance(v, list)})


def check_built():
    """THRL files written byte by byte from the documented layout (report_mksnap.py): the
    reader takes records longer than it knows and refuses ones too short, naming both."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import report_mksnap
    tmp = tempfile.mkdtemp(prefix='ms-threads-built-')
    report_mksnap.write_set(tmp, None)
    doc = json.loads(report(os.path.join(tmp, 'threads.msnap'), 'json'))
    t = doc['threads']
    counters, recs, _ = report_mksnap.THRL_SAMPLE
    for k, v in counters:
        if t[k] != v:
            fail('built THRL: %s = %r, expected %r' % (k, t[k], v))
    lk = t['leaked_threads']
    if len(lk) != 1 or lk[0]['tid'] != 4243 or lk[0]['name'] != 'leaky' or \
            lk[0]['ended_by'] != 'returned' or lk[0]['stack_size'] != 65536:
        fail('built THRL leaked: %r' % lk)
    ago = (int(doc['meta']['snapshot_ns']) - recs[0]['exit_ns']) / 1e9
    if abs(lk[0]['exited_ago_s'] - ago) > 1e-6:
        fail('exited_ago_s %r, expected %r' % (lk[0]['exited_ago_s'], ago))
    if [s['id'] for s in t['creation_stacks']] != [3]:
        fail('creation stacks %r' % t['creation_stacks'])
    bad = os.path.join(tmp, 'bad-thrl.msnap')
    p = subprocess.run([MEMSIGHT, 'report', bad], capture_output=True, text=True, timeout=60)
    if p.returncode == 0 or bad not in p.stderr or 'thread record size 8' not in p.stderr:
        fail('bad THRL: status %d, stderr %r' % (p.returncode, p.stderr))


check_built()
check_mix()
check_fork()
print('ok')
