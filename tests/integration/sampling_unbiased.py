#!/usr/bin/env python3
"""Sampling is unbiased: sm_mix (1.56 M allocations of 16 B .. 1 MiB from six functions,
~147 MB live at exit, known exactly) under sample=4096 with three fixed seeds. For each
seed, the estimated live bytes of every big call site are within 5% of the truth and the
total within 2%; with no sampling the same reading is exact (checks the site mapping).
The tolerances are > 3.5 standard deviations of the estimator for these live sets."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

AGENT = os.environ['MS_AGENT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'sm_mix')
SITES = ['sm_site_small', 'sm_site_medium', 'sm_site_large', 'sm_site_huge', 'sm_site_churn',
         'sm_site_realloc']
BIG = 10 << 20  # sites holding at least 10 MiB are "big stacks"


def run(options):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS='out=%s,%s' % (out, options))
        p = subprocess.run([PROG], env=env, capture_output=True, text=True, timeout=240)
        if p.returncode != 0:
            sys.exit('sm_mix failed (%d): %s' % (p.returncode, p.stderr))
        truth = json.loads(p.stdout)
        snaps = sf.snapshots(out, reason='exit')
        if len(snaps) != 1:
            sys.exit('expected one exit snapshot, found %r' % snaps)
        return truth, sf.read(snaps[0][3])


TRUTH = None


def check(options, site_tol, total_tol):
    global TRUTH
    truth, snap = run(options)
    TRUTH = truth
    assert truth['allocation_calls'] >= 1000000, truth
    est = sf.by_site(snap, SITES)
    failures = []
    total_true = truth['total_live_bytes']
    total_est = sum(v[0] for v in est.values())
    for site in SITES:
        t = truth['sites'][site]['live_bytes']
        e = est[site][0]
        rel = (e - t) / t if t else (0.0 if e == 0 else float('inf'))
        print('  %-16s truth %10d  estimate %10d  %+6.2f%%' % (site, t, e, 100 * rel))
        if t >= BIG and abs(rel) > site_tol:
            failures.append('%s off by %.2f%%' % (site, 100 * rel))
        if t == 0 and e != 0:
            failures.append('%s has no live bytes but %d were estimated' % (site, e))
    rel = (total_est - total_true) / total_true
    print('  %-16s truth %10d  estimate %10d  %+6.2f%%' % ('total', total_true, total_est,
                                                          100 * rel))
    if abs(rel) > total_tol:
        failures.append('total off by %.2f%%' % (100 * rel))
    return snap, failures


def main():
    failures = []
    print('full mode (exact):')
    snap, f = check('sample=0', 0.0, 0.0)
    failures += ['full: ' + x for x in f]
    for seed in (11, 22, 33):
        print('sample=4096 seed=%d:' % seed)
        snap, f = check('sample=4096,seed=%d' % seed, 0.05, 0.02)
        failures += ['seed %d: %s' % (seed, x) for x in f]
        if snap['meta'].get('sample_interval') != '4096' or not snap['flags'] & 1:
            failures.append('seed %d: snapshot not marked as sampled at 4096' % seed)
        if snap['health'].get('dropped_blocks', 0) or snap['health'].get('dropped_stacks', 0):
            failures.append('seed %d: records were dropped' % seed)
        # it really sampled: few blocks tracked, and estimates that are not the exact truth
        tracked = snap['health'].get('live_table_blocks')
        true_blocks = sum(v['live_blocks'] for v in TRUTH['sites'].values())
        if tracked is None or tracked > true_blocks // 5:
            failures.append('seed %d: %r blocks tracked of %d live: not sampling' %
                            (seed, tracked, true_blocks))
        small = sf.by_site(snap, SITES)['sm_site_small'][0]
        if small == TRUTH['sites']['sm_site_small']['live_bytes']:
            failures.append('seed %d: the small blocks were counted exactly: not sampling' % seed)
    # min_size (Raphael's mode): blocks of at least 16385 bytes exactly, nothing smaller
    truth, snap = run('min_size=16385')
    est = sf.by_site(snap, SITES)
    print('min_size=16385:', {k: v[0] for k, v in est.items()})
    for site in SITES:
        want = truth['sites'][site]['live_bytes'] if site in ('sm_site_large',
                                                               'sm_site_huge') else 0
        if est[site][0] != want:
            failures.append('min_size: %s estimated %d, expected %d' % (site, est[site][0], want))
    if snap['meta'].get('mode') != 'min_size' or snap['meta'].get('min_size') != '16385':
        failures.append('min_size: snapshot metadata %r' % snap['meta'])
    if failures:
        sys.exit('FAIL: ' + '; '.join(failures))
    print('ok')


if __name__ == '__main__':
    main()
