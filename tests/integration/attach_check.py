#!/usr/bin/env python3
"""memsight attach / detach on running programs. Every target is driven through pipes,
one reply line per command, so nothing waits on time; its output and exit status are
compared with a run of the same commands without memsight.
  threads   at_target (3 threads): blocks made before the attach are freed and reallocated
            after it; the blocks made after it are attributed exactly to their call sites;
            detach, attach again on the same process, detach again; what a module loaded
            meanwhile would bind malloc and free to (the agent while attached; after a
            detach libc's malloc, and still the agent's free, which takes blocks with a
            header)
  kill      memsight attach killed (SIGKILL) at each step of the injection: the target
            runs on, its output unchanged; the attach either never happened or completed
  signals   memsight stopped at a step while it holds the target's thread; a signal sent
            to that thread then is delivered once, afterwards; then --duration (it
            detaches by itself) and an exit while attached (the exit snapshot)
  refuse    refusals leave the target untouched: no process, stopped, already traced,
            another user, already attached, under memsight run, static, 32-bit or
            another CPU (when a compiler for it is installed); another mount namespace
            without the library's path is attached through a copy
  python    python3 building a list, attached in the middle; a module it loads after the
            attach (sqlite3) is recorded too
  sqlite    sqlite3 in the middle of a long script
usage: attach_check.py threads|kill|signals|refuse|python|sqlite"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from export_common import memsight_for_others  # noqa: E402 (beside this file)

MEMSIGHT = os.environ['MEMSIGHT']
AGENT = os.environ['MS_AGENT']
PROGRAMS = os.environ['MS_PROGRAMS']
TARGET = os.path.join(PROGRAMS, 'at_target')
ERRORS = []


def check(cond, msg):
    if not cond:
        ERRORS.append(msg)
        print('FAIL: ' + msg)
    return cond


def clean_env():
    return {k: v for k, v in os.environ.items()
            if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS', 'MEMSIGHT_ATTACH_DIE_AT')}


class Target:
    """A program answering one line per command line (or per marker it prints)."""

    def __init__(self, argv, env=None, preexec=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1,
                                  env=env or clean_env(), preexec_fn=preexec)
        self.pid = self.p.pid
        self.lines = []

    def cmd(self, line, until=None):
        self.p.stdin.write(line + '\n')
        self.p.stdin.flush()
        while True:
            r = self.p.stdout.readline()
            if not r:
                raise RuntimeError('target %d ended while waiting for %r' % (self.pid, line))
            self.lines.append(r)
            if until is None or until in r:
                return r

    def finish(self, last=None):
        if last:
            self.p.stdin.write(last + '\n')
        self.p.stdin.close()
        rest = self.p.stdout.read()
        self.lines.append(rest)
        rc = self.p.wait(timeout=120)
        return ''.join(self.lines), rc, self.p.stderr.read()


def memsight(*args, env=None, timeout=120):
    return subprocess.run([MEMSIGHT] + list(args), capture_output=True, text=True,
                          env=env or clean_env(), timeout=timeout)


def report(snap):
    r = memsight('report', '--format', 'json', snap)
    if not check(r.returncode == 0, 'report %s: %s' % (snap, r.stderr.strip())):
        return None
    return json.loads(r.stdout)


def by_function(rep, names):
    """live blocks, live bytes, allocated blocks per (innermost function in names, kind)."""
    got = {}
    for st in rep['stacks']:
        fn = next((f.get('function') for f in st['frames'] if f.get('function') in names), None)
        if fn is None:
            continue
        a = got.setdefault((fn, st['kind']), [0, 0, 0])
        a[0] += st['live_blocks']
        a[1] += st['live_bytes']
        a[2] += st['allocated_blocks']
    return got


def proc_status(pid):
    with open('/proc/%d/status' % pid) as f:
        s = f.read()
    return {k: v.strip() for k, v in (l.split(':', 1) for l in s.splitlines() if ':' in l)}


def has_agent(pid):
    with open('/proc/%d/maps' % pid) as f:
        return 'libmemsight.so' in f.read()


def attach(pid, out, *extra, env=None):
    r = memsight('attach', '-o', out, *extra, str(pid), env=env)
    print('attach %d: rc %d\n%s' % (pid, r.returncode, r.stderr.strip()))
    return r


def detach(pid):
    r = memsight('detach', str(pid))
    print('detach %d: rc %d\n%s' % (pid, r.returncode, r.stderr.strip()))
    return r


def dump(pid):
    r = memsight('dump', str(pid))
    check(r.returncode == 0, 'dump %d: %s' % (pid, r.stderr.strip()))
    return r.stdout.strip()


# ---------------------------------------------------------------------------------------
SITES = ('at_thread_site', 'at_main_site', 'at_freed_site', 'at_realloc_site',
         'at_again_site', 'worker_work', 'at_leak_site')
SCRIPT = ['prep 300', 'work', 'leak', 'again', 'release']


def baseline():
    t = Target([TARGET])
    for c in SCRIPT:
        t.cmd(c)
    return t.finish('quit')


def binds(t):
    """The files defining malloc and free for a module the target loads now (the reply
    is left out of the output compared with the run without memsight)."""
    r = t.cmd('binds')
    t.lines.pop()
    m = re.match(r'binds malloc=(\S+) free=(\S+)', r)
    return (m.group(1), m.group(2)) if m else (r,)


def case_threads():
    base_out, base_rc, _ = baseline()
    check(base_rc == 3, 'baseline exit status %d, expected 3' % base_rc)
    out = tempfile.mkdtemp(prefix='ms-attach-')
    t = Target([TARGET])
    t.cmd('prep 300')  # 300 blocks in each of 3 threads, before any agent
    r = attach(t.pid, out, '--leak-check', 'signal')
    if not check(r.returncode == 0, 'attach failed: %s' % r.stderr):
        t.finish('quit')
        return
    st = proc_status(t.pid)
    check(st['TracerPid'] == '0', 'traced after attach: %s' % st['TracerPid'])
    check(st['State'][0] in 'SR', 'state after attach: %s' % st['State'])
    t.cmd('work')
    snap = dump(t.pid)
    txt = memsight('report', snap).stdout
    check('recorded: since memsight attach at ' in txt, 'the report does not say from when: %s'
          % txt[:600])
    rep = report(snap)
    if rep:
        got = by_function(rep, SITES)
        print('session 1:', got)
        want = {('at_thread_site', 'heap'): [200, 200 * 48, 200],
                ('at_main_site', 'heap'): [200, 200 * 32, 200],
                ('at_freed_site', 'heap'): [0, 0, 50],
                ('at_realloc_site', 'heap'): [300, 300 * 80, 300],
                ('worker_work', 'heap'): [300, 300 * 200, 300]}
        for k, v in want.items():
            check(got.get(k) == v, 'session 1 %s: expected %r, report %r' % (k, v, got.get(k)))
        meta = rep.get('meta', {})
        check(int(meta.get('attached_ns', 0)) > 0 and meta.get('attach_sessions') == '1',
              'meta does not say from when it recorded: %r' % meta)
    # a leak scan: the blocks made after the attach whose pointers live in arrays made
    # before it (the workers' pre-attach pointer arrays) are reachable; the 10 blocks
    # dropped by at_leak_site are the only ones lost
    t.cmd('leak')
    lk = memsight('leaks', str(t.pid))
    check(lk.returncode == 0, 'leaks: %s' % lk.stderr)
    m = re.search(r'snapshot: (\S+)', lk.stdout)
    rep = report(m.group(1)) if m else None
    if rep:
        lost = {}
        for rec in rep.get('leak_records', []):
            fn = next((f.get('function') for f in rec['frames'] if f.get('function') in SITES),
                      None)
            if rec['class'] != 'still_reachable':
                lost[(fn, rec['class'])] = lost.get((fn, rec['class']), 0) + rec['blocks']
        print('leak scan after attach:', rep.get('leaks'), lost)
        check(lost == {('at_leak_site', 'definitely_lost'): 10},
              'leak scan after attach: expected exactly the 10 blocks of at_leak_site lost, '
              'got %r' % lost)
    check(binds(t) == ('libmemsight.so', 'libmemsight.so'),
          'attached: a new module would bind malloc, free to %r' % (binds(t),))
    r = detach(t.pid)
    check(r.returncode == 0, 'detach failed')
    check(binds(t) == ('libc.so.6', 'libmemsight.so'),
          'detached: a new module would bind malloc, free to %r' % (binds(t),))
    snap = r.stdout.strip()
    check(snap.endswith('-detach.msnap') and os.path.isfile(snap), 'no detach snapshot: %r' % snap)
    check(re.search(r'[1-9]\d* GOT slots given back', r.stderr) is not None,
          'detach gave no slot back: %s' % r.stderr)
    d = memsight('dump', str(t.pid))
    check(d.returncode != 0 and 'detached' in d.stderr, 'dump after detach: %r' % d.stderr)
    # the control thread has ended, and the request signal is the program's again
    comms = []
    for tid in os.listdir('/proc/%d/task' % t.pid):
        with open('/proc/%d/task/%s/comm' % (t.pid, tid)) as f:
            comms.append(f.read().strip())
    check('memsight-ctl' not in comms and len(comms) == 3,
          'threads after detach: %r (expected the program\'s 3)' % comms)
    cgt = int(proc_status(t.pid)['SigCgt'], 16)
    check(not cgt & (1 << (signal.SIGRTMIN + 13 - 1)),
          'the request signal still has the agent\'s handler after detach')
    t.cmd('again')  # while detached: not recorded
    r = attach(t.pid, out)
    check(r.returncode == 0 and 'session 2' in r.stderr, 'second attach failed: %s' % r.stderr)
    t.cmd('release')  # frees session 1's blocks, the detached gap's and the pre-attach ones
    rep = report(dump(t.pid))
    if rep:
        got = by_function(rep, SITES)
        print('session 2:', got)
        for k in (('at_thread_site', 'heap'), ('at_main_site', 'heap'), ('worker_work', 'heap')):
            check(got.get(k, [0])[0] == 0, 'session 2 %s still live: %r' % (k, got.get(k)))
        check(got.get(('at_main_site', 'heap'), [0, 0, 0])[2] == 200,
              'session 2 lost session 1 counts: %r' % got.get(('at_main_site', 'heap')))
        check(('at_again_site', 'heap') not in got, 'blocks made while detached were recorded')
        check(rep.get('meta', {}).get('attach_sessions') == '2', 'meta sessions')
    r = detach(t.pid)
    check(r.returncode == 0, 'second detach failed')
    text, rc, err = t.finish('quit')
    check(rc == base_rc, 'exit status %d, without memsight %d' % (rc, base_rc))
    check(text == base_out, 'output differs:\n%s\n--- without memsight:\n%s' % (text, base_out))
    check(err == '', 'the target wrote on stderr: %r' % err)
    shutil.rmtree(out, ignore_errors=True)


STEPS = ('seized', 'written', 'entry', 'running', 'done', 'resumed', 'detached')


def case_kill():
    base_out, base_rc, _ = baseline()
    for stepname in STEPS:
        out = tempfile.mkdtemp(prefix='ms-attach-kill-')
        t = Target([TARGET])
        t.cmd('prep 300')
        env = clean_env()
        env['MEMSIGHT_ATTACH_DIE_AT'] = stepname
        r = attach(t.pid, out, env=env)
        check(r.returncode == -signal.SIGKILL, '%s: memsight was not killed there (rc %d)'
              % (stepname, r.returncode))
        st = proc_status(t.pid)
        check(st['State'][0] != 't' and st['State'][0] != 'T', '%s: target left stopped: %s'
              % (stepname, st['State']))
        t.cmd('work')  # runs, and its output must be the same
        attached = has_agent(t.pid)
        if stepname in ('seized', 'written'):
            check(not attached, '%s: the agent got loaded anyway' % stepname)
        else:  # the code in the target completes the attach by itself
            check(attached, '%s: the target went on without the agent' % stepname)
            rep = report(dump(t.pid)) if attached else None
            if rep:
                got = by_function(rep, SITES)
                check(got.get(('at_main_site', 'heap'), [0])[0] == 200,
                      '%s: at_main_site not recorded: %r' % (stepname, got))
            check(detach(t.pid).returncode == 0, '%s: detach failed' % stepname)
        # a later attach works whatever was left behind
        check(attach(t.pid, out).returncode == 0, '%s: attach after the kill failed' % stepname)
        t.cmd('leak')
        t.cmd('again')
        t.cmd('release')
        check(detach(t.pid).returncode == 0, '%s: final detach failed' % stepname)
        text, rc, err = t.finish('quit')
        check(rc == base_rc and text == base_out,
              '%s: output or status changed (%d):\n%s' % (stepname, rc, text))
        shutil.rmtree(out, ignore_errors=True)


def tgkill(pid, tid, sig):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(234, pid, tid, sig)  # SYS_tgkill on x86-64


def case_signals():
    for stepname in ('seized', 'entry', 'done'):
        out = tempfile.mkdtemp(prefix='ms-attach-sig-')
        t = Target([TARGET])
        t.cmd('prep 50')
        env = clean_env()
        env['MEMSIGHT_ATTACH_STOP_AT'] = stepname
        m = subprocess.Popen([MEMSIGHT, 'attach', '-o', out, str(t.pid)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # memsight stops itself at the step, with the target's main thread held
        while True:
            with open('/proc/%d/stat' % m.pid) as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'T':
                    break
            os.sched_yield()
        with open('/proc/%d/task/%d/stat' % (t.pid, t.pid)) as f:
            held = f.read().rsplit(')', 1)[1].split()[0]
        check(held == 't', '%s: the main thread is not held (state %s)' % (stepname, held))
        check(tgkill(t.pid, t.pid, signal.SIGUSR1) == 0, '%s: tgkill failed' % stepname)
        os.kill(m.pid, signal.SIGCONT)
        o, e = m.communicate(timeout=120)
        check(m.returncode == 0, '%s: attach failed: %s' % (stepname, e))
        r = t.cmd('sigs')
        check(r.strip() == 'ok sigs 1', '%s: the signal sent while held: %r' % (stepname, r))
        t.cmd('work')
        check(detach(t.pid).returncode == 0, '%s: detach failed' % stepname)
        # a request that comes after the detach (memsight dump saw the handler, then the
        # detach ran): ignored, never the signal's default action (it used to kill)
        os.kill(t.pid, signal.SIGRTMIN + 13)
        r = t.cmd('work')
        check(r.startswith('ok'), '%s: a request after the detach: %r' % (stepname, r))
        if stepname == 'done':
            # --duration: it detaches by itself (the test waits for that, whatever it takes)
            r = attach(t.pid, out, '--duration', '200ms')
            check(r.returncode == 0 and 'detaches by itself' in r.stderr, 'duration: attach')
            while memsight('dump', str(t.pid)).returncode == 0:
                pass
            d = memsight('dump', str(t.pid))
            check('detached' in d.stderr, 'duration: %s' % d.stderr)
            snaps = sorted(f for f in os.listdir(out) if f.endswith('-detach.msnap'))
            check(len(snaps) == 2, 'duration: detach snapshots %r' % snaps)
            # attached when the process exits: the exit snapshot, as under memsight run
            check(attach(t.pid, out).returncode == 0, 'exit: attach')
        text, rc, _ = t.finish('quit')
        check(rc == 3, '%s: exit status %d' % (stepname, rc))
        if stepname == 'done':
            ex = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
            check(len(ex) == 1, 'no exit snapshot of a process that exited attached: %r'
                  % os.listdir(out))
        shutil.rmtree(out, ignore_errors=True)


def untouched(t, what):
    st = proc_status(t.pid)
    check(st['TracerPid'] == '0', '%s: left traced' % what)
    check(not has_agent(t.pid), '%s: the agent got loaded' % what)


def refused(r, what, pattern):
    ok = r.returncode == 1 and re.search(pattern, r.stderr) is not None
    check(ok, '%s: expected a refusal matching %r, got rc %d: %s' % (what, pattern, r.returncode,
                                                                     r.stderr.strip()))


def case_refuse():
    out = tempfile.mkdtemp(prefix='ms-attach-refuse-')
    base_out, base_rc, _ = baseline()
    # no such process
    refused(memsight('attach', '-o', out, '4194303'), 'no process', 'no process with pid')
    t = Target([TARGET])
    t.cmd('prep 300')
    # stopped
    os.kill(t.pid, signal.SIGSTOP)
    while proc_status(t.pid)['State'][0] != 'T':
        os.sched_yield()
    refused(attach(t.pid, out), 'stopped', 'is stopped')
    check(proc_status(t.pid)['State'][0] == 'T', 'stopped: no longer stopped')
    os.kill(t.pid, signal.SIGCONT)
    untouched(t, 'stopped')
    # already traced by someone else: a helper seizes it and holds on
    helper = subprocess.Popen([sys.executable, '-c',
                               'import ctypes,sys; l=ctypes.CDLL(None, use_errno=True);'
                               'r=l.ptrace(0x4206, %d, None, None); print(r, flush=True);'
                               'sys.stdin.read()' % t.pid],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(helper.stdout.readline().strip() == '0', 'the helper could not trace the target')
    refused(attach(t.pid, out), 'traced', r'already traced by process %d' % helper.pid)
    helper.stdin.close()
    helper.wait()
    # another user (as nobody, against a process of ours)
    if os.geteuid() == 0:
        r = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                            memsight_for_others(), 'attach', '-o', '/tmp', str(t.pid)],
                           capture_output=True, text=True, env=clean_env())
        print('as nobody:', r.returncode, r.stderr.strip())
        refused(r, 'other user', r'belongs to uid 0 and you are uid 65534|cannot read|Permission')
    untouched(t, 'refusals')
    # already attached, then attached twice
    check(attach(t.pid, out).returncode == 0, 'attach after the refusals failed')
    refused(attach(t.pid, out), 'twice', 'already attached')
    check(detach(t.pid).returncode == 0, 'detach failed')
    refused(memsight('detach', str(t.pid)), 'detach twice', 'already detached')
    for c in SCRIPT[1:]:
        t.cmd(c)
    text, rc, _ = t.finish('quit')
    check(rc == base_rc and text == base_out, 'refusals changed the output:\n%s' % text)
    # under memsight run: the agent is there already
    t = Target([MEMSIGHT, 'run', '-q', '-o', out, '--', TARGET])
    t.cmd('prep 10')
    pid = int(subprocess.run(['pgrep', '-P', str(t.pid)], capture_output=True,
                             text=True).stdout.split()[0])
    refused(attach(pid, out), 'under run', 'already runs in process')
    refused(memsight('detach', str(pid)), 'detach under run', 'was not attached')
    t.finish('quit')
    # a static program, a 32-bit one, another CPU's: built here if a compiler can
    work = tempfile.mkdtemp(prefix='ms-attach-bin-')
    src = os.path.join(work, 'w.c')
    with open(src, 'w') as f:
        f.write('#include <stdio.h>\nint main(void){char b[64];'
                'while(fgets(b,sizeof b,stdin)){printf("ok\\n");fflush(stdout);}return 0;}\n')
    kinds = [('static', ['cc', '-static'], None, r'statically linked'),
             ('32-bit', ['cc', '-m32'], None, r'architecture mismatch: process \d+ runs a 32-bit'),
             ('musl', ['musl-gcc'], None, r'musl, not glibc|statically linked'),
             ('arm64', ['aarch64-linux-gnu-gcc'],
              [shutil.which('qemu-aarch64') or shutil.which('qemu-aarch64-static') or
               'qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'], r'architecture mismatch')]
    for name, cc, runner, pattern in kinds:
        exe = os.path.join(work, name)
        if shutil.which(cc[0]) is None or subprocess.run(
                cc + ['-O1', src, '-o', exe], capture_output=True).returncode != 0:
            print('%s: no compiler for it here, not checked' % name)
            continue
        if runner and shutil.which(runner[0]) is None:
            print('%s: no %s here, not checked' % (name, runner[0]))
            continue
        t = Target((runner or []) + [exe])
        t.cmd('x')
        refused(attach(t.pid, out), name, pattern)
        untouched(t, name)
        t.cmd('x')
        t.finish()
    shutil.rmtree(work, ignore_errors=True)
    # another mount namespace in which the library's directory is hidden: copied there
    if os.geteuid() == 0 and shutil.which('unshare'):
        libdir = os.path.dirname(os.path.realpath(AGENT))
        t = Target(['unshare', '-m', '--propagation', 'private', 'sh', '-c',
                    'mount -t tmpfs none "%s" && exec "%s"' % (libdir, TARGET)])
        t.cmd('prep 50')
        if not check(not os.path.exists('/proc/%d/root%s' % (t.pid, os.path.realpath(AGENT))),
                     'mount namespace: the library is still visible in it'):
            t.finish('quit')
        else:
            r = attach(t.pid, out)
            check(r.returncode == 0 and 'another mount namespace' in r.stderr,
                  'mount namespace: attach through a copy failed: %s' % r.stderr)
            t.cmd('work')
            check(detach(t.pid).returncode == 0, 'mount namespace: detach failed')
            text, rc, _ = t.finish('quit')
            check(rc == 3, 'mount namespace: exit status %d' % rc)
            m = re.search(r' (/tmp/memsight-agent-[0-9a-f]+-[0-9a-f]+)/libmemsight.so', r.stderr)
            if m:
                shutil.rmtree(m.group(1), ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)


PYSCRIPT = r'''
import sys
data, dbs = [], []
def build(n, tag):
    for i in range(n):
        data.append('%s-%d-' % (tag, i) * 3)
for line in sys.stdin:
    w = line.split()
    if w[0] == 'build':
        build(int(w[1]), w[2])
        print('built', len(data), sum(len(s) for s in data), flush=True)
    elif w[0] == 'drop':
        del data[:int(w[1])]
        print('dropped', len(data), flush=True)
    elif w[0] == 'sql':  # _sqlite3 and libsqlite3 are loaded now, after the attach
        import sqlite3
        db = sqlite3.connect(':memory:')
        db.execute('create table t(a, b)')
        db.executemany('insert into t values(?, ?)', ((i, 'x' * 50) for i in range(int(w[1]))))
        dbs.append(db)
        print('sql', db.execute('select count(*) from t').fetchone()[0], flush=True)
'''


def case_python():
    py = '/usr/bin/python3'
    env = clean_env()
    env['PYTHONMALLOC'] = 'malloc'  # every object a malloc block: countable
    script = ['build 2000 a', 'build 30000 b', 'sql 20000', 'drop 10000', 'build 5000 c']

    def start():
        return Target([py, '-c', PYSCRIPT], env=env)
    t = start()
    for c in script:
        t.cmd(c)
    base_out, base_rc, _ = t.finish()
    out = tempfile.mkdtemp(prefix='ms-attach-py-')
    t = start()
    t.cmd(script[0])
    check(attach(t.pid, out).returncode == 0, 'python: attach failed')
    t.cmd(script[1])  # 30000 strings made while attached, all still in the list
    rep = report(dump(t.pid))
    if rep:
        heap = sum(s['live_blocks'] for s in rep['stacks'] if s['kind'] == 'heap')
        print('python: %d live heap blocks recorded' % heap)
        check(30000 <= heap < 60000, 'python: %d live heap blocks, expected 30000 strings'
              ' and their list' % heap)
    t.cmd(script[2])  # modules loaded after the attach: their allocations are recorded
    rep = report(dump(t.pid))
    if rep:
        lib = sum(s['live_bytes'] for s in rep['stacks'] if s['kind'] == 'heap' and any(
            os.path.basename(f.get('module') or '').startswith('libsqlite3') for f in s['frames']))
        print('python: %d live bytes allocated through libsqlite3, loaded after the attach' % lib)
        check(lib > 20000 * 50, 'python: only %d live bytes from libsqlite3' % lib)
    check(detach(t.pid).returncode == 0, 'python: detach failed')
    for c in script[3:]:
        t.cmd(c)
    text, rc, err = t.finish()
    check(rc == base_rc and text == base_out, 'python: output changed:\n%s\n---\n%s' % (text, base_out))
    check(err == '', 'python: stderr %r' % err)
    shutil.rmtree(out, ignore_errors=True)


def case_sqlite():
    sq = shutil.which('sqlite3')
    if not sq:
        print('no sqlite3: not checked')
        return

    def part(k, n):
        lines = ['BEGIN;']
        lines += ["INSERT INTO t VALUES(%d, '%s');" % (k * 100000 + i, ('v%d' % i) * 8)
                  for i in range(n)]
        lines += ['COMMIT;', "SELECT 'mark%d', count(*), sum(length(b)) FROM t;" % k]
        return lines
    script = [['CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);'] + part(1, 3000),
              part(2, 20000) + ['CREATE INDEX tb ON t(b);', "SELECT 'mark2b';"],
              part(3, 3000)]

    def run_parts(t, between):
        for k, lines in enumerate(script):
            for l in lines[:-1]:
                t.p.stdin.write(l + '\n')
            t.cmd(lines[-1], until='mark%d' % (k + 1) if k != 1 else 'mark2b')
            between(k)
        return t.finish()
    base_out, base_rc, _ = run_parts(Target([sq, ':memory:']), lambda k: None)
    out = tempfile.mkdtemp(prefix='ms-attach-sq-')
    t = Target([sq, ':memory:'])

    def between(k):
        if k == 0:
            check(attach(t.pid, out).returncode == 0, 'sqlite: attach failed')
        elif k == 1:
            rep = report(dump(t.pid))
            if rep:
                # 20000 rows of about 40 bytes inserted while attached, in the table's
                # pages that libsqlite3 allocates: at least 800 kB live from it
                lib = 0
                for s in rep['stacks']:
                    if s['kind'] == 'heap' and any(os.path.basename(f.get('module') or '')
                                                   .startswith('libsqlite3') for f in s['frames']):
                        lib += s['live_bytes']
                print('sqlite: %d live heap bytes allocated through libsqlite3' % lib)
                check(lib > 800000, 'sqlite: only %d live bytes from libsqlite3' % lib)
            check(detach(t.pid).returncode == 0, 'sqlite: detach failed')
    text, rc, err = run_parts(t, between)
    check(rc == base_rc and text == base_out, 'sqlite: output changed:\n%s' % text)
    shutil.rmtree(out, ignore_errors=True)


CASES = {'threads': case_threads, 'kill': case_kill, 'signals': case_signals,
         'refuse': case_refuse,
         'python': case_python, 'sqlite': case_sqlite}

def main(cases, doc):
    """Runs the case named on the command line; exit status 1 on any problem."""
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        print(doc)
        sys.exit(2)
    cases[sys.argv[1]]()
    if ERRORS:
        print('%d problem(s)' % len(ERRORS))
        sys.exit(1)
    print('ok')


if __name__ == '__main__':
    main(CASES, __doc__)
