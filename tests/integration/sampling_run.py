#!/usr/bin/env python3
"""The production flags of `memsight run` end to end: --sample --seed --dump-at-peak
--interval on sm_peak give a sampled exit snapshot whose JSON report (the documented
contract) says it is sampled, shows the 100 MiB peak of sm_peak_big while its live bytes
at exit are 0, and --help documents every flag."""
import json
import os
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'sm_peak')
MIB = 1 << 20
failures = []

h = subprocess.run([MEMSIGHT, 'run', '--help'], capture_output=True, text=True).stdout
for flag in ('--sample', '--min-size', '--seed', '--interval', '--dump-at-peak',
             '--trigger-bytes', '--trigger-rss'):
    if flag not in h:
        failures.append('memsight run --help does not document %s' % flag)

with tempfile.TemporaryDirectory() as out:
    r = subprocess.run([MEMSIGHT, 'run', '-q', '-o', out, '--sample=4096', '--seed', '9',
                        '--dump-at-peak', '--interval', '20', '--', PROG, '100'],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or 'peak_big_bytes' not in r.stdout:
        sys.exit('memsight run failed (%d): %s' % (r.returncode, r.stderr))
    names = sorted(os.listdir(out))
    exits = [n for n in names if n.endswith('-exit.msnap')]
    if len(exits) != 1 or not any(n.endswith('-interval.msnap') for n in names):
        failures.append('expected interval snapshots and one exit snapshot: %r' % names)
    j = json.loads(subprocess.run([MEMSIGHT, 'report', '--format', 'json',
                                   os.path.join(out, exits[0])],
                                  capture_output=True, text=True, check=True).stdout)
    if j.get('sampled') is not True:
        failures.append('the report does not say the snapshot is sampled')
    peak = j['totals'].get('peak_live_bytes', 0)
    if not 100 * MIB <= peak < 101 * MIB:
        failures.append('totals.peak_live_bytes = %r' % peak)
    big = [s for s in j['stacks'] if any(f.get('function') == 'sm_peak_big'
                                         for f in s['frames'][:3])]
    if len(big) != 1 or big[0].get('peak_live_bytes') != 100 * MIB or big[0]['live_bytes']:
        failures.append('sm_peak_big stack: %r' % [(s['live_bytes'], s.get('peak_live_bytes'))
                                                   for s in big])
    text = subprocess.run([MEMSIGHT, 'report', os.path.join(out, exits[0])],
                          capture_output=True, text=True).stdout
    if 'sampled' not in text or 'Peak live' not in text:
        failures.append('the text report does not mention sampling and the peak')
    at_peak = text.split('stacks at the peak', 1)[-1].split('\n\n', 1)[0]
    if 'sm_peak_big' not in at_peak or '100.0 MiB in 100 blocks at the peak' not in at_peak:
        failures.append('the text report does not show sm_peak_big at the peak: %r' % at_peak)
if failures:
    sys.exit('FAIL: ' + '; '.join(failures))
print('ok')
