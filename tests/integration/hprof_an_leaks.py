#!/usr/bin/env python3
"""Leak finding on a small Android-style dump written here with known answers: destroyed
Activities held by a static array (one group of two, index-free signature), a detached
Fragment held by a live Activity, an object a LeakCanary KeyedWeakReference still
watches, and leaking objects that are no longer strongly reachable (not leaks). The
signatures are recomputed with Python's hashlib from Shark's rule, written out by hand."""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import BOOL, LONG, OBJ, TOOL, Graph, Hprof, check, cleanup, run, workdir  # noqa

MEMSIGHT = os.environ["MEMSIGHT"]


def build(path):
    h = Hprof()
    h.cls(0x100, "java.lang.Object")
    h.cls(0x101, "java.lang.Class", 0x100)
    h.cls(0x102, "java.lang.ref.Reference", 0x100, fields=["referent"])
    h.cls(0x103, "java.lang.ref.WeakReference", 0x102)
    h.cls(0x120, "android.app.Activity", 0x100,
          fields=[("mFragments", OBJ), ("mDestroyed", BOOL), ("mFinished", BOOL)])
    h.cls(0x121, "app.MainActivity", 0x120, fields=["mView"])
    h.cls(0x122, "android.app.Fragment", 0x100, fields=[("mFragmentManager", OBJ), ("mCalled", BOOL)])
    h.cls(0x123, "app.DetailFragment", 0x122)
    h.cls(0x124, "leakcanary.KeyedWeakReference", 0x103, fields=[("key", OBJ), ("retainedUptimeMillis", LONG)])
    h.cls(0x125, "app.Leaky", 0x100, statics=[("LEAKS", 0x3000)])
    h.cls(0x126, "app.Holder", 0x100, statics=[("LIVE", 0x3100)])
    h.cls(0x127, "app.Cache", 0x100, statics=[("NODE", 0x3300), ("NODE2", 0x3310)])
    h.cls(0x110, "app.Node", 0x100, fields=["a"])
    h.cls(0x130, "java.lang.Object[]", 0x100)
    for cid in list(range(0x100, 0x104)) + list(range(0x120, 0x128)) + [0x110, 0x130]:
        h.root(0x05, cid)

    def activity(oid, destroyed, view=0, fragments=0):
        # app.MainActivity's own field, then android.app.Activity's
        h.inst(oid, 0x121, [view, fragments, (BOOL, destroyed), (BOOL, 0)])

    # two destroyed activities in a static array: one group; the first holds (as its
    # mView) a destroyed activity, which holds another: two leaks behind a leak
    h.array(0x3000, 0x130, [0x3010, 0x3020])
    activity(0x3010, 1, view=0x3030)
    activity(0x3020, 1)
    activity(0x3030, 1, view=0x3040)
    activity(0x3040, 1)
    # a live activity holding a detached fragment (leaking) and an attached one
    activity(0x3100, 0, view=0x3120, fragments=0x3110)
    h.inst(0x3110, 0x123, [0, (BOOL, 1)])
    h.inst(0x3120, 0x123, [0x3100, (BOOL, 1)])
    # a destroyed activity nothing holds: not a leak
    activity(0x3200, 1)
    # watched references: retained (leak), only watched (no leak), retained but the object
    # is only weakly reachable (not a leak)
    for ref, target, millis in ((0x3400, 0x3300, 5000), (0x3410, 0x3310, -1), (0x3420, 0x3320, 7000)):
        h.inst(ref, 0x124, [0, (LONG, millis), target])
        h.inst(target, 0x110, [0])
        h.root(0x01, ref)
    h.write(path)


def sig(*parts):
    return hashlib.sha1("".join(parts).encode()).hexdigest()


def main():
    d = workdir()
    path = os.path.join(d, "leaks.hprof")
    build(path)
    g = Graph(path)
    groups = json.loads(run([TOOL, "leaks", path, "json"]))
    by_sig = {x["signature"]: x for x in groups}
    want = {
        # class app.Leaky (never leaking) -> static LEAKS -> Object[] (unknown) -> [x]
        sig("app.Leaky", "LEAKS", "java.lang.Object[]", "[x]"):
            ("app.MainActivity", "Activity#mDestroyed is true", ["0x3010", "0x3020"]),
        # class app.Holder -> LIVE (not leaking: mDestroyed false) -> mFragments: only the
        # last not-leaking object's reference is a suspect
        sig("app.MainActivity", "mFragments"):
            ("app.DetailFragment", "Fragment#mFragmentManager is null", ["0x3110"]),
        sig("app.Cache", "NODE"):
            ("app.Node", "retained by a LeakCanary KeyedWeakReference", ["0x3300"]),
    }
    check(set(by_sig) == set(want), "leak signatures %s, want %s" % (
        sorted((s, x["class"]) for s, x in by_sig.items()), sorted(want)))
    for s, (cls, reason, objs) in want.items():
        x = by_sig[s]
        check((x["class"], x["reason"], sorted(x["objects"]), x["count"]) == (cls, reason, objs, len(objs)),
              "group %s: %s" % (s, x))
        want_ret = sum(g.objs[g.by_id[int(o, 16)]]["retained"] for o in objs)
        check(x["retained_bytes"] == want_ret and want_ret > 0, "group %s retained %d, want %d" % (
            s, x["retained_bytes"], want_ret))
        check(x["trace"][-1]["object_id"] in objs and x["trace"][-1]["status"] == "LEAKING",
              "trace of %s does not end at a leaking object" % s)
    t = by_sig[sig("app.MainActivity", "mFragments")]["trace"]
    check([(s.get("status"), bool(s.get("suspect"))) for s in t] ==
          [("NOT_LEAKING", False), ("NOT_LEAKING", True), ("LEAKING", False)], "fragment trace %s" % t)
    check(t[0]["root_type"] == "sticky_class" and t[1]["field"] == "LIVE" and t[2]["field"] == "mFragments",
          "fragment trace steps %s" % t)
    # the leaks behind a leak: listed with the group of the first leaking object on their
    # path, not counted as no longer reachable
    arr = by_sig[sig("app.Leaky", "LEAKS", "java.lang.Object[]", "[x]")]
    behind = sorted((b["object_id"], b["class"], b["reason"], b["through"]) for b in arr["behind"])
    check(behind == [("0x3030", "app.MainActivity", "Activity#mDestroyed is true", "0x3010"),
                     ("0x3040", "app.MainActivity", "Activity#mDestroyed is true", "0x3010")],
          "leaks behind a leak: %s" % arr["behind"])
    check(all(x["behind"] == [] for x in groups if x is not arr), "behind lists of the other groups")
    text = run([TOOL, "leaks", path])
    check(text.startswith("4 leaking objects in 3 groups, 2 more behind another leaking object (listed with its "
                          "group) (2 more no longer strongly reachable: not leaks)\n"),
          "text summary: %s" % text.splitlines()[0])
    check("    app.MainActivity 0x3040: Activity#mDestroyed is true, through app.MainActivity 0x3010\n" in text,
          "leak behind a leak not listed:\n" + text)
    # the application / library line is always there, even without library leaks
    check(text.splitlines()[1] == "3 application leak groups, 0 library leak groups (known leaks in Android "
          "or vendor code, listed last)", "groups line: %s" % text.splitlines()[1])
    # without the dominator tree, retained sizes are said to be missing, not 0
    noret = run([MEMSIGHT, "hprof", "leaks", path, "--no-retained", "--no-progress"])
    check("retained 0 bytes" not in noret and noret.count("retained size not computed (--no-retained)") == 3,
          "leaks --no-retained:\n" + noret)
    noret = json.loads(run([MEMSIGHT, "hprof", "leaks", path, "--no-retained", "--no-progress", "--format", "json"]))
    check([x["retained_bytes"] for x in noret] == [None] * 3, "leaks --no-retained JSON: %s" %
          [x["retained_bytes"] for x in noret])
    check("~~ .mFragments -> app.DetailFragment" in text, "suspect mark missing:\n" + text)
    cleanup(d)
    print("ok: %d leak groups with Shark signatures" % len(groups))


if __name__ == "__main__":
    main()
