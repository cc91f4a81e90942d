#!/usr/bin/env python3
"""Programs with another allocator, with their own stack walks, or loading libraries with
RTLD_DEEPBIND, under `memsight run` in every mode: the output and the exit status must be
those of the run without the agent, nothing may hang (a run still going after its limit
is killed with SIGKILL and fails the test), and each run writes one exit snapshot that
reads back whole.

Usage: agent_alloc.py CASE
  jemalloc, tcmalloc, mimalloc  fa_alloc linked with Debian's allocator: its own entry
                                points (mallocx/dallocx, tc_*, mi_*) mixed with malloc and
                                free both ways, page-aligned blocks, threads
  libunwind                     a program whose first libunwind walk maps memory (the
                                agent must not walk from inside that walk)
  deepbind                      a library dlopen'ed with RTLD_DEEPBIND frees, resizes and
                                hands out blocks of the program's (RTLD_NOW and RTLD_LAZY)
  php                           php -n with the pdo and pdo_sqlite extensions (RTLD_DEEPBIND)
  redis                         Debian's redis-server (jemalloc): start, SET/GET, SHUTDOWN
Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_snap  # noqa: E402

MODES = [[], ['-O', 'sample=4096'], ['-O', 'sample=524288'], ['-O', 'leak_check=exit'],
         ['-O', 'unwind=fp'], ['-O', 'unwind=libunwind'], ['-O', 'guard=50']]
LIMIT = 60  # seconds a run may take (several times the slowest run on a loaded machine)
WORK = tempfile.mkdtemp(prefix='ms-agent-alloc-')


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def prog(name):
    return os.path.join(os.environ['MS_PROGRAMS'], name)


def run(cmd, mode):
    """mode None: without the agent. Returns (process, snapshot dir)."""
    out = os.path.join(WORK, 'snaps')
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    full = cmd if mode is None else [os.environ['MEMSIGHT'], 'run', '-q', '-o', out] + mode + ['--'] + cmd
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)
    try:
        p = subprocess.run(full, capture_output=True, timeout=LIMIT, env=env, cwd=WORK)
    except subprocess.TimeoutExpired:
        fail('%s %s: still running after %d s (killed with SIGKILL)' % (cmd[0], ' '.join(mode or []), LIMIT))
    return p, out


def one_snap(out, what):
    files = glob.glob(os.path.join(out, 'memsight-*-exit.msnap'))
    if len(files) != 1:
        fail('%s: expected one exit snapshot, found %r' % (what, os.listdir(out)))
    return agent_snap.read(files[0])  # checks CRCs, END, layouts


def live_bytes(s):
    return sum(st['live_bytes'] for st in s['stacks'].values() if st['kind'] == 'heap')


def every_mode(cmd, check=None):
    base, _ = run(cmd, None)
    if base.returncode != 0:
        fail('%s: without the agent the status is %d (%s)' % (cmd[0], base.returncode, base.stderr[-500:]))
    for mode in MODES:
        what = '%s [%s]' % (os.path.basename(cmd[0]), ' '.join(mode) or 'full')
        p, out = run(cmd, mode)
        if p.returncode != base.returncode:
            fail('%s: status %d under the agent, %d without (stderr: %s)'
                 % (what, p.returncode, base.returncode, p.stderr[-1500:]))
        if p.stdout != base.stdout:
            fail('%s: stdout differs under the agent: %r, not %r' % (what, p.stdout[-300:], base.stdout[-300:]))
        s = one_snap(out, what)
        if check:
            check(what, mode, s, p)
        print('ok %s' % what)


def case_allocator(name):
    def check(what, mode, s, p):
        h = s['health']
        if h.get('allocator_not_libc') != 1:
            fail('%s: the snapshot does not say the allocator is not the C library\'s: %r' % (what, h))
        if '-O' in mode and mode[1] == 'guard=50':
            if b'guard=' not in p.stderr:
                fail('%s: guard pages left out without a word on stderr' % what)
        if not any(m.startswith('sample=') for m in mode):
            # full modes: the 12345-byte block main() keeps is among the live blocks
            if not any(b['size'] == 12345 for b in (s['blocks'] or [])):
                fail('%s: the block kept at exit (12345 bytes) is not among the live blocks' % what)
    every_mode([prog('fa_' + name)], check)


def case_libunwind():
    every_mode([prog('fa_unwind')])


def case_deepbind():
    def check(what, mode, s, p):
        if not s['health'].get('deepbind_modules'):
            fail('%s: no RTLD_DEEPBIND module given the agent\'s functions: %r' % (what, s['health']))
    every_mode([prog('db_main')], check)
    every_mode([prog('db_main'), 'lazy'], check)


def case_php():
    php = shutil.which('php')
    if not php:
        fail('php is not installed (scripts/install-deps.sh installs php-cli and php-sqlite3)')
    code = ('$d = new PDO("sqlite::memory:"); $d->exec("CREATE TABLE t(a, b)");'
            'for ($i = 0; $i < 2000; $i++) $d->exec("INSERT INTO t VALUES($i, \'" . str_repeat("x", $i % 50) . "\')");'
            'echo $d->query("SELECT sum(a), sum(length(b)) FROM t")->fetch(PDO::FETCH_NUM)[0], "\\n";'
            'echo json_encode(array_map("strrev", ["abc", "def"])), "\\n";')
    every_mode([php, '-n', '-d', 'extension=pdo', '-d', 'extension=pdo_sqlite', '-r', code])


def redis_cmd(sock_path, *args):
    """One command in RESP over the unix socket: its reply (a failed test when the server
    closes the connection or is gone)."""
    try:
        return redis_cmd1(sock_path, *args)
    except OSError as e:
        fail('redis-server: %s answered no reply: %s' % (args[0].decode(), e))


def redis_cmd_shutdown(sock_path):
    """SHUTDOWN NOSAVE: the server closes the connection as it ends (no reply)."""
    try:
        redis_cmd1(sock_path, b'SHUTDOWN', b'NOSAVE')
    except OSError:
        pass


def redis_cmd1(sock_path, *args):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(sock_path)
    msg = b'*%d\r\n' % len(args) + b''.join(b'$%d\r\n%s\r\n' % (len(a), a) for a in args)
    s.sendall(msg)
    data = b''
    try:
        while not data.endswith(b'\r\n') or (data.startswith(b'$') and data.count(b'\r\n') < 2):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    return data


def case_redis():
    server = shutil.which('redis-server') or '/usr/bin/redis-server'
    if not os.path.exists(server):
        fail('redis-server is not installed (scripts/install-deps.sh installs it)')
    for mode in ([], ['-O', 'sample=4096']):
        what = 'redis-server [%s]' % (' '.join(mode) or 'full')
        out = os.path.join(WORK, 'snaps')
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        sock_path = os.path.join(WORK, 'redis.sock')
        if os.path.exists(sock_path):
            os.unlink(sock_path)
        cmd = [os.environ['MEMSIGHT'], 'run', '-q', '-o', out] + mode + [
            '--', server, '--port', '0', '--unixsocket', sock_path, '--save', '',
            '--appendonly', 'no', '--dir', WORK, '--daemonize', 'no', '--loglevel', 'warning']
        env = dict(os.environ)
        env.pop('LD_PRELOAD', None)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=WORK)
        try:
            t0 = time.time()
            # the socket's file exists from bind(), before listen(): ready when PING answers
            while True:
                if p.poll() is not None:
                    fail('%s: ended at start with status %d: %s' % (what, p.returncode, p.stderr.read()[-1500:]))
                if time.time() - t0 > LIMIT:
                    fail('%s: no answer on its socket after %d s' % (what, LIMIT))
                try:
                    if os.path.exists(sock_path) and redis_cmd1(sock_path, b'PING') == b'+PONG\r\n':
                        break
                except OSError:
                    pass
                time.sleep(0.05)
            if redis_cmd(sock_path, b'SET', b'memsight', b'value-42') != b'+OK\r\n':
                fail('%s: SET did not answer +OK' % what)
            for i in range(200):
                redis_cmd(sock_path, b'RPUSH', b'list', b'item-%d' % i * (i % 7 + 1))
            got = redis_cmd(sock_path, b'GET', b'memsight')
            if got != b'$8\r\nvalue-42\r\n':
                fail('%s: GET answered %r' % (what, got))
            if redis_cmd(sock_path, b'LLEN', b'list') != b':200\r\n':
                fail('%s: LLEN is not 200' % what)
            redis_cmd_shutdown(sock_path)
            rc = p.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fail('%s: did not end after SHUTDOWN within %d s (killed with SIGKILL)' % (what, LIMIT))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        if rc != 0:
            fail('%s: status %d after SHUTDOWN: %s' % (what, rc, p.stderr.read()[-1500:]))
        s = one_snap(out, what)
        if s['health'].get('allocator_not_libc') != 1:
            fail('%s: the snapshot does not say the allocator is jemalloc, not the C library\'s' % what)
        print('ok %s' % what)


def main():
    if len(sys.argv) != 2:
        fail(__doc__)
    c = sys.argv[1]
    try:
        if c in ('jemalloc', 'tcmalloc', 'mimalloc'):
            case_allocator(c)
        elif c == 'libunwind':
            case_libunwind()
        elif c == 'deepbind':
            case_deepbind()
        elif c == 'php':
            case_php()
        elif c == 'redis':
            case_redis()
        else:
            fail('unknown case %s' % c)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print('PASS %s' % c)


if __name__ == '__main__':
    main()
