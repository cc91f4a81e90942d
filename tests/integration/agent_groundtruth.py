#!/usr/bin/env python3
"""Ground-truth test: runs a tests/programs/gt_* program under the agent and checks that
the exit snapshot holds exactly the live blocks and bytes the program says it keeps, per
calling function, and that expected caller chains appear in the stacks.

Two independent readings must agree with the program: the agent's raw snapshot (read
by agent_snap.py, with `nm` for names) and `memsight report FILE --format json` (the
JSON contract, symbolized by libdw).

Usage: agent_groundtruth.py PROGRAM [--unwinder=NAME] [--note=TEXT] [MEMSIGHT_OPTIONS extra...]
--unwinder: the unwinder META must name (an option must not fall back silently); --note:
text META option_errors and the program's stderr must hold (an option this build
cannot honour, said once).
Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT (set by ms_integration_test); MS_RUNNER, a
command the program runs under (qemu-user for another architecture, tests/platforms.cmake)."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_snap  # noqa: E402


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def innermost_exe_function(snap, stack, exe):
    """Name of the innermost frame that lies in the program itself."""
    for pc in stack['pcs']:
        for m in snap['modules']:
            if os.path.realpath(m['path']) != exe:
                continue
            for vaddr, memsz, _o, flags in m['segs']:
                lo = m['bias'] + vaddr
                if flags & 1 and lo <= pc - 1 < lo + memsz:
                    return agent_snap.symbolize(snap, pc)
    return None


def run(prog, extra):
    exe = os.path.realpath(os.path.join(os.environ['MS_PROGRAMS'], prog))
    out = tempfile.mkdtemp(prefix='ms-agent-gt-')
    env = dict(os.environ)
    env['LD_PRELOAD'] = os.environ['MS_AGENT']
    env['MEMSIGHT_OPTIONS'] = ','.join(['out=' + out] + extra)
    runner = shlex.split(os.environ.get('MS_RUNNER', ''))
    p = subprocess.run(runner + [exe], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail('%s exited with %d: %s' % (prog, p.returncode, p.stderr))
    run.stderr = p.stderr
    # the pid is in the snapshot name; the program is the only writer in this directory
    snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(snaps) != 1:
        fail('expected one exit snapshot in %s, found %r' % (out, os.listdir(out)))
    path = os.path.join(out, snaps[0])
    snap = agent_snap.read(path)
    if snap['meta'].get('exe') != exe:
        fail('META exe %r != %r' % (snap['meta'].get('exe'), exe))
    if not snaps[0].startswith('memsight-%s-0000-exit' % snap['meta']['pid']):
        fail('file name %s does not carry pid %s' % (snaps[0], snap['meta']['pid']))
    return exe, p.stdout, snap, path


def check(prog, args):
    want = {a[2:].split('=', 1)[0]: a.split('=', 1)[1] for a in args if a.startswith('--')}
    extra = [a for a in args if not a.startswith('--')]
    exe, stdout, snap, path = run(prog, extra)
    if 'unwinder' in want and snap['meta'].get('unwinder') != want['unwinder']:
        fail('META unwinder %r, expected %r' % (snap['meta'].get('unwinder'), want['unwinder']))
    if 'note' in want:
        if want['note'] not in (snap['meta'].get('option_errors') or ''):
            fail('META option_errors %r lacks %r' % (snap['meta'].get('option_errors'), want['note']))
        if run.stderr.count(want['note']) != 1:
            fail('stderr must say %r once: %r' % (want['note'], run.stderr))
        if not snap['health'].get('bad_options'):
            fail('HLTH bad_options not counted: %r' % snap['health'])
    expects = [l.split() for l in stdout.splitlines() if l.startswith('expect ')]
    allocs = [l.split() for l in stdout.splitlines() if l.startswith('allocs ')]
    chains = [l.split()[1:] for l in stdout.splitlines() if l.startswith('chain ')]
    frames = [l.split() for l in stdout.splitlines() if l.startswith('frame ')]
    if not expects:
        fail('program printed no expectations')
    by_func = {}
    for st in snap['stacks'].values():
        f = innermost_exe_function(snap, st, exe)
        key = (f, st['kind'])
        agg = by_func.setdefault(key, {'live_blocks': 0, 'live_bytes': 0, 'ids': set(),
                                       'alloc_blocks': 0, 'alloc_bytes': 0})
        for k in ('live_blocks', 'live_bytes', 'alloc_blocks', 'alloc_bytes'):
            agg[k] += st[k]
        agg['ids'].add(st['id'])
    blocks = snap['blocks'] or []
    # blocks=0: no BLKS; the per-stack live counters then come from a pass of their own
    with_blks = 'blocks=0' not in extra
    if not with_blks and snap['blocks']:
        fail('blocks=0 but the snapshot has a BLKS chunk')
    errors = []
    for _, func, kind, nblk, nbytes in expects:
        got = by_func.get((func, kind), {'live_blocks': 0, 'live_bytes': 0, 'ids': set()})
        if (got['live_blocks'], got['live_bytes']) != (int(nblk), int(nbytes)):
            errors.append('%s %s: expected %s blocks / %s bytes, agent says %d / %d'
                          % (func, kind, nblk, nbytes, got['live_blocks'], got['live_bytes']))
        # the BLKS chunk must agree with the per-stack counters
        bl = [b for b in blocks if b['stack_id'] in got['ids'] and b['kind'] == kind]
        if with_blks and (len(bl), sum(b['size'] for b in bl)) != (int(nblk), int(nbytes)):
            errors.append('%s %s: BLKS holds %d blocks / %d bytes, expected %s / %s'
                          % (func, kind, len(bl), sum(b['size'] for b in bl), nblk, nbytes))
        if int(nblk) and int(nbytes) and int(nblk) > 0 and not got['ids'] and (func, kind) not in by_func:
            errors.append('%s %s: no stack found' % (func, kind))
    for _, func, kind, nblk, nbytes in allocs:
        got = by_func.get((func, kind), {'alloc_blocks': 0, 'alloc_bytes': 0})
        if (got['alloc_blocks'], got['alloc_bytes']) != (int(nblk), int(nbytes)):
            errors.append('%s %s: expected %s allocations / %s bytes in all, agent says %d / %d'
                          % (func, kind, nblk, nbytes, got['alloc_blocks'], got['alloc_bytes']))
    for _, func, kind, nblk, nbytes in frames:
        got = [0, 0]
        for st in snap['stacks'].values():
            if st['kind'] == kind and func in agent_snap.frames(snap, st):
                got[0] += st['live_blocks']
                got[1] += st['live_bytes']
        if got != [int(nblk), int(nbytes)]:
            errors.append('stacks through %s (%s): expected %s blocks / %s bytes, agent says %d / %d'
                          % (func, kind, nblk, nbytes, got[0], got[1]))
    for chain in chains:
        ok = False
        for st in snap['stacks'].values():
            names = agent_snap.frames(snap, st)
            idx = [names.index(c) if c in names else -1 for c in chain]
            if all(i >= 0 for i in idx) and idx == sorted(idx):
                ok = True
                break
        if not ok:
            errors.append('no stack holds the chain %s' % ' -> '.join(chain))
    agent_frames = [n for st in snap['stacks'].values() for n in agent_snap.frames(snap, st)
                    if n and n.startswith('ms_')]
    if agent_frames:
        errors.append('agent frames in stacks: %s' % sorted(set(agent_frames)))
    for k in ('dropped_blocks', 'dropped_stacks', 'dropped_regions'):
        if snap['health'].get(k):
            errors.append('health %s = %d' % (k, snap['health'][k]))
    errors += check_json(path, exe, expects, chains)
    if errors:
        print('snapshot: %s (unwinder %s)' % (path, snap['meta'].get('unwinder')))
        fail('\n  '.join([prog] + errors))
    print('ok %s %s: %d expectations, %d frames, %d chains, unwinder %s' % (
        prog, ','.join(extra), len(expects), len(frames), len(chains), snap['meta'].get('unwinder')))


def check_json(path, exe, expects, chains):
    """The same expectations through `memsight report --format json`."""
    memsight = os.environ.get('MEMSIGHT')
    if not memsight or not os.path.exists(memsight):
        return ['MEMSIGHT is not set: cannot check the JSON report']
    p = subprocess.run([memsight, 'report', path, '--format', 'json'], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        return ['memsight report failed (%d): %s' % (p.returncode, p.stderr.strip())]
    rep = json.loads(p.stdout)
    errors = []
    by_func = {}
    for st in rep['stacks']:
        func = None
        for fr in st['frames']:  # innermost first; inlined frames come before their caller
            if fr.get('inlined'):
                continue  # the expectations name the functions that hold the call
            if fr.get('module') and os.path.realpath(fr['module']) == exe and fr.get('function'):
                func = fr['function']
                break
        agg = by_func.setdefault((func, st['kind']), [0, 0])
        agg[0] += st['live_blocks']
        agg[1] += st['live_bytes']
    for _, func, kind, nblk, nbytes in expects:
        got = by_func.get((func, kind), [0, 0])
        if got != [int(nblk), int(nbytes)]:
            errors.append('json report: %s %s: expected %s / %s, report says %d / %d'
                          % (func, kind, nblk, nbytes, got[0], got[1]))
    for chain in chains:
        if not any(all(c in [f.get('function') for f in st['frames']] for c in chain)
                   for st in rep['stacks']):
            errors.append('json report: no stack holds %s' % ' -> '.join(chain))
    t = rep['totals']
    if t['live_blocks'] != t['heap_live_blocks'] + t['mmap_live_blocks'] + t.get('stack_live_blocks', 0):
        errors.append('json report: totals do not add up: %r' % t)
    return errors


if __name__ == '__main__':
    check(sys.argv[1], sys.argv[2:])
