"""Helpers of the `memsight merge` tests: runs of mg_parts under the agent and merges."""
import json
import os
import subprocess

from export_common import MEMSIGHT, PROGRAMS, check


def record(d, name, *args, opts=("--leak-check", "exit", "--dump-at-peak")):
    """mg_parts ARGS under `memsight run -o d/name OPTS`: its exit snapshot and the truth
    it printed."""
    out = os.path.join(d, name)
    p = subprocess.run([MEMSIGHT, "run", "-q", "-o", out, *opts, "--",
                        os.path.join(PROGRAMS, "mg_parts"), *map(str, args)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, f"mg_parts {args}: {p.stderr[-2000:]}")
    snaps = [f for f in os.listdir(out) if f.endswith("-exit.msnap")]
    check(len(snaps) == 1, f"{name}: snapshots {snaps}")
    return os.path.join(out, snaps[0]), json.loads(p.stdout)


def merge(d, out, *files):
    """`memsight merge -o d/out FILES`: the merged file and what merge said on stderr."""
    p = subprocess.run([MEMSIGHT, "merge", "-o", os.path.join(d, out), *files],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, f"merge: {p.stderr}")
    return os.path.join(d, out), p.stderr
