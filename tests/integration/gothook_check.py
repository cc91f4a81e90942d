#!/usr/bin/env python3
"""memsight_start() and GOT hooks: gh_dlopen (agent dlopen'ed, started with
memsight_start(out=DIR)) and gh_linked (linked with -lmemsight, memsight_start(NULL) with
MEMSIGHT_OPTIONS) allocate known counts and bytes from known functions, including a
library dlopen'ed after the start; the snapshot read through `memsight report --format
json` must hold exactly those live counts under those function names.
usage: gothook_check.py dlopen|linked|prestart"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
AGENT = os.environ['MS_AGENT']
PROGRAMS = os.environ['MS_PROGRAMS']
LIB = os.path.join(PROGRAMS, 'libgh_lib.so')


def run(mode, out, valgrind=False):
    env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
    if mode == 'linked':
        cmd = [os.path.join(PROGRAMS, 'gh_linked'), out, '-', LIB]
        env['MEMSIGHT_OPTIONS'] = 'out=%s' % out
    else:
        cmd = [os.path.join(PROGRAMS, 'gh_dlopen'), out, AGENT, LIB]
    if valgrind:
        cmd = ['valgrind', '-q', '--error-exitcode=9', '--leak-check=no'] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    return p


def innermost_gh(frames):
    for fr in frames:
        fn = fr.get('function') or ''
        if fn.startswith('gh_') and fn not in ('gh_keep_add',):
            return fn
    return None


def check(mode):
    errors = []
    with tempfile.TemporaryDirectory() as out:
        p = run(mode, out)
        print(p.stdout, end='')
        if p.returncode != 0:
            return ['%s: exit %d: %s' % (mode, p.returncode, p.stderr.strip())]
        expects, snap = [], None
        for line in p.stdout.splitlines():
            w = line.split()
            if w and w[0] == 'expect':
                expects.append((w[1], w[2], int(w[3]), int(w[4])))
            elif w and w[0] == 'snapshot':
                snap = w[1]
        if not snap or not os.path.isfile(snap):
            return ['%s: no snapshot printed or file missing: %r' % (mode, snap)]
        if os.path.dirname(os.path.realpath(snap)) != os.path.realpath(out):
            errors.append('%s: snapshot %s is not in out=%s' % (mode, snap, out))
        names = {e[0] for e in expects}
        for must in ('gh_malloc_site', 'gh_lib_alloc_one', 'gh_mmap_site'):
            if must not in names:
                errors.append('%s: the program printed no expectation for %s' % (mode, must))
        r = subprocess.run([MEMSIGHT, 'report', snap, '--format', 'json'], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            return errors + ['%s: memsight report failed: %s' % (mode, r.stderr.strip())]
        rep = json.loads(r.stdout)
        got = {}
        lib_module = False
        for st in rep['stacks']:
            fn = innermost_gh(st['frames'])
            if fn is None:
                continue
            agg = got.setdefault((fn, st['kind']), [0, 0])
            agg[0] += st['live_blocks']
            agg[1] += st['live_bytes']
            if fn == 'gh_lib_alloc_one' and st['live_blocks']:
                lib_module |= any(os.path.basename(fr.get('module') or '') == 'libgh_lib.so'
                                  for fr in st['frames'])
        for fn, kind, nblk, nbytes in expects:
            have = got.get((fn, kind), [0, 0])
            print('%s: %s %s: expected %d / %d, report %d / %d' % (mode, fn, kind, nblk, nbytes,
                                                                   have[0], have[1]))
            if have != [nblk, nbytes]:
                errors.append('%s: %s %s: expected %d blocks / %d bytes, report says %d / %d'
                              % (mode, fn, kind, nblk, nbytes, have[0], have[1]))
        if not lib_module:
            errors.append('%s: no stack of gh_lib_alloc_one names libgh_lib.so' % mode)
        if mode == 'dlopen':
            # the agent was started late: the pre-start blocks it freed are not its own
            if not any(k[0] == 'gh_lib_alloc_one' for k in got):
                errors.append('dlopen: the dlopen hook did not catch the library')
    return errors


def check_prestart():
    """Frees and reallocs of blocks from before the start, under valgrind when present
    (the program checks contents and usable sizes itself; valgrind adds invalid frees)."""
    errors = []
    with tempfile.TemporaryDirectory() as out:
        vg = shutil.which('valgrind') is not None
        p = run('dlopen', out, valgrind=vg)
        print('prestart under %s: exit %d' % ('valgrind' if vg else 'plain run', p.returncode))
        if p.returncode != 0:
            errors.append('prestart: exit %d: %s' % (p.returncode, p.stderr.strip()[-3000:]))
    return errors


def main():
    mode = sys.argv[1]
    errors = check_prestart() if mode == 'prestart' else check(mode)
    for e in errors:
        print('FAIL:', e)
    sys.exit(1 if errors else 0)


if __name__ == '__main__':
    main()
