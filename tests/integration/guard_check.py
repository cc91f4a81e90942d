#!/usr/bin/env python3
"""Guard pages (guard=RATE): memory errors caught at the bad access, reported with the
right kind, offset and stacks; correct programs unchanged.

Usage: guard_check.py CASE
  uaf_read uaf_write overflow underflow double_free invalid_free realloc_uaf
  memalign_overflow thread_uaf fork_uaf   gd_errors under guard=1: the process dies of
      the error (SIGSEGV at the access, SIGABRT for a bad free) right after MARK, stderr
      names it (the agent's line, and memsight run's symbolized with file and line), and `memsight report` of the guard snapshot gives kind, offset and the
      allocation / free / access stacks by function name
  own_handler_uaf   the same with the program's own SIGSEGV handler installed
  uaf_read_sampled overflow_sampled double_free_sampled invalid_free_sampled
  realloc_uaf_sampled   the same with sample=4096 (free and realloc in sampled mode
      must still send pool pointers to the pool before the address filter)
  chain    faults outside the pool go to the program's handler, or fatal_snapshot's
  leaks    lk_tree, lk_cycle, lk_interior with guard=1: the leak scan's ground truth
  churn    gd_churn (40000 allocations) with guard=1 and a pool of 8: same output as
           without the agent, the pool full most of the time (HLTH guard_pool_full)
  maps     gd_maps with guard=1 and a pool of 16: the count of /proc/self/maps lines is
           the same after each guarded allocation and free (a slot's protection changes
           in place: no split, no merge), calloc blocks in reused slots are zero
  python sort   real programs with guard=50: same output and status, blocks guarded
  first_2 first_10 first_100   gd_first: the use after free of each thread's first
      allocation, caught (guard_recover=1: counted, the program runs on) in a share of
      the threads within the binomial interval of 1/(2*RATE), as GWP-ASan's countdown
      gives (never before: the first countdown skipped it)
  slack_free slack_realloc slack_under strncpy_overflow   bytes written in a guarded
      block's page outside it (its alignment slack, or before it), caught at free or
      realloc: SIGABRT, "heap-buffer-overflow ... N bytes written past the M-byte block"
      with the free call's and the allocation's stacks
  slack_snapshot   the same found in the exit snapshot of a program that never frees the
      block: reported, the program ends normally
  uaf_beside   an access to the guard page after a freed block: a use after free
  invalid_free_before   free of the byte before a left-aligned block: tied to it
  recover   guard_recover=1: one error of each kind, each reported once (the first of its
      slot), the program runs to its end; guard_errors counts them all
  budget   gd_churn at guard=2, where the guarded blocks' page-table calls take far more
      than 1% of the CPU time: with guard_budget=1 the rate is stretched (HLTH
      guard_budget_stretches > 0, guard_rate_now a larger power-of-two multiple of 2), far
      fewer turns than the program's allocations / 2 (the ground truth: its allocation
      count in the snapshot's totals), said on memsight run's stderr and in the report;
      with guard_budget=0 the turns are allocations / 2 as before, nothing stretched
Environment: MEMSIGHT, MS_PROGRAMS (set by ms_integration_test)."""
import glob
import json
import os
import re
import resource
import signal
import subprocess
import sys
import struct
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_snap  # noqa: E402

MEMSIGHT = os.environ['MEMSIGHT']
PROGS = os.environ['MS_PROGRAMS']

# case: (guard_side, signal, kind, where, access function, freed-by function or None)
ERRORS = {
    'uaf_read': ('alternate', signal.SIGSEGV, 'use-after-free',
                 '8 bytes inside the 32-byte block', 'gd_read', 'gd_release'),
    'uaf_write': ('alternate', signal.SIGSEGV, 'use-after-free',
                  '8 bytes inside the 32-byte block', 'gd_write', 'gd_release'),
    'overflow': ('right', signal.SIGSEGV, 'buffer-overflow',
                 '0 bytes right of the 32-byte block', 'gd_write', None),
    'underflow': ('left', signal.SIGSEGV, 'buffer-underflow',
                  '1 bytes left of the 32-byte block', 'gd_read', None),
    'double_free': ('alternate', signal.SIGABRT, 'double-free',
                    '0 bytes inside the 32-byte block', 'gd_release_again', 'gd_release'),
    'invalid_free': ('alternate', signal.SIGABRT, 'invalid-free',
                     '8 bytes inside the 32-byte block', 'gd_release_inside', None),
    'realloc_uaf': ('alternate', signal.SIGSEGV, 'use-after-free',
                    '0 bytes inside the 16-byte block', 'gd_read', 'gd_grow'),
    'memalign_overflow': ('right', signal.SIGSEGV, 'buffer-overflow',
                          '28 bytes right of the 100-byte block', 'gd_write', None),
    'thread_uaf': ('alternate', signal.SIGSEGV, 'use-after-free',
                   '0 bytes inside the 32-byte block', 'gd_read', 'gd_release'),
    'fork_uaf': ('alternate', signal.SIGSEGV, 'use-after-free',
                 '0 bytes inside the 32-byte block', 'gd_read', 'gd_release'),
    'own_handler_uaf': ('alternate', signal.SIGSEGV, 'use-after-free',
                        '8 bytes inside the 32-byte block', 'gd_read', 'gd_release'),
    'uaf_beside': ('right', signal.SIGSEGV, 'use-after-free',
                   '0 bytes right of the 32-byte block', 'gd_read', 'gd_release'),
    'invalid_free_before': ('left', signal.SIGABRT, 'invalid-free',
                            '1 bytes left of the 32-byte block', 'gd_release_inside', None),
    # the fill around a block, checked at free and realloc: the free call's stack
    'slack_free': ('right', signal.SIGABRT, 'heap-buffer-overflow',
                   '3 bytes written past the 40-byte block', 'gd_release', None),
    'slack_realloc': ('right', signal.SIGABRT, 'heap-buffer-overflow',
                      '1 bytes written past the 40-byte block', 'gd_grow', None),
    'slack_under': ('right', signal.SIGABRT, 'heap-buffer-underflow',
                    '2 bytes written before the 40-byte block', 'gd_release', None),
    'strncpy_overflow': ('left', signal.SIGABRT, 'heap-buffer-overflow',
                         '1 bytes written past the 9-byte block', 'gd_release', None),
}
ALLOC_FN = {'memalign_overflow': 'gd_make_aligned'}


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def agent_opts(opts):
    """memsight run takes one option per -O."""
    return [a for o in opts.split(',') for a in ('-O', o)]


def run(cmd, opts, d, timeout=120):
    full = [MEMSIGHT, 'run', '-q', '-o', d] + agent_opts(opts) + ['--'] + cmd
    return subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=no_core)


def sections(text):
    """The guard section of a text report: {'head': line, 'accessed'|'free called'|
    'allocated'|'freed': [function names]}."""
    lines = text.splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith('guard pages caught: ')]
    if not start:
        fail('the report has no guard section:\n' + text[:3000])
    out = {'head': lines[start[0]]}
    cur = None
    for l in lines[start[0] + 1:]:
        if not l.strip():
            break
        m = re.match(r'  (accessed|free called|allocated|freed) by thread (\d+):$', l)
        if m:
            cur = m.group(1)
            out[cur] = []
            out[cur + ' tid'] = int(m.group(2))
        elif cur and l.startswith('      '):
            out[cur].append(l.split()[0] if not l.strip().startswith('(inlined)')
                            else l.split()[1])
    return out


def case_error(name, extra=''):
    side, sig, kind, where, access_fn, free_fn = ERRORS[name]
    prog = os.path.join(PROGS, 'gd_errors')
    with tempfile.TemporaryDirectory() as d:
        r = run([prog, name], 'guard=1,guard_side=' + side + extra, d)
        if name == 'fork_uaf':
            # the parent lives on: its block untouched by the child's free
            if r.returncode != 0 or 'child signal %d' % sig not in r.stdout or \
                    'parent ok' not in r.stdout:
                fail('%s: status %d, stdout %r, stderr %s' % (name, r.returncode, r.stdout,
                                                              r.stderr[-2000:]))
            if r.stdout.count('MARK') != 1 or 'AFTER' in r.stdout:
                fail('%s: the child went on after the bad access: %r' % (name, r.stdout))
        else:
            if r.returncode != 128 + sig:
                fail('%s: status %d, expected %d (killed by signal %d); stdout %r stderr %s'
                     % (name, r.returncode, 128 + sig, sig, r.stdout, r.stderr[-2000:]))
            if not r.stdout.endswith('MARK\n') or 'AFTER' in r.stdout:
                fail('%s: not caught at the first bad access: stdout %r' % (name, r.stdout))
        if 'memsight: guard: %s ' % kind not in r.stderr:
            fail('%s: stderr does not name %s:\n%s' % (name, kind, r.stderr[-2000:]))
        # memsight run prints it symbolized too, with file and line, as ASan does
        m = re.search(r'^memsight: process \d+: guard pages caught: %s .*%s' % (
            re.escape(kind), re.escape(where)), r.stderr, re.M)
        if not m or not re.search(r'^      %s  \S*gd_errors\.c:\d+$' % access_fn,
                                  r.stderr[m.start():], re.M):
            fail('%s: memsight run did not print the error symbolized (%s in gd_errors.c:LINE):'
                 '\n%s' % (name, access_fn, r.stderr[-3000:]))
        snaps = glob.glob(os.path.join(d, '*-guard.msnap'))
        if len(snaps) != 1:
            fail('%s: expected one guard snapshot, found %s' % (name, os.listdir(d)))
        st = os.stat(snaps[0])
        if st.st_mode & 0o777 != 0o600:
            fail('%s: the report is mode %o, not 600' % (name, st.st_mode & 0o777))
        if name == 'fork_uaf':  # the child's report; the parent ends normally
            pid = re.search(r'memsight-(\d+)-', os.path.basename(snaps[0])).group(1)
            exits = glob.glob(os.path.join(d, '*-exit.msnap'))
            if len(exits) != 1 or '-%s-' % pid in exits[0]:
                fail('fork_uaf: guard report %s, exit snapshots %s' % (snaps[0], exits))
        rep = subprocess.run([MEMSIGHT, 'report', snaps[0]], capture_output=True, text=True)
        if rep.returncode != 0:
            fail('%s: report failed: %s' % (name, rep.stderr))
        sec = sections(rep.stdout)
        if kind not in sec['head'] or where not in sec['head']:
            fail('%s: expected "%s ... %s", got: %s' % (name, kind, where, sec['head']))
        who = 'free called' if sig == signal.SIGABRT else 'accessed'
        if not sec.get(who) or sec[who][0] != access_fn:
            fail('%s: the %s stack should start in %s: %s' % (name, who, access_fn,
                                                               sec.get(who)))
        if 'main' not in sec[who] and name != 'thread_uaf':
            fail('%s: the %s stack does not reach main: %s' % (name, who, sec[who]))
        alloc_fn = ALLOC_FN.get(name, 'gd_make')
        if not sec.get('allocated') or sec['allocated'][0] != alloc_fn:
            fail('%s: the allocation stack should start in %s: %s' % (
                name, alloc_fn, sec.get('allocated')))
        if free_fn:
            if not sec.get('freed') or sec['freed'][0] != free_fn:
                fail('%s: the free stack should start in %s: %s' % (name, free_fn,
                                                                    sec.get('freed')))
        elif 'freed' in sec:
            fail('%s: a live block has a free stack: %s' % (name, sec['freed']))
        js = subprocess.run([MEMSIGHT, 'report', '--format', 'json', snaps[0]],
                            capture_output=True, text=True)
        g = json.loads(js.stdout).get('guard_error') if js.returncode == 0 else None
        if not g or g['kind'] != kind or g['access']['frames'][0]['function'] != access_fn \
                or (g['free'] is None) != (free_fn is None) or \
                g['allocation']['frames'][0]['function'] != alloc_fn:
            fail('%s: JSON guard_error does not agree: %s' % (name, js.stdout[-3000:]))
        if name == 'thread_uaf' and sec['allocated tid'] == sec['accessed tid']:
            fail('thread_uaf: allocated and accessed by the same thread %d' %
                 sec['accessed tid'])
        print('ok %s: %s' % (name, sec['head']))


def case_chain():
    """Faults outside the pool are not the guard's: the program's own handler gets them
    (installed after the agent's, read back by the program), and without one the last
    snapshot of fatal_snapshot=1 is written and the process dies of SIGSEGV."""
    prog = os.path.join(PROGS, 'gd_errors')
    with tempfile.TemporaryDirectory() as d:
        r = run([prog, 'own_handler'], 'guard=1', d)
        if r.returncode != 42 or r.stdout != 'MARK\nHANDLER\n' or 'guard' in r.stderr:
            fail('own_handler: status %d, stdout %r, stderr %s' % (r.returncode, r.stdout,
                                                                  r.stderr[-2000:]))
        if glob.glob(os.path.join(d, '*-guard.msnap')):
            fail('own_handler: a guard report for a fault outside the pool')
    with tempfile.TemporaryDirectory() as d:
        r = run([prog, 'wild'], 'guard=1,fatal_snapshot=1', d)
        names = sorted(os.listdir(d))
        if r.returncode != 128 + signal.SIGSEGV or r.stdout != 'MARK\n' or \
                len(names) != 1 or not names[0].endswith('-fatal.msnap'):
            fail('wild: status %d, stdout %r, files %s, stderr %s' % (
                r.returncode, r.stdout, names, r.stderr[-2000:]))
    print('ok chain: the program\'s handler, then fatal_snapshot\'s')


def case_leaks():
    """Guarded blocks are the program's: a leak scan reads them (their pointers keep other
    blocks reachable) and finds the same leaks as without guard pages."""
    short = {'definite': 'definitely_lost', 'indirect': 'indirectly_lost',
             'possible': 'possibly_lost'}
    for p in ('lk_tree', 'lk_cycle', 'lk_interior'):
        with tempfile.TemporaryDirectory() as d:
            full = [MEMSIGHT, 'run', '-q', '-o', d, '--leak-check=exit', '-O', 'guard=1',
                    '-O', 'guard_pool=4096', '--', os.path.join(PROGS, p)]
            r = subprocess.run(full, capture_output=True, text=True, timeout=120)
            exits = glob.glob(os.path.join(d, '*-exit.msnap'))
            if r.returncode != 0 or len(exits) != 1:
                fail('%s: status %d, files %s: %s' % (p, r.returncode, os.listdir(d), r.stderr))
            rep = subprocess.run([MEMSIGHT, 'report', '--format', 'json', exits[0]],
                                 capture_output=True, text=True)
            doc = json.loads(rep.stdout)
            if not doc['health'].get('guard_allocs'):
                fail('%s: no block was guarded' % p)
            line = [ln for ln in r.stdout.splitlines() if ln.startswith('EXPECT')][0]
            for m in re.finditer(r'(\w+)=(\d+)/(\d+)', line):
                if m.group(1) not in short:
                    continue
                got = doc['leaks'][short[m.group(1)]]
                if (got['blocks'], got['bytes']) != (int(m.group(2)), int(m.group(3))):
                    fail('%s: %s is %s, expected %s/%s with guard pages' % (
                        p, short[m.group(1)], got, m.group(2), m.group(3)))
            print('ok leaks %s: %s (%d guarded)' % (p, line, doc['health']['guard_allocs']))


def health_of(d):
    files = glob.glob(os.path.join(d, 'memsight-*-exit.msnap'))
    if not files:
        fail('no exit snapshot in %s' % os.listdir(d))
    return agent_snap.read(files[0])['health']


def same(cmd, opts, stdin=None):
    with tempfile.TemporaryDirectory() as d:
        base = subprocess.run(cmd, input=stdin, capture_output=True, timeout=300, cwd=d)
        out = os.path.join(d, 'out')
        os.mkdir(out)
        full = [MEMSIGHT, 'run', '-q', '-o', out] + agent_opts(opts) + ['--'] + cmd
        p = subprocess.run(full, input=stdin, capture_output=True, timeout=300, cwd=d)
        if p.returncode != base.returncode or p.stdout != base.stdout:
            fail('%s: status %d / %d, stdout %s under the agent (stderr: %s)' % (
                cmd[0], p.returncode, base.returncode,
                'same' if p.stdout == base.stdout else 'differs', p.stderr[-2000:]))
        if p.stderr != base.stderr:
            fail('%s: stderr differs under the agent: %s' % (cmd[0], p.stderr[-2000:]))
        return health_of(out)


def case_churn():
    h = same([os.path.join(PROGS, 'gd_churn')], 'guard=1,guard_pool=8')
    if not h.get('guard_allocs') or not h.get('guard_pool_full'):
        fail('churn: guard_allocs %r, guard_pool_full %r: the pool was not exercised' % (
            h.get('guard_allocs'), h.get('guard_pool_full')))
    print('ok churn: %d guarded, %d fell back (pool full)' % (h['guard_allocs'],
                                                            h['guard_pool_full']))


def case_maps():
    with tempfile.TemporaryDirectory() as d:
        r = run([os.path.join(PROGS, 'gd_maps')], 'guard=1,guard_pool=16', d)
        if r.returncode != 0:
            fail('maps: status %d (2: a block not guarded, 3: calloc not zero): %s' % (
                r.returncode, r.stderr[-2000:]))
        counts = [int(x) for x in r.stdout.split()[1:]]
        h = health_of(d)
    # 4 rounds of 8 blocks in 16 slots: the last rounds reuse slots only
    if len(counts) != 8 or len(set(counts[3:])) != 1 or any(
            counts[2 * i] != counts[2 * i + 1] for i in range(4)):
        fail('maps: /proc/self/maps lines after each allocation, free: %s; the pool\'s '
             'mappings were split and merged' % counts)
    print('ok maps: %s lines after each allocation, free (%d guarded)' % (
        counts, h.get('guard_allocs', 0)))


def case_python():
    code = ('import json, re\nd = {str(i): [i] * (i % 50) for i in range(8000)}\n'
            's = json.dumps(d)\nprint(len(s), len(json.loads(s)), sum(map(len, d.values())))\n'
            'print(len(re.findall(r"\\d+", s)))\n')
    h = same(['/usr/bin/python3', '-c', code], 'guard=50')
    if not h.get('guard_allocs'):
        fail('python: no block was guarded')
    print('ok python: %d guarded' % h['guard_allocs'])


def case_sort():
    lines = ''.join('%08x line %d\n' % ((i * 2654435761) & 0xffffffff, i)
                    for i in range(30000))
    h = same(['sort'], 'guard=50', stdin=lines.encode())
    if not h.get('guard_allocs'):
        fail('sort: no block was guarded')
    print('ok sort: %d guarded' % h['guard_allocs'])


def case_slack_snapshot():
    """A block never freed: its overflow into the fill is found by the exit snapshot's
    check, reported without an access stack, and the program ends as it would."""
    with tempfile.TemporaryDirectory() as d:
        r = run([os.path.join(PROGS, 'gd_errors'), 'slack_snapshot'], 'guard=1,guard_side=right',
                d)
        if r.returncode != 0 or r.stdout != 'MARK\nAFTER\n':
            fail('slack_snapshot: status %d, stdout %r, stderr %s' % (r.returncode, r.stdout,
                                                                      r.stderr[-2000:]))
        if 'memsight: guard: heap-buffer-overflow at ' not in r.stderr or \
                'found in a snapshot by thread' not in r.stderr:
            fail('slack_snapshot: stderr does not report it:\n' + r.stderr[-2000:])
        snaps = glob.glob(os.path.join(d, '*-guard.msnap'))
        if len(snaps) != 1 or len(glob.glob(os.path.join(d, '*-exit.msnap'))) != 1:
            fail('slack_snapshot: files %s' % os.listdir(d))
        # kinds 6 and 7 came with format 1.4: a file holding one says so (readers of 1.3
        # refuse them)
        with open(snaps[0], 'rb') as f:
            major, minor = struct.unpack('<HH', f.read(12)[8:12])
        if (major, minor) < (1, 4):
            fail('slack_snapshot: a heap-buffer-overflow report in a format %d.%d file, not '
                 '1.4' % (major, minor))
        rep = subprocess.run([MEMSIGHT, 'report', snaps[0]], capture_output=True, text=True)
        sec = sections(rep.stdout)
        want = '1 bytes written past the 40-byte block'
        if 'heap-buffer-overflow' not in sec['head'] or want not in sec['head'] or \
                'found in a snapshot' not in rep.stdout or sec.get('allocated', [''])[0] != \
                'gd_make' or 'freed' in sec or 'accessed' in sec:
            fail('slack_snapshot: report %s' % rep.stdout[:3000])
        print('ok slack_snapshot: %s' % sec['head'])


def case_recover():
    """guard_recover=1: each error reported once, the program runs to its end."""
    with tempfile.TemporaryDirectory() as d:
        r = run([os.path.join(PROGS, 'gd_errors'), 'recover'],
                'guard=1,guard_side=right,guard_recover=1', d)
        if r.returncode != 0 or not r.stdout.startswith('MARK\nAFTER '):
            fail('recover: status %d, stdout %r, stderr %s' % (r.returncode, r.stdout,
                                                               r.stderr[-3000:]))
        heads = [l for l in r.stderr.splitlines()
                 if re.match(r'memsight: guard: [a-z-]+ (at|of) 0x', l)]
        kinds = [l.split()[2] for l in heads]
        want = ['use-after-free', 'buffer-overflow', 'double-free', 'invalid-free',
                'heap-buffer-overflow']
        if kinds != want:
            fail('recover: reported %s, expected %s:\n%s' % (kinds, want, r.stderr[-3000:]))
        if r.stderr.count('guard_recover=1: the program runs on') != len(want):
            fail('recover: not every report says the program runs on')
        snaps = glob.glob(os.path.join(d, '*-guard.msnap'))
        if len(snaps) != len(want):
            fail('recover: %d guard snapshots: %s' % (len(snaps), os.listdir(d)))
        h = health_of(d)
        # the five reported, and the double free of the retired slot counted
        if h.get('guard_errors') != 6 or h.get('guard_failures'):
            fail('recover: guard_errors %r (expected 6), guard_failures %r' % (
                h.get('guard_errors'), h.get('guard_failures')))
        print('ok recover: %s, %d errors counted' % (kinds, h['guard_errors']))


# first_RATE: threads, and the 4-sigma bounds of the binomial count at p = 1/(2*RATE)
FIRST = {2: 800, 10: 2000, 100: 6000}


def case_first(rate):
    n = FIRST[rate]
    p = 1.0 / (2 * rate)
    mean, sd = n * p, (n * p * (1 - p)) ** 0.5
    lo, hi = mean - 4 * sd, mean + 4 * sd
    with tempfile.TemporaryDirectory() as d:
        r = run([os.path.join(PROGS, 'gd_first'), str(n)],
                'guard=%d,guard_recover=1,guard_pool=4096,guard_budget=0' % rate, d,
                timeout=280)
        if r.returncode != 0 or r.stdout != 'threads %d\n' % n:
            fail('first_%d: status %d, stdout %r, stderr %s' % (rate, r.returncode, r.stdout,
                                                                r.stderr[-2000:]))
        h = health_of(d)
    k = h.get('guard_errors', 0)
    if h.get('guard_pool_full') or h.get('guard_failures'):
        fail('first_%d: pool full %r, failures %r' % (rate, h.get('guard_pool_full'),
                                                      h.get('guard_failures')))
    if not lo <= k <= hi:
        fail('first_%d: the first allocation\'s use after free caught in %d of %d threads; '
             'at 1/(2*%d) expected %.1f, 4-sigma interval [%.1f, %.1f]' % (
                 rate, k, n, rate, mean, lo, hi))
    print('ok first_%d: caught in %d of %d threads (%.4f; expected %.4f, interval [%.1f, %.1f])'
          % (rate, k, n, k / n, p, lo, hi))


def case_budget():
    """guard_budget: the rate stretched when the guard's page-table calls cost too much."""
    got = {}
    for budget in (0, 1):
        with tempfile.TemporaryDirectory() as d:
            full = [MEMSIGHT, 'run', '-o', d, '-O', 'guard=2', '-O', 'guard_pool=64',
                    '-O', 'guard_budget=%d' % budget, '--', os.path.join(PROGS, 'gd_churn')]
            r = subprocess.run(full, capture_output=True, text=True, timeout=280,
                               preexec_fn=no_core)
            if r.returncode != 0:
                fail('budget=%d: status %d: %s' % (budget, r.returncode, r.stderr[-2000:]))
            snap = glob.glob(os.path.join(d, 'memsight-*-exit.msnap'))[0]
            js = subprocess.run([MEMSIGHT, 'report', '--format', 'json', snap],
                                capture_output=True, text=True, timeout=120)
            txt = subprocess.run([MEMSIGHT, 'report', snap], capture_output=True, text=True,
                                 timeout=120)
            doc = json.loads(js.stdout)
            h = doc['health']
            allocs = doc['totals']['heap_allocated_blocks']
            turns = h['guard_allocs'] + h['guard_pool_full'] + h['guard_too_large']
            said = [t for t in (r.stderr, txt.stdout) if 'stretched' in t]
            got[budget] = (h, allocs, turns, len(said))
    h, allocs, turns, said = got[0]
    # exact rate: a turn every 2 allocations on average (realloc to a new size is a turn
    # of its own, so a little more)
    if (h.get('guard_budget_stretches') != 0 or h.get('guard_rate_now') != 2 or
            h.get('guard_spent_ns') != 0 or not 0.45 * allocs <= turns <= 0.65 * allocs or said):
        fail('guard_budget=0: stretches %r, rate now %r, spent_ns %r, %d turns for %d '
             'allocations, stretch said %d times' % (
                 h.get('guard_budget_stretches'), h.get('guard_rate_now'),
                 h.get('guard_spent_ns'), turns, allocs, said))
    h1, allocs1, turns1, said1 = got[1]
    rate = h1.get('guard_rate_now', 0)
    if (not h1.get('guard_budget_stretches') or rate <= 2 or rate & (rate - 1) or
            not h1.get('guard_spent_ns') or turns1 * 4 > allocs1 or said1 != 2):
        fail('guard_budget=1: stretches %r, rate now %r, spent_ns %r, %d turns for %d '
             'allocations (at most a quarter expected), stretch said in %d of stderr and '
             'report' % (h1.get('guard_budget_stretches'), rate, h1.get('guard_spent_ns'),
                         turns1, allocs1, said1))
    print('ok budget: guard_budget=0: %d turns for %d allocations (rate 2); guard_budget=1: '
          '%d turns, stretched %d times, rate now %d, %.1f ms in guarded allocations and frees' % (
              turns, allocs, turns1, h1['guard_budget_stretches'], rate,
              h1['guard_spent_ns'] / 1e6))


def main():
    c = sys.argv[1]
    if c in ERRORS:
        case_error(c)
    elif c.endswith('_sampled') and c[:-8] in ERRORS:  # with sampled recording
        case_error(c[:-8], ',sample=4096')
    elif c == 'chain':
        case_chain()
    elif c == 'leaks':
        case_leaks()
    elif c == 'churn':
        case_churn()
    elif c == 'maps':
        case_maps()
    elif c == 'python':
        case_python()
    elif c == 'sort':
        case_sort()
    elif c == 'slack_snapshot':
        case_slack_snapshot()
    elif c == 'recover':
        case_recover()
    elif c == 'budget':
        case_budget()
    elif c.startswith('first_'):
        case_first(int(c[6:]))
    else:
        fail('unknown case ' + c)


if __name__ == '__main__':
    main()
