#!/usr/bin/env python3
"""fatal_snapshot=1 with leak_check=exit: lk_fatal dies from SIGSEGV or SIGABRT; the
process must still die from that signal (memsight run's status 128+N), and leave one
`fatal` snapshot whose leak scan has the program's ground truth and whose health names
the signal. Without the option, no snapshot at all (the process dies as before)."""
import glob
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile

CLASSES = {"definite": "definitely_lost", "indirect": "indirectly_lost",
           "possible": "possibly_lost", "reachable": "still_reachable"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def case(memsight, prog, how, sig):
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([memsight, "run", "-q", "-o", d, "-O", "fatal_snapshot=1",
                            "--leak-check=exit", "--", prog, how], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=no_core)
        if r.returncode != 128 + sig:
            fail("%s: status %d, expected %d (killed by signal %d): %s" % (
                how, r.returncode, 128 + sig, sig, r.stderr))
        snaps = glob.glob(os.path.join(d, "*.msnap"))
        if len(snaps) != 1 or not snaps[0].endswith("-fatal.msnap"):
            fail("%s: expected one fatal snapshot, found %s" % (how, snaps))
        rep = subprocess.run([memsight, "report", "--format", "json", snaps[0]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if rep.returncode != 0:
            fail("%s: report failed: %s" % (how, rep.stderr))
        doc = json.loads(rep.stdout)
        if doc.get("health", {}).get("fatal_signal") != sig:
            fail("%s: health fatal_signal is %r, expected %d" % (
                how, doc.get("health", {}).get("fatal_signal"), sig))
        leaks = doc.get("leaks")
        if not leaks:
            fail("%s: the fatal snapshot has no leak scan" % how)
        for m in re.finditer(r"(\w+)=(\d+)/(\d+)", r.stdout.split("EXPECT", 1)[1]):
            c = CLASSES[m.group(1)]
            got = (leaks[c]["blocks"], leaks[c]["bytes"])
            if got != (int(m.group(2)), int(m.group(3))):
                fail("%s: %s is %s, expected %s/%s" % (how, c, got, m.group(2), m.group(3)))
        print("ok %s: %s" % (how, {c: (leaks[c]["blocks"], leaks[c]["bytes"])
                                    for c in CLASSES.values()}))
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([memsight, "run", "-q", "-o", d, "--", prog, how],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120, preexec_fn=no_core)
        if r.returncode != 128 + sig or glob.glob(os.path.join(d, "*.msnap")):
            fail("%s without the option: status %d, files %s" % (
                how, r.returncode, os.listdir(d)))


def main():
    memsight = os.environ["MEMSIGHT"]
    prog = os.path.join(os.environ["MS_PROGRAMS"], "lk_fatal")
    case(memsight, prog, "segv", signal.SIGSEGV)
    case(memsight, prog, "abort", signal.SIGABRT)


if __name__ == "__main__":
    main()
