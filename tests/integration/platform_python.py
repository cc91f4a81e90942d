#!/usr/bin/env python3
"""A real AArch64 program under the agent: Debian's CPython (libpython3.11:arm64, behind
CPython's own one-line main, tests/programs/py_main.c) runs a script under qemu-user with
the AArch64 agent preloaded. Its output and exit status must be those of the same run
without the agent, and the exit snapshot, read on x86-64, must hold the interpreter's
allocations with stacks through libpython's functions, without dropped records.

Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT, MS_RUNNER (tests/platforms.cmake)."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

SCRIPT = r'''
import json, collections
d = {}
for i in range(20000):
    d['k%d' % i] = [i, str(i) * 3, {'v': i}]
keep = [d['k%d' % i] for i in range(0, 20000, 7)]
c = collections.Counter(len(v[1]) for v in d.values())
del d
print(len(keep), sorted(c.items())[:3], json.dumps({'n': len(keep)}))
'''


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def main():
    exe = os.path.join(os.environ['MS_PROGRAMS'], 'python3_arm64')
    runner = shlex.split(os.environ.get('MS_RUNNER', ''))
    cmd = runner + [exe, '-S', '-c', SCRIPT]
    base_env = dict(os.environ, PYTHONMALLOC='malloc', PYTHONHASHSEED='0')
    base_env.pop('LD_PRELOAD', None)
    plain = subprocess.run(cmd, env=base_env, capture_output=True, text=True, timeout=300)
    if plain.returncode != 0:
        fail('python3 (arm64) without the agent failed (%d): %s' % (plain.returncode, plain.stderr))
    with tempfile.TemporaryDirectory() as d:
        env = dict(base_env, LD_PRELOAD=os.environ['MS_AGENT'], MEMSIGHT_OPTIONS='out=' + d)
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if (run.returncode, run.stdout) != (plain.returncode, plain.stdout):
            fail('under the agent: status %d, output %r; without: %d, %r' % (
                run.returncode, run.stdout, plain.returncode, plain.stdout))
        snaps = [f for f in os.listdir(d) if f.endswith('-exit.msnap')]
        if len(snaps) != 1:
            fail('expected one exit snapshot: %r' % os.listdir(d))
        p = subprocess.run([os.environ['MEMSIGHT'], 'report', os.path.join(d, snaps[0]),
                            '--format', 'json'], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            fail('memsight report failed: %s' % p.stderr)
        rep = json.loads(p.stdout)
    t = rep['totals']
    h = rep.get('health', {})
    allocs = sum(st['allocated_blocks'] for st in rep['stacks'])
    py_funcs = set()
    for st in rep['stacks']:
        for fr in st['frames']:
            if 'libpython3.11' in (fr.get('module') or '') and fr.get('function'):
                py_funcs.add(fr['function'])
    if rep.get('meta', {}).get('arch') not in (None, 'aarch64'):
        fail('META arch %r' % rep['meta'].get('arch'))
    if allocs < 60000:
        fail('only %d allocations recorded for 20000 dicts of lists' % allocs)
    if not {'PyList_New', 'PyDict_New', '_PyObject_GC_New', 'PyUnicode_New'} & py_funcs:
        fail('no stack through libpython allocation functions: %s' % sorted(py_funcs)[:20])
    for k in ('dropped_blocks', 'dropped_stacks'):
        if h.get(k):
            fail('health %s = %d' % (k, h[k]))
    fails = h.get('unwind_failures', 0)
    if fails * 100 > allocs:
        fail('%d unwind failures in %d allocations' % (fails, allocs))
    print('ok python3 (arm64): output unchanged, %d allocations, %d live blocks, %d libpython '
          'functions in stacks, %d unwind failures' % (allocs, t['live_blocks'], len(py_funcs), fails))


if __name__ == '__main__':
    main()
