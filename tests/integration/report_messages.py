#!/usr/bin/env python3
"""Messages of the small commands, each against what a person would take from it:
`smaps --file` of a file that is not smaps text, and `smaps` of a process without
user-space mappings (a kernel thread), fail instead of printing a table of zeros;
`smaps --file` of a missing file does not speak of a process; `dump` of a process it may
not read names the file once and says why; `smaps --explain` of such a process blames
the permission, not the agent."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401


def ms(*args):
    p = subprocess.run([MEMSIGHT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


rc, out, err = ms("smaps", "--file", "/etc/passwd")
check(rc == 1 and "no mapping records" in err and out == "", "smaps --file /etc/passwd: %d %r %r" % (rc, out[:200], err))
rc, out, err = ms("smaps", "--file", "/nonexistent-smaps")
check(rc == 1 and "No such file" in err and "process" not in err, "smaps --file missing: %r" % err)

# a kernel thread: no user mappings (kthreadd and its children; absent in some containers)
kthread = None
for d in sorted(os.listdir("/proc"), key=lambda x: (len(x), x)):
    if not d.isdigit():
        continue
    try:
        with open("/proc/%s/stat" % d) as f:
            flags = int(f.read().rsplit(")", 1)[1].split()[6])
        if flags & 0x00200000:  # PF_KTHREAD
            kthread = d
            break
    except (OSError, ValueError, IndexError):
        continue
if kthread:
    rc, out, err = ms("smaps", kthread)
    check(rc == 1 and "no user-space mappings" in err and out == "", "smaps of kernel thread %s: %r" % (kthread, err))
else:
    print("no kernel thread visible: that check skipped")

# a process this user may not read (pid 1 in a container, or another user's): dump names
# the file once and says why; --explain blames the permission
readable = os.access("/proc/1/smaps", os.R_OK)
try:
    open("/proc/1/smaps").read(1)
except OSError:
    readable = False
rc, out, err = ms("dump", "1")
check(rc != 0 and err.count("/proc/1/") <= 1, "dump 1: %r" % err)
if not readable:
    check("another user" in err, "dump 1 does not say why: %r" % err)
    rc, out, err = ms("smaps", "--explain", "1")
    check(rc == 1 and "another user" in err and "memsight run" not in err, "--explain of pid 1: %r" % err)
else:
    print("pid 1 is readable here: the permission checks skipped")
print("ok: smaps, dump and --explain messages")
