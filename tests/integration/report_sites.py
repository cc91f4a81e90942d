#!/usr/bin/env python3
"""Allocation sites of the text report: st_sites allocates only through the C and C++
runtimes (strdup, operator new[], std::vector::reserve inlined from the C++ headers),
each site from two callers. By default a site is the innermost frame of the program, so
the report has one row per source line of st_sites with the blocks it holds (from two
stacks each), never a row for strdup or operator new; --sites=caller groups by the
allocator's caller instead, where every operator new of the program is one row."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

N = 300
d = tmpdir("sites")
src = open(os.path.join(SOURCE, "tests", "programs", "st_sites.cpp")).read().split("\n")
line_of = {tag: i + 1 for i, l in enumerate(src)
           for tag in ("ST_NAMES", "ST_OBJECTS", "ST_VECTOR_HEAD", "ST_VECTOR")
           if l.rstrip().endswith("// " + tag)}
check(len(line_of) == 4, "source lines: %r" % line_of)
snap = [s for s in run_program(os.path.join(d, "run"), "st_sites", str(N)) if s.endswith("-exit.msnap")][0]

ROW = re.compile(r"^  #\d+  .* live in (\d+) blocks   allocated .* in (\d+) blocks.*, (\d+) stacks?\n"
                 r"      (.*)$", re.M)


def sites(*args):
    text = memsight("report", "-m", "live-blocks", "--top", "1000", *args, snap)
    part = text.split("allocation sites by live blocks", 1)
    check(len(part) == 2, "no sites table:\n" + text[:2000])
    table = part[1].split("\nTop ", 1)[0]
    return {m.group(4): (int(m.group(1)), int(m.group(3))) for m in ROW.finditer(table)}, table


got, table = sites()
want = {"st_names(int) st_sites.cpp:%d" % line_of["ST_NAMES"]: (2 * N, 2),
        "st_objects(int) st_sites.cpp:%d" % line_of["ST_OBJECTS"]: (2 * N, 2),
        "st_vector(int) st_sites.cpp:%d" % line_of["ST_VECTOR"]: (2, 2),
        "st_vector(int) st_sites.cpp:%d" % line_of["ST_VECTOR_HEAD"]: (2, 2)}
for name, v in want.items():
    check(got.get(name) == v, "site %s: %r, want %r\n%s" % (name, got.get(name), v, table))
check(not any(re.search(r"strdup|operator new|allocat|vector<", k) for k in got),
      "a runtime frame as a site:\n" + table)

got, table = sites("--sites=caller")
names = [k for k in got if "strdup" in k]
check(len(names) == 1 and got[names[0]][0] == 2 * N, "caller: strdup %r\n%s" % (names, table))
new = [k for k in got if k.startswith("operator new")]
check(new and sum(got[k][0] for k in new) >= 2 * N + 4, "caller: operator new %r\n%s" % (new, table))
check(not any(k.startswith("st_objects") or k.startswith("st_names") for k in got),
      "caller: a program frame as the allocator's caller:\n" + table)

# The JSON report's sites: the same rows, every stack in exactly one of them.
for args, text_rows in (((), sites()[0]), (("--sites=caller",), got)):
    doc = json.loads(memsight("report", "-f", "json", *args, snap))
    js = {x["site"]: (x["live_blocks"], x["stacks"]) for x in doc["sites"] if x["live_blocks"]}
    check(js == text_rows, "json sites %r: %r != text %r" % (args, js, text_rows))
    for k in ("live_bytes", "live_blocks", "allocated_bytes", "allocated_blocks"):
        check(sum(x[k] for x in doc["sites"]) == doc["totals"][k], "json sites %r: %s sum" % (args, k))
    check(sum(x["stacks"] for x in doc["sites"]) == len(doc["stacks"]), "json sites %r: stacks" % (args,))

p = subprocess.run([MEMSIGHT, "report", "--sites=nowhere", snap], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
check(p.returncode == 2 and "--sites" in p.stderr and not p.stdout, "bad --sites: %r" % p.stderr)
print("ok: allocation sites at the program's frames, and at the allocator's callers")
