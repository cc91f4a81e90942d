#!/usr/bin/env python3
"""Reserved address space (kind reserved): `memsight run` on a program that reserves with
PROT_NONE and commits pieces, then `memsight report` in JSON, text and collapsed form.

  reserve_check.py program PROG   PROG prints "expect FUNC KIND BLOCKS BYTES" and
                                  "total KIND BLOCKS BYTES"; all must match exactly
  reserve_check.py java           `java -version`: the JVM reserves gigabytes and commits
                                  little; live mmap bytes must be far below the reserved

Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


def memsight(*args):
    p = subprocess.run([MEMSIGHT] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        print('FAIL: memsight %s exited %d: %s' % (' '.join(map(str, args)), p.returncode,
                                                    p.stderr.strip()))
        sys.exit(1)
    return p.stdout


def run(cmd, tmp):
    p = subprocess.run([MEMSIGHT, 'run', '-o', tmp, '--'] + cmd, capture_output=True,
                       text=True, timeout=180)
    if p.returncode != 0:
        print('FAIL: %s under memsight run exited %d: %s' % (cmd, p.returncode, p.stderr))
        sys.exit(1)
    snaps = glob.glob(os.path.join(tmp, '*-exit.msnap'))
    if len(snaps) != 1:
        print('FAIL: expected one exit snapshot, found %r' % os.listdir(tmp))
        sys.exit(1)
    return p.stdout, p.stderr, snaps[0]


def common(rep, summary, path):
    """What holds for every snapshot: totals exclude reserved, counters are consistent,
    reserved stacks come after the others, text and exit summary say what reserved is."""
    t = rep['totals']
    for k in ('live_bytes', 'live_blocks', 'allocated_bytes', 'freed_bytes'):
        parts = sum(t['%s_%s' % (kind, k)] for kind in ('heap', 'mmap', 'stack'))
        check(t[k] == parts, 'totals %s = %d, heap+mmap+stack = %d (reserved must stay out)'
              % (k, t[k], parts))
    res = [s for s in rep['stacks'] if s['kind'] == 'reserved']
    check(sum(s['live_bytes'] for s in res) == t['reserved_live_bytes'], 'reserved stacks != total')
    check(sum(s['live_blocks'] for s in res) == t['reserved_live_blocks'], 'reserved blocks != total')
    for s in rep['stacks']:
        check(s['live_bytes'] == s['allocated_bytes'] - s['freed_bytes'] and
              s['live_blocks'] == s['allocated_blocks'] - s['freed_blocks'],
              'stack %d (%s): live != allocated - freed: %r' % (s['id'], s['kind'], s))
    kinds = [s['kind'] == 'reserved' for s in rep['stacks']]
    check(kinds == sorted(kinds), 'reserved stacks are not after the others')
    # exporters built on the stack aggregate count memory only
    col = memsight('report', path, '--format', 'collapsed')
    total = sum(int(l.rsplit(' ', 1)[1]) for l in col.splitlines() if l.strip())
    check(total == t['live_bytes'], 'collapsed stacks sum to %d, live bytes %d' % (total, t['live_bytes']))
    text = memsight('report', path)
    check('(address space, not memory)' in text and 'Reserved:' in text,
          'text report has no reserved line')
    check('memsight: reserved:' in summary and '(address space, not memory)' in summary,
          'exit summary has no reserved line: %s' % summary[-2000:])


def innermost_exe_function(st, exe):
    for fr in st['frames']:
        if fr.get('inlined'):
            continue
        if fr.get('module') and os.path.realpath(fr['module']) == exe and fr.get('function'):
            return fr['function']
    return None


def program(prog, tmp):
    exe = os.path.realpath(os.path.join(os.environ['MS_PROGRAMS'], prog))
    out, err, path = run([exe], tmp)
    rep = json.loads(memsight('report', path, '--format', 'json'))
    common(rep, err, path)
    t = rep['totals']
    lines = [l.split(None, 1) if l.startswith('health ') else l.split()
             for l in out.splitlines()]
    totals = [l for l in lines if l and l[0] == 'total']
    expects = [l for l in lines if l and l[0] == 'expect']
    check(len(totals) == 2 and len(expects) >= 5, 'program printed %r' % out)
    for _, cond in [l for l in lines if l and l[0] == 'health']:
        name, limit = cond.split('<=')
        got = rep['health'].get(name)
        check(got is not None and got <= int(limit), 'health %s = %r, expected <= %s'
              % (name, got, limit))
    for _, kind, blocks, nbytes in totals:
        got = (t[kind + '_live_blocks'], t[kind + '_live_bytes'])
        check(got == (int(blocks), int(nbytes)), 'totals %s: expected %s blocks / %s bytes, '
              'report says %d / %d' % (kind, blocks, nbytes, got[0], got[1]))
    by = {}
    for st in rep['stacks']:
        key = (innermost_exe_function(st, exe), st['kind'])
        agg = by.setdefault(key, [0, 0])
        agg[0] += st['live_blocks']
        agg[1] += st['live_bytes']
    for _, func, kind, blocks, nbytes in expects:
        got = by.get((func, kind), [0, 0])
        check(got == [int(blocks), int(nbytes)], '%s %s: expected %s / %s, report says %d / %d'
              % (func, kind, blocks, nbytes, got[0], got[1]))
    for k in ('dropped_regions', 'dropped_stacks'):
        check(not rep['health'].get(k), 'health %s = %r' % (k, rep['health'].get(k)))


def java(tmp):
    out, err, path = run(['java', '-version'], tmp)
    check('version' in err, 'java -version printed nothing: %s' % err[:500])
    rep = json.loads(memsight('report', path, '--format', 'json'))
    common(rep, err, path)
    t = rep['totals']
    print('java -version: reserved %d bytes in %d regions, mmap %d bytes, live %d bytes'
          % (t['reserved_live_bytes'], t['reserved_live_blocks'], t['mmap_live_bytes'],
             t['live_bytes']))
    # heap, compressed class space and code cache are reserved: gigabytes; little of it
    # is committed by `java -version`
    check(t['reserved_live_bytes'] >= 1 << 30, 'reserved only %d bytes' % t['reserved_live_bytes'])
    check(t['mmap_live_bytes'] * 3 < t['reserved_live_bytes'],
          'mmap %d bytes is not far below reserved %d' % (t['mmap_live_bytes'], t['reserved_live_bytes']))
    names = [f.get('function') or '' for s in rep['stacks'] if s['kind'] == 'reserved'
             for f in s['frames']]
    check(any('reserve_memory' in n for n in names),
          'no reserved stack names the JVM reserving memory: %r' % sorted(set(names))[:20])


def main():
    tmp = tempfile.mkdtemp(prefix='ms-reserve-')
    try:
        if sys.argv[1] == 'program':
            program(sys.argv[2], tmp)
        else:
            java(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if errors:
        print('FAIL:\n  ' + '\n  '.join(errors))
        sys.exit(1)
    print('ok %s' % ' '.join(sys.argv[1:]))


if __name__ == '__main__':
    main()
