#!/usr/bin/env python3
"""The quick JVM cell of bench/matrix.sh: `java` (OpenJDK 17: its own signal handlers,
GC and compiler threads, a heap it reserves and commits itself) running a short
allocation-heavy class, without the agent, under `memsight run` in full mode and in
sampled mode (--sample 4096). Each run must print the total computed here and exit 0 as
without the agent, say nothing of the agent on stderr, and write one exit snapshot that
reads back and holds the 64 MiB of direct buffers the program keeps until exit (native
memory the JVM takes with malloc).

Environment: MEMSIGHT, MS_SOURCE_DIR (set by ms_integration_test)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
SRC = os.path.join(os.environ['MS_SOURCE_DIR'], 'tests', 'programs', 'JvmChurn.java')
JAVA = shutil.which('java')
JAVAC = shutil.which('javac')
KEPT = 64 << 20  # 2 threads x 32 direct buffers of 1 MiB, live at exit
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


def expected():
    acc = 0
    for tid in range(2):
        for rnd in range(32):
            for i in range(1000):
                acc += i * 7 + tid + len('t%dr%di%d' % (tid, rnd, i))
            acc += 256 * (rnd + tid)  # one byte per 4 KiB page of each buffer
    return 'jvm churn %d\n' % acc


def main():
    if not JAVA or not JAVAC:
        print('FAIL: java and javac are needed (openjdk-17-jdk-headless)')
        return 1
    tmp = tempfile.mkdtemp(prefix='ms-matrix-jvm-')
    try:
        subprocess.run([JAVAC, '-d', tmp, SRC], check=True, timeout=300)
        cmd = [JAVA, '-Xmx128m', '-XX:MaxDirectMemorySize=256m', '-cp', tmp, 'JvmChurn']
        env = dict(os.environ)
        env.pop('LD_PRELOAD', None)
        env.pop('MEMSIGHT_OPTIONS', None)
        base = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        want = expected()
        if base.returncode != 0 or base.stdout != want:
            print('FAIL: without the agent: exit %d, %r (expected %r): %s'
                  % (base.returncode, base.stdout, want, base.stderr[-500:]))
            return 1
        for mode, extra in (('full', []), ('sampled', ['--sample', '4096'])):
            out = os.path.join(tmp, 'snaps-' + mode)
            try:
                p = subprocess.run([MEMSIGHT, 'run', '-q', '-o', out] + extra + ['--'] + cmd,
                                   capture_output=True, text=True, timeout=300, env=env)
            except subprocess.TimeoutExpired:
                errors.append('%s: still running after 300 s' % mode)
                continue
            check(p.returncode == base.returncode,
                  '%s: exit %d, without the agent %d: %s' % (mode, p.returncode, base.returncode,
                                                           p.stderr[-800:]))
            check(p.stdout == want, '%s: output %r, expected %r' % (mode, p.stdout, want))
            said = [l for l in p.stderr.splitlines() if 'memsight' in l.lower()]
            check(not said, '%s: the agent wrote on stderr: %r' % (mode, said[:3]))
            snaps = glob.glob(os.path.join(out, '*-exit.msnap'))
            check(len(snaps) == 1, '%s: expected one exit snapshot, found %r'
                  % (mode, os.listdir(out) if os.path.isdir(out) else 'no directory'))
            if len(snaps) != 1:
                continue
            r = subprocess.run([MEMSIGHT, 'report', '--no-symbols', '--format', 'json', '-n', '1',
                                snaps[0]], capture_output=True, text=True, timeout=120)
            check(r.returncode == 0, '%s: memsight report exited %d: %s'
                  % (mode, r.returncode, r.stderr.strip()))
            if r.returncode != 0:
                continue
            rep = json.loads(r.stdout)
            t = rep['totals']
            check(rep['sampled'] == (mode == 'sampled'), '%s: sampled is %r' % (mode, rep['sampled']))
            check(rep['meta'].get('pid') and rep['meta'].get('reason') == 'exit',
                  '%s: meta %r' % (mode, rep['meta']))
            # full mode records every block: at least the buffers; sampled mode estimates,
            # and a 1 MiB block is sampled at 4 KiB with certainty
            floor = KEPT if mode == 'full' else KEPT * 9 // 10
            check(t['heap_live_bytes'] >= floor,
                  '%s: heap live at exit %d bytes, the program keeps %d in direct buffers'
                  % (mode, t['heap_live_bytes'], KEPT))
            check(t['heap_live_bytes'] < 4 * KEPT,
                  '%s: heap live at exit %d bytes: far more than the JVM holds' % (mode, t['heap_live_bytes']))
            lost = {k: v for k, v in rep['health'].items() if k.startswith('dropped') and v}
            check(not lost, '%s: records lost: %r' % (mode, lost))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if errors:
        for e in errors:
            print('FAIL: ' + e)
        return 1
    print('ok: java without the agent, in full and in sampled mode: the same output and exit, '
          'one snapshot each with the kept direct buffers')
    return 0


if __name__ == '__main__':
    sys.exit(main())
