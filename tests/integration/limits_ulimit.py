#!/usr/bin/env python3
"""Under a small address-space limit (`ulimit -v`, as the issue tried: 1000000 KiB) the
agent takes address space in proportion to use: a program that allocates 1 MiB blocks
until malloc fails gets nearly as much under the agent as alone (it got 64 MiB of 962
when the agent reserved its tables up front) and its exit snapshot is written; one that
allocates small blocks until it fails runs out with the agent's live table unable to
grow, which the snapshot's health says (table_grow_failures) and the report warns of.

Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import json
import os
import resource
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']
PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_vm')
LIMIT = 1000000 * 1024


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(cmd, limit=LIMIT):
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, preexec_fn=limited)
    if p.returncode != 0:
        fail('%r: status %d: %s' % (cmd, p.returncode, p.stderr[-2000:]))
    return int(p.stdout.split()[0]), p.stderr


def snapshot(out):
    snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(snaps) != 1:
        fail('exit snapshots in %s: %r' % (out, os.listdir(out)))
    r = subprocess.run([MEMSIGHT, 'report', '-f', 'json', os.path.join(out, snaps[0])],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail('report: %s' % r.stderr)
    return json.loads(r.stdout)


alone, _ = run([PROG, 'big'])
out = tempfile.mkdtemp(prefix='ms-limits-ulimit-')
agent, err = run([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, 'big'])
if agent < alone - 200:
    fail('1 MiB blocks: %d MiB under the agent, %d MiB alone' % (agent, alone))
rep = snapshot(out)
if rep['totals'].get('heap_allocated_blocks', 0) < agent:
    fail('snapshot counts %r allocations, the program made %d' % (rep['totals'], agent))

out = tempfile.mkdtemp(prefix='ms-limits-ulimit-')
# a smaller limit: fewer blocks to fill it, the same outcome
small, err = run([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, 'small'], 400000 * 1024)
rep = snapshot(out)
grow = rep['health'].get('table_grow_failures', 0)
if not grow or not any('table_grow_failures' in w for w in rep['warnings']):
    fail('small blocks until the limit: table_grow_failures %r, warnings %r'
         % (grow, rep['warnings']))
print('ok: 1 MiB blocks %d MiB alone, %d MiB under the agent; small blocks %d MiB, '
      'table_grow_failures %d' % (alone, agent, small, grow))
