#!/usr/bin/env python3
"""Snapshots as the contract between a device and a workstation: a ground-truth program
of another platform (tests/platforms.cmake: AArch64 under qemu-user, or musl) writes two
exit snapshots; this build's memsight (x86-64, glibc) must report, diff, merge and export
them with the program's own functions, files and lines, and the live bytes the program
says it keeps.

Usage: platform_cross.py PROGRAM
Environment: MS_AGENT, MS_PROGRAMS, MEMSIGHT, MS_RUNNER (a command prefix, may be empty),
MEMSIGHT_SYSROOT (the target's root for its system libraries). MEMSIGHT may be a command
line too: the target's own memsight under qemu-user reads the target's snapshots."""
import gzip
import json
import os
import shlex
import subprocess
import sys
import tempfile


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def memsight(*args):
    p = subprocess.run(shlex.split(os.environ['MEMSIGHT']) + list(args), capture_output=True,
                       timeout=180)
    if p.returncode != 0:
        fail('memsight %s failed (%d): %s' % (' '.join(args), p.returncode, p.stderr.decode()[-2000:]))
    return p.stdout


def run_once(exe, out):
    env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'], MEMSIGHT_OPTIONS='out=' + out)
    p = subprocess.run(shlex.split(os.environ.get('MS_RUNNER', '')) + [exe], env=env,
                       capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        fail('%s exited with %d: %s' % (exe, p.returncode, p.stderr))
    snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(snaps) != 1:
        fail('expected one exit snapshot in %s: %r' % (out, os.listdir(out)))
    expects = [l.split()[1:] for l in p.stdout.splitlines() if l.startswith('expect ')]
    return os.path.join(out, snaps[0]), expects


def per_function(rep, exe):
    """(function, kind) -> [live blocks, live bytes, (file, line) of the first frame]."""
    agg = {}
    for st in rep['stacks']:
        for fr in st['frames']:
            if fr.get('inlined') or not fr.get('module'):
                continue
            if os.path.realpath(fr['module']) == exe and fr.get('function'):
                a = agg.setdefault((fr['function'], st['kind']), [0, 0, (fr.get('file'), fr.get('line'))])
                a[0] += st['live_blocks']
                a[1] += st['live_bytes']
                break
    return agg


def check_report(path, exe, expects, factor, what):
    rep = json.loads(memsight('report', path, '--format', 'json'))
    agg = per_function(rep, exe)
    src = os.path.basename(exe).rsplit('_', 1)[0] + '.c'  # gt_heap_o2 -> gt_heap.c
    for func, kind, nblk, nbytes in expects:
        got = agg.get((func, kind))
        want = [int(nblk) * factor, int(nbytes) * factor]
        if not got or got[:2] != want:
            fail('%s: %s %s: expected %s, report says %s' % (what, func, kind, want, got and got[:2]))
        f, line = got[2]
        if not f or not f.endswith(src) or not line:
            fail('%s: %s without its file and line (%r, %r)' % (what, func, f, line))
    return rep


def main():
    prog = sys.argv[1]
    exe = os.path.realpath(os.path.join(os.environ['MS_PROGRAMS'], prog))
    with tempfile.TemporaryDirectory() as d:
        a_dir, b_dir = os.path.join(d, 'a'), os.path.join(d, 'b')
        os.mkdir(a_dir)
        os.mkdir(b_dir)
        a, expects = run_once(exe, a_dir)
        b, _ = run_once(exe, b_dir)
        if not expects:
            fail('the program printed no expectations')
        rep = check_report(a, exe, expects, 1, 'report')
        arch = rep.get('meta', {}).get('arch') if isinstance(rep.get('meta'), dict) else None
        # merge: two processes of one program, every counter doubled
        m = os.path.join(d, 'merged.msnap')
        memsight('merge', '-o', m, a, b)
        check_report(m, exe, expects, 2, 'merge')
        # diff: the same program twice, stacks matched by symbolized frames, no change
        diff = json.loads(memsight('diff', a, b, '--format', 'json'))
        text = json.dumps(diff)
        for func, _kind, _n, nbytes in expects:
            if int(nbytes) and func not in text:
                fail('diff: %s missing from the JSON diff' % func)
        # exports: pprof (gzip'd protobuf, names in its string table), collapsed, svg, html
        pb = gzip.decompress(memsight('report', a, '--format', 'pprof'))
        col = memsight('report', a, '--format', 'collapsed').decode()
        svg = memsight('report', a, '--format', 'svg').decode()
        html = memsight('report', a, '--format', 'html').decode()
        src = os.path.basename(exe).rsplit('_', 1)[0] + '.c'
        for func, _kind, _n, nbytes in expects:
            if int(nbytes) == 0:
                continue  # exports weigh stacks by live bytes: nothing to show
            for name, body in (('pprof', pb), ('collapsed', col), ('svg', svg), ('html', html)):
                needle = func.encode() if isinstance(body, bytes) else func
                if needle not in body:
                    fail('%s export lacks %s' % (name, func))
        if src.encode() not in pb:
            fail('pprof export lacks the source file %s' % src)
        print('ok %s: report, merge (x2), diff, pprof, collapsed, svg, html; %d sites%s' % (
            prog, len(expects), ', arch %s' % arch if arch else ''))


if __name__ == '__main__':
    main()
