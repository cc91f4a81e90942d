#!/usr/bin/env python3
"""fork() while the agent walks the loaded modules (dl_iterate_phdr). glibc's fork does
not reset the loader's lock in the child, so a child forked in the middle of a walk
blocks forever in its first own walk (its exit snapshot). sm_fork_walks has two threads
asking for snapshots without pause while four threads fork 50 children each; a shim
preloaded before the agent slows every walk down so that nearly every fork lands in one
(without the agent's guard, the first runs hang at once). Every run must finish, every
child exit 0 and write its exit snapshot, and the snapshot threads must make progress;
in full mode, sampled mode and with the libunwind unwinder (which walks the modules
itself)."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

AGENT = os.environ['MS_AGENT']
PROGRAMS = os.environ['MS_PROGRAMS']
PROG = os.path.join(PROGRAMS, 'sm_fork_walks')
SHIM = os.path.join(PROGRAMS, 'libslow_walk.so')
FORKS = 50 * 4
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


def run(options):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD='%s:%s' % (SHIM, AGENT),
                   MEMSIGHT_OPTIONS='out=%s%s' % (out, ',' + options if options else ''))
        p = subprocess.Popen([PROG, '50'], env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            stdout, _ = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.communicate()
            fail('%s: sm_fork_walks hung (a child forked inside a walk?)' % (options or 'full'))
            return
        print('%s: %s' % (options or 'full', stdout.strip()))
        m = re.search(r'forks (\d+) bad (\d+) snapshots (\d+)', stdout)
        if p.returncode != 0 or not m:
            fail('%s: exit status %d' % (options, p.returncode))
            return
        if int(m.group(1)) != FORKS or int(m.group(2)) != 0:
            fail('%s: %s' % (options, m.group(0)))
        if int(m.group(3)) == 0:
            fail('%s: no snapshot was written while forking' % options)
        files = sf.snapshots(out)
        children = {f[0] for f in files if f[2] == 'exit'} - {p.pid}
        if len(children) != FORKS:
            fail('%s: %d children wrote an exit snapshot, expected %d'
                 % (options, len(children), FORKS))


run('')
run('sample=4096')
run('unwind=libunwind')
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
