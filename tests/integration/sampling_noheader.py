#!/usr/bin/env python3
"""Recorded blocks without header in sampled and min_size modes: sm_noheader checks from
inside that every block (sampled or not) is glibc's chunk for the size asked, that
realloc, calloc, memalign and malloc_usable_size behave as without the agent; its exit
snapshot then holds sm_nh_grow's 64 blocks of 128 KiB exactly (blocks above the
threshold are recorded at their size; realloc moved them from sm_nh_big, which holds
nothing), and every recorded live block is in the address table
(HLTH addr_table_blocks = live_table_blocks)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampling_snapfile as sf  # noqa: E402

AGENT = os.environ['MS_AGENT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'sm_noheader')
failures = []


def run(options):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=AGENT, MEMSIGHT_OPTIONS='out=%s,%s' % (out, options))
        r = subprocess.run([PROG], env=env, capture_output=True, text=True, timeout=120)
        print('%s: rc=%d %s %s' % (options, r.returncode, r.stdout.strip()[-300:],
                                   r.stderr.strip()[-300:]))
        if r.returncode != 0:
            failures.append('%s: sm_noheader failed: %s' % (options, r.stdout.strip()[-300:]))
            return
        exits = sf.snapshots(out, reason='exit')
        if len(exits) != 1:
            failures.append('%s: expected one exit snapshot, found %r' % (options, exits))
            return
        s = sf.read(exits[0][3])
        sites = sf.by_site(s, ['sm_nh_grow', 'sm_nh_big', 'sm_nh_small'])
        if sites['sm_nh_grow'] != [64 * 131072, 64]:
            failures.append('%s: sm_nh_grow holds %r, expected [%d, 64]'
                            % (options, sites['sm_nh_grow'], 64 * 131072))
        if sites['sm_nh_big'] != [0, 0]:
            failures.append('%s: sm_nh_big still holds %r' % (options, sites['sm_nh_big']))
        if 'min_size' in options and sites['sm_nh_small'] != [0, 0]:
            failures.append('%s: 24-byte blocks recorded below min_size: %r'
                            % (options, sites['sm_nh_small']))
        h = s['health']
        print('  addr_table_blocks %s live_table_blocks %s addr_table_bytes %s'
              % (h.get('addr_table_blocks'), h.get('live_table_blocks'),
                 h.get('addr_table_bytes')))
        if h.get('addr_table_blocks') != h.get('live_table_blocks') or \
                not h.get('addr_table_blocks'):
            failures.append('%s: addr_table_blocks %r != live_table_blocks %r'
                            % (options, h.get('addr_table_blocks'), h.get('live_table_blocks')))


for opts in ('sample=4096,seed=7', 'sample=512,seed=3', 'min_size=1000'):
    run(opts)
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
