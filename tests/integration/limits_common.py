"""Helpers shared by the limits_* integration tests: failing with a message, and the
JSON report of the one exit snapshot a run wrote into a directory."""
import json
import os
import subprocess
import sys

MEMSIGHT = os.environ.get('MEMSIGHT', 'memsight')


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def exit_report(out):
    """The JSON report of the only exit snapshot in directory out."""
    snaps = [f for f in os.listdir(out) if f.endswith('-exit.msnap')]
    if len(snaps) != 1:
        fail('exit snapshots in %s: %r' % (out, os.listdir(out)))
    r = subprocess.run([MEMSIGHT, 'report', '-f', 'json', os.path.join(out, snaps[0])],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail('report: %s' % r.stderr)
    return json.loads(r.stdout)
