#!/usr/bin/env python3
"""Valgrind as the oracle: runs one program (tests/programs/lv_*) to its end under
valgrind --leak-check=full (with --run-libc-freeres=no --run-cxx-freeres=no, so that the
C library frees nothing valgrind would not see freed under memsight) and under memsight
run --leak-check=exit, and compares the four classes, bytes and blocks.

  leaks_vs_valgrind.py [--heuristics=SET] PROGRAM [ARGS...]
      (PROGRAM in tests/programs, or an absolute path; SET as valgrind's
      --leak-check-heuristics, given to both tools: default valgrind's default, all)

The blocks each interior-pointer heuristic kept still reachable ("of which reachable via
heuristic") must agree too.

One documented difference is applied before the comparison (docs/leaks.md, "Where
memsight differs from valgrind"): blocks the dynamic linker allocated (a thread's DTV,
which valgrind reports possibly lost through glibc's interior pointer) are roots for
memsight, so they are still reachable there. They are compared apart: the same number
of blocks, all still reachable for memsight, and their bytes left out of the classes
(a DTV has one 16-byte slot per module with TLS, and the agent is one more module).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

CLASSES = ["definitely_lost", "indirectly_lost", "possibly_lost", "still_reachable"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=240)


def num(s):
    return int(s.replace(",", ""))


RECORD = re.compile(r"==\d+== ([\d,]+)(?: \(([\d,]+) direct, ([\d,]+) indirect\))? bytes in "
                    r"([\d,]+) blocks are (definitely lost|indirectly lost|possibly lost|"
                    r"still reachable) in loss record")
HEUR = re.compile(r"==\d+==\s+(stdstring|length64|newarray|multipleinheritance)\s*: "
                  r"([\d,]+) bytes in ([\d,]+) blocks")
SUMMARY = re.compile(r"(definitely lost|indirectly lost|possibly lost|still reachable): "
                     r"([\d,]+) bytes in ([\d,]+) blocks")


def loader_record(lines):
    """True when the first caller of the allocation function is the dynamic linker."""
    for ln in lines[1:]:
        if not re.search(r"==\d+==\s+(at|by) 0x", ln):
            break
        if "vgpreload" in ln or "_dl_" not in ln and "ld-linux" not in ln and \
                re.search(r": (malloc|calloc|realloc|memalign|operator new|strn?dup)", ln):
            continue
        return "ld-linux" in ln or re.search(r"\((dl-[\w-]+\.c|rtld\.c):\d+\)", ln) is not None
    return False


def valgrind_classes(prog, heur):
    r = run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
             "--run-libc-freeres=no", "--run-cxx-freeres=no"] +
            (["--leak-check-heuristics=" + heur] if heur else []) + prog)
    if r.returncode != 0:
        fail("valgrind run failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    got = {c: [0, 0] for c in CLASSES}
    summary = r.stderr.split("LEAK SUMMARY:", 1)
    if len(summary) == 2:
        for m in SUMMARY.finditer(summary[1]):
            got[m.group(1).replace(" ", "_")] = [num(m.group(3)), num(m.group(2))]
        for m in HEUR.finditer(summary[1]):
            got["via " + m.group(1)] = [num(m.group(3)), num(m.group(2))]
    elif "All heap blocks were freed" not in r.stderr and "in use at exit: 0 bytes" not in r.stderr:
        fail("no LEAK SUMMARY in valgrind's output:\n" + r.stderr[-3000:])
    lines = r.stderr.splitlines()
    moved = []
    for i, ln in enumerate(lines):
        m = RECORD.search(ln)
        if not m or not loader_record(lines[i + 1:i + 12]):
            continue
        cls = m.group(5).replace(" ", "_")
        nbytes = num(m.group(2)) if m.group(2) else num(m.group(1))
        blocks = num(m.group(4))
        got[cls][0] -= blocks
        got[cls][1] -= nbytes
        moved.append((cls, blocks, nbytes))
    return got, moved, r.stdout


def memsight_classes(prog, memsight, heur):
    with tempfile.TemporaryDirectory() as d:
        r = run([memsight, "run", "-q", "-o", d, "--leak-check=exit"] +
                (["--leak-check-heuristics=" + heur] if heur else []) + ["--"] + prog)
        if r.returncode != 0:
            fail("%s under memsight exited with %d: %s" % (prog, r.returncode, r.stderr))
        found = glob.glob(os.path.join(d, "*-exit.msnap"))
        if len(found) != 1:
            fail("expected one exit snapshot, found %s" % found)
        rep = run([memsight, "report", "--format", "json", found[0]])
        if rep.returncode != 0:
            fail("memsight report failed: %s" % rep.stderr)
        doc = json.loads(rep.stdout)
        leaks = doc.get("leaks")
        if not leaks:
            fail("the exit snapshot has no leak scan")
        got = {c: [leaks[c]["blocks"], leaks[c]["bytes"]] for c in CLASSES}
        if "leak_heuristics" not in doc:
            fail("the leak scan does not say which heuristics it used")
        for h, v in doc["leak_heuristics"]["reachable_via_heuristic"].items():
            got["via " + h] = [v["blocks"], v["bytes"]]
        loader = []
        for x in doc.get("leak_records", []):
            frames = x.get("frames") or [{}]
            if "ld-linux" in (frames[0].get("module") or ""):
                got[x["class"]][0] -= x["blocks"]
                got[x["class"]][1] -= x["bytes"]
                loader.append((x["class"], x["blocks"], x["bytes"]))
        return got, loader, r.stdout


def main():
    args = sys.argv[1:]
    heur = None
    if args and args[0].startswith("--heuristics="):
        heur = args.pop(0).split("=", 1)[1]
    if not args:
        fail("usage: leaks_vs_valgrind.py [--heuristics=SET] PROGRAM [ARGS...]")
    prog = [os.path.join(os.environ.get("MS_PROGRAMS", "."), args[0])] + args[1:]
    if not os.path.exists(prog[0]):
        print("SKIP: %s is not installed" % prog[0])
        return
    vg, moved, vg_out = valgrind_classes(prog, heur)
    ms, loader, ms_out = memsight_classes(prog, os.environ["MEMSIGHT"], heur)
    if vg_out != ms_out:
        fail("the program's output differs: valgrind %r, memsight %r" % (vg_out, ms_out))
    name = " ".join([os.path.basename(prog[0])] + prog[1:])
    via = sorted(k for k in set(vg) | set(ms) if k.startswith("via "))
    for k in via:
        vg.setdefault(k, [0, 0])
        ms.setdefault(k, [0, 0])
    bad = [c for c in CLASSES + via if vg[c] != ms[c]]
    for c in CLASSES + via:
        print("%-16s valgrind %6d blocks %9d bytes   memsight %6d blocks %9d bytes%s" % (
            c, vg[c][0], vg[c][1], ms[c][0], ms[c][1], "   <-- differs" if c in bad else ""))
    print("the dynamic linker's blocks, compared apart: valgrind %s, memsight %s" % (
        moved, loader))
    if sum(b for _, b, _ in moved) != sum(b for _, b, _ in loader):
        bad.append("the number of the dynamic linker's blocks")
    if any(c != "still_reachable" for c, _, _ in loader):
        bad.append("the class of the dynamic linker's blocks")
    if bad:
        fail("%s: memsight and valgrind disagree on %s" % (name, ", ".join(bad)))
    print("ok %s (heuristics %s): %s" % (name, heur or "default",
                                          {c: tuple(ms[c]) for c in CLASSES + via}))


if __name__ == "__main__":
    main()
