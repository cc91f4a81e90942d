#!/usr/bin/env python3
"""A qemu-user sysroot that mixes two builds of glibc: qemu's -L prefix gives the program
the cross toolchain's loader (ROOT/lib/ld-linux-aarch64.so.1) while the loader's cache
names the distribution's libc.so.6 (/lib/aarch64-linux-gnu). The C library then reads the
loader's shared state at the offsets of its own build, and pthread_create walks its
thread-stack cache for ever. A program that starts no thread runs; under the agent, which
starts a control thread of its own under qemu-user, it must run too: same output and
status as alone, an exit snapshot, and the agent says once on stderr that it starts no
thread and why (both builds' banners), and HLTH libc_missing has bit 0x4. When the two
files are of one build (the banners agree) the agent must start its thread as usual and
say nothing.

Usage: platform_mixed_sysroot.py ROOT PROGRAM
Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT (tests/platforms.cmake); MS_QEMU."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


root, prog = sys.argv[1], sys.argv[2]
exe = os.path.join(os.environ['MS_PROGRAMS'], prog)
qemu = [os.environ['MS_QEMU'], '-L', root]


def banner(path, prefix):
    """'(PKGVERSION) stable release version X.Y' of glibc's banner in path, or None."""
    with open(path, 'rb') as f:
        data = f.read()
    m = re.search(re.escape(prefix.encode()) + rb'([^\0\n]*? release version [0-9]+(?:\.[0-9]+)*)',
                  data)
    return m.group(1).decode() if m else None


ld = banner(os.path.join(root, 'lib', 'ld-linux-aarch64.so.1'), 'ld.so ')
libc = banner('/lib/aarch64-linux-gnu/libc.so.6', 'GNU C Library ')
if not ld or not libc:
    fail('no glibc banner in the loader (%r) or the C library (%r)' % (ld, libc))
mixed = ld != libc
print('loader: %s\nlibc:   %s\n%s' % (ld, libc, 'two builds' if mixed else 'one build'))

# the program alone (in a directory of its own: the agent writes there, see below)
alone_dir = tempfile.mkdtemp(prefix='ms-mixed-alone-')
env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
start = time.monotonic()
alone = subprocess.run(qemu + [exe], env=env, cwd=alone_dir, capture_output=True, text=True,
                       timeout=120)
if alone.returncode != 0:
    fail('the program alone exited with %d: %s' % (alone.returncode, alone.stderr))
print('alone: %.1f s' % (time.monotonic() - start))

# under the agent; the snapshot goes to the working directory: qemu's -L prefix would
# take an absolute out= path's "/" for ROOT
out = tempfile.mkdtemp(prefix='ms-mixed-agent-')
env.update(LD_PRELOAD=os.environ['MS_AGENT'], MEMSIGHT_OPTIONS='out=.')
start = time.monotonic()
try:
    p = subprocess.run(qemu + [exe], env=env, cwd=out, capture_output=True, text=True,
                       timeout=60)  # killed (SIGKILL) when it spins
except subprocess.TimeoutExpired:
    fail('under the agent the program did not end within 60 s (spinning in pthread_create)')
print('under the agent: %.1f s' % (time.monotonic() - start))
if p.returncode != alone.returncode or p.stdout != alone.stdout:
    fail('under the agent: status %d, output %s the program\'s alone' %
         (p.returncode, 'the same as' if p.stdout == alone.stdout else 'unlike'))
note = ('the dynamic loader and the C library come from two different glibc builds '
        '(ld.so %s / libc %s), where a new thread never starts: the agent starts no thread of '
        'its own' % (ld, libc))
if mixed and p.stderr.count(note) != 1:
    fail('stderr must say once %r: %r' % (note, p.stderr))
if not mixed and 'glibc builds' in p.stderr:
    fail('one build, but the agent says two: %r' % p.stderr)
snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
if len(snaps) != 1:
    fail('expected one exit snapshot, found %r' % os.listdir(out))
r = subprocess.run([os.environ['MEMSIGHT'], 'report', '--format', 'json',
                    os.path.join(out, snaps[0])], capture_output=True, text=True, timeout=120)
if r.returncode != 0:
    fail('report: %s' % r.stderr)
health = json.loads(r.stdout)['health']
missing = int(health.get('libc_missing', 0))
if bool(missing & 4) != mixed:
    fail('HLTH libc_missing %d, bit 0x4 expected %s' % (missing, 'set' if mixed else 'clear'))
print('ok')
