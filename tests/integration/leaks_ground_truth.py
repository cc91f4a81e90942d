#!/usr/bin/env python3
"""Runs one leak ground-truth program (tests/programs/lk_*.c) and compares the leak
classes with what the program says about itself (its EXPECT, RECORD and VALGRIND lines).

  leaks_ground_truth.py PROGRAM api       memsight run; the program's own mid-run
                                          memsight_leak_check() snapshot
  leaks_ground_truth.py PROGRAM exit      memsight run --leak-check=exit; the exit snapshot
  leaks_ground_truth.py PROGRAM valgrind  valgrind --leak-check=full; the summary of the
                                          program's mid-run VALGRIND_DO_LEAK_CHECK

Counts and bytes of definitely/indirectly/possibly lost must match exactly; still
reachable exactly, or at least when the program says reachable>= (threads add their
glibc DTV, allocated by the dynamic linker, which memsight counts as reachable).
Under valgrind only the block counts of the three lost classes are compared, with the
program's VALGRIND line where valgrind deliberately differs (the reason is on the line).
"""
import glob
import json
import os
import re
import struct
import shlex
import subprocess
import sys
import tempfile

CLASSES = ["definitely_lost", "indirectly_lost", "possibly_lost", "still_reachable"]
FLAGS = 0  # bits the program expects in leaks.flags (FLAGS line)
MIN_STATS = {}  # scan statistics with a lower bound (STAT name>=N lines)
SHORT = {"definite": "definitely_lost", "indirect": "indirectly_lost",
         "possible": "possibly_lost", "reachable": "still_reachable"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def leak_stats(path):
    """The (name, value) statistics after the LEAK chunk's records (docs/leaks.md)."""
    d = open(path, "rb").read()
    off, stats = 32, {}
    while off + 24 <= len(d):
        typ, _, length, _, _ = struct.unpack_from("<IIQII", d, off)
        p = off + 24
        if typ == struct.unpack("<I", b"LEAK")[0]:
            q = p + 8 * 8 + 24
            n = struct.unpack_from("<I", d, q)[0]
            q += 4 + 72 * n
            ns = struct.unpack_from("<I", d, q)[0]
            q += 4
            for _ in range(ns):
                ln = struct.unpack_from("<I", d, q)[0]
                name = d[q + 4:q + 4 + ln].decode()
                stats[name] = struct.unpack_from("<Q", d, q + 4 + ln)[0]
                q += 4 + ln + 8
        off = p + ((length + 7) & ~7)
    return stats


def parse_expect(out):
    exp, at_least, records, vg = {}, set(), [], None
    global FLAGS
    for line in out.splitlines():
        if line.startswith("FLAGS "):
            FLAGS = int(line.split()[1])
        elif line.startswith("STAT "):
            name, n = line.split()[1].split(">=")
            MIN_STATS[name] = int(n)
        if line.startswith("EXPECT "):
            for m in re.finditer(r"(\w+)(>?=)(\d+)/(\d+)", line):
                name = SHORT[m.group(1)]
                exp[name] = (int(m.group(3)), int(m.group(4)))
                if m.group(2) == ">=":
                    at_least.add(name)
        elif line.startswith("RECORD "):
            d = dict(kv.split("=", 1) for kv in line.split()[1:])
            records.append((d["class"], int(d["blocks"]), int(d["bytes"])))
        elif line.startswith("VALGRIND "):
            vg = {SHORT[k]: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line.split("#")[0])}
    if not exp:
        fail("the program printed no EXPECT line:\n" + out)
    return exp, at_least, records, vg


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=240, **kw)


def memsight_json(memsight, snap):
    r = run([memsight, "report", "--format", "json", snap])
    if r.returncode != 0:
        fail("memsight report failed on %s: %s" % (snap, r.stderr))
    return json.loads(r.stdout)


def check_memsight(prog, mode, memsight):
    with tempfile.TemporaryDirectory() as d:
        runner = os.environ.get("MS_RUNNER")
        if runner is not None:
            # another platform (tests/platforms.cmake): the program under its runner
            # (qemu-user) with that platform's agent preloaded; read here all the same
            env = dict(os.environ, LD_PRELOAD=os.environ["MS_AGENT"],
                       MEMSIGHT_OPTIONS="out=" + d + (",leak_check=exit" if mode == "exit" else ""))
            r = run(shlex.split(runner) + [prog], env=env)
        else:
            cmd = [memsight, "run", "-q", "-o", d]
            if mode == "exit":
                cmd.append("--leak-check=exit")
            r = run(cmd + ["--", prog])
        if r.returncode != 0:
            fail("%s exited with %d: %s" % (prog, r.returncode, r.stderr))
        exp, at_least, records, _ = parse_expect(r.stdout)
        if mode == "api":
            snaps = re.findall(r"^SNAPSHOT rc=(-?\d+) (\S+)", r.stdout, re.M)
            if not snaps:
                fail("no SNAPSHOT line: the agent's memsight_leak_check was not called")
            for rc, path in snaps:
                if rc != "0":
                    fail("memsight_leak_check returned %s" % rc)
        else:
            found = glob.glob(os.path.join(d, "*-exit.msnap"))
            if len(found) != 1:
                fail("expected one exit snapshot, found %s" % found)
            snaps = [("0", found[0])]
            # at exit, frames and threads are gone: only the lost classes are compared
            at_least.add("still_reachable")
            exp["still_reachable"] = (0, 0)
        for _, path in snaps:
            doc = memsight_json(memsight, path)
            leaks = doc.get("leaks")
            if not leaks:
                fail("%s has no leak scan" % path)
            for c in CLASSES:
                got = (leaks[c]["blocks"], leaks[c]["bytes"])
                want = exp[c]
                ok = (got[0] >= want[0] and got[1] >= want[1]) if c in at_least else got == want
                if not ok:
                    fail("%s %s: %s is %d blocks / %d bytes, expected %s%d / %d" % (
                        os.path.basename(prog), path, c, got[0], got[1],
                        ">= " if c in at_least else "", want[0], want[1]))
            if (leaks.get("flags", 0) & FLAGS) != FLAGS:
                fail("%s: flags %#x lack the expected %#x" % (path, leaks.get("flags", 0), FLAGS))
            stats = leak_stats(path)
            for name, least in MIN_STATS.items():
                if stats.get(name, 0) < least:
                    fail("%s: scan statistic %s is %d, expected at least %d" % (
                        path, name, stats.get(name, 0), least))
            recs = doc.get("leak_records", [])
            for cls, blocks, nbytes in records:
                if not any(x["class"] == cls and x["blocks"] == blocks and x["bytes"] == nbytes
                           for x in recs):
                    fail("no %s record of %d blocks / %d bytes in %s: %s" % (
                        cls, blocks, nbytes, path,
                        [(x["class"], x["blocks"], x["bytes"]) for x in recs]))
            for x in recs:
                if x["class"] == "definitely_lost" and not x.get("frames"):
                    fail("a definitely lost record without an allocation stack")
                if x["class"] == "definitely_lost" and not x.get("sample_hex"):
                    fail("a definitely lost record without its sample bytes")
            print("ok %s %s: %s" % (os.path.basename(prog), mode,
                                    {c: (leaks[c]["blocks"], leaks[c]["bytes"]) for c in CLASSES}))


VG_LINE = re.compile(r"(definitely lost|indirectly lost|possibly lost|still reachable): "
                     r"([\d,]+) bytes in ([\d,]+) blocks")


def check_valgrind(prog):
    r = run(["valgrind", "--leak-check=full", "--show-leak-kinds=all", prog])
    if r.returncode != 0:
        fail("valgrind run failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    exp, _, _, vg = parse_expect(r.stdout)
    # the first LEAK SUMMARY is the program's own mid-run check
    part = r.stderr.split("LEAK SUMMARY:", 1)
    if len(part) < 2:
        fail("no LEAK SUMMARY in valgrind's output:\n" + r.stderr[-3000:])
    got = {}
    for m in VG_LINE.finditer(part[1].split("ERROR SUMMARY", 1)[0].split("HEAP SUMMARY")[0]):
        name = m.group(1).replace(" ", "_")
        if name not in got:
            got[name] = int(m.group(3).replace(",", ""))
    want = {c: exp[c][0] for c in CLASSES[:3]}
    if vg:
        want.update(vg)
    for c in CLASSES[:3]:
        if got.get(c, 0) != want[c]:
            fail("valgrind on %s: %s %d blocks, memsight's ground truth %d" % (
                os.path.basename(prog), c, got.get(c, 0), want[c]))
    print("ok %s valgrind: %s" % (os.path.basename(prog), got))


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("api", "exit", "valgrind"):
        fail("usage: leaks_ground_truth.py PROGRAM api|exit|valgrind")
    prog = os.path.join(os.environ.get("MS_PROGRAMS", "."), sys.argv[1])
    if sys.argv[2] == "valgrind":
        check_valgrind(prog)
    else:
        check_memsight(prog, sys.argv[2], os.environ["MEMSIGHT"])


if __name__ == "__main__":
    main()
