#!/usr/bin/env python3
"""Under a small address-space limit (`ulimit -v`, as the issue tried: 1000000 KiB) the
agent takes address space in proportion to use: a program that allocates 1 MiB blocks
until malloc fails gets nearly as much under the agent as alone (it got 64 MiB of 962
when the agent reserved its tables up front) and its exit snapshot is written; one that
allocates small blocks until it fails runs out with the agent's live table unable to
grow, which the snapshot's health says (table_grow_failures) and the report warns of;
one that fills its limit, gives 16 MiB back and then allocates from 2^17 distinct call
stacks leaves the stack tables no room to grow (they were mapped at stack_capacity at
start, about 170 MiB, and never failed): the stacks they drop and the failed growth are
counted, said once on stderr, and the exit snapshot is still written.

Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from limits_common import MEMSIGHT, exit_report, fail  # noqa: E402

PROG = os.path.join(os.environ['MS_PROGRAMS'], 'lm_vm')
LIMIT = 1000000 * 1024


def run(cmd, limit=LIMIT):
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, preexec_fn=limited)
    if p.returncode != 0:
        fail('%r: status %d: %s' % (cmd, p.returncode, p.stderr[-2000:]))
    return int(p.stdout.split()[0]), p.stderr


# what the agent takes at start: the tables mapped at their capacity took 174 MiB
vm_alone, _ = run([PROG, 'vmsize'])
out = tempfile.mkdtemp(prefix='ms-limits-ulimit-')
vm_agent, _ = run([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, 'vmsize'])
if vm_agent - vm_alone > 32 * 1024:
    fail('the agent takes %d KiB of address space at start' % (vm_agent - vm_alone))

alone, _ = run([PROG, 'big'])
out = tempfile.mkdtemp(prefix='ms-limits-ulimit-')
agent, err = run([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, 'big'])
if agent < alone - 32:
    fail('1 MiB blocks: %d MiB under the agent, %d MiB alone' % (agent, alone))
rep = exit_report(out)
if rep['totals'].get('heap_allocated_blocks', 0) < agent:
    fail('snapshot counts %r allocations, the program made %d' % (rep['totals'], agent))

out = tempfile.mkdtemp(prefix='ms-limits-ulimit-')
# a smaller limit: fewer blocks to fill it, the same outcome
small, err = run([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, 'small'], 400000 * 1024)
rep = exit_report(out)
grow = rep['health'].get('table_grow_failures', 0)
if not grow or not any('table_grow_failures' in w for w in rep['warnings']):
    fail('small blocks until the limit: table_grow_failures %r, warnings %r'
         % (grow, rep['warnings']))

out = tempfile.mkdtemp(prefix='ms-limits-ulimit-')
blocks, err = run([MEMSIGHT, 'run', '-q', '-o', out, '--', PROG, 'stacks'], 400000 * 1024)
rep = exit_report(out)
h = rep['health']
if not h.get('table_grow_failures') or not h.get('dropped_stacks'):
    fail('distinct stacks past the limit: %r' % {k: v for k, v in h.items() if 'stack' in k
                                                 or 'grow' in k})
if h['stack_table_used'] + h['dropped_stacks'] < blocks:
    fail('%d blocks made, %d stacks interned and %d dropped'
         % (blocks, h['stack_table_used'], h['dropped_stacks']))
if err.count('could not grow') != 1:
    fail('the agent should say once that a table could not grow: %r' % err)
print('ok: agent at start %d KiB; 1 MiB blocks %d MiB alone, %d MiB under the agent; small blocks %d MiB, '
      'table_grow_failures %d; distinct stacks: %d interned, %d dropped'
      % (vm_agent - vm_alone, alone, agent, small, grow, h['stack_table_used'], h['dropped_stacks']))
