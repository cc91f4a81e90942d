#!/usr/bin/env python3
"""Live processes as a careless user meets them: requests an attached agent cannot serve
are answered at once with the reason, options that cannot work together are refused before
the process is touched, a second attach cannot change the mode, the agent's own write
errors reach the command that asked.
  sampled   `memsight leaks` on an agent attached with --sample answers at once: sampled
            mode, not a timeout blaming a stopped process
  options   attach -O sample=64k -O leak_check=signal is refused, the process untouched
  mode      attach, detach, attach --sample 64k: refused (the agent would keep full mode
            while its snapshots said sample=65536); attach again with the same options works
  full      the snapshot directory on a full file system (a small tmpfs as root, else a
            file size limit): dump, leaks and detach say the agent's own error at once
  output    attach -o /proc/self/cwd writes into the target's working directory (its view
            of /proc/self), -o /proc/self is refused before the process is touched; run -o
            into a directory it cannot write to fails before the program starts
  messages  a target killed during the attach, an attach while another one holds the
            process, `attach abc`, `attach -- PID`, detach of an exited process, dump of a
            zombie, dump --help: each says what happened, once
  children  children forked while the parent was attached keep the agent: the parent's
            detach lists them and the command; detach --children detaches them, each with
            its final snapshot
  reports   a stripped copy of the three-thread target started through a symlink: a scan
            right after the attach has nothing to judge and says so; the report counts the
            threads started before the attach, names the program by its symlink too, and
            its HTML leak table shows unnamed frames as module+offset, as the text does
usage: attach_live.py CASE"""
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attach_check import (TARGET, Target, attach, check, clean_env, detach, has_agent,  # noqa: E402
                          main, memsight)


def target(pre=None):
    t = Target([TARGET], preexec=pre)
    t.cmd('prep 10')
    return t


def timed(*args, timeout=120):
    t0 = time.monotonic()
    r = memsight(*args, timeout=timeout)
    el = time.monotonic() - t0
    print('%s: rc %d in %.2f s\n%s' % (' '.join(args), r.returncode, el, r.stderr.strip()))
    return r, el


def case_sampled():
    out = tempfile.mkdtemp(prefix='ms-live-')
    t = target()
    if check(attach(t.pid, out, '--sample', '64k').returncode == 0, 'attach --sample failed'):
        t.cmd('work')
        r, el = timed('leaks', '--timeout', '60', str(t.pid))
        check(r.returncode != 0, 'leaks on a sampled agent succeeded')
        check(el < 10, 'leaks on a sampled agent took %.1f s (its timeout is 60 s)' % el)
        check('sampled mode (sample=65536)' in r.stderr, 'leaks does not say why: %s' % r.stderr)
        check('may be stopped' not in r.stderr, 'leaks blames a stopped process: %s' % r.stderr)
        # the agent still serves what it can
        d = memsight('dump', str(t.pid))
        check(d.returncode == 0, 'dump after the refused scan: %s' % d.stderr)
        check(detach(t.pid).returncode == 0, 'detach failed')
    t.finish('quit')
    shutil.rmtree(out, ignore_errors=True)


def case_options():
    out = tempfile.mkdtemp(prefix='ms-live-')
    t = target()
    for opts in (['-O', 'sample=64k', '-O', 'leak_check=signal'],
                 ['--sample', '64k', '--leak-check', 'signal'],
                 ['-O', 'min_size=256', '-O', 'leak_check=exit']):
        r = attach(t.pid, out, *opts)
        check(r.returncode == 2, '%s accepted (rc %d)' % (opts, r.returncode))
        check('a leak scan needs every live block' in r.stderr,
              '%s: no reason given: %s' % (opts, r.stderr))
        check(not has_agent(t.pid), '%s: the agent was loaded all the same' % opts)
    # run refuses them as well, before the program starts
    r = memsight('run', '-o', out, '--sample', '64k', '--leak-check', 'exit', '--', '/bin/true')
    check(r.returncode == 2 and 'a leak scan needs every live block' in r.stderr,
          'run --sample --leak-check exit: rc %d %s' % (r.returncode, r.stderr))
    text, rc, _ = t.finish('quit')
    check(rc == 3, 'target exit status %d' % rc)
    shutil.rmtree(out, ignore_errors=True)


def case_mode():
    out = tempfile.mkdtemp(prefix='ms-live-')
    t = target()
    check(attach(t.pid, out).returncode == 0, 'first attach failed')
    check(detach(t.pid).returncode == 0, 'first detach failed')
    maps_before = open('/proc/%d/maps' % t.pid).read()
    r = attach(t.pid, out, '--sample', '64k')
    check(r.returncode != 0, 'a second attach in sampled mode after full mode was accepted')
    check('sample=0' in r.stderr and 'sample=65536' in r.stderr,
          'the refusal does not name both modes: %s' % r.stderr)
    st = memsight('detach', str(t.pid))
    check('already detached' in st.stderr, 'the refused attach changed the state: %s' % st.stderr)
    check(open('/proc/%d/maps' % t.pid).read() == maps_before,
          'the refused attach touched the process (its mappings changed)')
    # the same options again: attached, its snapshots in full mode
    r = attach(t.pid, out)
    if check(r.returncode == 0, 'attach again with the same options failed'):
        t.cmd('work')
        d = memsight('dump', str(t.pid))
        rep = memsight('report', '--format', 'json', d.stdout.strip())
        check('"sampled"' not in rep.stdout or '"sampled": false' in rep.stdout,
              'the session is sampled')
        check(detach(t.pid).returncode == 0, 'second detach failed')
    t.finish('quit')
    shutil.rmtree(out, ignore_errors=True)


def case_full():
    base = tempfile.mkdtemp(prefix='ms-live-')
    out = os.path.join(base, 'full')
    os.mkdir(out)
    mounted = os.geteuid() == 0 and subprocess.run(
        ['mount', '-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'memsight-test', out],
        stderr=subprocess.DEVNULL).returncode == 0
    pre, why = None, 'No space left on device'
    if not mounted:  # not root: a file size limit gives the agent an error of its own
        def pre():
            resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
        why = 'File too large'
    try:
        t = target(pre)
        if check(attach(t.pid, out).returncode == 0, 'attach failed'):
            t.cmd('work')
            if mounted:
                try:
                    with open(os.path.join(out, 'filler'), 'wb') as f:
                        while True:
                            f.write(b'x' * 4096)
                            f.flush()
                except OSError:
                    pass
            for cmd in (['dump'], ['leaks']):
                r, el = timed(*cmd, '--timeout', '60', str(t.pid))
                check(r.returncode != 0, '%s succeeded on a full disk' % cmd[0])
                check(el < 10, '%s on a full disk took %.1f s (timeout 60 s)' % (cmd[0], el))
                check(why in r.stderr, '%s does not say "%s": %s' % (cmd[0], why, r.stderr))
                check('may be stopped' not in r.stderr, '%s: the generic timeout: %s'
                      % (cmd[0], r.stderr))
            r = detach(t.pid)
            check(r.returncode == 0, 'detach failed')
            check('final snapshot could not be written' in r.stderr and why in r.stderr,
                  'detach does not say why there is no final snapshot: %s' % r.stderr)
        text, rc, _ = t.finish('quit')
        check(rc == 3, 'target exit status %d' % rc)
    finally:
        if mounted:
            subprocess.run(['umount', out])
        shutil.rmtree(base, ignore_errors=True)


def unwritable(base):
    """A directory this user cannot create files in (root writes everywhere but in /proc)."""
    if os.geteuid() == 0:
        return '/proc'
    d = os.path.join(base, 'ro')
    os.mkdir(d, 0o500)
    return d


def case_output():
    base = tempfile.mkdtemp(prefix='ms-live-')
    home = os.path.join(base, 'home')
    os.mkdir(home)
    t = Target([TARGET], preexec=lambda: os.chdir(home))
    t.cmd('prep 10')
    r = attach(t.pid, '/proc/self')
    check(r.returncode != 0, 'attach -o /proc/self accepted')
    check('/proc/%d' % t.pid in r.stderr, 'the refusal does not say whose /proc/self: %s'
          % r.stderr)
    check(not has_agent(t.pid), 'attach -o /proc/self loaded the agent')
    r = attach(t.pid, '/proc/self/cwd')
    if check(r.returncode == 0, 'attach -o /proc/self/cwd failed'):
        d = memsight('dump', str(t.pid))
        check(d.returncode == 0 and os.path.dirname(d.stdout.strip()) == home,
              'the snapshot of -o /proc/self/cwd is not in the target\'s directory %s: %s %s'
              % (home, d.stdout, d.stderr))
        check(detach(t.pid).returncode == 0, 'detach failed')
    t.finish('quit')
    mark = os.path.join(base, 'ran')
    ro = unwritable(base)
    r = memsight('run', '-o', ro, '--', '/bin/sh', '-c', 'echo > ' + mark)
    print('run -o %s: rc %d %s' % (ro, r.returncode, r.stderr.strip()))
    check(r.returncode == 2, 'run -o %s: status %d' % (ro, r.returncode))
    check('cannot write snapshots into %s' % ro in r.stderr, 'run -o: no reason: %s' % r.stderr)
    check(not os.path.exists(mark), 'run -o %s started the program' % ro)
    t = target()
    r = attach(t.pid, ro)
    check(r.returncode != 0 and r.stderr.startswith('memsight attach: cannot write'),
          'attach\'s error is not its own: %s' % r.stderr)
    t.finish('quit')
    if ro != '/proc':
        os.chmod(ro, 0o700)
    shutil.rmtree(base, ignore_errors=True)


def first_line_count(r):
    return len([l for l in r.stderr.splitlines() if l.strip()])


def case_messages():
    out = tempfile.mkdtemp(prefix='ms-live-')
    # killed while memsight holds its thread
    t = target()
    env = clean_env()
    env['MEMSIGHT_ATTACH_STOP_AT'] = 'seized'
    m = subprocess.Popen([os.environ['MEMSIGHT'], 'attach', '-o', out, str(t.pid)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        with open('/proc/%d/stat' % m.pid) as f:
            if f.read().rsplit(')', 1)[1].split()[0] == 'T':
                break
        time.sleep(0.01)
    t.p.kill()
    os.kill(m.pid, 18)  # SIGCONT (the killed target is reaped once its tracer lets go)
    _, e = m.communicate(timeout=120)
    t.p.wait()
    print('attach, target killed: rc %d %s' % (m.returncode, e.strip()))
    check(m.returncode != 0 and 'process %d exited during the attach' % t.pid in e,
          'a target killed during the attach: %s' % e)
    check('not dumpable' not in e and 'setuid' not in e, 'blamed on a setuid program: %s' % e)
    # detach of a process that has exited (and was reaped)
    r = memsight('detach', str(t.pid))
    check('no process with pid %d' % t.pid in r.stderr and '/maps' not in r.stderr,
          'detach of an exited process: %s' % r.stderr)
    # a zombie
    z = subprocess.Popen(['/bin/true'])
    while open('/proc/%d/stat' % z.pid).read().rsplit(')', 1)[1].split()[0] != 'Z':
        time.sleep(0.01)
    r = memsight('dump', str(z.pid))
    check(r.returncode != 0 and 'has exited (a zombie' in r.stderr and 'attach' not in r.stderr,
          'dump of a zombie: %s' % r.stderr)
    z.wait()
    # one error for one mistake; -- before the PID
    r = memsight('attach', 'abc')
    check(r.returncode == 2 and first_line_count(r) == 1 and "'abc' is not a process id"
          in r.stderr, 'attach abc: %s' % r.stderr)
    r = memsight('attach', '--', '2147483646')
    check("unknown option '--'" not in r.stderr and 'no process with pid 2147483646' in r.stderr,
          'attach -- PID: %s' % r.stderr)
    r = memsight('dump', '--help')
    check("'memsight attach'" in r.stdout, 'dump --help does not name attach: %s' % r.stdout)
    # the agent is loaded, not recording, and a tracer holds a thread (another attach at
    # work): said so, not "started by memsight run"
    env = clean_env()
    env['LD_PRELOAD'] = os.environ['MS_AGENT']
    env['MEMSIGHT_OPTIONS'] = 'out=' + out
    t = Target([TARGET], env=env)
    t.cmd('prep 10')
    tid = int(sorted(os.listdir('/proc/%d/task' % t.pid))[-1])
    # the tracer: a process that seizes one thread (PTRACE_SEIZE: it runs on) and waits;
    # when it ends, the thread is let go
    tracer = subprocess.Popen([sys.executable, '-c', (
        'import ctypes, sys\n'
        'libc = ctypes.CDLL(None, use_errno=True)\n'
        'print(libc.ptrace(0x4206, %d, None, None), flush=True)\n'
        'sys.stdin.read()\n') % tid], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if check(tracer.stdout.readline().strip() == '0', 'PTRACE_SEIZE failed'):
        r = attach(t.pid, out)
        check(r.returncode != 0 and 'is being attached by another memsight' in r.stderr and
              'traced by process %d' % tracer.pid in r.stderr,
              'an attach while another holds the process: %s' % r.stderr)
    tracer.communicate('')
    r = attach(t.pid, out)
    check(r.returncode != 0 and "started by 'memsight run'" in r.stderr,
          'an agent started by LD_PRELOAD: %s' % r.stderr)
    t.finish('quit')
    shutil.rmtree(out, ignore_errors=True)


def attach_state(pid):
    """'recording', 'detached' or None, as memsight detach sees it (without detaching)."""
    with open('/proc/%d/maps' % pid) as f:
        if 'libmemsight.so' not in f.read():
            return None
    r = memsight('dump', '--timeout', '5', str(pid))
    return 'detached' if 'was detached' in r.stderr else 'recording' if r.returncode == 0 else r.stderr


def case_children():
    out = tempfile.mkdtemp(prefix='ms-live-')
    t = Target([os.path.join(os.environ['MS_PROGRAMS'], 'at_fork')])
    if check(attach(t.pid, out).returncode == 0, 'attach failed'):
        kids = [int(x) for x in t.cmd('fork 2').split()[2:]]
        check(len(kids) == 2, 'fork: %r' % kids)
        for k in kids:
            check(attach_state(k) == 'recording', 'child %d does not record: %s'
                  % (k, attach_state(k)))
        r = detach(t.pid)
        check(r.returncode == 0, 'detach of the parent failed')
        for k in kids:
            check(str(k) in r.stderr, 'the detach does not name child %d: %s' % (k, r.stderr))
        check('memsight detach --children %d' % t.pid in r.stderr,
              'the detach does not offer --children: %s' % r.stderr)
        check(all(attach_state(k) == 'recording' for k in kids), 'the children stopped')
        r = memsight('detach', '--children', str(t.pid))
        print('detach --children: rc %d\n%s' % (r.returncode, r.stderr.strip()))
        check(r.returncode == 0, 'detach --children failed')
        finals = r.stdout.split()
        check(len(finals) == 2 and all(os.path.exists(f) and '-%d-' % k in f
                                       for f, k in zip(finals, kids)),
              'detach --children: the final snapshots %r' % finals)
        for k in kids:
            check(attach_state(k) == 'detached', 'child %d still records' % k)
        r = detach(t.pid)
        check('still record' not in r.stderr, 'children listed after their detach: %s'
              % r.stderr)
    text, rc, _ = t.finish('quit')
    check(rc == 3, 'at_fork exit status %d' % rc)
    shutil.rmtree(out, ignore_errors=True)


def case_reports():
    base = tempfile.mkdtemp(prefix='ms-live-')
    copy, alias = os.path.join(base, 'at_copy'), os.path.join(base, 'at_alias')
    shutil.copy(TARGET, copy)
    subprocess.run(['strip', '--strip-all', copy], check=True)
    os.symlink(copy, alias)
    out = os.path.join(base, 'out')
    os.mkdir(out)
    t = Target([alias])
    t.cmd('prep 10')
    if check(attach(t.pid, out).returncode == 0, 'attach failed'):
        lk = memsight('leaks', str(t.pid))
        print(lk.stdout[-400:])
        check('no leaks: every tracked block is reachable' not in lk.stdout and
              'no verdict' in lk.stdout, 'a scan of nothing said "no leaks": %s' % lk.stdout)
        t.cmd('work')
        t.cmd('leak')
        lk = memsight('leaks', str(t.pid))
        check(lk.returncode == 0, 'leaks: %s' % lk.stderr)
        snap = lk.stdout.split('snapshot: ', 1)[-1].split()[0] if 'snapshot: ' in lk.stdout else ''
        txt = memsight('report', snap).stdout
        m = [l for l in txt.splitlines() if l.startswith('Threads:')]
        print(m, [l for l in txt.splitlines() if l.startswith('program:')])
        check(m and 'the process runs 3 threads' in m[0], 'threads after attach: %s' % m)
        check('started as at_alias' in txt, 'the report does not name the program as started: %s'
              % txt[:400])
        html = memsight('report', '--format', 'html', snap).stdout
        check('started as' in html and 'at_alias' in html, 'the HTML does not say started as')
        table = html.split('id="leaktable"', 1)[-1].split('</table>', 1)[0]
        check('at_copy+0x' in table, 'the HTML leak table has no module+offset frame')
        check('<li>0x' not in table, 'the HTML leak table shows absolute addresses: %s'
              % table[:600])
        check(detach(t.pid).returncode == 0, 'detach failed')
    t.finish('quit')
    shutil.rmtree(base, ignore_errors=True)


CASES = {'children': case_children, 'reports': case_reports, 'messages': case_messages, 'output': case_output, 'sampled': case_sampled, 'options': case_options, 'mode': case_mode,
         'full': case_full}

if __name__ == '__main__':
    main(CASES, __doc__)
