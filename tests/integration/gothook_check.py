#!/usr/bin/env python3
"""memsight_start() and GOT hooks: gh_dlopen (agent dlopen'ed, started with
memsight_start(out=DIR)) and gh_linked (linked with -lmemsight, memsight_start(NULL) with
MEMSIGHT_OPTIONS) allocate known counts and bytes from known functions, including a
library dlopen'ed after the start; the snapshot read through `memsight report --format
json` must hold exactly those live counts under those function names. prestart: the
same with gh_custom, whose own allocator (linked before libc) aborts on a pointer it did
not hand out and counts its live blocks: the blocks from before the start are freed and
reallocated through the agent and must reach it unchanged. (valgrind is no help here:
it replaces the agent's malloc family too, so the agent's heap path would not run.)
python: a real interpreter loads and starts the agent through ctypes (gothook_python.py).
modules: gh_modules makes glibc load modules itself after the start (a gconv module by
iconv_open, NSS modules by getpwnam) and leaves with _exit; run with the agent dlopen'ed
(GOT hooks) and preloaded (the ground truth: every call interposed), each must write its
exit snapshot, and the blocks allocated from UTF-16.so and from the NSS modules must be
the same in both, per stack, allocated and live; the program's own RELRO pages, made
writable by it before the start, must stay writable after the agent patched slots there.
usage: gothook_check.py dlopen|linked|prestart|python|modules
MS_RUNNER: a command the programs run under (qemu-user, tests/platforms.cmake)."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
AGENT = os.environ['MS_AGENT']
PROGRAMS = os.environ['MS_PROGRAMS']
LIB = os.path.join(PROGRAMS, 'libgh_lib.so')
RUNNER = shlex.split(os.environ.get('MS_RUNNER', ''))


def run(mode, out):
    env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
    if mode == 'linked':
        cmd = [os.path.join(PROGRAMS, 'gh_linked'), out, '-', LIB]
        env['MEMSIGHT_OPTIONS'] = 'out=%s' % out
    else:
        prog = 'gh_custom' if mode == 'prestart' else 'gh_dlopen'
        cmd = [os.path.join(PROGRAMS, prog), out, AGENT, LIB]
    return subprocess.run(RUNNER + cmd, env=env, capture_output=True, text=True, timeout=240)


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
        expects, allocs, snap = [], [], None
        for line in p.stdout.splitlines():
            w = line.split()
            if w and w[0] == 'expect':
                expects.append((w[1], w[2], int(w[3]), int(w[4])))
            elif w and w[0] == 'allocated':
                allocs.append((w[1], w[2], int(w[3])))
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
            agg = got.setdefault((fn, st['kind']), [0, 0, 0])
            agg[0] += st['live_blocks']
            agg[1] += st['live_bytes']
            agg[2] += st['allocated_blocks']
            if fn == 'gh_lib_alloc_one' and st['live_blocks']:
                lib_module |= any(os.path.basename(fr.get('module') or '') == 'libgh_lib.so'
                                  for fr in st['frames'])
        for fn, kind, nblk, nbytes in expects:
            have = got.get((fn, kind), [0, 0, 0])[:2]
            print('%s: %s %s: expected %d / %d, report %d / %d' % (mode, fn, kind, nblk, nbytes,
                                                                   have[0], have[1]))
            if have != [nblk, nbytes]:
                errors.append('%s: %s %s: expected %d blocks / %d bytes, report says %d / %d'
                              % (mode, fn, kind, nblk, nbytes, have[0], have[1]))
        for fn, kind, nblk in allocs:
            have = got.get((fn, kind), [0, 0, 0])[2]
            print('%s: %s %s: expected %d allocated, report %d' % (mode, fn, kind, nblk, have))
            if have != nblk:
                errors.append('%s: %s %s: expected %d allocated blocks, report says %d'
                              % (mode, fn, kind, nblk, have))
        if not lib_module:
            errors.append('%s: no stack of gh_lib_alloc_one names libgh_lib.so' % mode)
        health = rep.get('health', {})
        if mode == 'linked':
            # linked before libc: the interposers are in effect, no GOT hook is installed
            if 'got_modules' in health:
                errors.append('linked: GOT hooks were installed: %r' % health)
        else:
            print('%s: got_modules=%s got_slots=%s got_dlopens=%s got_rejected_modules=%s' % (
                mode, health.get('got_modules'), health.get('got_slots'),
                health.get('got_dlopens'), health.get('got_rejected_modules')))
            # the program, libc, the agent itself and the library dlopen'ed after the start
            if health.get('got_modules', 0) < 4 or health.get('got_slots', 0) < 4:
                errors.append('%s: too few modules/slots hooked: %r' % (mode, health))
            if health.get('got_dlopens') != 1 or health.get('got_rejected_modules') != 0:
                errors.append('%s: expected 1 dlopen and no rejected module: %r' % (mode, health))
        if mode == 'prestart' and 'custom allocator:' not in p.stdout:
            errors.append('prestart: the program did not check its own allocator')
        if mode != 'linked':
            # the agent was started late: the pre-start blocks it freed are not its own
            if not any(k[0] == 'gh_lib_alloc_one' for k in got):
                errors.append('dlopen: the dlopen hook did not catch the library')
    return errors


def check_python():
    """A real program: python3 dlopens the agent with ctypes (with and without pymalloc)."""
    errors = []
    py = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gothook_python.py')
    for pymem in ('malloc', 'pymalloc'):
        with tempfile.TemporaryDirectory() as out:
            env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
            env['PYTHONMALLOC'] = pymem
            p = subprocess.run([py, script, AGENT, out], env=env, capture_output=True, text=True,
                               timeout=240)
            print('python3 PYTHONMALLOC=%s: exit %d: %s' % (pymem, p.returncode, p.stdout.strip()))
            words = p.stdout.split()
            if p.returncode != 0 or 'start' not in words or words[words.index('start') + 1] != '0':
                errors.append('python %s: exit %d: %s %s' % (pymem, p.returncode, p.stdout,
                                                            p.stderr[-2000:]))
                continue
            snap = words[-1]
            r = subprocess.run([MEMSIGHT, 'report', snap, '--format', 'json'], capture_output=True,
                               text=True, timeout=120)
            if r.returncode != 0:
                errors.append('python %s: memsight report failed: %s' % (pymem, r.stderr))
                continue
            rep = json.loads(r.stdout)
            t, h = rep['totals'], rep.get('health', {})
            sqlite_live = sum(st['live_blocks'] for st in rep['stacks']
                              if st['kind'] == 'heap' and any(
                                  os.path.basename(f.get('module') or '').startswith('libsqlite3')
                                  for f in st['frames']))
            print('python %s: heap live %d bytes in %d blocks, libsqlite3 stacks %d live blocks, '
                  'got_modules=%s got_dlopens=%s' % (pymem, t['heap_live_bytes'],
                                                     t['heap_live_blocks'], sqlite_live,
                                                     h.get('got_modules'), h.get('got_dlopens')))
            if t['heap_live_bytes'] < 300 * 5000 or t['heap_live_blocks'] < 300:
                errors.append('python %s: the 300 buffers of 5000 bytes are not all live: %r'
                              % (pymem, t))
            if sqlite_live == 0:
                errors.append('python %s: nothing allocated by libsqlite3 (loaded after the start) '
                              'was seen' % pymem)
            if not h.get('got_dlopens') or h.get('got_rejected_modules') != 0:
                errors.append('python %s: health %r' % (pymem, h))
    return errors


def module_counts(rep):
    """(module, innermost function) -> [allocated, live] of the heap stacks that pass
    through UTF-16.so or an NSS module. Stacks with a dynamic-linker frame are left out:
    the loader's own allocations reach the agent only when it is preloaded."""
    out = {}
    for st in rep['stacks']:
        mods = [os.path.basename(f.get('module') or '') for f in st['frames']]
        if st['kind'] != 'heap' or any(m.startswith('ld-linux') for m in mods):
            continue
        hit = [m for m in mods if m == 'UTF-16.so' or m.startswith('libnss_')]
        if not hit:
            continue
        key = (hit[0], st['frames'][0].get('function') or '?')
        agg = out.setdefault(key, [0, 0])
        agg[0] += st['allocated_blocks']
        agg[1] += st['live_blocks']
    return out


def check_modules():
    errors, counts = [], {}
    prog = os.path.join(PROGRAMS, 'gh_modules')
    for how in ('preload', 'dlopen'):
        with tempfile.TemporaryDirectory() as out:
            env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
            if how == 'preload':
                env['LD_PRELOAD'] = AGENT
                env['MEMSIGHT_OPTIONS'] = 'out=%s' % out
            p = subprocess.run(RUNNER + [prog, out, AGENT], env=env, capture_output=True, text=True,
                               timeout=240)
            print('%s: exit %d: %s' % (how, p.returncode, p.stdout.strip().replace('\n', '; ')))
            if p.returncode != 0:
                errors.append('%s: exit %d: %s' % (how, p.returncode, p.stderr.strip()[-2000:]))
                continue
            words = {l.split()[0]: l.split() for l in p.stdout.splitlines() if l.split()}
            cycles = int(words['cycles'][1])
            # the program opened its own RELRO pages before the start: the agent patched
            # slots there (it checked they stayed writable, and wrote to them)
            if how == 'dlopen' and int(words['relro'][3].rstrip(',')) < 1:
                errors.append('dlopen: no slot in the program\'s RELRO pages was patched: '
                              'the writable-RELRO check tested nothing')
            snaps = sorted(f for f in os.listdir(out) if f.endswith('-exit.msnap'))
            if len(snaps) != 1:
                errors.append('%s: the program left with _exit: expected one exit snapshot, '
                              'found %r' % (how, os.listdir(out)))
                continue
            r = subprocess.run([MEMSIGHT, 'report', os.path.join(out, snaps[0]), '--format', 'json'],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                errors.append('%s: memsight report failed: %s' % (how, r.stderr.strip()))
                continue
            rep = json.loads(r.stdout)
            counts[how] = module_counts(rep)
            utf16 = [v for k, v in counts[how].items() if k[0] == 'UTF-16.so']
            alloc = sum(v[0] for v in utf16)
            live = sum(v[1] for v in utf16)
            print('%s: UTF-16.so allocated %d live %d (expected %d / 1); NSS stacks %d; health %r'
                  % (how, alloc, live, cycles + 1, sum(1 for k in counts[how] if k[0] != 'UTF-16.so'),
                     {k: v for k, v in rep.get('health', {}).items() if k.startswith('got_')}))
            # the first iconv_open loads the module and its init allocates at once
            if (alloc, live) != (cycles + 1, 1):
                errors.append('%s: UTF-16.so: expected %d allocated / 1 live, got %d / %d'
                              % (how, cycles + 1, alloc, live))
            if how == 'dlopen' and not rep.get('health', {}).get('got_symbols'):
                errors.append('dlopen: no definition redirected: %r' % rep.get('health'))
    if len(counts) == 2 and counts['preload'] != counts['dlopen']:
        for k in sorted(set(counts['preload']) | set(counts['dlopen'])):
            a, b = counts['preload'].get(k), counts['dlopen'].get(k)
            if a != b:
                errors.append('module stack %s %s: preloaded %r, GOT hooks %r' % (k[0], k[1], a, b))
    return errors


def main():
    mode = sys.argv[1]
    if mode == 'modules':
        errors = check_modules()
    else:
        errors = check_python() if mode == 'python' else check(mode)
    for e in errors:
        print('FAIL:', e)
    sys.exit(1 if errors else 0)


if __name__ == '__main__':
    main()
