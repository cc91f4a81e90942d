#!/usr/bin/env python3
"""Bad values of `memsight run`'s own options (and of -O, and of MEMSIGHT_OPTIONS in the
environment) are refused before the program starts: non-zero status, a message naming
the option and the reason, and the program never runs (it would create a marker file).
Good values still run it. The agent itself, given a bad MEMSIGHT_OPTIONS directly,
warns once on stderr, runs with the defaults for those items, and says so in the
snapshot (META option_errors, HLTH bad_options, the JSON report's warnings).

Options given to memsight_start() (a program that dlopens the agent) are judged the
same way, and the warning names them as such, not MEMSIGHT_OPTIONS.

Environment: MEMSIGHT, MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import json
import os
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ['MEMSIGHT']


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


work = tempfile.mkdtemp(prefix='ms-limits-opts-')
marker = os.path.join(work, 'ran')


def run(args, env=None):
    if os.path.exists(marker):
        os.unlink(marker)
    return subprocess.run([MEMSIGHT, 'run', '-q', '-o', work] + args + ['--', 'touch', marker],
                          capture_output=True, text=True, timeout=120, env=env)


BAD = [
    (['--unwind', 'weird'], 'auto|fp|dwarf|libunwind'),
    (['--leak-check=sometimes'], 'off|exit|signal'),
    (['--sample', '-5'], 'not a size'),
    (['--sample', '99999999999999999999999'], 'out of range'),
    (['--sample=1T'], 'not a size'),
    (['--interval', '-10'], 'not a whole number'),
    (['--interval', '5s'], 'not a whole number'),
    (['--max-depth', '0'], 'out of range (1..256)'),
    (['--max-depth', '100000'], 'out of range (1..256)'),
    (['--capacity', '0'], 'out of range'),
    (['--trigger-bytes', '10Q'], 'not a size'),
    (['--trigger-rss', ''], 'not a size'),
    (['--min-size', '1.5M'], 'not a size'),
    (['--seed', '0x10'], 'not a whole number'),
    (['-O', 'foo=bar'], "unknown option 'foo'"),
    (['-O', 'leak_stop_signal=9'], 'SIGKILL cannot be caught'),
    (['-O', 'dump_signal=19'], 'SIGSTOP cannot be caught'),
    (['-O', 'dump_signal=65'], 'not a signal number'),
    (['-O', 'dump_signal=32'], 'reserved by the C library'),
    (['-O', 'blocks=maybe'], 'not a boolean'),
    (['-O', 'stack_capacity=0'], 'out of range'),
    (['-O', 'out='], 'must not be empty'),
    (['-O', 'unwind'], 'wants key=value'),
    (['-O', 'dump_signal=40', '-O', 'leak_stop_signal=40'], 'the same signal (40)'),
    (['-O', 'guard=abc'], 'not a whole number'),
    (['-O', 'guard=-1'], 'not a whole number'),
    (['-O', 'guard_pool=0'], 'out of range (1..16384)'),
    (['-O', 'guard_pool=99999999999'], 'out of range (1..16384)'),
    (['-O', 'guard_side=up'], 'not one of alternate|right|left'),
]
for args, reason in BAD:
    p = run(args)
    if p.returncode == 0:
        fail('%r accepted (status 0)' % args)
    if os.path.exists(marker):
        fail('%r: the program ran' % args)
    if reason not in p.stderr:
        fail('%r: message %r does not give the reason %r' % (args, p.stderr, reason))
    name = args[0].split('=')[0]
    if name.startswith('--') and name not in p.stderr:
        fail('%r: message %r does not name %s' % (args, p.stderr, name))
    if args[0] == '-O' and args[1].split('=')[0] not in p.stderr:
        fail('%r: message %r does not name the agent option' % (args, p.stderr))

# MEMSIGHT_OPTIONS already in the environment is the agent's to judge: it runs, warns once
env = dict(os.environ, MEMSIGHT_OPTIONS='sample=lots')
p = run([], env)
if p.returncode != 0 or not os.path.exists(marker) or \
        p.stderr.count("MEMSIGHT_OPTIONS: sample=lots: not a size") != 1:
    fail('bad MEMSIGHT_OPTIONS in the environment: status %d, %r' % (p.returncode, p.stderr))

for args in (['--unwind', 'fp'], ['--leak-check=exit'], ['--sample', '4096'],
             ['--sample=512k', '--interval', '100000'], ['--max-depth', '256'],
             ['--capacity', '1'], ['--trigger-bytes', '10M'], ['-O', 'leak_stop_signal=0'],
             ['-O', 'dump_signal=40', '-O', 'blocks=no']):
    p = run(args)
    if p.returncode != 0 or not os.path.exists(marker):
        fail('%r refused: %d %r' % (args, p.returncode, p.stderr))

# The agent given bad options directly: one warning, defaults kept, the snapshot says so.
out = tempfile.mkdtemp(prefix='ms-limits-opts-agent-')
env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'],
           MEMSIGHT_OPTIONS='out=%s,foo=bar,max_depth=0,sample=-1' % out)
p = subprocess.run(['sh', '-c', 'echo hello'], env=env, capture_output=True, text=True,
                   timeout=120)
if p.returncode != 0 or p.stdout != 'hello\n':
    fail('agent with bad options: %d %r' % (p.returncode, p.stdout))
warn = [l for l in p.stderr.splitlines() if 'MEMSIGHT_OPTIONS' in l]
if len(warn) != 1 or "unknown option 'foo'" not in warn[0] or '(and 2 more)' not in warn[0]:
    fail('agent warning: %r' % p.stderr)
snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
if len(snaps) != 1:
    fail('agent with bad options: snapshots %r' % os.listdir(out))
r = subprocess.run([MEMSIGHT, 'report', '--format', 'json', os.path.join(out, snaps[0])],
                   capture_output=True, text=True, timeout=120)
rep = json.loads(r.stdout)
if rep['health'].get('bad_options') != 3:
    fail('bad_options %r' % rep['health'].get('bad_options'))
if not any("unknown option 'foo'" in w for w in rep['warnings']):
    fail('warnings %r' % rep['warnings'])
if rep['meta'].get('mode') != 'full' or rep['meta'].get('max_depth') != '64':
    fail('bad items must leave the defaults: meta %r' % rep['meta'])

# The longest reasons are said whole, on stderr and in the snapshot: a set's accepted
# names and how they are joined (it was cut at 160 bytes, "...on memsight's comma"); the
# quoted item is cut at 64 bytes with "..." after it.
out = tempfile.mkdtemp(prefix='ms-limits-opts-set-')
env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'],
           MEMSIGHT_OPTIONS='out=%s,leak_heuristics=%s' % (out, 'x' * 60))
p = subprocess.run(['sh', '-c', 'echo hello'], env=env, capture_output=True, text=True,
                   timeout=120)
whole = ('leak_heuristics=%s...: not all, none, or names among stdstring, length64, newarray, '
         "multipleinheritance, interior (joined by '+', or by ',' on memsight's command "
         'line)' % ('x' * 48))
if p.returncode != 0 or p.stdout != 'hello\n' or \
        p.stderr != 'memsight: MEMSIGHT_OPTIONS: %s; ignored\n' % whole:
    fail('bad leak_heuristics: %d %r %r' % (p.returncode, p.stdout, p.stderr))
snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
r = subprocess.run([MEMSIGHT, 'report', '--format', 'json', os.path.join(out, snaps[0])],
                   capture_output=True, text=True, timeout=120)
if not any(whole in w for w in json.loads(r.stdout)['warnings']):
    fail('bad leak_heuristics: the snapshot\'s warnings %r' % r.stdout)

# Options given only to memsight_start(): the warning names where they came from.
out = tempfile.mkdtemp(prefix='ms-limits-opts-start-')
env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
env.update(SM_START_AGENT=os.environ['MS_AGENT'],
           SM_START_OPTIONS='out=%s,sample=lots,foo=bar' % out)
p = subprocess.run([os.path.join(os.environ['MS_PROGRAMS'], 'sm_single'), 'sleep', '100'],
                   env=env, capture_output=True, text=True, timeout=120)
if p.returncode != 0 or not p.stdout.startswith('ready'):
    fail('memsight_start with bad options: %d %r %r' % (p.returncode, p.stdout, p.stderr))
warn = [l for l in p.stderr.splitlines() if 'ignored' in l]
if len(warn) != 1 or not warn[0].startswith('memsight: memsight_start options: sample=lots: '
                                            'not a size') or '(and 1 more)' not in warn[0]:
    fail('memsight_start warning: %r' % p.stderr)
if 'MEMSIGHT_OPTIONS' in p.stderr:
    fail('memsight_start options called MEMSIGHT_OPTIONS: %r' % p.stderr)
print('ok')
