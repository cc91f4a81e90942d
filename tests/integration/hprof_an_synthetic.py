#!/usr/bin/env python3
"""Cases a JVM will not produce on demand, in a small Android-style dump (JAVA PROFILE
1.0.3, 4-byte ids, app/zygote heaps) written by this script: which reference kinds keep
their referent alive, the order of GC roots for paths (an object that is also a
VM-internal root is reached through its real holder), the root type reported when an
object has several, heap names, and error answers of `memsight hprof path`."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import TOOL, Graph, Hprof, check, cleanup, run, workdir  # noqa

MEMSIGHT = os.environ.get("MEMSIGHT", "memsight")
def build(path):
    h = Hprof()
    h.heap_info(ord("Z"), "zygote")
    h.cls(0x100, "java.lang.Object")
    h.cls(0x101, "java.lang.Class", 0x100)
    h.cls(0x102, "java.lang.ref.Reference", 0x100, fields=["referent"])
    kinds = {"java.lang.ref.WeakReference": 0x103, "java.lang.ref.SoftReference": 0x104,
             "java.lang.ref.PhantomReference": 0x105, "java.lang.ref.FinalizerReference": 0x106,
             "app.PlainRef": 0x107}
    for name, cid in kinds.items():
        h.cls(cid, name, 0x102)
    h.cls(0x110, "app.Node", 0x100, fields=["a", "b"])
    h.cls(0x111, "app.Statics", 0x100, statics=[("HOLDER", 0x2000)])
    h.cls(0x112, b'app.Q"uote\\\xff\xc3\xa9'.decode("latin-1"), 0x100,  # not UTF-8 at \xff
          statics=[(b"bad\xffname".decode("latin-1"), 0x2080)])
    for cid in [0x100, 0x101, 0x102, 0x110, 0x111, 0x112] + list(kinds.values()):
        h.root(0x05, cid)
    h.heap_info(ord("A"), "app")
    # each kind of reference, held by a JNI global, referent held by nothing else
    for k, cid in enumerate(kinds.values()):
        ref, target = 0x1000 + 0x10 * k, 0x1008 + 0x10 * k
        h.inst(ref, cid, [target])
        h.inst(target, 0x110, [0, 0])
        h.root(0x01, ref)
    # G (JNI global) -> N1 -> N2 -> X, and X is also a VM-internal root; Y only VM-internal
    h.inst(0x2000, 0x110, [0x2010, 0])   # held by app.Statics.HOLDER (sticky class)
    h.inst(0x2010, 0x110, [0x2020, 0])
    h.inst(0x2020, 0x110, [0x2030, 0x2040])
    h.inst(0x2030, 0x110, [0, 0])         # X
    h.inst(0x2040, 0x110, [0, 0xdead0])   # a dangling reference: dropped by the reader
    h.inst(0x2050, 0x110, [0, 0])         # Y
    h.root(0x8D, 0x2030)
    h.root(0x8D, 0x2050)
    # Z: a Java frame root first in the file, then a JNI global: reported as JNI global
    h.inst(0x2060, 0x110, [0, 0])
    h.root(0x03, 0x2060)
    h.root(0x01, 0x2060)
    h.inst(0x2070, 0x112, [])
    h.root(0x01, 0x2070)
    h.inst(0x2080, 0x110, [0, 0])
    h.write(path)
    return kinds


def hprof_json(*args):
    return json.loads(run([MEMSIGHT, "hprof"] + list(args) + ["--format", "json"]))


def main():
    d = workdir()
    path = os.path.join(d, "synthetic.hprof")
    kinds = build(path)
    g = Graph(path)

    for k, name in enumerate(kinds):
        ref, target = g.by_id[0x1000 + 0x10 * k], g.by_id[0x1008 + 0x10 * k]
        steps = hprof_json("path", path, "0x%x" % (0x1008 + 0x10 * k))
        if name == "app.PlainRef":  # a Reference subclass of no known kind keeps its referent
            check(g.objs[target]["idom"] == ref, "%s: referent not dominated by it" % name)
            check([s.get("field") for s in steps] == [None, "referent"], "%s path %s" % (name, steps))
        else:
            check(g.objs[target]["idom"] == -1, "%s keeps its referent alive" % name)
            check(steps == [], "%s: path to its referent %s" % (name, steps))
            check(g.objs[ref]["retained"] == g.objs[ref]["shallow"], "%s retains its referent" % name)

    # X is reached through the sticky class and its static, not as a VM-internal root
    steps = hprof_json("path", path, "0x2030")
    got = [(s.get("class_object_of") or s["class"], s.get("root_type"), s.get("field")) for s in steps]
    want = [("app.Statics", "sticky_class", None), ("app.Node", None, "HOLDER"),
            ("app.Node", None, "a"), ("app.Node", None, "a"), ("app.Node", None, "a")]
    check(got == want, "path to X: %s" % got)
    check(steps[-1]["object_id"] == "0x2030", "path does not end at X")
    # Y has only its VM-internal root
    steps = hprof_json("path", path, "0x2050")
    check(len(steps) == 1 and steps[0]["root_type"] == "vm_internal", "path to Y: %s" % steps)
    # Z: JNI global preferred to the Java frame listed first
    steps = hprof_json("path", path, "0x2060")
    check(len(steps) == 1 and steps[0]["root_type"] == "jni_global", "path to Z: %s" % steps)

    # X is dominated by N2 although it is also a root: two paths, the virtual root
    x = g.objs[g.by_id[0x2030]]
    check(x["idom"] == g.vroot, "X (a root, also referenced) has idom %d" % x["idom"])
    n2 = g.objs[g.by_id[0x2020]]
    check(n2["retained"] == n2["shallow"] + g.objs[g.by_id[0x2040]]["shallow"],
          "N2 retains %d" % n2["retained"])
    # heaps
    rows = hprof_json("dominators", path, "--top", "0")
    heaps = {r["object_id"]: r["heap"] for r in rows}
    check(heaps.get("0x1000") == "app", "heap of an app object: %s" % heaps.get("0x1000"))
    check(heaps.get("0x100") == "zygote", "heap of a zygote class: %s" % heaps.get("0x100"))
    # a class name with a quote, a backslash and a byte that is not UTF-8, and a field name
    # with such a byte: the JSON still parses (run() decodes strictly) and keeps the rest;
    # the byte is U+FFFD, or '?' where the reader already replaced it
    odd = [r["class"] for r in rows if r["object_id"] == "0x2070"]
    check(odd in (['app.Q"uote\\\ufffd\u00e9'], ['app.Q"uote\\?\u00e9']), "odd class name in JSON: %r" % odd)
    steps = hprof_json("path", path, "0x2080")
    check(steps[-1].get("field") in ("bad\ufffdname", "bad?name"), "odd field name: %r" % steps[-1])

    # the JSON string writer on every kind of byte sequence: valid UTF-8 passes, control
    # characters are escaped, anything else becomes U+FFFD; the result always parses
    for raw, want in ((b"a\"b\\c\n\x01\x7f", 'a"b\\c\n\x01\x7f'), (b"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\u00e9\u20ac\U0001f600"),
                      (b"\xff\xc3", "\ufffd\ufffd"), (b"\xed\xa0\x80", "\ufffd" * 3), (b"\xc0\xaf", "\ufffd\ufffd"),
                      (b"\xf4\x90\x80\x80", "\ufffd" * 4)):
        p = subprocess.run([TOOL, "jsonstr", raw], stdout=subprocess.PIPE, check=True)
        got = json.loads(p.stdout.decode("utf-8"))
        check(got == want, "JSON string of %r: %r, want %r" % (raw, got, want))

    # error answers
    for args, msg in ((["0xfeed"], "no object with id"), (["zz"], "not an object id"),
                      (["--class", "no.Such"], "no class named")):
        p = subprocess.run([MEMSIGHT, "hprof", "path", path] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        check(p.returncode != 0 and msg in p.stderr and path in p.stderr,
              "path %s: exit %d, stderr %r" % (args, p.returncode, p.stderr))
    cleanup(d)
    print("ok: reference kinds, root priority, root precedence, heaps, errors")


if __name__ == "__main__":
    main()
