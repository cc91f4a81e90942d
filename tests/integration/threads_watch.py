#!/usr/bin/env python3
"""`memsight watch -t leaked_threads>N` against a program that leaks one thread every
100 ms (th_leaks drip 8: a joinable thread that returns and is never joined) while the
agent writes a snapshot every 100 ms: watch learns the count from the agent's newest
snapshot (--agent-dir), so the tracker must fire at the first sample whose count exceeds 4
(never before), a tracker over 8 must never
fire, the count must reach exactly 8, and --metrics-file must carry
memsight_leaked_threads 8. A leaked_threads tracker without --agent-dir is refused.

Environment: MEMSIGHT, MS_AGENT, MS_PROGRAMS (set by ms_integration_test)."""
import json
import os
import subprocess
import sys
import tempfile
import time

PROG = os.path.join(os.environ['MS_PROGRAMS'], 'th_leaks')
MEMSIGHT = os.environ['MEMSIGHT']
LIMIT = 120


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def rows(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.endswith('\n')]
    except (OSError, ValueError):
        return []


def main():
    p = subprocess.run([MEMSIGHT, 'watch', '-c', '1', '-t', 'leaked_threads>1', str(os.getpid())],
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 0 or '--agent-dir' not in p.stderr:
        fail('leaked_threads without --agent-dir: status %d, %r' % (p.returncode, p.stderr))

    tmp = tempfile.mkdtemp(prefix='ms-threads-watch-')
    out = os.path.join(tmp, 'snaps')
    os.mkdir(out)
    env = dict(os.environ, LD_PRELOAD=os.environ['MS_AGENT'],
               MEMSIGHT_OPTIONS='out=%s,interval=100' % out)
    prog = subprocess.Popen([PROG, 'drip', '8'], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    series = os.path.join(tmp, 'series.jsonl')
    metrics = os.path.join(tmp, 'metrics.prom')
    watch = subprocess.Popen([MEMSIGHT, 'watch', '-i', '100ms', '-q', '--max-triggers', '-1',
                              '-t', 'leaked_threads>4,n=1,cooldown=1h', '-t', 'leaked_threads>8,n=1',
                              '--agent-dir', out, '-o', series, '--metrics-file', metrics,
                              '-e', os.path.join(tmp, 'evidence'), str(prog.pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        leaked = 0
        while leaked < 8:
            line = prog.stdout.readline()
            if not line:
                fail('th_leaks ended after %d leaked threads' % leaked)
            if line.startswith('leaked '):
                leaked = int(line.split()[1])
        deadline = time.monotonic() + LIMIT
        while True:  # until watch has seen the last count (the series is named at the end)
            try:
                with open(metrics) as f:
                    prom = f.read()
            except OSError:
                prom = ''
            if any(l.startswith('memsight_leaked_threads{') and l.endswith(' 8')
                   for l in prom.splitlines()):
                break
            if time.monotonic() > deadline:
                fail('watch never saw 8 leaked threads: metrics %r' % prom)
            time.sleep(0.05)
    finally:
        prog.stdin.close()
        prog.wait(timeout=LIMIT)
        try:
            watch.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            watch.kill()
            fail('watch did not end with the process')
    if watch.returncode != 0:
        fail('watch: status %d, %s' % (watch.returncode, watch.stderr.read()))
    rs = rows(series)
    if rs and rs[-1]['trackers'][0]['value'] != 8:
        fail('the last sample says %r leaked threads' % rs[-1]['trackers'][0]['value'])
    values = [r['trackers'][0]['value'] for r in rs]
    if values != sorted(values) or max(values) != 8:
        fail('leaked_threads values %r (the program leaked 0..8 in order)' % values)
    fired = [i for i, r in enumerate(rs) if r['trackers'][0]['fired']]
    if len(fired) != 1:
        fail('leaked_threads>4 fired at rows %r (values %r)' % (fired, values))
    first_over = next(i for i, v in enumerate(values) if v > 4)
    if fired[0] != first_over:
        fail('fired at row %d, first count over 4 at row %d (values %r)'
             % (fired[0], first_over, values))
    if any(r['trackers'][1]['fired'] for r in rs):
        fail('leaked_threads>8 fired (values %r)' % values)
    ev = os.path.join(tmp, 'evidence', 'trigger-1.json')
    with open(ev) as f:
        trig = json.load(f)
    if 'leaked_threads>4' not in json.dumps(trig):
        fail('trigger evidence %r' % trig)
    print('ok: values %r, fired at row %d' % (values, fired[0]))


main()
