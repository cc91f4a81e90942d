#!/usr/bin/env python3
"""Snapshot helpers of the production-mode (sampling_*) tests: live bytes per ground-truth
function and the snapshot files of a run. Reading a file is agent_snap's (one reader for
all tests). Test-only code, imported by the sampling_* scripts."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_snap import SnapError, read  # noqa: E402,F401
from agent_snap import symbolize as function_of  # noqa: E402


def by_site(snap, sites, source='stacks'):
    """Sums live bytes/blocks per ground-truth function: the first frame of each stack
    that is one of `sites`. Returns {site: [bytes, blocks]} (source: stacks or peak)."""
    out = {name: [0, 0] for name in sites}
    for sid, st in snap['stacks'].items():
        site = None
        for pc in st['pcs'][:4]:
            f = function_of(snap, pc)
            if f in out:
                site = f
                break
        if site is None:
            continue
        if source == 'peak':
            rec = (snap['peak'] or {'stacks': {}})['stacks'].get(sid)
            if rec:
                out[site][0] += rec['live_bytes']
                out[site][1] += rec['live_blocks']
        else:
            out[site][0] += st['live_bytes']
            out[site][1] += st['live_blocks']
    return out


def snapshots(directory, pid=None, reason=None):
    """Snapshot files in directory, sorted by (pid, sequence)."""
    res = []
    for n in os.listdir(directory):
        if not (n.startswith('memsight-') and n.endswith('.msnap')):
            continue
        parts = n[len('memsight-'):-len('.msnap')].split('-', 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        if pid is not None and int(parts[0]) != pid:
            continue
        if reason is not None and parts[2] != reason:
            continue
        res.append((int(parts[0]), int(parts[1]), parts[2], os.path.join(directory, n)))
    return sorted(res)


if __name__ == '__main__':
    snap = read(sys.argv[1])
    print(snap['meta'])
    print(snap['health'])
    if snap['peak']:
        print('peak total', snap['peak']['total'])
