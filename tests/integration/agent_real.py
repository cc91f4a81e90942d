#!/usr/bin/env python3
"""Real programs under the agent (through `memsight run`): the output and the exit
status must be exactly those of the run without the agent, nothing may hang or crash,
and the snapshot(s) must be complete and consistent.

Usage: agent_real.py CASE   (python sqlite xz gcc git fork exec exec_follow threads64
                             dlopen exit_thread ctor full_tables ucontext)
Environment: MEMSIGHT, MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_snap  # noqa: E402

PY = '/usr/bin/python3'
WORK = tempfile.mkdtemp(prefix='ms-agent-real-')


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(cmd, agent, stdin=None, extra=(), timeout=600, env=None):
    out = os.path.join(WORK, 'snaps')
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    full = cmd
    if agent:
        full = [os.environ['MEMSIGHT'], 'run', '-q', '-o', out] + list(extra) + ['--'] + cmd
    e = dict(os.environ)
    e.update(env or {})
    e.pop('LD_PRELOAD', None)
    p = subprocess.run(full, input=stdin, capture_output=True, timeout=timeout, env=e, cwd=WORK)
    return p, out


def same(cmd, stdin=None, extra=(), env=None, expect_rc=0, cmp_stderr=True):
    """Runs cmd with and without the agent; output and status must be identical."""
    base, _ = run(cmd, False, stdin, env=env)
    p, out = run(cmd, True, stdin, extra, env=env)
    if base.returncode != expect_rc:
        fail('%s: without the agent the status is %d, not %d' % (cmd[0], base.returncode, expect_rc))
    if p.returncode != base.returncode:
        fail('%s: status %d under the agent, %d without (stderr: %s)'
             % (cmd[0], p.returncode, base.returncode, p.stderr[-2000:]))
    if p.stdout != base.stdout:
        fail('%s: stdout differs under the agent' % cmd[0])
    if cmp_stderr and p.stderr != base.stderr:
        fail('%s: stderr differs under the agent:\n%s' % (cmd[0], p.stderr[-2000:]))
    return p, out


def snaps(out):
    files = sorted(glob.glob(os.path.join(out, 'memsight-*-exit.msnap')))
    leftovers = [f for f in os.listdir(out) if '.tmp' in f]
    if leftovers:
        fail('temporary snapshot files left behind: %r' % leftovers)
    return files


def check_snap(path, min_allocs=0):
    s = agent_snap.read(path)  # checks CRCs, END, layouts
    allocs = sum(st['alloc_blocks'] for st in s['stacks'].values() if st['kind'] == 'heap')
    if allocs < min_allocs:
        fail('%s: only %d allocations recorded, expected at least %d' % (path, allocs, min_allocs))
    live = sum(st['live_blocks'] for st in s['stacks'].values())
    if s['blocks'] is not None and len(s['blocks']) != live:
        fail('%s: BLKS has %d blocks, stacks count %d live' % (path, len(s['blocks']), live))
    for k in ('dropped_blocks', 'dropped_stacks', 'unwind_fallbacks'):
        if s['health'].get(k):
            print('note: %s health %s = %d' % (os.path.basename(path), k, s['health'][k]))
    name = os.path.basename(path)
    if not name.startswith('memsight-%s-' % s['meta']['pid']):
        fail('%s: name does not carry the pid %s' % (name, s['meta']['pid']))
    return s


def one_snap(out, min_allocs=0):
    files = snaps(out)
    if len(files) != 1:
        fail('expected one exit snapshot, found %r' % os.listdir(out))
    return check_snap(files[0], min_allocs)


def prog(name):
    return os.path.join(os.environ['MS_PROGRAMS'], name)


def case_python():
    code = ('d = {}\nfor i in range(150000):\n    d["k%d" % i] = [i, str(i) * 3]\n'
            'l = sorted(d, key=len)\nprint(len(d), len(l), sum(len(v[1]) for v in d.values()))\n')
    p, out = same([PY, '-c', code], env={'PYTHONMALLOC': 'malloc', 'PYTHONHASHSEED': '0'})
    one_snap(out, min_allocs=300000)


def case_ucontext():
    p, out = same([prog('rp_ucontext')])
    one_snap(out, min_allocs=4000)


def case_full_tables():
    """Tables far too small: the program must run unchanged, the drops be counted."""
    code = ('l = [str(i) * 2 for i in range(50000)]\nd = {i: [i] for i in range(20000)}\n'
            'print(len(l), len(d))\n')
    p, out = same([PY, '-c', code], extra=['-O', 'capacity=1024', '-O', 'stack_capacity=64'],
                  env={'PYTHONMALLOC': 'malloc'})
    s = one_snap(out)
    if not s['health'].get('dropped_blocks') or not s['health'].get('dropped_stacks'):
        fail('drops not counted: %r' % s['health'])


def case_sqlite():
    sql = ['CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER);', 'BEGIN;']
    sql += ["INSERT INTO t(name, v) VALUES('n%d', %d);" % (i, (i * 7919) % 100003)
            for i in range(100000)]
    sql += ['COMMIT;', 'CREATE INDEX t_v ON t(v);', 'SELECT count(*), sum(v) FROM t;',
            'SELECT name FROM t WHERE v < 20 ORDER BY v;']
    p, out = same(['sqlite3', ':memory:'], stdin='\n'.join(sql).encode())
    one_snap(out, min_allocs=100000)


def case_xz():
    data = os.path.join(WORK, 'data.bin')
    with open(data, 'wb') as f:
        for i in range(200000):
            f.write(b'line %d %s\n' % (i, b'abc' * (i % 7)))
    p, out = same(['xz', '-T2', '-6', '-c', data])
    one_snap(out)


def case_gcc():
    src = os.path.join(WORK, 'big.i')
    with open(src, 'w') as f:
        for i in range(250):
            f.write('struct s%d { int a; long b[%d]; };\n' % (i, i % 7 + 1))
            f.write('int f%d(struct s%d *p, int x) { int r = 0; for (int i = 0; i < x; i++) '
                    '{ r += p->a * i + (int)p->b[i %% %d]; if (r > %d) r ^= x; } '
                    'switch (x) { case 1: return r + 1; case 2: return r * 3; default: return r; } }\n'
                    % (i, i, i % 7 + 1, i * 13))
    p, out = same(['gcc', '-O2', '-c', src, '-o', os.path.join(WORK, 'big.o')],
                  extra=['--follow-exec'])
    files = snaps(out)
    cc1 = [check_snap(f) for f in files]
    cc1 = [s for s in cc1 if s['meta'].get('exe', '').endswith('/cc1')]
    if not cc1:
        fail('no snapshot from cc1 among %r' % [os.path.basename(f) for f in files])
    n = sum(st['alloc_blocks'] for st in cc1[0]['stacks'].values())
    if n < 50000:
        fail('cc1 recorded only %d allocations' % n)


def case_git():
    p, out = same(['git', '--version'])
    one_snap(out)


def case_fork():
    base, _ = run([prog('rp_fork')], False)
    p, out = run([prog('rp_fork')], True)
    norm = lambda b: [w for w in b.split() if not w.isdigit()]  # pids differ per run
    if p.returncode != 0 or base.returncode != 0 or norm(p.stdout) != norm(base.stdout):
        fail('rp_fork: status %d/%d, output %r vs %r' % (p.returncode, base.returncode,
                                                        p.stdout, base.stdout))
    lines = p.stdout.decode().split()
    child = lines[lines.index('child') + 1]
    parent = lines[lines.index('parent') + 1]
    files = snaps(out)
    pids = sorted(os.path.basename(f).split('-')[1] for f in files)
    if pids != sorted([child, parent]):
        fail('snapshots %r, expected one for the parent %s and one for the child %s'
             % (files, parent, child))
    for f in files:
        s = check_snap(f)
        names = set()
        for st in s['stacks'].values():
            if st['live_blocks']:
                names.update(n for n in agent_snap.frames(s, st) if n)
        if s['meta']['pid'] == child and 'rp_child_work' not in names:
            fail('the child snapshot lacks rp_child_work')
        if s['meta']['pid'] == parent and 'rp_child_work' in names:
            fail('the parent snapshot holds the child allocations')
        if 'rp_parent_work' not in names:
            fail('%s lacks rp_parent_work (inherited by the child, kept by the parent)' % f)


def case_exec():
    p, out = same([prog('rp_exec')], expect_rc=5)
    if b'libmemsight' in p.stdout:
        fail('the exec\'d program still has the agent preloaded: %r' % p.stdout)


def case_exec_follow():
    p, out = run([prog('rp_exec')], True, extra=['--follow-exec'])
    if p.returncode != 5 or b'libmemsight' not in p.stdout:
        fail('with --follow-exec the agent must stay preloaded: %r %r' % (p.returncode, p.stdout))
    one_snap(out)  # the shell (same pid) writes the exit snapshot


def case_threads64():
    p, out = same([prog('rp_threads64')])
    s = one_snap(out, min_allocs=64 * 3000)
    kept = 0
    for st in s['stacks'].values():
        if 'rp_thread_keep' in agent_snap.frames(s, st):
            kept += st['live_blocks']
    if kept != 650:  # 64 threads, then the small-stack one, 10 blocks each
        fail('expected 650 live blocks from rp_thread_keep, found %d' % kept)
    stacks = [st for st in s['stacks'].values() if st['kind'] == 'stack' and st['live_blocks']]
    if stacks:
        fail('joined threads left %d live thread stacks' % len(stacks))


def case_dlopen():
    p, out = same([prog('rp_dlopen')])
    s = one_snap(out)
    if s['health'].get('dlclose_calls', 0) < 30:
        fail('dlclose was not seen: %r' % s['health'])


def case_exit_thread():
    p, out = same([prog('rp_exit_thread')], expect_rc=7)
    one_snap(out)


def case_ctor():
    p, out = same([prog('rp_ctor')])
    if b'handled=1 thread-ok' not in p.stdout:
        fail('constructor output wrong: %r' % p.stdout)
    one_snap(out)


if __name__ == '__main__':
    try:
        globals()['case_' + sys.argv[1]]()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print('ok', sys.argv[1])
