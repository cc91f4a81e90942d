#!/usr/bin/env python3
"""Suppressions and function filters on the demo's leak scan, whose ground truth is 336
cache keys (strdup from cache_remember) and 199 history lines (parse_line) definitely
lost: a suppression file (LeakSanitizer's leak:PATTERN) by function, anchored, by source
file leaves the matched records out of the report and its class totals and says what it
suppressed; memsight run --suppress does the same in the exit summary; --filter-function
keeps the stacks through one function. Damaged suppression files are refused with the
file, the line and the reason, before anything runs."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

d = tmpdir("suppress")
demo = os.path.join(BUILD, "examples", "demo")
memsight("run", "-q", "--leak-check", "exit", "-o", d, "--", demo, "20000")
snap = [s for s in snapshots(d) if s.endswith("-exit.msnap")][0]
base = report_json(snap)
check(base["leaks"]["definitely_lost"]["blocks"] == 535, "demo ground truth %r" % base["leaks"])


def supp(name, text):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
    return p


def rep(*args):
    p = subprocess.run([MEMSIGHT, "report", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def lost_functions(doc):
    return {f["function"] for r in doc["leak_records"] if r["class"] == "definitely_lost"
            for f in r["frames"] if f["function"]}


for name, text, want, gone in (
        ("fn.supp", "# known leaks\nleak:cache_remember\n", 199, "cache_remember"),
        ("anchored.supp", "leak:^cache_rem   # prefix-anchored\n", 199, "cache_remember"),
        ("end.supp", "leak:line$\n", 336, "parse_line"),
        ("file.supp", "\n  leak:demo.c\n", 0, "main")):
    rc, out, err = rep("-f", "json", "--suppress", supp(name, text), snap)
    check(rc == 0, "%s: %s" % (name, err))
    doc = json.loads(out)
    check(doc["leaks"]["definitely_lost"]["blocks"] == want,
          "%s: definitely lost %r, want %d" % (name, doc["leaks"]["definitely_lost"], want))
    check(gone not in lost_functions(doc), "%s: %s still reported" % (name, gone))
    check("suppressed: %d blocks" % (535 - want) in err and "(%s:" % name in err, "%s: %r" % (name, err))
# an anchor that matches nothing suppresses nothing
rc, out, err = rep("-f", "json", "--suppress", supp("none.supp", "leak:^remember\n"), snap)
check(rc == 0 and json.loads(out)["leaks"]["definitely_lost"]["blocks"] == 535 and "suppressed" not in err,
      "unmatched anchor: %r" % err)

# the text report and the exit summary of memsight run
rc, out, err = rep("--suppress", supp("fn2.supp", "leak:cache_remember"), snap)
check(rc == 0 and "definitely_lost" in out and "cache_remember" not in out.split("Leak scan:")[1],
      "text report: %s" % out[-800:])
p = subprocess.run([MEMSIGHT, "run", "--leak-check", "exit", "--suppress", os.path.join(d, "fn.supp"),
                    "-o", d, "--", demo, "20000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 0 and "definitely lost      12.6 KiB in 199 blocks" in p.stderr
      and "memsight: suppressed: 336 blocks" in p.stderr, "run summary: %s" % p.stderr)

# heaptrack's --filter-bt-function
rc, out, err = rep("-f", "json", "--filter-function", "parse_line", snap)
doc = json.loads(out)
check(rc == 0 and doc["stacks"] and all(any(f["function"] and "parse_line" in f["function"]
                                            for f in st["frames"]) for st in doc["stacks"]),
      "filtered stacks: %r" % [st["frames"][0].get("function") for st in doc["stacks"]])
check(doc["leaks"]["definitely_lost"]["blocks"] == 199 and len(doc["stacks"]) < len(base["stacks"]),
      "filter leaks %r" % doc["leaks"])

# a bare pattern may hold "::" (C++ names) or "file:line" text: a pattern, not a type
rc, out, err = rep("-f", "json", "--suppress", supp("cxx.supp", "std::vector<int>::push_back\n"
                                                     "demo.c:12\nleak:std::map\n"), snap)
check(rc == 0 and json.loads(out)["leaks"]["definitely_lost"]["blocks"] == 535, "cxx: %d %r" % (rc, err))

# damaged suppression files: file:line and the reason, status 2, nothing on stdout
for name, text, msg in (("type.supp", "leak:ok\nrace:foo\n", "type.supp:2: unknown suppression type"),
                        ("empty.supp", "leak:\n", "empty.supp:1: an empty pattern"),
                        ("nul.supp", b"leak:a\0b\n", "nul.supp:1: a NUL byte"),
                        ("blank.supp", "# only comments\n\n", "no suppression in the file"),
                        ("long.supp", "leak:" + "x" * 5000 + "\n", "long.supp:1: line longer")):
    rc, out, err = rep("--suppress", supp(name, text), snap)
    check(rc == 2 and msg in err and out == "", "%s: %d %r" % (name, rc, err))
rc, out, err = rep("--suppress", os.path.join(d, "missing.supp"), snap)
check(rc == 2 and "missing.supp" in err and "No such file" in err, "missing file: %r" % err)
p = subprocess.run([MEMSIGHT, "run", "--suppress", os.path.join(d, "type.supp"), "--", demo, "10"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 2 and "type.supp:2" in p.stderr and p.stdout == "", "run with a bad file: %r" % p.stderr)
print("ok: suppressions by function, anchor and file; run summary; function filter; bad files refused")
